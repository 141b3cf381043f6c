"""The read functions of the Python API return pyarrow.Table (pandas and polars take it as it is); the CLI
prints the same text as before from them, and `lshsql query` DuckDB's own values."""

from __future__ import annotations

import json

import duckdb
import pyarrow as pa
import pytest

import lshsql
from lshsql.engines import duckdb as db
from lshsql.params import Params
from lshsql.pipeline import run
from tests.test_cli import lshsql as cli

RESOURCES = db.Resources(memory_limit="1GB", threads=2)
BAGS = {"a": "p q r s", "b": "p q r t", "c": "x y z", "d": "x y z w", "e": "k"}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("arrow")
    with duckdb.connect() as con:
        con.execute("create table t (url varchar, term varchar)")
        rows = [(url, term) for url, terms in BAGS.items() for term in terms.split()]
        con.executemany("insert into t values (?, ?)", rows)
        con.execute(f"copy t to '{tmp / 'bags.parquet'}' (format parquet)")
    run(tmp / "w", Params(weighting="none", threshold=0.5), bags=tmp / "bags.parquet", resources=RESOURCES)
    return tmp / "w"


def test_related_is_an_arrow_table(work):
    table = lshsql.related(work, "a", resources=RESOURCES)
    assert isinstance(table, pa.Table)
    assert table.schema == pa.schema(
        [
            ("related_url", pa.string()),
            ("similarity", pa.float64()),
            ("n_bands", pa.int64()),
            ("same_cluster", pa.bool_()),
        ]
    )
    assert table.to_pylist() == [
        {
            "related_url": "b",
            "similarity": 3 / 5,
            "n_bands": table["n_bands"][0].as_py(),
            "same_cluster": True,
        }
    ]


def test_top_clusters_and_members_are_arrow_tables(work):
    clusters = lshsql.top_clusters(work, limit=2, resources=RESOURCES)
    columns = ["cluster_id", "size", "pair_share", "min_pair_similarity", "center", "top_terms", "members"]
    assert clusters.column_names == columns
    assert clusters.schema.field("top_terms").type == pa.list_(pa.string())
    assert clusters.schema.field("members").type == pa.list_(pa.string())
    # a: p q r s, b: p q r t (3 / 5); c: x y z, d: x y z w (3 / 4); two-URL clusters hold their one pair
    assert clusters.to_pylist() == [
        dict(zip(columns, (1, 2, 1.0, 0.6, "a", list("pqrst"), ["a", "b"]), strict=True)),
        dict(zip(columns, (2, 2, 1.0, 0.75, "c", list("xyzw"), ["c", "d"]), strict=True)),
    ]
    chains_first = lshsql.top_clusters(work, limit=3, resources=RESOURCES, sort="min_pair_similarity")
    assert chains_first["center"].to_pylist() == ["a", "c", "e"]  # the singleton e last: it has none
    members = lshsql.cluster_members(work, "b", resources=RESOURCES)
    assert members.column_names[:5] == ["cluster_id", "center_id", "size", "url", "is_center"]
    assert members["url"].to_pylist() == ["a", "b"]


def test_query_keeps_arrow_types_and_makes_names_unique(work):
    table = lshsql.query(work, "select count(*) as n, sum(size) as total, 1 as x, 2 as x from clusters")
    assert table.column_names == ["n", "total", "x", "x_1"]
    assert table.schema.field("n").type == pa.int64()
    assert table.schema.field("total").type == pa.decimal128(38, 0)  # DuckDB's HUGEINT in Arrow
    assert table.to_pylist() == [{"n": 5, "total": 2 + 2 + 2 + 2 + 1, "x": 1, "x_1": 2}]
    empty = lshsql.query(work, "select url, size from clusters where false")
    assert empty.num_rows == 0 and empty.schema.names == ["url", "size"]
    assert lshsql.query(work, "create temp view v as select 1").num_rows == 0


def test_to_pandas(work):
    pytest.importorskip("pandas")
    frame = lshsql.related(work, "c", resources=RESOURCES).to_pandas()
    assert list(frame["related_url"]) == ["d"] and frame["similarity"].iloc[0] == pytest.approx(3 / 4)


def test_polars_takes_the_tables(work):
    polars = pytest.importorskip("polars")
    frame = polars.from_arrow(lshsql.query(work, "select url, size from clusters order by url"))
    assert frame["url"].to_list() == ["a", "b", "c", "d", "e"]


def test_the_cli_prints_duckdbs_values_not_arrows(work):
    result = cli("query", "select sum(size) as total from clusters", "--work", str(work), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"total": 9}  # a number, not the decimal's text
    related = cli("related", "a", "--work", str(work), "--format", "csv")
    assert related.stdout.splitlines()[0] == "related_url,similarity,n_bands,same_cluster"
    assert related.stdout.splitlines()[1].startswith("b,0.6,") and related.stdout.endswith(",True\n")
