"""Spark's concatenate of ordered parts sorts them: Spark reads a list of files in partitions of its own
choosing (larger files first), so the rows come out in order only by an ORDER BY. And Engine.rows."""

from __future__ import annotations

from tests.engines.conftest import require_spark

require_spark()

import pyarrow.parquet as pq  # noqa: E402

from tests.stages.test_40_candidates import parts_in_order  # noqa: E402


def test_spark_concatenates_ordered_parts_in_order(spark, tmp_path):
    from lshsql.engines.base import SparkEngine

    files = parts_in_order(tmp_path / "parts", rows=20_000)
    engine = SparkEngine(spark)
    engine.register({"parts": files[::-1]})  # listed out of order: the sort, not the listing, orders them
    assert engine.concatenate("parts", "u_id, v_id", tmp_path / "out.parquet", table="parts_out") == 60_000
    assert pq.read_table(tmp_path / "out.parquet")["u_id"].to_pylist() == list(range(60_000))
    # every row of a select, as on DuckDB (the candidates runner's counts per bin)
    query = "select cast(u_id as bigint) // 20000 as bin, count(*) as n from parts group by 1 order by bin"
    assert engine.rows(query) == [(0, 20_000), (1, 20_000), (2, 20_000)]
