"""`lshsql environment SITE`: the external web environment of a site, its domains clustered by anchor text.

Webometrics studies (Korelin & Blekanov) describe a site by the domains around it: the external domains
its pages link to and those whose pages cite it, with counts of links and pages
(sql/95_environment_domains.sql). Those domains are then grouped by what the whole crawl says about them:
the bags of every anchor window pointing into a domain (`--unit domain`, computed once per work folder in
DIR/units/domain/), clustered among the environment's domains by the same pairs and CENTER as pages, and
each cluster labelled by its heaviest terms. Everything is written to DIR/environment/<site>/.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path

from lshsql import manifest, pipeline, sqlfiles, urls, workdir
from lshsql.engines import duckdb as db
from lshsql.engines.base import open_engine
from lshsql.errors import InputError, ParamError
from lshsql.params import Params
from lshsql.pipeline import labels

UNIT_STAGES = (
    "term_counts",
    "urls",
    "terms",
    "bags",
    "signatures",
    "buckets",
    "candidates",
    "pairs",
)
DOMAINS_SQL = "95_environment_domains.sql"
DEFAULT_PARAMS = Params(threshold=0.2)


@dataclass
class Environment:
    """What `environment` found: totals, the domains with their cluster, the clusters with labels."""

    site: str
    site_unit: str
    out: Path
    totals: dict
    clusters: list[dict]
    seconds: float

    def lines(self, members: int = 8) -> list[str]:
        t = self.totals
        out = [
            f"{self.site} ({self.site_unit}): {t['external_links']:,} external links from "
            f"{t['linking_pages']:,} of its pages to {t['external_domains']:,} external domains; "
            f"{t['citing_pages']:,} citing pages on {t['citing_domains']:,} citing domains",
            f"{t['domains']:,} domains in its environment, {t['domains_with_bag']:,} described by anchor "
            f"text, in {len(self.clusters):,} clusters (threshold {t['threshold']})",
        ]
        for cluster in self.clusters:
            shown = ", ".join(cluster["domains"][:members])
            more = f" (+{len(cluster['domains']) - members})" if len(cluster["domains"]) > members else ""
            label = " ".join(cluster["label"]) or "-"
            out.append(f"  [{cluster['size']}] {label}: {shown}{more}")
        out.append(f"-> {self.out}/")
        return out


def site_unit(site: str) -> tuple[str, str]:
    """The site as a host or registered domain (a URL is reduced to its host), and which of the two it is."""
    text = site.strip()
    if not text:
        raise ParamError(
            "the site is empty: give a host (docs.python.org) or a registered domain (python.org)"
        )
    try:
        host = urls.host_of(text if "://" in text else f"//{text}")
    except ValueError:
        raise ParamError(f"{site}: not a host or domain") from None
    if not host:
        raise ParamError(f"{site}: not a host or domain")
    return host, "domain" if urls.registered_domain(host) == host else "host"


@workdir.writer
def environment(
    work: str | Path,
    site: str,
    params: Params = DEFAULT_PARAMS,
    resources: db.Resources | None = None,
    log: pipeline.Log | None = None,
) -> Environment:
    """Describe and cluster the external web environment of `site` in an extracted work folder.

    Example:
        >>> environment("work/crawl", "docs.python.example").lines()  # doctest: +SKIP
    """
    started = time.perf_counter()
    work = Path(work)
    if not (work / "links.parquet").exists():
        raise InputError(f"{work}: no links.parquet; run `lshsql extract CRAWL --work {work}` first")
    site, unit = site_unit(site)
    out = work / "environment" / site
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    resources = db.for_work(work, resources)
    unit_work = _domain_bags(work, replace(params, unit="domain"), resources, log)
    with open_engine("duckdb", resources) as engine:  # the UDFs registered: sql/95 calls lsh_url_unit
        con = engine.con
        sqlfiles.register_inputs(con, {"links": str(work / "links.parquet")})
        sqlfiles.materialize(
            con, sqlfiles.load(DOMAINS_SQL), {"site": site, "site_unit": unit}, out / "domains.parquet"
        )
        totals = _totals(con, work, out, site, unit)
        _restrict(con, unit_work, out)
    with open_engine("duckdb", resources) as engine:
        stage = next(s for s in pipeline.STAGES if s.name == "clusters")
        pipeline.RUNNERS["clusters"](engine, stage, params, out, None)
        clusters = _clusters_with_labels(engine.con, unit_work, out)
    totals |= {
        "threshold": params.threshold,
        "domains_with_bag": sum(c["size"] for c in clusters),
    }
    result = Environment(site, unit, out, totals, clusters, round(time.perf_counter() - started, 3))
    workdir.write_text(
        out / "summary.json",
        json.dumps({"site": site, "site_unit": unit, **totals, "clusters": clusters}, indent=2) + "\n",
    )
    return result


def _domain_bags(work: Path, params: Params, resources: db.Resources, log) -> Path:
    """DIR/units/domain: the stages up to pairs with one bag per registered domain, on the folder's own
    fragments (linked, not copied); rerun only when the extraction or the parameters change."""
    unit_work = work / "units" / "domain"
    unit_work.mkdir(parents=True, exist_ok=True)
    workdir.require_extraction(work)
    linked = ("fragments", "url_aliases.parquet", labels.SURFACE_FORMS)
    for name in linked:
        _link(unit_work / name, work / name)
    extract_entry = manifest.read(work)["stages"].get("extract")
    if not extract_entry:
        raise InputError(f"{work}: no extraction recorded in manifest.json")
    files = extract_entry.get("files", {})  # the unit folder holds only the linked files of the extraction
    extract_entry = {
        **extract_entry,
        "files": {n: size for n, size in files.items() if n.split("/")[0] in linked},
    }
    if manifest.read(unit_work)["stages"].get("extract") != extract_entry:
        manifest.record_stage(unit_work, "extract", extract_entry)
    pipeline.run(unit_work, params, resources=resources, only=UNIT_STAGES, log=log)
    return unit_work


def _link(link: Path, target: Path) -> None:
    """link -> target, relative, so a moved or copied work folder keeps pointing at its own files; a link
    left by another folder (a copy) or a dangling one is replaced."""
    if link.is_symlink() and (not target.exists() or link.resolve() != target.resolve()):
        link.unlink()
    elif link.exists() and not link.is_symlink():
        shutil.rmtree(link) if link.is_dir() else link.unlink()
    if target.exists() and not link.is_symlink():
        os.symlink(os.path.relpath(target, link.parent), link)


def _totals(con, work: Path, out: Path, site: str, unit: str) -> dict:
    """The webometric counts: external links and the pages they are on, external and citing domains."""
    sqlfiles.register_inputs(con, {"environment_domains": str(out / "domains.parquet")})
    row = con.execute(
        "select count(*), count(*) filter (where links_out > 0), coalesce(sum(links_out), 0), "
        "count(*) filter (where links_in > 0), coalesce(sum(citing_pages), 0) from environment_domains"
    ).fetchall()[0]
    linking_pages = db.scalar(
        con,
        "select count(distinct source_url) from links "
        "where target_url is not null and skip_reason is null and lsh_url_unit(source_url, $unit) = $site "
        "and lsh_url_unit(target_url, 'domain') <> lsh_url_unit('http://' || $site || '/', 'domain')",
        {"unit": unit, "site": site},
    )
    names = ("domains", "external_domains", "external_links", "citing_domains", "citing_pages")
    return {**dict(zip(names, (int(v) for v in row), strict=True)), "linking_pages": int(linking_pages)}


def _restrict(con, unit_work: Path, out: Path) -> None:
    """The domain-level urls, bags and pairs of the environment's domains, as the inputs of CENTER."""
    sqlfiles.register_inputs(con, {r: str(unit_work / f"{r}.parquet") for r in ("urls", "bags", "pairs")})
    con.execute(
        "create or replace temp view kept as select urls.url_id from urls "
        "semi join environment_domains on urls.url = environment_domains.domain"
    ).fetchall()
    queries = {
        "urls": "select * from urls semi join kept using (url_id) order by url_id",
        "bags": "select * from bags semi join kept using (url_id) order by url_id, term_hash",
        "pairs": "select * from pairs where u_id in (select url_id from kept) "
        "and v_id in (select url_id from kept) order by u_id, v_id",
    }
    for relation, query in queries.items():
        con.execute(
            f"copy ({query}) to $out (format parquet, compression zstd)",
            {"out": str(out / f"{relation}.parquet")},
        ).fetchall()
    shutil.copyfile(unit_work / "terms.parquet", out / "terms.parquet")


def _clusters_with_labels(con, unit_work: Path, out: Path, n_terms: int = 6) -> list[dict]:
    """Clusters of domains, largest first, each with its domains and label words: sql/63_cluster_labels.sql
    over the domain-level bags of the whole crawl (so tf * ln(N / df) has the N its df counts), singletons
    included, into DIR/environment/SITE/cluster_labels.parquet."""
    labels.write(con, unit_work, out / "clusters.parquet", out / "cluster_labels.parquet", min_size=1)
    sqlfiles.register_inputs(
        con,
        {"clusters": str(out / "clusters.parquet"), "cluster_labels": str(out / "cluster_labels.parquet")},
    )
    rows = con.execute(
        """
        select clusters.center, clusters.size,
               list(member.url order by member.url),
               (select list(word order by rank) from cluster_labels
                where cluster_labels.center_id = clusters.center_id and rank <= $n)
        from clusters
        inner join clusters as member on member.center_id = clusters.center_id
        where clusters.is_center
        group by clusters.center, clusters.center_id, clusters.size
        order by clusters.size desc, clusters.center
        """,
        {"n": n_terms},
    ).fetchall()
    return [
        {"center": center, "size": size, "domains": members, "label": label or []}
        for center, size, members, label in rows
    ]
