"""Crawl inputs -> a stream of `Record`s: which reader reads each input (WARC/ARC files, folders of .html
files, JSON Lines).

Every record read is yielded once, either with a body to parse or with the reason it is skipped, so the
extract stage can account for all of them. Readers do no HTML work; they run in the main process and feed
the parsing workers. The readers themselves: warc.py, jsonl.py, html_files.py; what they yield: records.py.
"""

from __future__ import annotations

import glob
import gzip
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lshsql.errors import InputError
from lshsql.sources.html_files import iter_htmldir
from lshsql.sources.jsonl import iter_jsonl
from lshsql.sources.records import Record
from lshsql.sources.warc import iter_warc

CRAWL_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz", ".jsonl", ".jsonl.gz")


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
        return iter_warc(source.path, max_bytes)
    if source.kind == "jsonl":
        return iter_jsonl(source.path, max_bytes)
    return iter_htmldir(source.path, source.base_url, max_bytes)
