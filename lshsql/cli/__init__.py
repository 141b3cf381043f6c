"""The `lshsql` command: a thin typer layer over the Python API (lshsql/api.py), with one error boundary.

    app.py      the typer app, --version and main(): errors become one line `lshsql: error: ...`
    interrupts.py  Ctrl-C: the DuckDB queries running stopped at once
    options.py  options shared by several commands; the stage options, made from the Params dataclass
    output.py   --format table, csv or json; text made safe for a terminal
    extract.py  extract, ingest: fill a work folder from a crawl or from documents
    dedup.py    dedup: a corpus without its near-duplicates
    run.py      run, stage, sql: the SQL stages, and the SQL a stage ran
    read.py     related, clusters, diff, query, info, explain, show: read a run's tables
    tools.py    plan, eval, hierarchy, cut, environment, report, serve, mirrors

Each command imports the API inside its body, so `lshsql --help` does not import DuckDB, Arrow or lxml.
"""

from lshsql.cli import dedup, extract, read, run, tools
from lshsql.cli.app import app, main

# in the order `lshsql --help` lists them
COMMANDS = {
    "extract": extract.extract,
    "ingest": extract.ingest,
    "dedup": dedup.dedup,
    "run": run.run,
    "stage": run.stage,
    "sql": run.sql,
    "related": read.related,
    "clusters": read.clusters,
    "diff": read.diff,
    "query": read.query,
    "info": read.info,
    "plan": tools.plan,
    "explain": read.explain,
    "eval": tools.eval_,
    "hierarchy": tools.hierarchy,
    "cut": tools.cut,
    "environment": tools.environment,
    "report": tools.report,
    "serve": tools.serve,
    "show": read.show,
    "mirrors": tools.mirrors,
}
for _name, _command in COMMANDS.items():
    app.command(name=_name)(_command)
del _name, _command

__all__ = ["COMMANDS", "app", "main"]
