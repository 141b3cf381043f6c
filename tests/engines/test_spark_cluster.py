"""`lshsql run CRAWL --engine spark --spark-master spark://...` on a real Spark standalone cluster (a master
and one worker started here from pyspark's own scripts): executors are separate JVMs with Python workers in
another working directory, so this checks what local mode cannot — that the UDFs reach the executors, that
extraction tasks read relative input paths, and that Spark's writes land in the work folder — and that the
rows are still DuckDB's. Needs pyspark and Java (skipped without them); about a minute.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engines.conftest import FAST_JVM, require_spark

require_spark()

import pyspark  # noqa: E402

from tests.conftest import html_response, write_warc  # noqa: E402
from tests.engines.test_spark_run import rows  # noqa: E402

SPARK_HOME = Path(pyspark.__file__).parent


def write_crawl(path: Path, seed: int = 5) -> Path:
    """A WARC of 24 pages, each linking to 6 of 18 target pages; the anchor text of a target is drawn from
    its group's 8 words (6 groups of 3), so targets of one group are near-duplicates by their anchors."""
    rng = random.Random(seed)
    groups = [[f"g{g}w{i}" for i in range(8)] for g in range(6)]
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(log: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}
    return subprocess.Popen(
        [str(SPARK_HOME / "bin" / "spark-class"), *args],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # its own process group: the JVM and its children stop together
    )


def wait_for(log: Path, text: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(
        f"{log.name}: no '{text}' after {seconds} s:\n{log.read_text(errors='replace')[-2000:]}"
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """spark://127.0.0.1:<port>: a standalone master and one worker of 2 cores."""
    root = tmp_path_factory.mktemp("cluster")
    port = free_port()
    master_url = f"spark://127.0.0.1:{port}"
    master = start(
        root / "master.log",
        "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
        "--webui-port", str(free_port()),
    )  # fmt: skip
    processes = [master]
    try:
        wait_for(root / "master.log", "I have been elected leader")
        processes.append(
            start(
                root / "worker.log",
                "org.apache.spark.deploy.worker.Worker",
                master_url,
                "--cores",
                "2",
                "--memory",
                "2g",
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(root / "work"),
            )  # fmt: skip
        )
        wait_for(root / "worker.log", "Successfully registered with master")
        yield master_url
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)


def test_run_on_a_standalone_cluster_gives_duckdbs_rows(cluster, tmp_path):
    write_crawl(tmp_path / "crawl.warc.gz")
    options = ["--threshold", "0.3", "--buckets", "2", "--quiet"]

    def lshsql(*args: str) -> subprocess.CompletedProcess:
        # from tmp_path, with the crawl given relative to it, as a user at a shell would
        return subprocess.run(
            [sys.executable, "-m", "lshsql", *args], capture_output=True, text=True, timeout=900, cwd=tmp_path
        )

    result = lshsql("run", "crawl.warc.gz", "--work", "duckdb", *options)
    assert result.returncode == 0, result.stderr
    result = lshsql(
        "run", "crawl.warc.gz", "--work", "spark", *options, "--engine", "spark", "--spark-master", cluster,
        "--spark-conf", "spark.sql.shuffle.partitions=2", "--spark-conf", f"spark.driver.extraJavaOptions={FAST_JVM}",
        "--spark-conf", f"spark.executor.extraJavaOptions={FAST_JVM}", "--spark-conf", "spark.executor.memory=1g",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    for table in ("pages", "links", "fragments/bucket=0/data", "pairs", "clusters", "cluster_labels"):
        assert rows(tmp_path / "spark", table) == rows(tmp_path / "duckdb", table), table
    assert len(rows(tmp_path / "duckdb", "pairs")) >= 10
    # the engine is no stage parameter: DuckDB finds the Spark folder, extraction included, up to date
    again = lshsql("run", "crawl.warc.gz", "--work", "spark", "--threshold", "0.3", "--buckets", "2")
    assert again.returncode == 0, again.stderr
    assert "files read" not in again.stderr and again.stdout.count("up to date") == 12, again.stdout
