"""Plain documents -> a stream of `Document`s: JSON Lines, Parquet and Reuters-21578 SGML files, and
in-memory tables (a pyarrow.Table, pandas or polars DataFrame, frames.py), read like a Parquet file.

The counterpart of readers.py for `lshsql ingest`: every record read is yielded once, with its text or the
reason it is skipped, so the stage can account for all of them. Readers stream (JSON Lines by line, Parquet
by record batch, SGML by <REUTERS> element) so memory does not grow with the size of a file.
"""

from __future__ import annotations

import html
import math
import os
import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pyarrow as pa

from lshsql import schemas
from lshsql.errors import InputError, one_line
from lshsql.sources.frames import as_arrow, table_digest, table_kind
from lshsql.sources.jsonl import first_object, json_object, jsonl_lines
from lshsql.sources.readers import expand_paths
from lshsql.sources.records import clean_text

FORMATS = ("auto", "jsonl", "parquet", "reuters")
DOCUMENT_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".parquet", ".pq", ".sgm", ".sgml")
_PARQUET_BATCH = 1024  # rows per Parquet record batch read


@dataclass(frozen=True, slots=True)
class Document:
    """One record read: its id, title, text and labels, where it was read, and why it is skipped (if so)."""

    id: str | None
    record_type: str  # 'document' (JSON Lines, Parquet) or 'reuters'
    source_file: str
    source_offset: int  # byte offset of the line or <REUTERS> element; row number in a Parquet file
    title: str | None = None
    text: str | None = None
    labels: tuple[str, ...] = ()
    encoding: str | None = None
    skip_reason: str | None = None


@dataclass(frozen=True)
class DocSource:
    """One input file and its format ('jsonl', 'parquet' or 'reuters'), or an in-memory table (kind
    'arrow': `table`, its `digest`, and as path a name such as '<pandas.DataFrame #1>')."""

    path: str
    kind: str
    table: pa.Table | None = field(default=None, compare=False, repr=False)
    digest: str | None = None


# the columns of a table an ingest reads besides the id and text: what its digest covers
TABLE_COLUMNS = ("title", "label", "labels")


def resolve_documents(
    paths: list | str | Path | object, fmt: str = "auto", columns: tuple[str, ...] = ("id", "text")
) -> list[DocSource]:
    """Expand files, folders and globs into sources in a stable order; raise InputError for bad paths.

    A folder contributes its files named like documents (.jsonl[.gz], .ndjson, .parquet, .pq, .sgm), so
    the README and DTD beside the Reuters files are not read; a file named explicitly is always read.
    `paths` may also hold in-memory tables (or be one): a pyarrow.Table, pandas or polars DataFrame, read
    like a Parquet file whatever `fmt`; `columns` (the id and text column) and TABLE_COLUMNS are what
    the digest of such a table covers.
    """
    items = list(paths) if isinstance(paths, list | tuple) else [] if paths is None else [paths]
    if not items:
        raise InputError("no documents given")
    sources: list[DocSource] = []
    n_tables = 0
    for item in items:
        if kind := table_kind(item):
            n_tables += 1
            name = f"<{kind} #{n_tables}>"
            table = as_arrow(item, name)
            digest = table_digest(table, [*columns, *TABLE_COLUMNS])
            sources.append(DocSource(name, "arrow", table, digest))
        else:
            sources.extend(_files(str(item), fmt))
    return sources


def _files(raw: str, fmt: str) -> list[DocSource]:
    """The sources of one path, folder or glob."""
    sources: list[DocSource] = []
    for path in expand_paths([raw]):
        if os.path.isdir(path):
            files = sorted(
                str(p)
                for p in Path(path).rglob("*")
                if p.is_file() and p.name.lower().endswith(DOCUMENT_SUFFIXES)
            )
            if not files:
                raise InputError(f"{path}: folder has no .jsonl, .parquet or .sgm files")
        else:
            files = [path]
        sources.extend(DocSource(f, sniff_format(f) if fmt == "auto" else fmt) for f in files)
    return sources


def sniff_format(path: str) -> str:
    """The format of a file from its first bytes: PAR1 is Parquet, <!DOCTYPE lewis or <REUTERS is Reuters,
    anything else (plain or gzipped) is JSON Lines."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or type(e).__name__}") from None
    if not head:
        raise InputError(f"{path}: empty file")
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.lstrip().upper().startswith((b"<!DOCTYPE LEWIS", b"<REUTERS")):
        return "reuters"
    return "jsonl"


def iter_documents(source: DocSource, id_column: str = "id", text_column: str = "text") -> Iterator[Document]:
    """Yield every record of one source, in file order; a file that breaks while it is read (a corrupt
    Parquet page, a file removed meanwhile) stops the ingest with a one-line error, except JSON Lines cut
    after its first line, whose records before the break are kept (`read_error` counts the break)."""
    if source.kind == "parquet":
        records = _iter_parquet(source.path, id_column, text_column)
    elif source.kind == "arrow":
        records = _iter_table(source.table, source.path, id_column, text_column)
    elif source.kind == "reuters":
        records = _iter_reuters(source.path)
    else:
        records = _iter_jsonl(source.path, id_column, text_column)
    try:
        yield from records
    except (OSError, EOFError, zlib.error, pa.ArrowException) as e:
        raise InputError(f"{source.path}: cannot be read: {one_line(e, 200)}") from None


# --- JSON Lines and Parquet ---------------------------------------------------------------------------


def _iter_jsonl(path: str, id_column: str, text_column: str) -> Iterator[Document]:
    """One Document per non-blank line; offsets are in the decompressed stream for a gzipped file. A file
    cut (or corrupt) after its first line keeps the documents before the break and ends with one
    `read_error` record (jsonl.jsonl_lines)."""
    for offset, line in jsonl_lines(path):
        if line is None:
            yield Document(None, "unreadable", path, offset, skip_reason="read_error")
            continue
        obj = json_object(line)
        if obj is None:
            yield Document(None, "document", path, offset, skip_reason="bad_json")
        else:
            yield _document(obj, path, offset, id_column, text_column)


def _iter_parquet(path: str, id_column: str, text_column: str) -> Iterator[Document]:
    """One Document per row, read a record batch at a time; source_offset is the row number."""
    try:
        parquet = schemas.streamed(path)
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"{path}: not a readable Parquet file: {one_line(e, 200)}") from None
    columns = _columns_read(parquet.schema_arrow.names, path, id_column, text_column)
    batches = parquet.iter_batches(batch_size=_PARQUET_BATCH, columns=columns)
    yield from _batch_documents(batches, path, id_column, text_column)


def _iter_table(table: pa.Table, name: str, id_column: str, text_column: str) -> Iterator[Document]:
    """One Document per row of an in-memory table, as _iter_parquet reads a file; source_offset is the row
    number."""
    columns = _columns_read(table.column_names, name, id_column, text_column)
    batches = table.select(columns).to_batches(max_chunksize=_PARQUET_BATCH)
    yield from _batch_documents(batches, name, id_column, text_column)


def _columns_read(names: list[str], path: str, id_column: str, text_column: str) -> list[str]:
    """The columns of a table to read, or an InputError when the id or text column is missing."""
    if message := missing_columns(names, id_column, text_column, "column"):
        raise InputError(f"{path}: {message}")
    return [c for c in dict.fromkeys((id_column, text_column, *TABLE_COLUMNS)) if c in names]


def _batch_documents(batches, path: str, id_column: str, text_column: str) -> Iterator[Document]:
    row = 0
    for batch in batches:
        for obj in batch.to_pylist():
            yield _document(obj, path, row, id_column, text_column)
            row += 1


def missing_columns(names: list[str], id_column: str, text_column: str, kind: str) -> str | None:
    """What is wrong when the id or text column is not among `names` (a file's columns, or the fields of
    a JSON record), and which option names it; None when both are there."""
    options = ((id_column, "--id-column"), (text_column, "--text-column"))
    missing = [(c, option) for c, option in options if c not in names]
    if not missing:
        return None
    found = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "") if names else "none"
    columns = " or ".join(repr(c) for c, _ in missing)
    name = "name it with" if len(missing) == 1 else "name them with"
    return f"no {kind} {columns} ({kind}s: {found}); {name} {' and '.join(o for _, o in missing)}"


def missing_columns_hint(sources: list[DocSource], id_column: str, text_column: str) -> str | None:
    """For an ingest that used no document: the first JSON Lines input whose first record lacks the id or
    text field, with the fields it has (missing_columns)."""
    for source in sources:
        record = first_object(source.path) if source.kind == "jsonl" else None
        if record is not None and (message := missing_columns(list(record), id_column, text_column, "field")):
            return f"{source.path}: {message}"
    return None


def _document(obj: Mapping, path: str, offset: int, id_column: str, text_column: str) -> Document:
    """A JSON object or Parquet row as a Document: integer ids become strings; null or empty text is
    missing; a value of a wrong type (a float or bool id, a number as text or title, an object as a label)
    is `bad_value`; lone surrogates (legal in JSON, refused by Arrow) become U+FFFD."""
    doc_id = obj.get(id_column)
    if type(doc_id) is int:
        doc_id = str(doc_id)
    if doc_id is None or doc_id == "":
        return Document(None, "document", path, offset, skip_reason="missing_id")
    if not isinstance(doc_id, str):
        return Document(None, "document", path, offset, skip_reason="bad_value")
    doc = Document(clean_text(doc_id), "document", path, offset, encoding="utf-8")
    text, title = obj.get(text_column), obj.get("title")
    labels = _labels(obj.get("label"), obj.get("labels"))
    if not all(v is None or isinstance(v, str) for v in (text, title)) or labels is None:
        return replace(doc, skip_reason="bad_value")
    doc = replace(doc, title=(" ".join(clean_text(title).split()) or None) if title else None)
    if not text or text.isspace():
        return replace(doc, skip_reason="missing_text")
    return replace(doc, text=clean_text(text), labels=labels)


def _labels(label: object, labels: object) -> tuple[str, ...] | None:
    """Distinct non-empty labels, sorted, from a `label` scalar and a `labels` list (numbers as text; null
    and NaN are no label); None when one is of another type (a bool, an object, a list in the list)."""
    found = [label, *(labels if isinstance(labels, list | tuple) else [labels])]
    kept = set()
    for value in found:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if type(value) not in (str, int, float):
            return None
        kept.add(clean_text(value) if isinstance(value, str) else str(value))
    return tuple(sorted(kept - {""}))


# --- Reuters-21578 SGML -------------------------------------------------------------------------------

_OPEN, _CLOSE = b"<REUTERS", b"</REUTERS>"
_NEWID = re.compile(r'\bNEWID\s*=\s*"([^"]*)"')
_ELEMENT = {name: re.compile(rf"<{name}>(.*?)</{name}>", re.S) for name in ("TOPICS", "TITLE", "BODY")}
_TOPIC = re.compile(r"<D>(.*?)</D>", re.S)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _iter_reuters(path: str, chunk: int = 2**20) -> Iterator[Document]:
    """One Document per <REUTERS ...>...</REUTERS> element, read in chunks; an element cut off by the end
    of the file is still parsed (it will usually lack its BODY)."""
    buffer, base, pos, eof = b"", 0, 0, False  # base: file offset of buffer[0]; pos: where to look next
    with open(path, "rb") as f:
        while not eof:
            data = f.read(chunk)
            eof = not data
            buffer, base, pos = buffer[pos:] + data, base + pos, 0
            while (start := buffer.find(_OPEN, pos)) >= 0:
                end = buffer.find(_CLOSE, start)
                if end < 0 and not eof:  # the element goes on in the next chunk
                    pos = start
                    break
                pos = len(buffer) if end < 0 else end + len(_CLOSE)
                yield reuters_document(buffer[start:pos], path, base + start)
            else:  # keep a tail that may hold the start of an opening tag
                pos = max(pos, len(buffer) - len(_OPEN) + 1)


def reuters_document(raw: bytes, path: str, offset: int) -> Document:
    """Parse one <REUTERS> element: NEWID is the id, TOPICS the labels, TITLE and BODY the title and text.

    Bytes are decoded as UTF-8, else windows-1252, else latin-1 (the collection is mostly ASCII; one byte
    of reut2-017.sgm is not UTF-8); entities are decoded and control characters dropped.
    """
    text, encoding = _decode(raw)
    opening = text[: text.find(">") + 1]
    found = _NEWID.search(opening)
    if not found or not found.group(1).strip():
        return Document(None, "reuters", path, offset, encoding=encoding, skip_reason="missing_id")
    topics = _ELEMENT["TOPICS"].search(text)
    labels = {_clean(t).strip() for t in _TOPIC.findall(topics.group(1))} if topics else set()
    title = _ELEMENT["TITLE"].search(text)
    title_text = (" ".join(_clean(title.group(1)).split()) or None) if title else None
    doc = Document(
        found.group(1).strip(),
        "reuters",
        path,
        offset,
        title_text,
        labels=tuple(sorted(labels - {""})),
        encoding=encoding,
    )
    body = _ELEMENT["BODY"].search(text)
    if not body:
        return replace(doc, skip_reason="no_body")
    body_text = _clean(body.group(1)).strip()
    return replace(doc, text=body_text) if body_text else replace(doc, skip_reason="missing_text")


def _decode(raw: bytes) -> tuple[str, str]:
    """Text of raw bytes and the encoding used: UTF-8, else windows-1252, else latin-1 (never fails)."""
    for encoding in ("utf-8", "windows-1252"):
        try:
            return raw.decode(encoding), encoding
        except UnicodeDecodeError:
            pass
    return raw.decode("latin-1"), "latin-1"


def _clean(sgml: str) -> str:
    """Entities decoded (&lt; -> <, &#3; -> nothing) and any remaining control characters dropped."""
    return _CONTROL.sub("", html.unescape(sgml))
