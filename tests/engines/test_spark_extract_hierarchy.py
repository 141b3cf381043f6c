"""Extraction and the hierarchy's levels on Spark give DuckDB's rows: `extract(..., engine=spark)` parses
one Spark task per input file and runs sql/01..05 on Spark; `hierarchy(..., engine=spark)` runs the same
loop of levels on Spark. Needs pyspark and Java (skipped without them); the session is conftest.py's.
"""

from __future__ import annotations

import gzip
import shutil

import pytest

from tests.engines.conftest import require_spark

require_spark()

import pyarrow.parquet as pq  # noqa: E402

from lshsql.engines import duckdb as db  # noqa: E402
from lshsql.engines.base import SparkEngine  # noqa: E402
from lshsql.errors import InputError  # noqa: E402
from lshsql.sources.extract import ExtractParams, _parse_on_spark, extract  # noqa: E402
from lshsql.sources.readers import Source  # noqa: E402
from lshsql.tools.hierarchy import HierarchyParams, hierarchy  # noqa: E402
from tests.conftest import html_response, write_jsonl, write_warc  # noqa: E402
from tests.engines.test_spark_run import write_docs  # noqa: E402
from tests.stages.test_hierarchy import signatures_of  # noqa: E402

RESOURCES = db.Resources(memory_limit="1GB", threads=2)
EXTRACT_PARAMS = ExtractParams(buckets=4)
TABLES = ("pages", "links", "url_aliases", "surface_forms") + tuple(
    f"fragments/bucket={i}/data" for i in range(EXTRACT_PARAMS.buckets)
)


def same_rows(a, b, table: str) -> None:
    """The same column names and types, and the same rows in the same order."""
    left, right = pq.read_table(a / f"{table}.parquet"), pq.read_table(b / f"{table}.parquet")
    assert [(f.name, f.type) for f in right.schema] == [(f.name, f.type) for f in left.schema], table
    assert right.to_pylist() == left.to_pylist(), table


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    """Three inputs, one Spark task each: a site; a later capture of one of its pages (it wins across
    files), a redirect chain, a canonical link, a 404 and a non-HTML page; and JSON Lines pages."""
    root = tmp_path_factory.mktemp("crawl")
    site = "http://site.example"
    first = write_warc(
        root / "a.warc.gz",
        [
            html_response(
                f"{site}/",
                "<title>Home</title><p>welcome to the <a href='/a.html'>apple orchard</a> and the "
                "<a href='b.html'>banana plantation</a> and <a href='/old'>the old page</a></p>",
            ),
            html_response(f"{site}/a.html", "<title>Apples</title><p>see <a href='/b.html'>bananas</a></p>"),
            html_response(f"{site}/b.html", "<title>Bananas</title><p>back <a href='/'>home</a></p>"),
        ],
    )
    second = write_warc(
        root / "b.warc.gz",
        [
            html_response(
                f"{site}/a.html",
                "<title>Apples again</title><p>red <a href='http://other.example/x'>other fruit</a></p>",
                date="2024-02-01T00:00:00Z",
            ),
            html_response(f"{site}/old", "", status="301 Moved Permanently", headers=[("Location", "/new")]),
            html_response(f"{site}/new", "", status="302 Found", headers=[("Location", "/b.html")]),
            html_response(
                f"{site}/c.html",
                "<title>Cherries</title><link rel=canonical href='/cherries'>"
                "<p>cherry <a href='/a.html'>apple orchard page</a> and <a href='/b.html'>bananas</a></p>",
            ),
            html_response(f"{site}/gone", "<p>not found</p>", status="404 Not Found"),
            html_response(f"{site}/pic.png", b"\x89PNG\r\n", content_type="image/png"),
        ],
    )
    third = write_jsonl(
        root / "c.jsonl",
        [
            {
                "url": "http://blog.example/",
                "html": "<title>Blog</title><a href='http://site.example/'>fruit site</a>",
            },
            {
                "url": "http://blog.example/2",
                "html": "<a href='http://site.example/a.html'>apple orchard</a>",
            },
        ],
    )
    return [str(first), str(second), str(third)]


def test_extract_on_spark_gives_duckdbs_tables(crawl, spark, tmp_path):
    duck = extract(crawl, tmp_path / "duckdb", EXTRACT_PARAMS, RESOURCES)
    on_spark = extract(crawl, tmp_path / "spark", EXTRACT_PARAMS, RESOURCES, engine=SparkEngine(spark))
    for table in TABLES:
        same_rows(tmp_path / "duckdb", tmp_path / "spark", table)
    assert on_spark.lines()[:-2] == duck.lines()[:-2]  # every count; not the time
    # by hand: 2 warcinfo, the older a.html, 3 statuses (301, 302, 404) and the PNG skipped; 6 pages used
    assert (duck.records_read, duck.pages_used, duck.urls_described) == (13, 6, 8)
    assert duck.skipped == {"duplicate_url": 1, "http_status": 3, "not_html": 1, "warcinfo": 2}
    assert (duck.links_internal, duck.links_external) == (6, 3)
    assert duck.aliases == {"canonical": 1, "redirect": 2}  # /old -> /new -> /b.html, /c.html -> /cherries
    # record ids carry the file's number in the whole input, whichever task read it
    files = {r["record_id"] >> 32 for r in pq.read_table(tmp_path / "spark" / "pages.parquet").to_pylist()}
    assert files == {0, 1, 2}


def test_spark_parses_only_the_added_input_and_keeps_duckdbs_rows(crawl, spark, tmp_path):
    """An input added to a work folder that Spark extracted is the only one its tasks parse, and a kept
    input moved to another position has its record ids moved: the tables of DuckDB from scratch."""
    work = tmp_path / "spark"
    extract(crawl[:2], work, EXTRACT_PARAMS, RESOURCES, engine=SparkEngine(spark))
    added = extract(crawl[::-1], work, EXTRACT_PARAMS, RESOURCES, engine=SparkEngine(spark))
    assert (added.files_parsed, added.files_reused) == (1, 2)
    extract(crawl[::-1], tmp_path / "duckdb", EXTRACT_PARAMS, RESOURCES)
    for table in TABLES:
        same_rows(tmp_path / "duckdb", work, table)


def test_a_damaged_file_is_counted_on_spark_as_on_duckdb(crawl, spark, tmp_path):
    # a gzip member that looks like a WARC, then a member that is no deflate data: one record, then a
    # read_error, counted the same by the Spark task as by the worker processes
    damaged = tmp_path / "damaged.warc.gz"
    damaged.write_bytes(
        gzip.compress(b"WARC/1.0\r\nX-Pad: " + b"a" * 100 + b"\r\n") + b"\x1f\x8b\x08\x00" * 9
    )
    inputs = [*crawl, str(damaged)]
    duck = extract(inputs, tmp_path / "duckdb", EXTRACT_PARAMS, RESOURCES)
    on_spark = extract(inputs, tmp_path / "spark", EXTRACT_PARAMS, RESOURCES, engine=SparkEngine(spark))
    same_rows(tmp_path / "duckdb", tmp_path / "spark", "pages")
    assert on_spark.skipped == duck.skipped and duck.skipped["read_error"] == 1


def test_a_file_a_task_cannot_read_is_a_one_line_error(spark, tmp_path):
    """The file went missing between the driver's look and the task's read: the task's one-line error,
    not a Spark stack trace, naming the file."""
    gone = Source(str(tmp_path / "gone.warc.gz"), "warc")
    with pytest.raises(InputError, match=r"^\S+gone.warc.gz: not a readable WARC/ARC file: .*No such file"):
        _parse_on_spark(spark, [(0, gone)], EXTRACT_PARAMS, tmp_path / "raw")


@pytest.mark.parametrize("method", ["lsh", "exact"])
def test_hierarchy_on_spark_gives_duckdbs_merges_and_tree(method, spark, tmp_path):
    docs = write_docs(tmp_path / "docs.parquet", n_docs=150)
    signatures_of(tmp_path / "duckdb", docs)
    shutil.copytree(tmp_path / "duckdb", tmp_path / "spark")
    params = HierarchyParams(threshold=0.3, r_start=10, r_min=4, delta=3, method=method)
    duck = hierarchy(tmp_path / "duckdb", params, resources=RESOURCES)
    on_spark = hierarchy(tmp_path / "spark", params, resources=RESOURCES, engine=SparkEngine(spark))
    assert duck.merges > 20 and duck.clusters < 140
    assert [{**lv, "seconds": 0} for lv in on_spark.levels] == [{**lv, "seconds": 0} for lv in duck.levels]
    for table in ("merges", "cluster_tree"):
        same_rows(tmp_path / "duckdb", tmp_path / "spark", table)
    # and the cut of the Spark-built tree is DuckDB's (a query on either engine's Parquet)
    from lshsql.tools.hierarchy import cut

    for work in ("duckdb", "spark"):
        cut(tmp_path / work, 0.5, RESOURCES)
    same_rows(tmp_path / "duckdb", tmp_path / "spark", "cut")
