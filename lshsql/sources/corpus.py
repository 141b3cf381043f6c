"""A corpus for `lshsql dedup`: JSON Lines (plain or gzipped), Parquet, CSV files or an in-memory table,
read twice in input order: once as (ord, id, text, keep value, skip reason) to shingle, once as whole rows
to write the kept ones unchanged.

JSON Lines is read by DuckDB (read_json_objects: one value per non-blank line, NULL for a malformed one, in
file order WITH ORDINALITY), so a kept line is written back byte for byte. Parquet and in-memory tables
are read by Arrow, so their column types come back exactly; CSV by DuckDB with every column as text.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from lshsql import schemas
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, LshsqlError, one_line
from lshsql.sources.readers import expand_paths

if TYPE_CHECKING:
    import duckdb

SUFFIXES = {
    ".jsonl": "jsonl",
    ".jsonl.gz": "jsonl",
    ".ndjson": "jsonl",
    ".ndjson.gz": "jsonl",
    ".json": "jsonl",
    ".json.gz": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".csv.gz": "csv",
}
SCAN_ROWS = 2048  # rows per batch read for shingling: a few MB of text at 1-10 kB a document
_JSON_MAX_OBJECT = 256 * 2**20  # the longest JSON line read as a record (see _json_object_limit)


@dataclass(frozen=True)
class CorpusSource:
    """One input: a file and its kind, or an in-memory Arrow table (kind 'table', path a label)."""

    path: str
    kind: str
    table: pa.Table | None = None


def arrow_batches(con, query: str, params: dict, rows: int) -> Iterator[pa.RecordBatch]:
    """A query's result as Arrow record batches of about `rows` rows, streamed."""
    yield from con.sql(query, params=params).to_arrow_reader(rows)


def resolve_corpus(inputs: list[str] | pa.Table) -> list[CorpusSource]:
    """Files, folders and globs as sources in a stable order, or one in-memory table; InputError for paths
    that name nothing readable."""
    if isinstance(inputs, pa.Table):
        return [CorpusSource("<table>", "table", inputs)]
    if not inputs:
        raise InputError("no input given")
    sources: list[CorpusSource] = []
    for path in expand_paths(list(inputs)):
        if os.path.isdir(path):
            files = sorted(str(p) for p in Path(path).rglob("*") if p.is_file() and kind_of(p.name))
            if not files:
                raise InputError(f"{path}: folder has no .jsonl[.gz], .parquet or .csv files")
        else:
            files = [path]
        sources.extend(CorpusSource(f, _kind_of_file(f)) for f in files)
    return sources


def kind_of(name: str) -> str | None:
    """The kind a file name's suffix says, or None."""
    lower = name.lower()
    return next((kind for suffix, kind in SUFFIXES.items() if lower.endswith(suffix)), None)


def _kind_of_file(path: str) -> str:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or type(e).__name__}") from None
    if head == b"PAR1":
        return "parquet"
    return kind_of(path) if kind_of(path) in ("csv", "jsonl") else "jsonl"


# --- the scan: what dedup shingles --------------------------------------------------------------------


def scan(
    source: CorpusSource,
    id_column: str,
    text_column: str,
    keep_column: str | None,
    resources: db.Resources,
    con: duckdb.DuckDBPyConnection | None = None,
) -> Iterator[pa.RecordBatch]:
    """Record batches (ord, id, text, keep, skip_reason) of one source in input order; ord counts its
    records from 1, text is null for a skipped record. `con`: a connection to read with (one for many
    files spares opening DuckDB for each), else one of its own."""
    if source.kind == "jsonl":
        batches = _scan_jsonl(source.path, id_column, text_column, keep_column, resources, con)
    elif source.kind == "csv":
        batches = _scan_csv(source.path, id_column, text_column, keep_column, resources, con)
    else:
        batches = _scan_arrow(source, id_column, text_column, keep_column)
    yield from _reported(source.path, batches)


def _reported(path: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The batches, with a file that breaks while it is read (a corrupt page, a file cut or removed) as
    a one-line InputError naming it."""
    try:
        yield from batches
    except db.duckdb.OutOfMemoryException:
        raise  # the memory limit's, which the command reports with its advice, not the file's
    except MemoryError as e:  # pyarrow's too: the machine's, not the file's
        raise LshsqlError(f"{path}: out of memory while reading it: {one_line(e, 200)}") from None
    except (OSError, EOFError, pa.ArrowException, db.duckdb.Error) as e:
        raise InputError(f"{path}: cannot be read: {one_line(e, 200)}") from None


def _json_path(name: str) -> str:
    return '$."' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


_JSONL_SCAN = """
select
    ordinality as ord,
    json_extract_string(json, $id_path) as id,
    case when json_type(json, $text_path) = 'VARCHAR' then json_extract_string(json, $text_path) end as text,
    json_extract(json, $keep_path) as keep,
    case
        when json is null then 'malformed_json'
        when json_type(json) <> 'OBJECT' then 'not_an_object'
        when coalesce(json_type(json, $text_path), 'NULL') = 'NULL' then 'no_text'
        when json_type(json, $text_path) <> 'VARCHAR' then 'text_not_a_string'
    end as skip_reason
from read_json_objects(
    $file, format = 'newline_delimited', ignore_errors = true, maximum_object_size = $max_object
) with ordinality
"""


def _scan_jsonl(
    path: str,
    id_column: str,
    text_column: str,
    keep_column: str | None,
    resources: db.Resources,
    con: duckdb.DuckDBPyConnection | None,
) -> Iterator[pa.RecordBatch]:
    params = {
        "file": path,
        "id_path": _json_path(id_column),
        "text_path": _json_path(text_column),
        "keep_path": _json_path(keep_column or text_column),
    }
    with _connected(resources, con) as con:
        params["max_object"] = _json_object_limit(con)
        reader = arrow_batches(con, _JSONL_SCAN, params, SCAN_ROWS)
        for batch in reader:
            yield batch if keep_column else batch.set_column(3, "keep", pa.nulls(batch.num_rows))


@contextlib.contextmanager
def _connected(
    resources: db.Resources, con: duckdb.DuckDBPyConnection | None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """`con`, or a connection of its own for the block."""
    if con is not None:
        yield con
        return
    with db.connect(resources) as own:
        yield own


def _json_object_limit(con) -> int:
    """The longest JSON line read as a record on this connection, within its memory limit: DuckDB's JSON
    reader holds a buffer of twice that for each thread. The connection's threads are lowered until half
    the limit holds their buffers; where it cannot hold one thread's, the longest line is shortened (a
    longer one is counted malformed_json or, far longer, stops the read with a one-line error naming the
    file, as one beyond _JSON_MAX_OBJECT does)."""
    budget = db.memory_limit_bytes(con) // 2  # the other half for the query that reads the records
    threads = int(db.scalar(con, "select current_setting('threads')"))
    threads = max(1, min(threads, budget // (2 * _JSON_MAX_OBJECT)))
    con.execute(f"set threads = {threads}")  # an integer computed here
    return min(_JSON_MAX_OBJECT, budget // (2 * threads))


def fields(source: CorpusSource, resources: db.Resources) -> list[str]:
    """The field names a source's records have (the first 20 by name), for an error message."""
    if source.kind in ("parquet", "table"):
        return arrow_schema(source).names
    if source.kind == "csv":
        query = "select column_name from (describe select * from read_csv($file, all_varchar = true))"
    else:
        query = (
            "select distinct unnest(json_keys(json)) as k from read_json_objects($file, format = "
            "'newline_delimited', ignore_errors = true, maximum_object_size = $max_object) "
            "where json_type(json) = 'OBJECT' order by k limit 20"
        )
    params: dict = {"file": source.path}
    with db.connect(resources) as con:
        if source.kind == "jsonl":
            params["max_object"] = _json_object_limit(con)
        return [r[0] for r in con.execute(query, params).fetchall()]


def missing_text_column(path: str, text_column: str, found: list[str]) -> InputError:
    """The error for records without the text column: what they have, and the option to name it."""
    fields = ", ".join(found) if found else "none"
    return InputError(
        f"{path}: no record has a '{text_column}' field (found: {fields}); name it with --text-column"
    )


def _scan_csv(
    path: str,
    id_column: str,
    text_column: str,
    keep_column: str | None,
    resources: db.Resources,
    con: duckdb.DuckDBPyConnection | None,
) -> Iterator[pa.RecordBatch]:
    with _connected(resources, con) as con:
        columns = [
            r[0]
            for r in con.execute(
                "describe select * from read_csv($file, all_varchar = true)", {"file": path}
            ).fetchall()
        ]
        if text_column not in columns:
            raise missing_text_column(path, text_column, columns)
        id_expr = "#" + str(columns.index(id_column) + 1) if id_column in columns else "null"
        keep_expr = "#" + str(columns.index(keep_column) + 1) if keep_column in columns else "null"
        if keep_column and keep_column not in columns:
            raise InputError(f"{path}: no column '{keep_column}' to keep by (found: {', '.join(columns)})")
        text_expr = "#" + str(columns.index(text_column) + 1)
        query = (
            f"select ordinality as ord, {id_expr} as id, {text_expr} as text, {keep_expr} as keep, "
            f"case when {text_expr} is null then 'no_text' end as skip_reason "
            "from read_csv($file, all_varchar = true) with ordinality"
        )
        yield from arrow_batches(con, query, {"file": path}, SCAN_ROWS)


def _parquet_file(path: str) -> pq.ParquetFile:
    try:
        return schemas.streamed(path)
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"{path}: not a readable Parquet file: {one_line(e, 200)}") from None


def arrow_schema(source: CorpusSource) -> pa.Schema:
    """The columns of a Parquet file or in-memory table."""
    return source.table.schema if source.table is not None else _parquet_file(source.path).schema_arrow


def _scan_arrow(
    source: CorpusSource, id_column: str, text_column: str, keep_column: str | None
) -> Iterator[pa.RecordBatch]:
    schema = arrow_schema(source)
    if text_column not in schema.names:
        raise missing_text_column(source.path, text_column, schema.names)
    text_type = _text_type(schema.field(text_column).type)
    if text_type is None:
        raise InputError(
            f"{source.path}: column '{text_column}' is {schema.field(text_column).type}, not text"
        )
    if keep_column and keep_column not in schema.names:
        raise InputError(
            f"{source.path}: no column '{keep_column}' to keep by (found: {', '.join(schema.names)})"
        )
    for column, role in ((id_column, "an id"), (keep_column, "a column to keep by")):
        if column and column in schema.names and not _is_scalar(schema.field(column).type):
            raise InputError(
                f"{source.path}: column '{column}' is {schema.field(column).type}; {role} is text or a number"
            )
    wanted = [c for c in dict.fromkeys([id_column, text_column, keep_column]) if c and c in schema.names]
    ord_ = 1
    for batch in _arrow_batches(source, wanted):
        n = batch.num_rows
        text = batch.column(text_column).cast(text_type)
        ids = batch.column(id_column) if id_column in wanted else pa.nulls(n)
        keep = batch.column(keep_column) if keep_column else pa.nulls(n)
        reasons = pa.array(["no_text" if null else None for null in text.is_null().to_pylist()], pa.string())
        yield pa.RecordBatch.from_arrays(
            [pa.array(range(ord_, ord_ + n), pa.int64()), ids, text, keep, reasons],
            names=["ord", "id", "text", "keep", "skip_reason"],
        )
        ord_ += n


def _text_type(arrow_type: pa.DataType) -> pa.DataType | None:
    """The text type a text column is read as (a dictionary of text as its text), None for a column that
    does not hold text (a string view too: pyarrow's take, which the output's rows go through, has none)."""
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return arrow_type if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) else None


def _is_scalar(arrow_type: pa.DataType) -> bool:
    """Whether a column's values read as one text each (an id, a value to keep by): text, a number, a
    boolean or a time; not a list, struct, map or bytes that may not be text."""
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return _text_type(arrow_type) is not None or (
        pa.types.is_integer(arrow_type)
        or pa.types.is_floating(arrow_type)
        or pa.types.is_decimal(arrow_type)
        or pa.types.is_boolean(arrow_type)
        or pa.types.is_temporal(arrow_type)
        or pa.types.is_null(arrow_type)
    )


def _arrow_batches(source: CorpusSource, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
    if source.table is not None:
        table = source.table.select(columns) if columns else source.table
        yield from table.to_batches(max_chunksize=SCAN_ROWS)
    else:
        yield from _parquet_file(source.path).iter_batches(batch_size=SCAN_ROWS, columns=columns)


# --- the rows: what dedup writes ---------------------------------------------------------------------


def rows(
    source: CorpusSource, resources: db.Resources, con: duckdb.DuckDBPyConnection | None = None
) -> Iterator[pa.RecordBatch]:
    """Every record of a source, in input order, as it was read: JSON Lines as one 'json' column of the
    lines themselves (NULL for a malformed line), the others with their own columns. Read again after the
    scan, all columns this time: a page the scan did not read may be the one that breaks."""
    yield from _reported(source.path, _rows(source, resources, con))


def _rows(
    source: CorpusSource, resources: db.Resources, con: duckdb.DuckDBPyConnection | None
) -> Iterator[pa.RecordBatch]:
    if source.kind == "jsonl":
        query = (
            "select json from read_json_objects($file, format = 'newline_delimited', ignore_errors = true, "
            "maximum_object_size = $max_object)"
        )
        params = {"file": source.path}
    elif source.kind == "csv":
        query, params = "select * from read_csv($file, all_varchar = true)", {"file": source.path}
    else:
        yield from _arrow_batches(source)
        return
    with _connected(resources, con) as con:
        con.execute("set preserve_insertion_order = true")  # rows come back in file order
        if source.kind == "jsonl":
            params["max_object"] = _json_object_limit(con)
        yield from arrow_batches(con, query, params, SCAN_ROWS)
