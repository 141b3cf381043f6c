"""Stage SQL files: parse their contract header, bind parameters by name, materialize the final select.

A stage file reads named relations, may run setup statements, and ends in one `select`. The runner (not
the file) owns paths: inputs become views through DuckDB's relation API and the final select is copied to
Parquet, so no path or user value is ever formatted into SQL text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import duckdb

from lshsql import db
from lshsql.errors import StageError

_HEADER_LINE = re.compile(r"^--\s*(\w+):\s*(.*)$")
_RELATION = re.compile(r"(\w+)\s*(?:\([^)]*\))?")
_TRAILING_SEMICOLON = re.compile(r";\s*(--[^\n]*\s*)*$")


@dataclass(frozen=True)
class SqlFile:
    """A parsed stage file: what it reads and writes, its parameters and its statements' text."""

    name: str
    path: Path
    stage: str
    reads: tuple[str, ...]
    writes: str
    order: str
    params: tuple[str, ...]
    text: str


def sql_dir() -> Path:
    """The packaged `sql/` folder of a wheel install, or the repo's `sql/` in an editable install."""
    packaged = resources.files("lshsql").joinpath("sql")
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "sql"


@cache
def load(name: str) -> SqlFile:
    """Read `sql/<name>` and parse its `-- key: value` header."""
    path = sql_dir() / name
    text = path.read_text(encoding="utf-8")
    header: dict[str, list[str]] = {}
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        match = _HEADER_LINE.match(line)
        if match:
            header.setdefault(match.group(1), []).append(match.group(2).strip())
    reads = tuple(m.group(1) for v in header.get("reads", []) for m in _RELATION.finditer(v))
    params = tuple(v.split()[0] for v in header.get("param", []) if v and v != "none")
    return SqlFile(
        name=name,
        path=path,
        stage=_one(header, "stage", name),
        reads=reads,
        writes=_RELATION.match(_one(header, "writes", name)).group(1),
        order=_one(header, "order", name),
        params=params,
        text=text,
    )


def _one(header: dict[str, list[str]], key: str, name: str) -> str:
    values = header.get(key)
    if not values:
        raise StageError(f"sql/{name}: header has no '-- {key}:' line")
    return values[0]


def register_inputs(con: duckdb.DuckDBPyConnection, inputs: dict[str, str | list[str]]) -> None:
    """Make each input Parquet file (or list/glob of files) a view named after its relation."""
    for relation, path in inputs.items():
        con.read_parquet(path, hive_partitioning=False).create_view(relation, replace=True)


def final_select(con: duckdb.DuckDBPyConnection, sql: SqlFile, params: dict) -> tuple[str, dict]:
    """Run the setup statements; return the text and bound parameters of the final select."""
    statements = con.extract_statements(sql.text)
    if not statements:
        raise StageError(f"sql/{sql.name}: no statements")
    for number, statement in enumerate(statements[:-1], start=1):
        _execute(con, sql, number, statement.query, _bind(statement.named_parameters, params))
    last = statements[-1]
    if last.type != duckdb.StatementType.SELECT:
        raise StageError(f"sql/{sql.name}: the last statement must be a select")
    return _TRAILING_SEMICOLON.sub("", last.query.strip()), _bind(last.named_parameters, params)


def materialize(con: duckdb.DuckDBPyConnection, sql: SqlFile, params: dict, out: str | Path) -> int:
    """Copy the stage's final select to one Parquet file (ordered, so byte-identical on re-runs)."""
    query, bound = final_select(con, sql, params)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    copy = f"copy ({query}\n) to $lshsql_out (format parquet, compression zstd)"
    _execute(con, sql, 0, copy, {**bound, "lshsql_out": str(out)})
    return _count(con, out)


def materialize_partitioned(
    con: duckdb.DuckDBPyConnection, sql: SqlFile, params: dict, out_dir: str | Path, column: str, n: int
) -> int:
    """Write the final select as `out_dir/<column>=<i>/data.parquet` for i in 0..n-1, one ordered copy
    per partition: DuckDB's own PARTITION_BY writes are not byte-identical between runs."""
    query, bound = final_select(con, sql, params)
    table = f"lshsql_{sql.stage}"
    _execute(con, sql, 0, f"create or replace temp table {table} as {query}", bound)
    rows = 0
    for i in range(n):
        path = Path(out_dir) / f"{column}={i}" / "data.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        copy = (
            f"copy (select * exclude ({column}) from {table} where {column} = $part order by {sql.order}) "
            "to $lshsql_out (format parquet, compression zstd)"
        )
        _execute(con, sql, 0, copy, {"part": i, "lshsql_out": str(path)})
        rows += _count(con, path)
    con.execute(f"drop table {table}")
    return rows


def _bind(names: set[str], params: dict) -> dict:
    missing = sorted(set(names) - params.keys())
    if missing:
        raise StageError(f"missing SQL parameter(s): {', '.join(missing)}")
    return {name: params[name] for name in names}


def _execute(con: duckdb.DuckDBPyConnection, sql: SqlFile, number: int, query: str, params: dict) -> None:
    try:
        con.execute(query, params).fetchall()  # DuckDB 2.0: a result must be consumed before the next call
    except duckdb.Error as e:
        message = " ".join(str(e).split())
        raise StageError(f"sql/{sql.name}: statement {number}: {message}") from None


def _count(con: duckdb.DuckDBPyConnection, path: str | Path) -> int:
    return db.scalar(con, "select count(*) from read_parquet($p)", {"p": str(path)})
