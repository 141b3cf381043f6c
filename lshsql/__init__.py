"""lshsql: related and near-duplicate pages of a web crawl, by min-hash LSH in SQL (DuckDB).

The stages run in this order; each reads the previous one's Parquet output in the work folder:
    extract  crawl -> pages, links, fragments   (Python + lxml; sql/01..03 finish it)
    ingest   documents -> pages, fragments, labels (instead of extract: JSON Lines, Parquet, Reuters SGML)
    run      fragments (or a user's bags) -> term_counts -> urls, terms -> bags -> element_hashes
             -> signatures -> candidates -> pairs -> clusters   (sql/10..62, see pipeline.STAGES)

The public API is imported lazily, so `lshsql --help` does not pay for DuckDB, Arrow and lxml.
"""

from importlib import import_module

__version__ = "0.1.0"

_API = {
    "extract": "lshsql.extract",
    "extract_if_changed": "lshsql.extract",
    "ingest": "lshsql.ingest",
    "ingest_if_changed": "lshsql.ingest",
    "run": "lshsql.pipeline",
    "STAGES": "lshsql.pipeline",
    "Params": "lshsql.params",
    "choose_kl": "lshsql.params",
    "related": "lshsql.explore",
    "top_clusters": "lshsql.explore",
    "query": "lshsql.explore",
    "info": "lshsql.explore",
    "write_report": "lshsql.report",
    "plan": "lshsql.plan",
    "evaluate": "lshsql.evaluate",
    "ExtractParams": "lshsql.extract",
    "ExtractSummary": "lshsql.extract",
    "IngestParams": "lshsql.ingest",
    "IngestSummary": "lshsql.ingest",
    "Resources": "lshsql.db",
    "connect": "lshsql.db",
    "LshsqlError": "lshsql.errors",
    "InputError": "lshsql.errors",
    "ParamError": "lshsql.errors",
    "StageError": "lshsql.errors",
}

__all__ = [*_API, "__version__"]


def __getattr__(name: str):
    if name in _API:
        return getattr(import_module(_API[name]), name)
    raise AttributeError(f"module 'lshsql' has no attribute {name!r}")
