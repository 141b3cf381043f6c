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
    """Print a table (see columns_and_rows) as aligned text, as CSV, or as JSON Lines (one object per row,
    column names as keys). As text, a list cell shows its items on lines (URLs one a line), a float 3
    decimals, and a longer cell is cut at 100 characters with an ellipsis (or with `wrap_last` the last
    column wrapped); CSV joins a list's items with spaces."""
    columns, rows = columns_and_rows(table)
    if fmt == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows([[_csv_value(v) for v in row] for row in rows])
    elif fmt == "json":
        for row in rows:
            record = {name: _json_value(v) for name, v in zip(columns, row, strict=True)}
            typer.echo(json.dumps(record, default=str, ensure_ascii=False, allow_nan=False))
    else:
        cells = [[[name] for name in columns]]
        for row in rows:
            cells.append([_text_lines(v, wrap_last and i == len(columns) - 1) for i, v in enumerate(row)])
        widths = [max(len(line) for row in cells for line in row[i]) for i in range(len(columns))]
        for n, row in enumerate(cells):
            for k in range(max(len(cell) for cell in row)):
                parts = [cell[k] if k < len(cell) else "" for cell in row]
                typer.echo("  ".join(v.ljust(w) for v, w in zip(parts, widths, strict=True)).rstrip())
            if n == 0:
                typer.echo("  ".join("-" * w for w in widths))


def _text_lines(value: object, wrap: bool) -> list[str]:
    """A table cell as the lines it shows."""
    if value is None:
        return [""]
    if isinstance(value, list | tuple):
        items = [_cut(printable(str(v), lines=False)) for v in value]
        if all(len(item) <= 24 and "/" not in item for item in items):  # words: packed, 48 characters a line
            return textwrap.wrap(" ".join(items), 48, break_long_words=False) or [""]
        return items or [""]  # URLs and long items: one a line
    if isinstance(value, float) and math.isfinite(value):
        text = f"{value:.3f}".rstrip("0")
        return [text + "0" if text.endswith(".") else text]
    text = printable(str(value), lines=False)
    return textwrap.wrap(text, 100, break_on_hyphens=False) or [""] if wrap else [_cut(text)]


def _cut(text: str) -> str:
    return text if len(text) <= 100 else text[:99] + "…"


def _csv_value(value: object) -> object:
    return " ".join(str(v) for v in value) if isinstance(value, list | tuple) else value
