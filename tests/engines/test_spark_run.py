"""`lshsql run --engine spark` gives exactly the pairs and clusters `lshsql run` (DuckDB) gives, on a small
synthetic bags table with planted near-duplicates, also in a rerun with --freeze-idf; and the engine is not
part of the stages' fingerprints.

Needs pyspark and Java (skipped without them). Each test runs Spark once, local[2], in a subprocess (the
real CLI).
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engines.conftest import FAST_JVM, require_spark

require_spark()

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

# Small data: the JVM's quick compiler only (as tests/engines/test_spark_golden.py).
FAST_START = ["--spark-conf", f"spark.driver.extraJavaOptions={FAST_JVM}"]
COMMON = ["--weighting", "none", "--threshold", "0.5", "--quiet"]


def lshsql(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lshsql", *args], capture_output=True, text=True, timeout=600
    )


def run_bags(docs: Path, work: Path, *options: str, spark: bool = False) -> None:
    """`lshsql run --bags docs --work work` with options, on Spark local[2] if `spark`; it must succeed."""
    on_spark = ["--engine", "spark", "--spark-master", "local[2]", *FAST_START] if spark else []
    result = lshsql("run", "--bags", str(docs), "--work", str(work), *options, *on_spark)
    assert result.returncode == 0, result.stderr


def write_docs(path: Path, n_docs: int = 300, seed: int = 11) -> Path:
    """Bags (url, term) of n_docs documents: groups of 1-4 near-duplicates of a random base of 30 terms
    (each member drops ~12 % of the base and adds 3 random terms) over a vocabulary of 600."""
    rng = random.Random(seed)
    words = [f"t{i:03d}" for i in range(600)]
    rows, n = [], 0
    while n < n_docs:
        base = rng.sample(words, 30)
        for _ in range(rng.choice([1, 1, 2, 3, 4])):
            terms = [w for w in base if rng.random() > 0.12] + rng.sample(words, 3)
            rows += [{"url": f"http://d{n:04d}.example/", "term": t} for t in dict.fromkeys(terms)]
            n += 1
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def rows(work: Path, table: str) -> list[dict]:
    return sorted(pq.read_table(work / f"{table}.parquet").to_pylist(), key=repr)


def test_spark_run_gives_duckdbs_pairs_and_clusters(tmp_path):
    docs = write_docs(tmp_path / "docs.parquet")
    duck, spark = tmp_path / "duckdb", tmp_path / "spark"
    run_bags(docs, duck, *COMMON)
    run_bags(docs, spark, *COMMON, spark=True)
    pairs = rows(duck, "pairs")
    assert len(pairs) > 50 and rows(spark, "pairs") == pairs
    clusters = rows(duck, "clusters")
    assert any(c["size"] > 1 for c in clusters) and rows(spark, "clusters") == clusters
    for table in ("urls", "bags", "signatures", "buckets", "candidates", "bucket_sizes", "cluster_labels"):
        assert rows(spark, table) == rows(duck, table), table
    # the engine is no stage parameter: DuckDB finds the Spark run's folder up to date
    again = lshsql(
        "run", "--bags", str(docs), "--work", str(spark), "--weighting", "none", "--threshold", "0.5"
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("up to date") == 11, again.stdout


def test_many_lsh_tables_on_spark_give_duckdbs_buckets(tmp_path):
    # over 64 tables a select takes a chunk of them (sql/macros/band_keys.sql): Spark refused a union of a
    # thousand selects as too complex to parse
    docs = write_docs(tmp_path / "docs.parquet", n_docs=100)
    duck, spark = tmp_path / "duckdb", tmp_path / "spark"
    tables = [*COMMON, "-k", "2", "-l", "1000"]
    run_bags(docs, duck, *tables)
    run_bags(docs, spark, *tables, spark=True)
    for table in ("buckets", "candidates", "pairs", "clusters"):
        assert rows(spark, table) == rows(duck, table), table
    assert len(rows(duck, "pairs")) > 10


def test_a_spark_rerun_with_a_frozen_vocabulary_gives_duckdbs(tmp_path):
    """--freeze-idf on a table that grew: the first run freezes df and N, the rerun in the same folder keeps
    them. Spark, rerun in a copy of the first run's folder (the engine is no stage parameter), gives the
    rows DuckDB's rerun gives."""
    before = write_docs(tmp_path / "before.parquet", n_docs=200)
    after = write_docs(tmp_path / "after.parquet", n_docs=300)  # the same seed: before's rows and more
    frozen = ["--weighting", "tfidf", "--threshold", "0.5", "--freeze-idf", "--quiet"]
    duck, spark = tmp_path / "duckdb", tmp_path / "spark"
    run_bags(before, duck, *frozen)
    first_frozen = (duck / "frozen_idf.parquet").read_bytes()
    shutil.copytree(duck, spark)
    run_bags(after, duck, *frozen)
    run_bags(after, spark, *frozen, spark=True)
    for work in (duck, spark):  # kept by the rerun, not frozen again
        assert (work / "frozen_idf.parquet").read_bytes() == first_frozen
    n_before = len(set(pq.read_table(before).column("url").to_pylist()))
    assert {r["corpus_urls"] for r in rows(duck, "frozen_idf")} == {n_before}
    assert n_before < len(rows(duck, "urls"))  # the rerun has more URLs than the frozen N
    for table in ("urls", "bags", "signatures", "pairs", "clusters"):
        assert rows(spark, table) == rows(duck, table), table
    assert len(rows(duck, "pairs")) > 20


def test_a_spark_rerun_in_a_duckdb_folder_reuses_nothing_and_gives_duckdbs(tmp_path):
    """A folder DuckDB ran holds a basis for reusing signatures, buckets and pairs (DIR/reuse). Spark,
    rerun there with another --threshold, recomputes the pairs without it: the rows DuckDB gives."""
    docs = write_docs(tmp_path / "docs.parquet", n_docs=200)
    duck, spark = tmp_path / "duckdb", tmp_path / "spark"
    run_bags(docs, spark, *COMMON)
    other = ["--weighting", "none", "--threshold", "0.6", "--quiet"]
    run_bags(docs, spark, *other, spark=True)
    run_bags(docs, duck, *other)
    assert len(rows(duck, "pairs")) > 20
    for table in ("buckets", "candidates", "pairs"):
        assert rows(spark, table) == rows(duck, table), table
    # a rerun keeps the ids of the clusters before it, where a fresh folder numbers them from 1
    clusters = [sorted((r | {"cluster_id": 0} for r in rows(w, "clusters")), key=repr) for w in (spark, duck)]
    assert clusters[0] == clusters[1]


def test_settings_the_rows_depend_on_cannot_be_overridden():
    pytest.importorskip("pyspark")
    from lshsql.engines import spark
    from lshsql.errors import ParamError

    with pytest.raises(ParamError, match="spark.sql.ansi.enabled: fixed by lshsql"):
        spark.session("local[1]", {"spark.sql.ansi.enabled": "false"})
