"""The work folder a server answers for: checked once at start, then opened read-only per request.

Each request gets its own in-memory DuckDB with a view per output (explore.open_work), so every query runs
on demand over the Parquet files and nothing grows with the size of the run. A dedup folder has no pages
table: a `pages` view over its documents stands in for it (the document id as the title), so every page
kind runs the same queries on crawls, ingested documents and dedups.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from lshsql import manifest, schemas
from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.pipeline import output_path
from lshsql.tools.explore import cluster_key, open_work

# What every page reads: a work folder without them has not finished `lshsql run` (or `dedup`).
NEEDED = ("urls", "pairs", "clusters")


@dataclass(frozen=True)
class Site:
    """A finished work folder and the DuckDB resources of each request's connection."""

    work: Path
    resources: db.Resources
    is_dedup: bool
    has_chaining: bool
    cluster_key: str = "cluster_id"  # the clusters' column a /cluster/ link names them by (cluster_key)


def open_site(work: str | Path, resources: db.Resources | None = None) -> Site:
    """Check that `work` holds a finished run or dedup of URLs; a one-line InputError says what is missing."""
    work = Path(work)
    if not work.is_dir():
        raise InputError(f"{work}: no such work folder")
    for relation in NEEDED:
        if not output_path(work, relation).exists():
            raise InputError(f"{work}: no {relation} yet; run `lshsql run --work {work}` first")
    data = manifest.read(work)
    unit = data.get("params", {}).get("unit", "url")
    if unit != "url":
        raise InputError(f"{work}: the clusters are of --unit {unit}, not of URLs; serve shows URL clusters")
    site = Site(work, db.for_work(work, resources), "dedup" in data, False)
    with connect(site) as con:
        columns = {name for (name,) in con.execute("select column_name from (describe clusters)").fetchall()}
        key = cluster_key(con)
    return Site(site.work, site.resources, site.is_dedup, "min_pair_similarity" in columns, key)


@contextmanager
def connect(site: Site) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with a view per output of the work folder, and `pages`, `links` and `cluster_labels`
    always there, with their documented columns (empty when the folder has none)."""
    with open_work(site.work, site.resources) as con:
        views = {name for (name,) in con.execute("select view_name from duckdb_views()").fetchall()}
        if site.is_dedup and "pages" not in views and "documents" in views:
            con.execute(DEDUP_PAGES).fetchall()
            views.add("pages")
        for relation in ALWAYS:
            if relation not in views:
                con.register("empty_table", schemas.schema(relation).empty_table())
                con.execute(f"create temp table {relation} as select * from empty_table").fetchall()
                con.unregister("empty_table")
        yield con


# The tables the pages read that a folder may lack (a run from --bags has no pages or links).
ALWAYS = ("pages", "links", "cluster_labels")


# A dedup's documents as pages: the id is the title, the source file and position say where to read it.
DEDUP_PAGES = """
create temp view pages as
select
    row as record_id,
    url,
    'dedup' as record_type,
    cast(null as varchar) as content_type,
    id as title,
    source as source_file,
    ord as source_offset,
    skip_reason
from documents
where url is not null and not earlier
"""
