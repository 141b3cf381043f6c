"""Folders of .html files -> `Record`s: a page per file, its URL from the folder's manifest.jsonl or from
--base-url and its path; no file outside the folder is read."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from lshsql.sources.jsonl import json_object, jsonl_lines, optional_text
from lshsql.sources.records import SURROGATES, Record, clean_text, path_text

HTML_SUFFIXES = (".html", ".htm", ".xhtml")


def iter_htmldir(folder: str, base_url: str | None, max_bytes: int) -> Iterator[Record]:
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
            yield Record(url, "file", path_text(path), 0, skip_reason=reason)
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
        elif not isinstance(rel, str) or "\0" in rel or SURROGATES.search(rel):
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


def _file_record(url: str, path: str, max_bytes: int) -> Record:
    base = {"url": url, "record_type": "file", "source_file": path_text(path), "source_offset": 0}
    try:
        with open(path, "rb") as f:
            body = f.read(max_bytes + 1)
    except OSError:
        return Record(**base, skip_reason="missing_file")
    base.update(status=200, content_type="text/html")
    if len(body) > max_bytes:
        return Record(**base, n_bytes=len(body), skip_reason="too_large")
    return Record(**base, n_bytes=len(body), body=body)
