"""The public Python API: every function and type a notebook needs, from one module.

lshsql/__init__.py re-exports these names lazily, so `lshsql --help` does not import DuckDB, Arrow and lxml.
"""

from lshsql.engines.duckdb import Resources, connect
from lshsql.errors import InputError, LshsqlError, ParamError, StageError
from lshsql.lsh.plan import plan
from lshsql.lsh.scurve import choose_kl
from lshsql.params import Params
from lshsql.pipeline import STAGES, compiled_sql, extract_params_for, open_catalog, params_for, run
from lshsql.sources.extract import ExtractParams, ExtractSummary, extract, extract_if_changed
from lshsql.sources.ingest import IngestParams, IngestSummary, ingest, ingest_if_changed
from lshsql.tools.changes import change_counts, cluster_changes
from lshsql.tools.dedup import DedupParams, DedupSummary, dedup, dedup_files, removed
from lshsql.tools.evaluate import evaluate, score_clusters
from lshsql.tools.explore import cluster_labels, info, query, related, top_clusters
from lshsql.tools.hierarchy import HierarchyParams, cut, hierarchy
from lshsql.tools.mirrors import likely_mirrors, mirrors
from lshsql.tools.report import write_report
from lshsql.tools.show import cluster_members, stored_html

__all__ = [
    "extract",
    "extract_if_changed",
    "ingest",
    "ingest_if_changed",
    "run",
    "dedup",
    "dedup_files",
    "removed",
    "DedupParams",
    "DedupSummary",
    "compiled_sql",
    "open_catalog",
    "STAGES",
    "Params",
    "params_for",
    "extract_params_for",
    "choose_kl",
    "related",
    "top_clusters",
    "cluster_labels",
    "cluster_changes",
    "change_counts",
    "query",
    "info",
    "write_report",
    "plan",
    "evaluate",
    "score_clusters",
    "hierarchy",
    "HierarchyParams",
    "cut",
    "cluster_members",
    "stored_html",
    "mirrors",
    "likely_mirrors",
    "ExtractParams",
    "ExtractSummary",
    "IngestParams",
    "IngestSummary",
    "Resources",
    "connect",
    "LshsqlError",
    "InputError",
    "ParamError",
    "StageError",
]
