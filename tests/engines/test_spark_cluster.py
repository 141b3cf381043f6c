"""`lshsql run CRAWL --engine spark --spark-master spark://...` on a real Spark standalone cluster (a master
and one worker started by bench/spark_cluster.py from pyspark's own scripts, every port on 127.0.0.1):
executors are separate JVMs with Python workers in another working directory, so this checks what local mode cannot — that the UDFs reach the executors, that
extraction tasks read relative input paths, and that Spark's writes land in the work folder — and that the
rows are still DuckDB's. Needs pyspark and Java (skipped without them); about a minute.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engines.conftest import FAST_JVM, require_spark

require_spark()

from bench import spark_cluster  # noqa: E402
from tests.conftest import html_response, write_warc  # noqa: E402
from tests.engines.test_spark_run import rows  # noqa: E402


def write_crawl(path: Path, seed: int = 5) -> Path:
    """A WARC of 24 pages, each linking to 6 of 18 target pages; the anchor text of a target is drawn from
    its group's 8 words (6 groups of 3), so targets of one group are near-duplicates by their anchors."""
    rng = random.Random(seed)
    letters = "abcdefgh"  # words are runs of letters: g0w1 would read as "g w" on every page
    groups = [[f"g{letters[g]}w{letters[i]}" for i in range(8)] for g in range(6)]
    records = []
    for page in range(24):
        links = []
        for target in rng.sample(range(18), 6):
            words = " ".join(rng.sample(groups[target // 3], 5))
            links.append(f"<p>see <a href='http://t.example/{target}.html'>{words}</a> here</p>")
        records.append(
            html_response(f"http://s.example/{page}.html", f"<title>page {page}</title>" + "".join(links))
        )
    return write_warc(path, records)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and one worker of 2 cores (bench/spark_cluster.py), every process of it (and of
    the runs given its environment) stopped at the end."""
    root = tmp_path_factory.mktemp("cluster")
    with spark_cluster.running(root, workers=1, cores=2, memory="2g") as started:
        yield started
    assert spark_cluster.alive(started) == []


def test_run_on_a_standalone_cluster_gives_duckdbs_rows(cluster, tmp_path):
    write_crawl(tmp_path / "crawl.warc.gz")
    options = ["--threshold", "0.3", "--buckets", "2", "--quiet"]

    def lshsql(*args: str) -> subprocess.CompletedProcess:
        # from tmp_path, with the crawl given relative to it, as a user at a shell would
        return subprocess.run(
            [sys.executable, "-m", "lshsql", *args],
            capture_output=True,
            text=True,
            timeout=900,
            cwd=tmp_path,
            env=spark_cluster.loopback_env(cluster.root),  # the driver binds to 127.0.0.1 too
        )

    result = lshsql("run", "crawl.warc.gz", "--work", "duckdb", *options)
    assert result.returncode == 0, result.stderr
    result = lshsql(
        "run", "crawl.warc.gz", "--work", "spark", *options, "--engine", "spark",
        "--spark-master", cluster.master_url, "--spark-conf", "spark.sql.shuffle.partitions=2",
        "--spark-conf", f"spark.driver.extraJavaOptions={FAST_JVM}",
        "--spark-conf", f"spark.executor.extraJavaOptions={FAST_JVM}", "--spark-conf", "spark.executor.memory=1g",
        "--spark-conf", "spark.ui.enabled=false",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    for table in ("pages", "links", "fragments/bucket=0/data", "pairs", "clusters", "cluster_labels"):
        assert rows(tmp_path / "spark", table) == rows(tmp_path / "duckdb", table), table
    assert len(rows(tmp_path / "duckdb", "pairs")) >= 10
    # the engine is no stage parameter: DuckDB finds the Spark folder, extraction included, up to date
    again = lshsql("run", "crawl.warc.gz", "--work", "spark", "--threshold", "0.3", "--buckets", "2")
    assert again.returncode == 0, again.stderr
    assert "files read" not in again.stderr and again.stdout.count("up to date") == 11, again.stdout


def test_a_master_whose_web_port_was_taken_starts_on_others(tmp_path, monkeypatch):
    """A port free_port() found may be taken before the master binds it (another test's Spark UI): the
    master exits rather than serve its pages on the next port, where start() would not look, and start()
    starts it again on other ports."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        real = spark_cluster.free_port
        ports = iter([real(), port])  # the master's port, then its web UI's: taken
        monkeypatch.setattr(spark_cluster, "free_port", lambda: next(ports, None) or real())
        with spark_cluster.running(tmp_path / "c", workers=1, cores=1, memory="1g") as started:
            assert not started.web_url.endswith(f":{port}")
            assert len(spark_cluster.alive_workers(started)) == 1
            assert len(started.processes) == 2  # the master that exited is not stopped again
