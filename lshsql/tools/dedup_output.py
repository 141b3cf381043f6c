"""The files `lshsql dedup` writes: the kept rows of the input, unchanged and in input order, and what was
removed, each in the format of its extension. A file is written under a temporary name and renamed when
whole, so it is complete or absent.

JSON Lines read and written as JSON Lines keep their lines byte for byte (but for blanks around the object,
which DuckDB's reader strips). Any other pairing goes through Arrow (tools/dedup_rows.py): Parquet and
in-memory tables keep their exact column types; JSON Lines written to Parquet or CSV get the types DuckDB's
read_json infers; inputs with different columns make one table of them all.
"""

from __future__ import annotations

import glob
import gzip
import io
import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from lshsql import workdir
from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.sources import corpus
from lshsql.sources.corpus import CorpusSource
from lshsql.tools import dedup_rows

FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".jsonl.gz": "jsonl",
    ".ndjson.gz": "jsonl",
    ".parquet": "parquet",
    ".csv": "csv",
    ".csv.gz": "csv",
}
REMOVED_COLUMNS = ("row", "id", "reason", "kept_row", "kept_id", "kept_earlier", "similarity")


def format_of(path: str | Path) -> str | None:
    """'jsonl', 'parquet' or 'csv' from the file name's extension, or None."""
    name = str(path).lower()
    return next((fmt for suffix, fmt in FORMATS.items() if name.endswith(suffix)), None)


def check_columns(
    sources: list[CorpusSource], out: str | Path | None, removed: str | Path | None, removed_rows: bool
) -> None:
    """Before any work: the one-line InputError of dedup_rows.unified where the Parquet and in-memory inputs'
    columns cannot be one Parquet output (JSON Lines and CSV inputs are typed when written; a CSV output
    holds any column as text)."""
    tables = [
        path for path in (out, removed if removed_rows else None) if path and format_of(path) == "parquet"
    ]
    if tables:
        dedup_rows.unified(
            {
                str(s.path): dedup_rows.schema_of(s, None, None)
                for s in sources
                if s.kind in ("parquet", "table")
            }
        )


def check_outputs(out: str | Path | None, removed: str | Path | None, work: Path) -> None:
    """InputError, before any work is done, for an output name whose format is not known, one that is a
    folder or in a folder that cannot be written (but the work folder, which the dedup makes), or the kept
    and the removed documents named alike."""
    for path in (p for p in (out, removed) if p is not None):
        if format_of(path) is None:
            raise InputError(f"{path}: name the output .jsonl, .jsonl.gz, .parquet or .csv")
        if Path(path).is_dir():
            raise InputError(f"{path}: is a folder; name a file")
        folder = Path(path).parent
        if folder.resolve() == work.resolve() and not folder.exists():
            continue  # made by the dedup, or its one-line error
        if not folder.is_dir():
            raise InputError(f"{path}: no such folder {folder}")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(f"{path}: the folder {folder} cannot be written")
    if out is not None and removed is not None and Path(out).resolve() == Path(removed).resolve():
        raise InputError(f"{out}: names both the kept and the removed documents; give --removed another file")


def write_outputs(
    work: Path,
    sources: list[CorpusSource],
    out: str | Path | None,
    removed: str | Path | None,
    removed_rows: bool,
    resources: db.Resources,
) -> list[str]:
    """Write KEPT and REMOVED (when named); return the paths written."""
    written = []
    if out is not None:
        write_rows(Path(out), sources, dedup_rows.selected(work, "kept", resources), resources)
        written.append(str(out))
    if removed is not None:
        if removed_rows:
            picks = dedup_rows.selected(work, "duplicate", resources)
            fmt = format_of(removed)
            empty = None  # a JSON Lines file of no row has no columns to say
            if not picks and fmt in ("parquet", "csv"):
                empty = _removed_rows_schema(work, sources, fmt, resources)
            write_rows(Path(removed), sources, picks, resources, empty)
        else:
            _write_removed_table(work, Path(removed), resources)
        written.append(str(removed))
    return written


def _removed_rows_schema(
    work: Path, sources: list[CorpusSource], fmt: str | None, resources: db.Resources
) -> pa.Schema:
    """The columns of removed rows when none was removed: those of the kept rows, and the ADDED ones."""
    kept = dedup_rows.selected(work, "kept", resources)
    with dedup_rows.typed_rows(sources, kept, resources, fmt == "csv") as (schema, _):
        columns = list(schema or [])
    return pa.schema(columns + list(dedup_rows.ADDED_SCHEMA))


def kept_table(work: Path, sources: list[CorpusSource], resources: db.Resources) -> pa.Table:
    """The kept rows as one Arrow table (for the Python API)."""
    with dedup_rows.typed_rows(sources, dedup_rows.selected(work, "kept", resources), resources) as (
        schema,
        batches,
    ):
        if schema is None:
            return _empty_like(sources, resources)
        return pa.Table.from_batches([dedup_rows.aligned(batch, schema) for batch in batches], schema)


def _empty_like(sources: list[CorpusSource], resources: db.Resources) -> pa.Table:
    if sources[0].kind in ("parquet", "table"):
        return corpus.arrow_schema(sources[0]).empty_table()
    return pa.table({})


# --- writing ----------------------------------------------------------------------------------------------


def write_rows(
    path: Path,
    sources: list[CorpusSource],
    picks: dict[int, tuple[np.ndarray, dict]],
    resources: db.Resources,
    empty: pa.Schema | None = None,
) -> None:
    """The selected rows of every source, in input order, to `path` (complete or absent); a Parquet or
    CSV file of no row has the columns of `empty`."""
    fmt = format_of(path)
    tmp = _temporary(path)
    try:
        if fmt == "jsonl":
            with ExitStack() as stack:
                f = stack.enter_context(_open_text(tmp, str(path)))
                con = None

                def to_json(batch: pa.RecordBatch) -> list[str]:  # one DuckDB for every non-JSON source
                    nonlocal con
                    if con is None:
                        con = stack.enter_context(
                            db.connect(db.Resources(memory_limit=resources.memory_limit, threads=1))
                        )
                        con.execute("set preserve_insertion_order = true")
                    return _to_json(con, batch)

                for line in dedup_rows.lines_in_order(sources, picks, resources, to_json):
                    f.write(line)
                    f.write("\n")
        else:
            with dedup_rows.typed_rows(sources, picks, resources, fmt == "csv") as (schema, batches):
                _write_arrow(tmp, fmt, str(path), batches, resources, schema or empty)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _temporary(path: Path) -> Path:
    """The file this process writes `path` as until it is whole (then renamed into place); such files left
    beside it by processes that were killed are removed first."""
    for left in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = left.name[len(path.name) + 2 : -len(".tmp")]
        if pid.isdigit() and not workdir.alive(int(pid)):
            left.unlink(missing_ok=True)
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _open_text(tmp: Path, name: str):
    if name.lower().endswith(".gz"):
        return io.TextIOWrapper(_gzip(tmp), encoding="utf-8", newline="\n")
    return open(tmp, "w", encoding="utf-8", newline="\n")


class _RowGroups:
    """Batches written in row groups of corpus.SCAN_ROWS rows (the last one shorter), so a Parquet output
    has the same bytes whatever the batches its rows came in (they depend on DuckDB's threads)."""

    def __init__(self, writer: pq.ParquetWriter) -> None:
        self.writer, self.held, self.rows = writer, [], 0

    def write_batch(self, batch: pa.RecordBatch) -> None:
        self.held.append(batch)
        self.rows += batch.num_rows
        while self.rows >= corpus.SCAN_ROWS:
            table = pa.Table.from_batches(self.held)
            self._write(table.slice(0, corpus.SCAN_ROWS))
            rest = table.slice(corpus.SCAN_ROWS)
            self.held, self.rows = rest.to_batches(), rest.num_rows

    def flush(self) -> None:
        if self.rows:
            self._write(pa.Table.from_batches(self.held))
        self.held, self.rows = [], 0

    def _write(self, table: pa.Table) -> None:
        # one chunk a column: the writer's pages follow the chunks it is given
        self.writer.write_table(table.combine_chunks(), row_group_size=corpus.SCAN_ROWS)


def _check_csv_columns(schema: pa.Schema, name: str) -> None:
    """A one-line InputError for a column CSV cannot hold (a list, a struct, a map)."""
    for field in schema:
        if pa.types.is_nested(field.type):
            raise InputError(
                f"the column '{field.name}' ({field.type}) cannot be written to a CSV {name}: "
                "name it .jsonl or .parquet"
            )


def _write_arrow(
    tmp: Path,
    fmt: str,
    name: str,
    batches: Iterator[pa.RecordBatch],
    resources: db.Resources,
    schema: pa.Schema | None = None,
) -> None:
    """Arrow batches to Parquet or CSV; every batch aligned to `schema` (dedup_rows.typed_rows'), or
    without one to the first batch's schema."""
    with ExitStack() as stack:
        writer = None
        for batch in batches:
            if writer is None:
                schema = schema or batch.schema
                if fmt == "parquet":  # row groups of fixed size, whatever the batches the readers gave
                    writer = _RowGroups(
                        stack.enter_context(pq.ParquetWriter(tmp, schema, compression="zstd"))
                    )
                    stack.callback(writer.flush)
                else:
                    _check_csv_columns(schema, name)
                    text = stack.enter_context(_open_binary(tmp, name))
                    writer = stack.enter_context(pcsv.CSVWriter(text, schema))
            writer.write_batch(dedup_rows.aligned(batch, schema))
        if writer is None:  # nothing selected: an empty file of the right kind, with its columns if known
            empty = (schema or pa.schema([])).empty_table()
            if fmt == "parquet":
                pq.write_table(empty, tmp)
            else:
                with _open_binary(tmp, name) as text:
                    if empty.num_columns:
                        _check_csv_columns(empty.schema, name)
                        pcsv.write_csv(empty, text)


def _open_binary(tmp: Path, name: str):
    return _gzip(tmp) if name.lower().endswith(".gz") else open(tmp, "wb")


def _gzip(tmp: Path) -> gzip.GzipFile:
    """A gzip file whose header holds neither a file name nor a time, so that equal rows give equal bytes
    (gzip.open writes the temporary file's name and the time)."""
    raw = open(tmp, "wb")  # noqa: SIM115 - handed to the gzip file, which closes it
    try:
        zipped = gzip.GzipFile(filename="", mode="wb", compresslevel=6, fileobj=raw, mtime=0)
    except BaseException:
        raw.close()
        raise
    zipped.myfileobj = raw  # closed with it, as the file gzip.open opens itself
    return zipped


def _to_json(con, batch: pa.RecordBatch) -> list[str]:
    """Each row of a batch as a JSON object (DuckDB's to_json: dates and timestamps as text)."""
    con.register("batch_rows", pa.Table.from_batches([batch]))
    try:
        return [
            row[0] for row in con.execute("select to_json(batch_rows)::varchar from batch_rows").fetchall()
        ]
    finally:
        con.unregister("batch_rows")


def _write_removed_table(work: Path, path: Path, resources: db.Resources) -> None:
    """REMOVED: every record of the input not kept, with the reason, and for a duplicate the document kept
    in its place and their similarity, in input order."""
    fmt = format_of(path)
    options = {
        "parquet": "format parquet, compression zstd",
        "csv": "format csv, header true",
        "jsonl": "format json",
    }
    tmp = _temporary(path)
    compression = ", compression gzip" if str(path).lower().endswith(".gz") else ""
    query = (
        f"copy (select {', '.join(REMOVED_COLUMNS)} from read_parquet($duplicates) where reason <> 'kept' "
        f"order by row) to $out ({options[fmt]}{compression})"
    )
    try:
        with db.connect(resources) as con:
            con.execute(query, {"duplicates": str(work / "duplicates.parquet"), "out": str(tmp)})
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
