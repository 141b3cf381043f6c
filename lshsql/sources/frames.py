"""In-memory tables as `ingest` input: a pyarrow.Table, a pandas DataFrame or a polars DataFrame, each turned
into Arrow and read like a Parquet file (documents.py). pandas and polars are never imported here: a frame
is recognised by the module of its type, so neither is needed unless the caller already uses it."""

from __future__ import annotations

import hashlib

import pyarrow as pa

from lshsql.errors import InputError, one_line

KINDS = {"pyarrow": "pyarrow.Table", "pandas": "pandas.DataFrame", "polars": "polars.DataFrame"}


def table_kind(value: object) -> str | None:
    """'pyarrow.Table', 'pandas.DataFrame' or 'polars.DataFrame' for an in-memory table, else None (a
    path, say)."""
    if isinstance(value, pa.Table):
        return KINDS["pyarrow"]
    kind = type(value)
    package = kind.__module__.split(".")[0]
    if package in ("pandas", "polars") and kind.__name__ == "DataFrame":
        return KINDS[package]
    return None


def as_arrow(value: object, name: str) -> pa.Table:
    """The Arrow table of an in-memory table: pandas without its index, polars by .to_arrow(). A frame
    Arrow cannot hold (a column of mixed Python types) or a table whose columns are not told apart by
    name is a one-line InputError naming it as `name`."""
    kind = table_kind(value)
    try:
        if kind == KINDS["pandas"]:
            table = pa.Table.from_pandas(value, preserve_index=False)
        elif kind == KINDS["polars"]:
            table = value.to_arrow()
        elif kind is None:
            raise InputError(f"{name}: not a path, pyarrow.Table, pandas or polars DataFrame")
        else:
            table = value
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise InputError(f"{name}: cannot be turned into an Arrow table: {one_line(e, 200)}") from None
    names = table.column_names
    if repeated := sorted({c for c in names if names.count(c) > 1}):
        raise InputError(f"{name}: the column names {', '.join(map(repr, repeated))} are repeated")
    return table


class _Digest:
    """A file-like sink that hashes what is written to it."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.closed = False

    def write(self, data) -> int:
        self.hash.update(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def table_digest(table: pa.Table, columns: list[str]) -> str:
    """The sha256 of the table's `columns` (those present) as an Arrow IPC stream, written batch by batch
    so that no copy of the table is made: what an ingest of it depends on, in place of a file's size and
    modification time."""
    present = [c for c in dict.fromkeys(columns) if c in table.column_names]
    selected = table.select(present)
    sink = _Digest()
    with pa.ipc.new_stream(pa.PythonFile(sink, mode="w"), selected.schema) as writer:
        for batch in selected.to_batches():
            writer.write_batch(batch)
    return sink.hash.hexdigest()
