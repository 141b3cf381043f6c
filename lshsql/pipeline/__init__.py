"""The SQL stages after extraction and the loop that runs them, one module per job. Each runner takes the
Engine the run opened (lshsql/engines/base.py) and calls its methods wherever DuckDB and Spark differ.

    stages.py      the stage registry (STAGES), the file a stage runs (sql_file), where a relation's Parquet
                   file is, template values
    runner.py      run(): the stages in order, fingerprints, what is up to date and skipped
    runners.py     RUNNERS: what each stage does around its SQL file (pairs_runner.py: the pairs stage's)
    inputs.py      relations registered for a stage; a user's bags table and tables of one's own checked
    accounting.py  the bags stage's rows used and dropped per reason; repeated (url, term) rows found
    batching.py    the buckets stage's batches of LSH tables and the pairs stage's blocks of url_id ranges
    rounds.py      the CENTER and connected-components loops of the clusters stage
    labels.py      cluster labels (sql/63_cluster_labels.sql): the cluster_labels stage, `lshsql cut`
    catalog.py     DIR/lshsql.duckdb (a view per output), register_outputs, DIR/info.json
    remembered.py  params_for, extract_params_for: the last run's options for those not given again
    compiled.py    DIR/compiled/<stage>.sql: the SQL each stage ran, runnable in the duckdb shell

This module re-exports the names the rest of lshsql and the tests use.
"""

from lshsql.pipeline.accounting import has_repeated_rows
from lshsql.pipeline.batching import pair_ranges, tables_per_batch
from lshsql.pipeline.catalog import (
    CATALOG,
    CATALOG_RELATIONS,
    open_catalog,
    register_outputs,
    write_catalog,
    write_info,
)
from lshsql.pipeline.compiled import compiled_sql
from lshsql.pipeline.inputs import check_user_table
from lshsql.pipeline.pairs_runner import min_hash_differences_fit_integer
from lshsql.pipeline.remembered import extract_params_for, params_for
from lshsql.pipeline.rounds import center, components
from lshsql.pipeline.runner import RunSummary, run, run_stages
from lshsql.pipeline.runners import RUNNERS, band_context, run_sql
from lshsql.pipeline.stages import (
    STAGE_NAMES,
    STAGES,
    Log,
    Stage,
    input_paths,
    output_path,
    sql_file,
    template_context,
)

__all__ = [
    "CATALOG",
    "CATALOG_RELATIONS",
    "RUNNERS",
    "STAGES",
    "STAGE_NAMES",
    "Log",
    "RunSummary",
    "Stage",
    "band_context",
    "center",
    "check_user_table",
    "compiled_sql",
    "components",
    "extract_params_for",
    "has_repeated_rows",
    "input_paths",
    "min_hash_differences_fit_integer",
    "output_path",
    "pair_ranges",
    "params_for",
    "register_outputs",
    "run",
    "run_stages",
    "run_sql",
    "sql_file",
    "tables_per_batch",
    "template_context",
    "open_catalog",
    "write_catalog",
    "write_info",
]
