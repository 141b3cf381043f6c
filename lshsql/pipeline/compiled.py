"""The SQL a stage ran, as text the duckdb shell runs from the work folder: DIR/compiled/<stage>.sql.

A run writes, for every stage it ran, the stage's file of `sql/` it chose, rendered with the run's template
values (one column per min-hash, one branch per LSH table), after its inputs as views (`create or replace
view relation as select * from read_parquet('bags.parquet')`, paths relative to the work folder) and its
named parameters as `set variable name = value;`: DuckDB 2.0 reads `$name` in a query it runs without
bound parameters as the variable `name`, so the file's own text runs unchanged. `lshsql sql STAGE --work
DIR` prints it (compiled_sql). A file that calls a Python UDF (lsh_*) says so in its header: the duckdb
shell has none of them. Like dbt's target/compiled and sqlmesh's render.

    cd DIR && duckdb < compiled/pairs.sql
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from lshsql import __version__, manifest, sqlfiles, workdir
from lshsql.errors import InputError
from lshsql.pipeline.stages import BAGS_SOURCE_SQL, STAGE_NAMES, input_paths, output_path

COMPILED = "compiled"
_PARAM_TYPE = re.compile(r"^--\s*param:\s*(\w+)\s+(\w+)", re.MULTILINE)
_UDF = re.compile(r"\b(lsh_\w+)\s*\(")


@dataclass
class Compiled:
    """What a runner ran for its stage's output: the file, its template values and named parameters, and
    each relation it read as the select of a view (in the order they are created)."""

    sql: str
    params: dict = field(default_factory=dict)
    context: dict | None = None
    views: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def parquet_view(work: Path, paths: str | list[str]) -> str:
    """The select of a view of Parquet file(s), as the runner registers them (no hive partitioning), by
    paths relative to the work folder when they are in it."""
    files = [paths] if isinstance(paths, str | Path) else list(paths)
    named = [_literal(_relative(work, Path(f))) for f in files]
    source = named[0] if len(named) == 1 else "[" + ", ".join(named) + "]"
    return f"select * from read_parquet({source}, hive_partitioning = false)"


def input_views(work: Path, relations: tuple[str, ...]) -> dict[str, str]:
    """The views pipeline.inputs.register makes of these relations: the work folder's Parquet files, or for
    a folder started from a user's bags table, user_bags and term_counts over it."""
    from lshsql.pipeline.inputs import user_bags_source

    views: dict[str, str] = {}
    user_bags = user_bags_source(work) if "term_counts" in relations else None
    for relation in relations:
        if relation == "term_counts" and user_bags:
            views["user_bags"] = user_bags_view(work, user_bags)
            views["term_counts"] = _select_of(sqlfiles.render(sqlfiles.load(BAGS_SOURCE_SQL)))
        else:
            views[relation] = parquet_view(work, input_paths(work, relation))
    return views


def user_bags_view(work: Path, path: Path) -> str:
    """The select of the view user_bags(url, term, weight) of a user's bags table, as the runner makes it."""
    from lshsql.pipeline.inputs import user_bags_columns

    return f"select {user_bags_columns(_columns(path))} from read_parquet({_literal(_relative(work, path))})"


def _columns(path: Path) -> list[str]:
    """The column names of a Parquet file; by DuckDB's reader when pyarrow cannot read its schema (a
    damaged ARROW:schema entry, which DuckDB ignores, as the run that read the file did)."""
    try:
        return pq.read_schema(path).names
    except (OSError, ValueError, pa.ArrowException):
        with duckdb.connect(config={"threads": 1, "memory_limit": "256MB"}) as con:
            described = con.execute("describe select * from read_parquet($p)", {"p": str(path)}).fetchall()
        return [row[0] for row in described]


def text(work: Path, stage: str, compiled: Compiled) -> str:
    """DIR/compiled/<stage>.sql: a header, the views, the variables, then the rendered stage file."""
    sql = sqlfiles.load(compiled.sql)
    body = sqlfiles.render(sql, compiled.context).rstrip()
    udfs = sorted(set(_UDF.findall(body)) | {u for v in compiled.views.values() for u in _UDF.findall(v)})
    lines = [
        f"-- lshsql {__version__}: the SQL of the stage {stage} in its last run, sql/{compiled.sql} rendered",
        f"-- Run from the work folder: cd {_shell_quote(str(work))} && duckdb < {COMPILED}/{stage}.sql",
        f"-- The run copied the final select to {output_path(work, stage).name} ({_order(sql.order)}).",
    ]
    stand_ins = {udf: _stand_in(udf) for udf in udfs}
    missing = [udf for udf, macro in stand_ins.items() if macro is None]
    if missing:
        lines.append(
            f"-- Needs the Python UDF(s) {', '.join(missing)} (lshsql/engines/udf.py), which lshsql "
            "registers on its own connection: the duckdb shell has none, so this runs there only once they "
            "exist."
        )
    lines += [f"-- {note}" for note in compiled.notes]
    lines.append("")
    lines += [macro for macro in stand_ins.values() if macro is not None]
    for relation, select in compiled.views.items():
        lines.append(f"create or replace view {relation} as {select};")
    types = dict(_PARAM_TYPE.findall(sql.text))
    used = sorted({name for s in _statements(body) for name in s})
    for name in used:
        lines.append(f"set variable {name} = {_value(compiled.params[name], types.get(name))};")
    lines.append("")
    return "\n".join(lines) + "\n" + body + ("" if body.endswith(";") else ";") + "\n"


def _stand_in(udf: str) -> str | None:
    """The SQL macro of sql/udf/<udf>.sql that gives a UDF's values in a plain DuckDB, if there is one."""
    path = sqlfiles.sql_dir() / "udf" / f"{udf}.sql"
    return path.read_text().rstrip() + "\n" if path.exists() else None


def write(work: Path, stage: str, compiled: Compiled) -> Path:
    """Write DIR/compiled/<stage>.sql (atomically)."""
    path = work / COMPILED / f"{stage}.sql"
    path.parent.mkdir(parents=True, exist_ok=True)
    workdir.write_text(path, text(work, stage, compiled))
    return path


def compiled_sql(work: str | Path, stage: str) -> str:
    """The exact SQL the stage ran in the work folder's last run (DIR/compiled/<stage>.sql), runnable in the
    duckdb shell from the work folder where it needs no Python UDF (its header says so when it does).

    Example:
        >>> print(compiled_sql("work/example", "pairs"))  # doctest: +SKIP
    """
    work = Path(work)
    if stage not in STAGE_NAMES:
        raise InputError(f"unknown stage '{stage}' (stages: {', '.join(STAGE_NAMES)})")
    path = work / COMPILED / f"{stage}.sql"
    if not path.exists():
        ran = stage in manifest.read(work)["stages"]
        hint = "run it again with `lshsql run --force`" if ran else "run it first: `lshsql run`"
        raise InputError(f"{work}: no compiled SQL of the stage {stage}; {hint}")
    return path.read_text(encoding="utf-8")


def _statements(body: str) -> list[set[str]]:
    return [set(s.named_parameters) for s in _split(body)]


_PARSER_LOCK = threading.Lock()


@cache
def _parser() -> duckdb.DuckDBPyConnection:
    """One connection of the process that only splits SQL text: opening one per stage written cost more
    than writing the file."""
    return duckdb.connect(config={"threads": 1})


def _split(text: str) -> list:
    """DuckDB's statements of a text (extract_statements), on the shared parser connection."""
    with _PARSER_LOCK:  # a connection is used by one thread at a time
        return _parser().extract_statements(text)


def _value(value, sql_type: str | None) -> str:
    """A SQL literal of a parameter value, of the type the file's header declares."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"cast({value} as {(sql_type or 'bigint').lower()})"
    if isinstance(value, float):
        return f"cast('{value!r}' as {(sql_type or 'double').lower()})"  # repr round-trips the double
    return _literal(str(value))


def _order(order: str) -> str:
    return "unordered" if order.startswith("none") else f"ordered by {order}"


def _select_of(text: str) -> str:
    """A one-select file's text without its trailing semicolon and comments, for a view."""
    return _split(text)[-1].query.strip().rstrip(";")


def _relative(work: Path, path: Path) -> str:
    absolute = Path(path).resolve()
    try:
        return absolute.relative_to(Path(work).resolve()).as_posix()
    except ValueError:
        return str(absolute)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _shell_quote(text: str) -> str:
    return text if re.fullmatch(r"[\w./-]+", text) else "'" + text.replace("'", "'\\''") + "'"
