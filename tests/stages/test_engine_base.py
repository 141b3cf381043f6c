"""The Engine seam (lshsql/engines/base.py): every operation the pipeline may call exists on both engines."""

from __future__ import annotations

from lshsql.engines.base import DuckDBEngine, Engine, SparkEngine


def test_both_engines_implement_every_engine_operation():
    """A method of Engine left to the base class raises NotImplementedError only when a run reaches it (on
    Spark, in tests that need Java): checked here for both engines without starting either."""
    operations = [
        name for name, value in vars(Engine).items() if callable(value) and not name.startswith("_")
    ]
    assert "materialize" in operations and "local_duckdb" in operations
    for engine in (DuckDBEngine, SparkEngine):
        missing = [name for name in operations if getattr(engine, name) is getattr(Engine, name)]
        assert not missing, f"{engine.__name__} lacks {missing}"
        assert engine.name and isinstance(engine.hashes_band_keys, bool)
