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

from lshsql import db, labels, manifest, urls
from lshsql.errors import InputError
from lshsql.pipeline import STAGE_NAMES, output_path, register_outputs


@dataclass(frozen=True)
class Table:
    """A query result: column names and rows."""

    columns: list[str]
    rows: list[tuple]


@contextmanager
def open_work(work: str | Path, resources: db.Resources | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with a view for every output that exists in the work folder, within `resources`
    (default: as for `run`, half the RAM and all cores, spilling to DIR/tmp/duckdb)."""
    work = Path(work)
    if not work.is_dir():
        raise InputError(f"{work}: no such work folder")
    with db.connect(db.for_work(work, resources)) as con:
        register_outputs(con, work)
        yield con


def _require(work: Path, *relations: str) -> None:
    for relation in relations:
        if not output_path(work, relation).exists():
            raise InputError(f"{work}: no {relation} yet; run `lshsql run --work {work}` first")


def clustering_path(work: str | Path, from_cut: bool = False) -> Path:
    """A flat clustering of the work folder: DIR/clusters.parquet, or DIR/cut.parquet of `lshsql cut`; an
    InputError names the command that makes it. Checks that its members are URLs (not --unit host/domain
    keys), since pages, links and hosts are looked up by URL."""
    work = Path(work)
    path = work / ("cut.parquet" if from_cut else "clusters.parquet")
    if not path.exists():
        command = f"lshsql cut --threshold T --work {work}" if from_cut else f"lshsql run --work {work}"
        raise InputError(f"{work}: no {path.name} yet; run `{command}` first")
    unit = manifest.read(work).get("params", {}).get("unit", "url")
    if unit != "url":
        raise InputError(f"{work}: the clusters are of --unit {unit}, not of URLs; run with --unit url")
    return path


def _fetch(con: duckdb.DuckDBPyConnection, query: str, params: dict | None = None) -> Table:
    try:
        result = con.execute(query, params or {})
        columns = [d[0] for d in result.description]
        return Table(columns, result.fetchall())
    except duckdb.Error as e:
        raise InputError(f"query failed: {' '.join(str(e).split())}") from None


def related(work: str | Path, url: str, limit: int = 20, resources: db.Resources | None = None) -> Table:
    """What's Related (Haveliwala et al. 2000, sec. 3): the URLs paired with `url`, most similar first."""
    work = Path(work)
    _require(work, "pairs")
    with contextlib.suppress(urls.UrlError):  # an odd URL is looked up as written
        url = urls.canonicalize(url)
    with open_work(work, resources) as con:
        known = db.scalar(con, "select count(*) from urls where url = $url", {"url": url})
        if not known:
            raise InputError(f"{url}: not described in this work folder (no fragment mentions it)")
        return _fetch(con, QUERIES["related"], {"url": url, "limit": limit})


def top_clusters(
    work: str | Path, limit: int = 10, members: int = 5, terms: int = 8, resources: db.Resources | None = None
) -> Table:
    """The largest clusters: size, center, the readable words of their labels (the terms that weigh most in
    them, see cluster_labels) and their first members; a URL without a pair has no labels."""
    work = Path(work)
    _require(work, "clusters", "bags")
    with open_work(work, resources) as con:
        found = _fetch(con, QUERIES["top_clusters"], {"limit": limit, "members": members})
    words = cluster_labels(work, [row[2] for row in found.rows], n=terms, resources=resources)
    rows = [
        (size, center, " ".join(words[center_id]), shown) for size, center, center_id, shown in found.rows
    ]
    return Table(["size", "center", "top_terms", "members"], rows)


def cluster_labels(
    work: str | Path,
    center_ids: list[int] | None = None,
    from_cut: bool = False,
    n: int = 8,
    resources: db.Resources | None = None,
) -> dict[int, list[str]]:
    """The labels of clusters as readable words, heaviest first: {center_id: [word, ...]}, up to n each.

    Read from DIR/cluster_labels.parquet (with from_cut, DIR/cut_labels.parquet of `lshsql cut`): the top
    terms of each cluster of two or more URLs by summed TF-IDF, each shown as its most frequent surface
    word. With center_ids, every id asked for is a key (an empty list for a singleton or an unknown id);
    without, every cluster that has labels. A folder made before labels existed gets them computed from its
    clusters (or cut), bags, terms and urls.

    Example:
        >>> cluster_labels("work/example", [3, 17], n=3)  # doctest: +SKIP
        {3: ['tutorial', 'python', 'modules'], 17: []}
    """
    work = Path(work)
    name, source = ("cut_labels", "cut") if from_cut else ("cluster_labels", "clusters")
    path = output_path(work, name)
    query = (
        "select center_id, list(word order by rank) from {} where rank <= $n "
        "and ($all or list_contains($ids, center_id)) group by center_id order by center_id"
    )
    params = {"n": n, "all": center_ids is None, "ids": [int(i) for i in center_ids or []]}
    with db.connect(db.for_work(work, resources)) as con:
        if path.exists():
            con.read_parquet(str(path)).create_view("label_rows", replace=True)
        else:
            _require(work, source, "bags", "terms", "urls")
            labels.to_table(con, work, output_path(work, source), "label_rows")
        rows = _fetch(con, query.format("label_rows"), params).rows
    found = {int(center_id): list(words) for center_id, words in rows}
    if center_ids is None:
        return found
    return {int(i): found.get(int(i), []) for i in center_ids}


def query(work: str | Path, sql: str, resources: db.Resources | None = None) -> Table:
    """Run the user's SQL over the work folder's tables (pages, links, fragments, bags, pairs, ...), within
    `resources` (see open_work)."""
    with open_work(work, resources) as con:
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
        )
        select
            biggest.size,
            biggest.center,
            biggest.center_id,
            (select string_agg(url, ' ' order by rank) from members_ranked
             where members_ranked.center_id = biggest.center_id and rank <= $members) as members
        from biggest
        order by biggest.size desc, biggest.center
    """,
}
