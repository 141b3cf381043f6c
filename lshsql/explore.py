"""Reading results: What's Related, the largest clusters, ad-hoc SQL and the run's Table 1.

Each function opens its own in-memory DuckDB with a view per output table of the work folder (no UDF), so
they work on any finished run, from the CLI or a notebook.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from lshsql import db, manifest, urls
from lshsql.errors import InputError
from lshsql.pipeline import STAGE_NAMES, output_path, register_outputs


@dataclass(frozen=True)
class Table:
    """A query result: column names and rows."""

    columns: list[str]
    rows: list[tuple]


@contextmanager
def open_work(work: str | Path, resources: db.Resources | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with a view for every output that exists in the work folder."""
    work = Path(work)
    if not work.is_dir():
        raise InputError(f"{work}: no such work folder")
    resources = resources or db.Resources(
        memory_limit="2GB", threads=2, temp_directory=str(work / "tmp" / "duckdb")
    )
    with db.connect(resources) as con:
        register_outputs(con, work)
        yield con


def _require(work: Path, *relations: str) -> None:
    for relation in relations:
        if not output_path(work, relation).exists():
            raise InputError(f"{work}: no {relation} yet; run `lshsql run --work {work}` first")


def _fetch(con: duckdb.DuckDBPyConnection, query: str, params: dict | None = None) -> Table:
    try:
        result = con.execute(query, params or {})
        columns = [d[0] for d in result.description]
        return Table(columns, result.fetchall())
    except duckdb.Error as e:
        raise InputError(f"query failed: {' '.join(str(e).split())}") from None


def related(work: str | Path, url: str, limit: int = 20) -> Table:
    """What's Related (Haveliwala et al. 2000, sec. 3): the URLs paired with `url`, most similar first."""
    work = Path(work)
    _require(work, "pairs")
    with contextlib.suppress(urls.UrlError):  # an odd URL is looked up as written
        url = urls.canonicalize(url)
    with open_work(work) as con:
        known = db.scalar(con, "select count(*) from urls where url = $url", {"url": url})
        if not known:
            raise InputError(f"{url}: not described in this work folder (no fragment mentions it)")
        return _fetch(con, QUERIES["related"], {"url": url, "limit": limit})


def top_clusters(work: str | Path, limit: int = 10, members: int = 5, terms: int = 8) -> Table:
    """The largest clusters: size, center, first members and the terms that weigh most in them."""
    work = Path(work)
    _require(work, "clusters", "bags")
    with open_work(work) as con:
        return _fetch(con, QUERIES["top_clusters"], {"limit": limit, "members": members, "terms": terms})


def query(work: str | Path, sql: str) -> Table:
    """Run the user's SQL over the work folder's tables (pages, links, fragments, bags, pairs, ...)."""
    with open_work(work) as con:
        return _fetch(con, sql)


def info(work: str | Path) -> Table:
    """Per stage, rows written and seconds, like Table 1 of the paper; from the run manifest."""
    stages = manifest.read(work)["stages"]
    if not stages:
        raise InputError(f"{work}: no manifest.json; nothing has run here")
    rows = []
    for name in ("extract", *STAGE_NAMES):
        entry = stages.get(name)
        if entry:
            rows.append((name, _rows_of(name, entry), entry.get("seconds"), _details(entry)))
    return Table(["stage", "rows", "seconds", "details"], rows)


def _rows_of(name: str, entry: dict) -> int | None:
    return entry["counts"]["pages_used"] if name == "extract" else entry.get("rows")


def _details(entry: dict) -> str:
    skip = {"fingerprint", "rows", "seconds", "params", "counts", "inputs"}
    parts = [f"{k}={v}" for k, v in sorted(entry.items()) if k not in skip and not isinstance(v, dict)]
    parts += [f"{k}={v}" for k, v in sorted(entry.get("params", {}).items())]
    return ", ".join(parts)


QUERIES = {
    "related": """
        select
            case when pairs.u = $url then pairs.v else pairs.u end as related_url,
            pairs.similarity,
            pairs.n_bands,
            clusters.center = (select center from clusters where url = $url) as same_cluster
        from pairs
        inner join clusters on clusters.url = (case when pairs.u = $url then pairs.v else pairs.u end)
        where pairs.u = $url or pairs.v = $url
        order by pairs.similarity desc, related_url
        limit $limit
    """,
    "top_clusters": """
        with biggest as (
            select center, center_id, size from clusters where is_center
            order by size desc, center limit $limit
        ),
        members_ranked as (
            select clusters.center_id, clusters.url,
                   row_number() over (partition by clusters.center_id order by clusters.url) as rank
            from clusters inner join biggest on clusters.center_id = biggest.center_id
        ),
        terms_ranked as (
            select clusters.center_id, terms.term, sum(bags.weight) as weight,
                   row_number() over (
                       partition by clusters.center_id order by sum(bags.weight) desc, terms.term
                   ) as rank
            from clusters
            inner join biggest on clusters.center_id = biggest.center_id
            inner join bags on bags.url_id = clusters.url_id
            inner join terms on bags.term_hash = terms.term_hash
            group by clusters.center_id, terms.term
        )
        select
            biggest.size,
            biggest.center,
            (select string_agg(term, ' ' order by rank) from terms_ranked
             where terms_ranked.center_id = biggest.center_id and rank <= $terms) as top_terms,
            (select string_agg(url, ' ' order by rank) from members_ranked
             where members_ranked.center_id = biggest.center_id and rank <= $members) as members
        from biggest
        order by biggest.size desc, biggest.center
    """,
}
