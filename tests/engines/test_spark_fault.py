"""`lshsql run --bags --engine spark` on a standalone cluster of two workers (bench/spark_cluster.py) with one
worker killed (kill -9 of its Worker JVM, executor JVM and Python workers) while the pairs stage's tasks
run: the run either finishes with DuckDB's pairs (Spark reruns the lost tasks on the other worker) or
stops with one `lshsql: error:` line, no traceback, and the work folder as it was when the stage began.
Every process the test started (master, workers, executors, the run's driver) must be gone at the end.

The cluster test is slow (about 2-3 minutes on 2 cores); skipped without pyspark or Java.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.engines.conftest import require_spark

require_spark()

import pyarrow.parquet as pq  # noqa: E402

from bench import spark_cluster  # noqa: E402
from tests.engines.test_spark_run import write_docs  # noqa: E402

COMMON = ["--weighting", "none", "--threshold", "0.5"]
RUN_TIMEOUT = 420  # seconds: a run that outlives it (a driver waiting for a worker forever) fails the test


@pytest.mark.slow
def test_a_worker_killed_in_the_pairs_stage(tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs.parquet", n_docs=800)
    duck, work = tmp_path / "duckdb", tmp_path / "spark"
    run = [sys.executable, "-m", "lshsql", "run", "--bags", str(docs), *COMMON]
    done = subprocess.run([*run, "--work", str(duck), "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with spark_cluster.running(tmp_path / "cluster", workers=2, cores=1, memory="1g") as cluster:
        started = spark_cluster.alive(cluster)
        port = spark_cluster.free_port()
        command = [*run, "--work", str(work), "--engine", "spark", "--spark-master", cluster.master_url,
                   *spark_cluster.spark_options(port)]  # fmt: skip
        result = spark_cluster.run_killing(
            command, cluster, "pairs", f"http://127.0.0.1:{port}", work, timeout=RUN_TIMEOUT
        )
    assert spark_cluster.alive(cluster) == [], "processes of the cluster or the run outlived the test"
    assert spark_cluster.live(started) == []
    log = result.stderr[-4000:]
    assert result.returncode != -9, f"the run did not end within {RUN_TIMEOUT} s:\n{log}"
    assert result.stage_at is not None, f"the pairs stage never began:\n{log}"
    assert result.killed_at is not None, (
        f"no pairs task or job was seen running, so no worker was killed:\n{log}"
    )
    assert len(result.pids) >= 2  # the Worker JVM and its executor JVM at least
    assert "Traceback" not in result.stderr, log  # no Python traceback
    assert not [line for line in result.stderr.splitlines() if line.startswith("\tat ")], log  # nor a JVM one
    print(
        f"pairs began at {result.stage_at:.1f} s, worker {result.worker} killed at {result.killed_at:.1f} s "
        f"(pids {result.pids}), exit {result.returncode} after {result.seconds:.1f} s"
    )
    if result.returncode == 0:
        expected = pq.read_table(duck / "pairs.parquet").to_pylist()
        assert len(expected) > 50
        assert pq.read_table(work / "pairs.parquet").to_pylist() == expected
    else:
        errors = [line for line in result.stderr.splitlines() if line.startswith("lshsql: error:")]
        assert len(errors) == 1 and result.stderr.rstrip().endswith(errors[0]), log
        assert spark_cluster.snapshot(work) == result.before, "the failed stage left files behind"
        assert "stacktrace" not in errors[0].lower(), errors[0]


# A task lost with its executor under spark.task.maxFailures=1, as py4j renders the JVM's exception.
JOB_ABORTED = """An error occurred while calling o1167.parquet.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 120.0 failed 1 times, \
most recent failure: Lost task 0.0 in stage 120.0 (TID 110) (127.0.0.1 executor 1): ExecutorLostFailure \
(executor 1 exited caused by one of the running tasks) Reason: Command exited with code 137
Driver stacktrace:
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2935)
\tat org.apache.spark.scheduler.DAGScheduler.$anonfun$abortStage$2(DAGScheduler.scala:2871)
Caused by: org.apache.spark.SparkException: lost
\tat org.apache.spark.scheduler.TaskSetManager.handleFailedTask(TaskSetManager.scala:1000)
"""


def test_a_job_spark_aborts_is_one_line_without_its_stack_trace() -> None:
    from pyspark.errors import PySparkException

    from lshsql.engines import spark
    from lshsql.errors import StageError

    def aborted() -> None:
        raise PySparkException(message=JOB_ABORTED)

    with pytest.raises(StageError) as raised:
        spark.spark_call("50_pairs.sql", aborted)
    assert str(raised.value) == (
        "sql/50_pairs.sql: Spark: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in "
        "stage 120.0 failed 1 times, most recent failure: Lost task 0.0 in stage 120.0 (TID 110) (127.0.0.1 "
        "executor 1): ExecutorLostFailure (executor 1 exited caused by one of the running tasks) Reason: "
        "Command exited with code 137"
    )
