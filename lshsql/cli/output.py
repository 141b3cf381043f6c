"""What the commands print: tables as aligned text, CSV or JSON Lines (--format), and text made safe for
a terminal."""

from __future__ import annotations

import csv
import json
import math
import re
import sys
import textwrap
from typing import Annotated

import typer

OUTPUT_FORMATS = ("table", "csv", "json")


def _output_format(value: str) -> str:
    """Check --format as it is parsed, so a typo stops the command before it runs or writes anything."""
    from lshsql.errors import ParamError

    if value not in OUTPUT_FORMATS:
        raise ParamError(f"--format must be table, csv or json, got '{value}'")
    return value


OutputFormat = Annotated[
    str,
    typer.Option(
        help="table, csv or json (JSON Lines: one object per row; NaN and infinities as null).",
        callback=_output_format,
    ),
]


def _json_value(value: object) -> object:
    """`value` as JSON can hold it: NaN and infinities (which json.dumps writes as invalid NaN/Infinity
    tokens, as DuckDB's to_json does) become null, also inside lists and structs; map keys become strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def printable(text: str, lines: bool = True) -> str:
    """Text as the terminal should show it: control characters (escape sequences a crawled title may
    carry, tabs; with lines=False newlines too, for a table cell) as spaces, so no page can move the
    cursor, retitle the window or hide a row."""
    return (_CONTROL_BUT_NEWLINE if lines else _CONTROL).sub(" ", text)


def echo_lines(lines) -> None:
    """Print each line of a summary (an iterable of str) on standard output."""
    for line in lines:
        typer.echo(line)


def columns_and_rows(table) -> tuple[list[str], list[tuple]]:
    """The column names and rows of a pyarrow.Table (what the read functions return) or of a
    tools.explore.Table (DuckDB's Python values: `query`, `info`)."""
    if hasattr(table, "column_names"):  # pyarrow, imported by the function that made the table
        return table.column_names, list(zip(*(column.to_pylist() for column in table.columns), strict=True))
    return table.columns, table.rows


def print_table(table, fmt: str = "table", wrap_last: bool = False) -> None:
    """Print a table (see columns_and_rows) as aligned text (cells cut at 100 characters, or with
    `wrap_last` the last column wrapped onto more lines), as CSV, or as JSON Lines (one object per row,
    column names as keys)."""
    columns, rows = columns_and_rows(table)
    if fmt == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
    elif fmt == "json":
        for row in rows:
            record = {name: _json_value(v) for name, v in zip(columns, row, strict=True)}
            typer.echo(json.dumps(record, default=str, ensure_ascii=False, allow_nan=False))
    else:
        cells = [
            columns,
            *[["" if v is None else printable(str(v), lines=False) for v in row] for row in rows],
        ]
        widths = [min(max(len(row[i]) for row in cells), 100) for i in range(len(columns))]
        indent = " " * (sum(widths[:-1]) + 2 * (len(widths) - 1))
        for n, row in enumerate(cells):
            last = textwrap.wrap(row[-1], 100, break_on_hyphens=False) if wrap_last and row[-1] else [row[-1]]
            line = "  ".join(v[:100].ljust(w) for v, w in zip([*row[:-1], last[0]], widths, strict=True))
            typer.echo(line.rstrip())
            for more in last[1:]:
                typer.echo(indent + more)
            if n == 0:
                typer.echo("  ".join("-" * w for w in widths))
