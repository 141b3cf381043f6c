"""One SparkSession for every in-process Spark test (it takes 5-10 s to start): local[1], tuned for tiny data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def require_spark() -> None:
    """Skip the calling test module where pyspark, sqlglot or Java is missing (call it at module level,
    before importing anything that needs them)."""
    try:
        import pyspark  # noqa: F401
        import sqlglot  # noqa: F401
    except ImportError:
        pytest.skip(
            "the Spark engine needs pyspark and sqlglot: pip install 'lshsql[spark]'", allow_module_level=True
        )
    if not shutil.which("java"):
        pytest.skip("the Spark engine needs Java: no java on PATH", allow_module_level=True)


# Tiny data: the JVM's quick compiler only and one shuffle partition halve the tests' time (C2 and 200
# partitions pay off on big data, not here).
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
FAST_START = {"spark.driver.extraJavaOptions": FAST_JVM, "spark.sql.shuffle.partitions": "1"}


@pytest.fixture(scope="session")
def spark():
    """The session (skipped without pyspark, sqlglot or Java: each module checks first)."""
    from lshsql.engines import spark as engine

    session = engine.session("local[1]", FAST_START)
    yield session
    session.stop()


def pytest_collection_modifyitems(config, items) -> None:
    """Every test of this folder is a Spark engine test: `make test` leaves them to `make test-all`."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.spark)
