"""lshsql: related and near-duplicate pages of a web crawl, by min-hash LSH in SQL (DuckDB).

The stages run in this order; each reads the previous one's Parquet output in the work folder:
    extract  crawl -> pages, links, fragments   (Python + lxml; sql/01..03 finish it)
    ingest   documents -> pages, fragments, labels (instead of extract: JSON Lines, Parquet, Reuters SGML)
    run      fragments (or a user's bags) -> term_counts -> urls, terms -> bags -> element_hashes
             -> signatures -> candidates -> pairs -> clusters -> cluster_labels   (sql/10..63, see
             pipeline.STAGES; extract keeps surface_forms, the words behind the stems, for the labels)
    hierarchy  signatures -> merges -> cluster_tree   (LSH single link, sql/80..81; cut: sql/85)

The public API is imported lazily, so `lshsql --help` does not pay for DuckDB, Arrow and lxml.
"""

import sys
import types
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
    "cluster_labels": "lshsql.explore",
    "query": "lshsql.explore",
    "info": "lshsql.explore",
    "write_report": "lshsql.report",
    "plan": "lshsql.plan",
    "evaluate": "lshsql.evaluate",
    "score_clusters": "lshsql.evaluate",
    "hierarchy": "lshsql.hierarchy",
    "HierarchyParams": "lshsql.hierarchy",
    "cut": "lshsql.hierarchy",
    "cluster_members": "lshsql.show",
    "stored_html": "lshsql.show",
    "mirrors": "lshsql.mirrors",
    "likely_mirrors": "lshsql.mirrors",
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


class _Package(types.ModuleType):
    """Importing the submodule lshsql.extract would bind the name lshsql.extract to the module, so a
    notebook's second call of lshsql.extract(...) would fail: names of the API stay the functions.
    The modules themselves are in sys.modules (importlib.import_module("lshsql.extract"))."""

    def __setattr__(self, name: str, value) -> None:
        if name in _API and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
