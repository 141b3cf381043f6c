"""Crawl inputs -> a stream of `Record`s: WARC/ARC files, folders of .html files, JSON Lines.

Every record read is yielded once, either with a body to parse or with the reason it is skipped, so the
extract stage can account for all of them. Readers do no HTML work; they run in the main process and feed
the parsing workers.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lshsql.errors import InputError

CRAWL_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz", ".jsonl", ".jsonl.gz")
HTML_SUFFIXES = (".html", ".htm", ".xhtml")
HTML_TYPES = ("text/html", "application/xhtml+xml")
SKIPPED_RECORD_TYPES = {
    "request",
    "revisit",
    "metadata",
    "warcinfo",
    "resource",
    "conversion",
    "continuation",
}
# Statuses whose Location header says where the URL's content is: the record is no page (`http_status`),
# but extraction keeps its target as pages.redirect_url, and url_aliases follows it.
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class Record:
    """One record read from an input; `skip_reason` is set when it cannot be used, else `body` holds it."""

    url: str | None
    record_type: str
    source_file: str
    source_offset: int
    warc_date: str | None = None
    status: int | None = None
    content_type: str | None = None
    n_bytes: int = 0
    body: bytes | None = None
    skip_reason: str | None = None
    location: str | None = None  # Location header (as written) of a redirect (REDIRECT_STATUSES)


@dataclass(frozen=True)
class Source:
    """One input to read: a crawl file, or a folder of .html pages."""

    path: str
    kind: str  # "warc" (also ARC), "jsonl" or "htmldir"
    base_url: str | None = None


def resolve_sources(paths: list[str], base_url: str | None = None) -> list[Source]:
    """Expand files, folders and globs into sources in a stable order; raise InputError for bad paths."""
    if not paths:
        raise InputError("no crawl given")
    return [source for path in expand_paths(paths) for source in _sources_at(path, base_url)]


def expand_paths(paths: list[str]) -> list[str]:
    """Each argument as written when it exists, else its glob matches in sorted order; InputError for an
    argument that names nothing."""
    expanded: list[str] = []
    for raw in paths:
        matches = [raw] if os.path.exists(raw) else sorted(glob.glob(raw, recursive=True))
        if not matches:
            raise InputError(f"{raw}: no such file or directory")
        expanded.extend(matches)
    return expanded


def _sources_at(path: str, base_url: str | None) -> list[Source]:
    if os.path.isdir(path):
        if base_url is not None or os.path.exists(os.path.join(path, "manifest.jsonl")):
            return [Source(path, "htmldir", base_url)]
        files = sorted(str(p) for p in Path(path).rglob("*") if p.is_file() and _is_crawl_name(p.name))
        if not files:
            raise InputError(
                f"{path}: folder has no .warc/.arc/.jsonl files "
                "(for a folder of .html pages add manifest.jsonl or --base-url)"
            )
        return [Source(f, sniff_kind(f)) for f in files]
    return [Source(path, sniff_kind(path))]


def _is_crawl_name(name: str) -> bool:
    return name.lower().endswith(CRAWL_SUFFIXES)


def sniff_kind(path: str) -> str:
    """Tell a WARC/ARC file from JSON Lines by its first bytes, not its name."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as g:
                head = g.read(64)
    except (OSError, EOFError) as e:
        raise InputError(f"{path}: cannot read: {e}") from None
    except zlib.error as e:  # gzip magic, then no valid deflate stream
        raise InputError(f"{path}: not a readable gzip file: {e}") from None
    if not head.strip():
        raise InputError(f"{path}: empty file, not a crawl")
    stripped = head.lstrip()
    if stripped.startswith((b"WARC/", b"filedesc://")):
        return "warc"
    if stripped.startswith(b"{"):
        return "jsonl"
    raise InputError(f"{path}: not a WARC, ARC or JSON Lines file")


def iter_records(source: Source, max_bytes: int) -> Iterator[Record]:
    """Yield every record of one source, in file order."""
    if source.kind == "warc":
        return _iter_warc(source.path, max_bytes)
    if source.kind == "jsonl":
        return _iter_jsonl(source.path, max_bytes)
    return _iter_htmldir(source.path, source.base_url, max_bytes)


# --- WARC / ARC --------------------------------------------------------------------------------------


def _iter_warc(path: str, max_bytes: int) -> Iterator[Record]:
    """Records of a WARC or ARC file. A record warcio cannot parse ends the file: it is counted as one
    `read_error` (what follows it cannot be found reliably), unless nothing was read, then it is an error."""
    from warcio.exceptions import ArchiveLoadFailed
    from warcio.statusandheaders import StatusAndHeadersParserException

    broken = (ArchiveLoadFailed, StatusAndHeadersParserException, OSError, EOFError, ValueError, zlib.error)

    n_done = 0
    try:
        for record in _warc_records(path, max_bytes, decompress_whole=False):
            n_done += 1
            yield record
    except ArchiveLoadFailed as e:
        if "non-chunked gzip" not in str(e):
            yield _read_error(path, n_done, e)
            return
        # A gzip file written as one member instead of one per record: read it as one stream.
        # Offsets are then positions in the decompressed stream.
        try:
            for i, record in enumerate(_warc_records(path, max_bytes, decompress_whole=True)):
                if i >= n_done:
                    yield record
        except broken as e2:
            yield _read_error(path, n_done, e2)
    except broken as e:
        yield _read_error(path, n_done, e)


def _read_error(path: str, n_done: int, error: Exception) -> Record:
    if n_done == 0:
        raise InputError(f"{path}: not a readable WARC/ARC file: {_one_line(error)}")
    return Record(None, "unreadable", path, -1, skip_reason="read_error")


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())[:200]


def _warc_records(path: str, max_bytes: int, decompress_whole: bool) -> Iterator[Record]:
    from warcio.archiveiterator import ArchiveIterator

    opener = gzip.open if decompress_whole else open
    with opener(path, "rb") as f:
        records = ArchiveIterator(f, arc2warc=True)
        for rec in records:
            record = _warc_record(rec, path, max_bytes)
            # warcio knows the offset once the record's content is consumed or skipped.
            offset = records.get_record_offset()
            yield _with_offset(record, offset)


def _with_offset(record: Record, offset: int) -> Record:
    return Record(**{**record.__dict__, "source_offset": offset})


def _warc_record(rec, path: str, max_bytes: int) -> Record:
    headers = rec.rec_headers
    url = headers.get_header("WARC-Target-URI")
    base = {
        "url": url,
        "record_type": rec.rec_type,
        "source_file": path,
        "source_offset": -1,
        "warc_date": headers.get_header("WARC-Date"),
    }
    if rec.rec_type != "response":
        reason = rec.rec_type if rec.rec_type in SKIPPED_RECORD_TYPES else "other_record_type"
        return Record(**base, skip_reason=reason)
    http = rec.http_headers
    if http is None:
        return Record(**base, skip_reason="no_http_headers")
    status = _status(http.get_statuscode())
    content_type = http.get_header("Content-Type")
    base.update(status=status, content_type=content_type)
    reason = http_skip_reason(status, content_type)
    if reason:
        return Record(**base, skip_reason=reason, location=_location(status, http.get_header("Location")))
    body = rec.content_stream().read(max_bytes + 1)
    if len(body) > max_bytes:
        return Record(**base, n_bytes=len(body), skip_reason="too_large")
    return Record(**base, n_bytes=len(body), body=body)


def _location(status: int | None, location: object) -> str | None:
    """The Location of a redirect response, None for other statuses or a missing or blank header."""
    if status in REDIRECT_STATUSES and isinstance(location, str) and location.strip():
        return location
    return None


def _status(code: str | None) -> int | None:
    try:
        return int(code) if code else None
    except ValueError:
        return None


def http_skip_reason(status: int | None, content_type: str | None) -> str | None:
    """Why an HTTP response is not used: `http_status` unless 200, `not_html` unless an HTML type."""
    if status != 200:
        return "http_status"
    media = (content_type or "").split(";")[0].strip().lower()
    if media and media not in HTML_TYPES:
        return "not_html"
    return None


# --- JSON Lines -------------------------------------------------------------------------------------

_SURROGATES = re.compile("[\ud800-\udfff]")
_STATUSES = range(1000)  # an HTTP status code is three digits


def jsonl_lines(path: str) -> Iterator[tuple[int, bytes | None]]:
    """(offset, line) of each non-blank line of a JSON Lines file, plain or gzipped (offsets in the
    decompressed stream). A file that breaks while read (a cut or corrupt gzip stream) ends with
    (offset, None) after the lines before the break, so those are kept and the break counted once; one
    that breaks before its first line is an InputError, like a crawl file that cannot be read at all."""
    offset = n_lines = 0
    try:
        with (gzip.open if _is_gzip(path) else open)(path, "rb") as f:
            for line in f:
                start, offset = offset, offset + len(line)
                if line.strip():
                    n_lines += 1
                    yield start, line
    except (OSError, EOFError, zlib.error) as e:
        if n_lines == 0:
            raise InputError(f"{path}: cannot read as JSON Lines: {_one_line(e)}") from None
        yield offset, None


def json_object(line: bytes) -> dict | None:
    """The JSON object on a line; None for anything else (bad JSON or UTF-8, an array, nesting too deep
    for the parser)."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def clean_text(text: str) -> str:
    """text with each lone surrogate, legal in JSON but not encodable as UTF-8 (Arrow refuses it),
    replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text)
    return text


def optional_text(obj: dict, key: str, default: str | None = None) -> tuple[bool, str | None]:
    """(ok, value) of an optional string field: absent gives the default, null None, a string its
    cleaned text; any other type is not ok (the record is skipped as `bad_value`)."""
    value = obj.get(key, default)
    if value is None or isinstance(value, str):
        return True, value if value is None else clean_text(value)
    return False, None


def _iter_jsonl(path: str, max_bytes: int) -> Iterator[Record]:
    for offset, line in jsonl_lines(path):
        if line is None:
            yield Record(None, "unreadable", path, offset, skip_reason="read_error")
        else:
            yield _jsonl_record(line, path, offset, max_bytes)


def _is_gzip(path: str) -> bool:
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
    location = _location(status, location)
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


# --- folder of .html files --------------------------------------------------------------------------


def _iter_htmldir(folder: str, base_url: str | None, max_bytes: int) -> Iterator[Record]:
    manifest = os.path.join(folder, "manifest.jsonl")
    if os.path.exists(manifest):
        entries = _manifest_entries(manifest)
    else:
        entries = _derived_entries(folder, base_url or "")
    root = os.path.realpath(folder)
    for url, rel, reason in entries:
        path = os.path.join(folder, rel) if rel is not None else manifest
        if reason is None and not _inside(root, path):
            reason = "path_outside_folder"
        if reason:
            yield Record(url, "file", _path_text(path), 0, skip_reason=reason)
            continue
        yield _file_record(url, path, max_bytes)


def _inside(root: str, path: str) -> bool:
    """Whether path, symlinks resolved, is in the folder whose resolved path is root: a manifest (or a
    symlink in the folder) must not make extract read files elsewhere (an absolute path, ../, a link out)."""
    return os.path.commonpath([root, os.path.realpath(path)]) == root


def _manifest_entries(manifest: str) -> Iterator[tuple[str | None, str | None, str | None]]:
    """(url, path, skip reason) of each manifest line; a path that no file can have (a NUL or a lone
    surrogate) or that is not a string is `bad_value`."""
    for _, line in jsonl_lines(manifest):
        if line is None:
            yield None, None, "read_error"
            continue
        obj = json_object(line)
        if obj is None:
            yield None, None, "bad_json"
            continue
        ok, url = optional_text(obj, "url")
        rel = obj.get("path")
        if url is None:
            yield None, None, "missing_url" if ok else "bad_value"
        elif rel is None or rel == "":
            yield url, None, "missing_path"
        elif not isinstance(rel, str) or "\0" in rel or _SURROGATES.search(rel):
            yield url, None, "bad_value"
        else:
            yield url, rel, None


_SLASHES = re.compile(r"[\\/]+")


def _derived_entries(folder: str, base_url: str) -> Iterator[tuple[str, str, None]]:
    from urllib.parse import quote, urljoin

    root = Path(folder)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name.lower().endswith(HTML_SUFFIXES))
    base = base_url if base_url.endswith("/") else base_url + "/"
    for p in files:
        rel = _SLASHES.sub("/", str(p.relative_to(root)))
        # a name's bytes, so one that is not UTF-8 is percent-encoded as it is on disk
        yield clean_text(urljoin(base, quote(os.fsencode(rel)))), str(p.relative_to(root)), None


def _path_text(path: str) -> str:
    """A file path as UTF-8 text for the source_file column: bytes of a name that are not UTF-8 (which
    Python holds as lone surrogates, refused by Arrow) written as \\xNN."""
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return clean_text(path)


def _file_record(url: str, path: str, max_bytes: int) -> Record:
    base = {"url": url, "record_type": "file", "source_file": _path_text(path), "source_offset": 0}
    try:
        with open(path, "rb") as f:
            body = f.read(max_bytes + 1)
    except OSError:
        return Record(**base, skip_reason="missing_file")
    base.update(status=200, content_type="text/html")
    if len(body) > max_bytes:
        return Record(**base, n_bytes=len(body), skip_reason="too_large")
    return Record(**base, n_bytes=len(body), body=body)
