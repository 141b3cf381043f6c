"""The rows `lshsql dedup` writes out: which records of the input were kept or removed (from the work
folder's decisions), read again from every source in input order, and, for a Parquet or CSV output, typed
as one table: the sources' columns unified, JSON Lines typed by DuckDB's read_json."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lshsql.engines import duckdb as db
from lshsql.errors import InputError, StageError, one_line
from lshsql.sources import corpus
from lshsql.sources.corpus import CorpusSource, arrow_batches

# with --removed-rows: the removed rows with these columns added (prefixed, so no input column is hidden),
# typed as `selected` reads them (kept_row BIGINT, kept_id VARCHAR, similarity DOUBLE)
ADDED_SCHEMA = pa.schema(
    [("lshsql_kept_row", pa.int64()), ("lshsql_kept_id", pa.string()), ("lshsql_similarity", pa.float64())]
)
ADDED = tuple(ADDED_SCHEMA.names)


def selected(work: Path, reason: str, resources: db.Resources) -> dict[int, tuple[np.ndarray, dict]]:
    """Per source index: the ords (1-based, ascending) of the records with this reason, and for
    duplicates the values of the ADDED columns."""
    query = """
        with records as (
            select source, ord, row_number() over (order by source, ord) - 1 as row
            from read_parquet($records)
        )
        select records.source, records.ord, d.kept_row, d.kept_id, d.similarity
        from read_parquet($duplicates) as d
        inner join records on d.row = records.row
        where d.reason = $reason
        order by records.source, records.ord
    """
    values = {
        "records": str(work / "records.parquet"),
        "duplicates": str(work / "duplicates.parquet"),
        "reason": reason,
    }
    with db.connect(resources) as con:
        table = con.sql(query, params=values).to_arrow_table()
    out: dict[int, tuple[np.ndarray, dict]] = {}
    source = table.column("source").to_numpy()
    for index in np.unique(source):
        rows = table.filter(pc.equal(table.column("source"), index))
        extra = {
            "lshsql_kept_row": rows.column("kept_row"),
            "lshsql_kept_id": rows.column("kept_id"),
            "lshsql_similarity": rows.column("similarity"),
        }
        out[int(index)] = (rows.column("ord").to_numpy(), extra)
    return out


def _picked(batch_start: int, n: int, ords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in a batch of records batch_start .. batch_start+n-1 (1-based ords) that are selected,
    and their indexes into `ords`."""
    lo, hi = np.searchsorted(ords, [batch_start, batch_start + n])
    return ords[lo:hi] - batch_start, np.arange(lo, hi)


def selected_rows(
    source: CorpusSource,
    pick: tuple[np.ndarray, dict],
    resources: db.Resources,
    con: db.duckdb.DuckDBPyConnection | None = None,
):
    """The selected rows of one source, batch by batch in input order, each with the indexes of its rows
    into the pick's ords (and so into its ADDED values)."""
    ords, _ = pick
    start = 1
    for batch in corpus.rows(source, resources, con):
        positions, which = _picked(start, batch.num_rows, ords)
        if len(positions):
            yield batch.take(pa.array(positions)), which
        start += batch.num_rows


def json_lines(
    sources: list[CorpusSource], picks: dict[int, tuple[np.ndarray, dict]], resources: db.Resources
) -> Iterator[tuple[int, str]]:
    """The selected lines of the JSON Lines sources as they were read, each with its source's index, and
    the ADDED fields appended to the object for duplicates written with --removed-rows."""
    with db.connect(resources) as con:  # one DuckDB for every file, as the reading of the inputs
        for index, source in enumerate(sources):
            if index not in picks or source.kind != "jsonl":
                continue
            extra = picks[index][1]
            removed = is_removed(extra)
            for rows, which in selected_rows(source, picks[index], resources, con):
                for line, i in zip(rows.column(0).to_pylist(), which, strict=True):
                    yield index, _with_fields(line, extra, i) if removed else line


def is_removed(extra: dict) -> bool:
    return extra["lshsql_kept_row"].null_count < len(extra["lshsql_kept_row"])


def _with_fields(line: str, extra: dict, i: int) -> str:
    """The object's text with the ADDED fields before its closing brace: the original fields untouched."""
    body = line.rstrip()[:-1].rstrip()
    fields = ", ".join(f"{json.dumps(name)}: {json.dumps(extra[name][i].as_py())}" for name in ADDED)
    return body + ("" if body.endswith("{") else ", ") + fields + "}"


@contextmanager
def typed_rows(
    sources: list[CorpusSource],
    picks: dict[int, tuple[np.ndarray, dict]],
    resources: db.Resources,
    as_text: bool = False,
) -> Iterator[tuple[pa.Schema | None, Iterator[pa.RecordBatch]]]:
    """The selected rows of every source as Arrow batches in input order, and one schema that holds them
    all (None: no row): the sources' own columns unified by name in the order met (the JSON Lines
    sources' keys together, where the first of them is), a column some lack made nullable, and types
    widened where Arrow can (an integer and a double: a double). JSON Lines rows are typed together,
    by one DuckDB read_json over all of them, so shards that type a key differently meet in one type
    (text, where one's values are numbers and another's strings)."""
    with ExitStack() as stack:
        json_rows = _json_rows(sources, picks, resources, stack)
        schemas: dict[str, pa.Schema] = {}
        con = None  # one DuckDB for the columns of every CSV source
        for index, source in enumerate(sources):
            if index not in picks:
                continue
            if source.kind == "jsonl":
                if json_rows.counts and json_rows.source not in schemas:
                    schemas[json_rows.source] = json_rows.schema
                continue
            if source.kind == "csv" and con is None:
                con = stack.enter_context(db.connect(resources))
            schemas[str(source.path)] = schema_of(source, picks[index][1], con)
        yield unified(schemas, as_text), _batches(sources, picks, resources, json_rows)


def _batches(
    sources: list[CorpusSource],
    picks: dict[int, tuple[np.ndarray, dict]],
    resources: db.Resources,
    json_rows: _JsonRows,
) -> Iterator[pa.RecordBatch]:
    for index, source in enumerate(sources):
        if index not in picks:
            continue
        if source.kind == "jsonl":
            yield from json_rows.take(json_rows.counts.get(index, 0))
        else:
            yield from source_batches(source, picks[index], resources)


def source_batches(
    source: CorpusSource, pick: tuple[np.ndarray, dict], resources: db.Resources
) -> Iterator[pa.RecordBatch]:
    """The selected rows of a Parquet, table or CSV source, with the ADDED columns of removed rows."""
    extra = pick[1]
    removed = is_removed(extra)
    for rows, which in selected_rows(source, pick, resources):
        if removed:
            for name in ADDED:
                rows = rows.append_column(name, extra[name].take(pa.array(which)))
        yield rows


def lines_in_order(
    sources: list[CorpusSource],
    picks: dict[int, tuple[np.ndarray, dict]],
    resources: db.Resources,
    to_json: Callable[[pa.RecordBatch], list[str]],
) -> Iterator[str]:
    """Every selected row as a JSON Lines line, in input order: a JSON Lines source's as it was read, the
    others' made by `to_json` from their Arrow rows."""
    lines = json_lines(sources, picks, resources)
    waiting = next(lines, None)
    for index, source in enumerate(sources):
        if index not in picks:
            continue
        if source.kind != "jsonl":
            for batch in source_batches(source, picks[index], resources):
                yield from to_json(batch)
            continue
        while waiting is not None and waiting[0] == index:
            yield waiting[1]
            waiting = next(lines, None)


def schema_of(source: CorpusSource, extra: dict | None, con) -> pa.Schema:
    """The columns a Parquet, table or CSV source's rows come with (CSV, read on `con`: every column
    text), with the ADDED columns of removed rows."""
    if source.kind == "csv":
        found = con.execute("describe select * from read_csv($f, all_varchar = true)", {"f": source.path})
        schema = pa.schema([(name, pa.string()) for name, *_ in found.fetchall()])
    else:
        schema = corpus.arrow_schema(source)
    if extra is not None and is_removed(extra):
        for name in ADDED:
            schema = schema.append(pa.field(name, extra[name].type))
    return schema


def unified(schemas: dict[str, pa.Schema], as_text: bool = False) -> pa.Schema | None:
    """One schema for the rows of every source (by its name): their columns by name, types widened where
    Arrow can; failing that, categorical (dictionary) columns as their values; failing that, for a CSV
    output (`as_text`), every column as text. A one-line InputError names the source whose columns
    cannot meet the ones before it."""
    if len(schemas) < 2:
        return next(iter(schemas.values()), None)
    forms = [lambda t: t, lambda t: t.value_type if pa.types.is_dictionary(t) else t]
    if as_text:
        forms.append(lambda t: pa.string())
    error = None
    for form in forms:
        try:
            merged = _merged({name: _retyped(schema, form) for name, schema in schemas.items()})
        except InputError as e:
            error = error or e
            continue
        everywhere = set.intersection(*(set(schema.names) for schema in schemas.values()))
        return pa.schema(
            [field if field.name in everywhere else field.with_nullable(True) for field in merged],
            metadata=merged.metadata,
        )
    raise error


def _retyped(schema: pa.Schema, form: Callable[[pa.DataType], pa.DataType]) -> pa.Schema:
    return pa.schema([field.with_type(form(field.type)) for field in schema], metadata=schema.metadata)


def _merged(schemas: dict[str, pa.Schema]) -> pa.Schema:
    merged = None
    for name, schema in schemas.items():
        try:
            merged = pa.unify_schemas(
                [schema] if merged is None else [merged, schema], promote_options="permissive"
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, NotImplementedError) as e:
            raise InputError(
                f"{name}: its columns and those of the inputs before it cannot be written as one table: "
                f"{one_line(e, 200)}"
            ) from None
    return merged


def aligned(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """A batch with the columns of `schema`, in its order: cast to its types, nulls where it has none; a
    one-line InputError for a value the common type cannot hold (an integer over 2^53 as a double)."""
    if batch.schema.equals(schema):
        return batch
    columns = []
    for field in schema:
        i = batch.schema.get_field_index(field.name)
        try:
            columns.append(
                batch.column(i).cast(field.type) if i >= 0 else pa.nulls(batch.num_rows, field.type)
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InputError(
                f"column '{field.name}': a value cannot take the type {field.type} the inputs share "
                f"({one_line(e, 120)})"
            ) from None
    return pa.RecordBatch.from_arrays(columns, schema=schema)


class _JsonRows:
    """The selected rows of every JSON Lines source, typed by one read_json over a scratch file of their
    lines, handed out source by source (`take`, in input order) from that one stream."""

    def __init__(self, stream: Iterator[pa.RecordBatch] | None, counts: dict[int, int], source: str) -> None:
        self.stream, self.counts, self.source = stream, counts, source
        self.held = self._read() if stream is not None else None  # read, not yet handed out
        self.schema = self.held.schema if self.held is not None else None

    def take(self, n: int) -> Iterator[pa.RecordBatch]:
        """The next n rows."""
        while n > 0:
            batch = self.held if self.held is not None else self._read()
            if batch.num_rows > n:
                self.held = batch.slice(n)
                yield batch.slice(0, n)
                return
            self.held = None
            yield batch
            n -= batch.num_rows

    def _read(self) -> pa.RecordBatch:
        try:
            return next(self.stream)
        except StopIteration:
            raise StageError(f"{self.source}: read_json gave fewer rows than were written") from None
        except db.duckdb.Error as e:
            raise InputError(
                f"{self.source}: the kept rows cannot be typed for Parquet or CSV: {one_line(e, 200)}"
            ) from None


def _json_rows(
    sources: list[CorpusSource],
    picks: dict[int, tuple[np.ndarray, dict]],
    resources: db.Resources,
    stack: ExitStack,
) -> _JsonRows:
    """The selected JSON Lines rows, written to one scratch file (removed when `stack` closes) and read
    back through DuckDB's read_json."""
    scratch = Path(resources.temp_directory or tempfile.gettempdir()) / f"dedup-rows-{os.getpid()}.jsonl"
    scratch.parent.mkdir(parents=True, exist_ok=True)
    stack.callback(scratch.unlink, missing_ok=True)
    counts: dict[int, int] = {}
    with open(scratch, "w", encoding="utf-8") as f:
        for index, line in json_lines(sources, picks, resources):
            f.write(line + "\n")
            counts[index] = counts.get(index, 0) + 1
    files = [str(sources[i].path) for i in counts]
    named = files[0] if len(files) == 1 else f"{files[0]} and {len(files) - 1} more" if files else ""
    if not counts:
        return _JsonRows(None, counts, named)
    con = stack.enter_context(db.connect(resources))
    con.execute("set preserve_insertion_order = true")
    try:
        names = _renamed_keys(con, scratch)
    except db.duckdb.Error as e:
        raise InputError(
            f"{named}: the kept rows cannot be typed for Parquet or CSV: {one_line(e, 200)}"
        ) from None
    query = "select * from read_json($f, format = 'newline_delimited', sample_size = -1)"
    try:
        described = con.execute(f"describe {query}", {"f": str(scratch)}).fetchall()
    except db.duckdb.Error as e:
        try:  # a nested object read_json cannot make a struct of: typed by the values' kinds instead
            names = names or _renamed_keys(con, scratch, always=True)
            query = _typed_by_kind(con, scratch)
            described = con.execute(f"describe {query}", {"f": str(scratch)}).fetchall()
        except db.duckdb.Error:
            raise InputError(
                f"{named}: the kept rows cannot be typed for Parquet or CSV: {one_line(e, 200)}"
            ) from None
    mixed = {name for name, kind, *_ in described if kind == "JSON"}
    stream = arrow_batches(con, query, {"f": str(scratch)}, corpus.SCAN_ROWS)
    if mixed:
        stream = (_as_text(batch, mixed) for batch in stream)
    if names:
        stream = (batch.rename_columns([names.get(n, n) for n in batch.schema.names]) for batch in stream)
    return _JsonRows(stream, counts, named)


SHALLOW = "read_json($f, format = 'newline_delimited', sample_size = -1, maximum_depth = 1)"
# A column whose values are all of these JSON kinds (besides null), and the SQL type it is read as, as
# read_json types them (json_type calls a whole number from 0 up UBIGINT; one beyond BIGINT makes the
# column DECIMAL(38, 0)).
KINDS = (
    ({"BIGINT", "UBIGINT"}, "bigint"),
    ({"BIGINT", "UBIGINT", "DOUBLE"}, "double"),
    ({"BOOLEAN"}, "boolean"),
)
BEYOND_BIGINT = "bool_or({c} is not null and json_type({c}) = 'UBIGINT' and try_cast({c} as bigint) is null)"


def _typed_by_kind(con, scratch: Path) -> str:
    """The query reading scratch rows (keyed c0, c1, ...: _renamed_keys) whose nested values read_json
    cannot type (an object with two keys equal but for case): each column by the JSON kinds of its values,
    numbers, strings and booleans as such, objects, arrays and columns of several kinds as JSON (their
    text, _as_text)."""
    described = con.execute(f"describe select * from {SHALLOW}", {"f": str(scratch)}).fetchall()
    columns = [name for name, *_ in described]
    kinds_of = ", ".join(  # c0, c1, ...: names of ours
        f"list(distinct json_type({column})), {BEYOND_BIGINT.format(c=column)}" for column in columns
    )
    found = con.execute(f"select {kinds_of} from {SHALLOW}", {"f": str(scratch)}).fetchone()
    selects = []
    for i, column in enumerate(columns):
        kinds = {kind for kind in found[2 * i] if kind not in (None, "NULL")}
        read = next((f"cast({column} as {t})" for ks, t in KINDS if kinds and kinds <= ks), None)
        if found[2 * i + 1] and kinds <= {"BIGINT", "UBIGINT"}:
            read = f"cast({column} as decimal(38, 0))"
        if kinds == {"VARCHAR"}:
            read = f"json_extract_string({column}, '$')"
        selects.append(f"{read or column} as {column}")
    return f"select {', '.join(selects)} from {SHALLOW}"


def _as_text(batch: pa.RecordBatch, columns: set[str]) -> pa.RecordBatch:
    """read_json types a key whose values differ in kind (a number here, a string there; an object) as
    JSON: its values are JSON texts. As text, a string is the string itself, not its quoted JSON."""
    arrays = list(batch.columns)
    for i, name in enumerate(batch.schema.names):
        if name in columns:
            values = arrays[i].to_pylist()
            arrays[i] = pa.array(
                [json.loads(v) if v is not None and v.startswith('"') else v for v in values], pa.string()
            )
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


KEYS = (
    "select key from (select unnest(json_keys(json)) as key, row_number() over () as n "
    "from read_json_objects($f, format = 'newline_delimited')) group by key order by min(n)"
)


def _renamed_keys(con, scratch: Path, always: bool = False) -> dict[str, str]:
    """DuckDB's read_json cannot make a column of the key "" (it gives one JSON column for the rows) or of
    two keys equal but for case (it calls the second `Text_1`). Where the scratch rows have such keys, or
    `always`, they are written again with the keys c0, c1, ... (in the order first seen) and the map back
    is returned: column name -> key. Otherwise nothing is written and the map is empty."""
    keys = [key for (key,) in con.execute(KEYS, {"f": str(scratch)}).fetchall()]
    if not always and "" not in keys and len({key.lower() for key in keys}) == len(keys):
        return {}
    column = {key: f"c{i}" for i, key in enumerate(keys)}
    renamed = scratch.with_name(f"renamed-{scratch.name}")
    with open(scratch, encoding="utf-8") as rows, open(renamed, "w", encoding="utf-8") as out:
        for line in rows:
            record = json.loads(line)
            # json.dumps writes ASCII: a lone surrogate (legal JSON) stays an escape
            out.write(json.dumps({column[k]: v for k, v in record.items()}) + "\n")
    os.replace(renamed, scratch)
    return {name: key for key, name in column.items()}
