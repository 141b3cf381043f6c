"""lshsql: related and near-duplicate pages of a web crawl, by min-hash LSH in SQL (DuckDB).

The stages run in this order; each reads the previous one's Parquet output in the work folder:
    extract  crawl -> pages, links, fragments   (Python + lxml; sql/01..03 finish it)
    ingest   documents -> pages, fragments, labels (instead of extract: JSON Lines, Parquet, Reuters SGML)
    run      fragments (or a user's bags) -> term_counts -> urls, terms -> bags -> signatures
             -> candidates -> pairs -> clusters -> cluster_labels   (sql/10..63, see
             pipeline.STAGES; extract keeps surface_forms, the words behind the stems, for the labels)
    hierarchy  signatures -> merges -> cluster_tree   (LSH single link, sql/80..81; cut: sql/85)

The public API lives in lshsql/api.py; its names are re-exported here lazily, so `lshsql --help`
does not pay for DuckDB, Arrow and lxml.
"""

from importlib import import_module

__version__ = "0.1.0"

_API_NAMES = frozenset(
    [
        "DedupParams",
        "DedupSummary",
        "ExtractParams",
        "ExtractSummary",
        "HierarchyParams",
        "IngestParams",
        "IngestSummary",
        "InputError",
        "LshsqlError",
        "ParamError",
        "Params",
        "Resources",
        "STAGES",
        "StageError",
        "change_counts",
        "choose_kl",
        "cluster_changes",
        "cluster_labels",
        "cluster_members",
        "compiled_sql",
        "connect",
        "cut",
        "dedup",
        "dedup_files",
        "evaluate",
        "extract",
        "extract_if_changed",
        "extract_params_for",
        "hierarchy",
        "info",
        "ingest",
        "ingest_if_changed",
        "likely_mirrors",
        "mirrors",
        "open_catalog",
        "params_for",
        "plan",
        "query",
        "related",
        "removed",
        "run",
        "score_clusters",
        "stored_html",
        "top_clusters",
        "write_report",
    ]
)

__all__ = [*sorted(_API_NAMES), "__version__"]


def __getattr__(name: str):
    if name in _API_NAMES:
        return getattr(import_module("lshsql.api"), name)
    raise AttributeError(f"module 'lshsql' has no attribute {name!r}")
