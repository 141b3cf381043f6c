"""JSON Lines crawls -> `Record`s: lines of a plain or gzipped file (a cut file keeps the lines before the
cut), one JSON object per page, and values of a wrong type skipped as `bad_value`. documents.py and the
manifest of a folder of .html files read their JSON Lines through the same functions."""

from __future__ import annotations

import contextlib
import gzip
import json
import zlib
from collections.abc import Iterator

from lshsql.errors import InputError, one_line
from lshsql.sources.records import Record, clean_text, http_skip_reason, redirect_location

_STATUSES = range(1000)  # an HTTP status code is three digits


def jsonl_lines(path: str) -> Iterator[tuple[int, bytes | None]]:
    """(offset, line) of each non-blank line of a JSON Lines file, plain or gzipped (offsets in the
    decompressed stream). A file that breaks while read (a cut or corrupt gzip stream) ends with
    (offset, None) after the lines before the break, so those are kept and the break counted once; one
    that breaks before its first line is an InputError, like a crawl file that cannot be read at all."""
    offset = n_lines = 0
    try:
        with (gzip.open if is_gzip(path) else open)(path, "rb") as f:
            for line in f:
                start, offset = offset, offset + len(line)
                if line.strip():
                    n_lines += 1
                    yield start, line
    except (OSError, EOFError, zlib.error) as e:
        if n_lines == 0:
            raise InputError(f"{path}: cannot read as JSON Lines: {one_line(e, 200)}") from None
        yield offset, None


def json_object(line: bytes) -> dict | None:
    """The JSON object on a line; None for anything else (bad JSON or UTF-8, an array, nesting too deep
    for the parser)."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def first_object(path: str, lines: int = 100) -> dict | None:
    """The first JSON object among the first `lines` non-blank lines of a JSON Lines file, None when there
    is none or the file cannot be read: what its records look like, for an error message."""
    with contextlib.suppress(InputError):
        for n, (_, line) in enumerate(jsonl_lines(path)):
            if line is None or n >= lines:
                break
            if (obj := json_object(line)) is not None:
                return obj
    return None


def optional_text(obj: dict, key: str, default: str | None = None) -> tuple[bool, str | None]:
    """(ok, value) of an optional string field: absent gives the default, null None, a string its
    cleaned text; any other type is not ok (the record is skipped as `bad_value`)."""
    value = obj.get(key, default)
    if value is None or isinstance(value, str):
        return True, value if value is None else clean_text(value)
    return False, None


def iter_jsonl(path: str, max_bytes: int) -> Iterator[Record]:
    for offset, line in jsonl_lines(path):
        if line is None:
            yield Record(None, "unreadable", path, offset, skip_reason="read_error")
        else:
            yield _jsonl_record(line, path, offset, max_bytes)


def is_gzip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _jsonl_record(line: bytes, path: str, offset: int, max_bytes: int) -> Record:
    """One line as a Record: a field of the wrong type (or a status out of range) is `bad_value`, lone
    surrogates in strings become U+FFFD, so no value read can fail later in Arrow or DuckDB."""
    base = {"url": None, "record_type": "jsonl", "source_file": path, "source_offset": offset}
    obj = json_object(line)
    if obj is None:
        return Record(**base, skip_reason="bad_json")
    ok, url = optional_text(obj, "url")
    if url is None:
        return Record(**base, skip_reason="missing_url" if ok else "bad_value")
    base["url"] = url
    status = obj.get("status", 200)
    ok_status = status is None or (type(status) is int and status in _STATUSES)
    fields = [optional_text(obj, key) for key in ("html", "location")]
    fields.append(optional_text(obj, "content_type", "text/html; charset=utf-8"))
    if not ok_status or not all(ok for ok, _ in fields):
        return Record(**base, skip_reason="bad_value")
    (_, html), (_, location), (_, content_type) = fields
    location = redirect_location(status, location)
    if html is None:
        if location is None:
            return Record(**base, skip_reason="missing_html")
        html = ""  # a redirect needs no body
    base.update(status=status, content_type=content_type)
    reason = http_skip_reason(status, content_type)
    body = html.encode("utf-8")
    if reason is None and len(body) > max_bytes:
        reason = "too_large"
    if reason:
        return Record(**base, n_bytes=len(body), skip_reason=reason, location=location)
    return Record(**base, n_bytes=len(body), body=body)
