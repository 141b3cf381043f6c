"""Each input file's parsed raw tables, kept in DIR/parsed/<key>/ so that a later extraction parses only the
inputs that are new or changed and runs the global SQL (sql/01..05) over the kept rows of the others.

An entry's key is what counts as the same file parsed the same way (`file_key`). An entry is made whole in
DIR/tmp and renamed into place, and its entry.json lists its files with their sizes, so a killed run never
leaves a part of an entry that is taken as valid. Entries are hard links to the raw tables of the run that
parsed them (a copy where links are refused); a kept entry is linked back into the next run's raw folder, or
rewritten with its record ids moved when its file's position among the inputs changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from lshsql import manifest
from lshsql.sources.readers import Source

PARSED = "parsed"
ENTRY = "entry.json"
EDGE = 2**20  # the bytes read at each end of a file for its content fingerprint


def file_key(source: Source, params: dict) -> str | None:
    """The key of a file's entry: its path as given and resolved, kind, size, mtime (ns) and an xxh3 of its
    first and last MiB, the extraction parameters and the versions of lshsql and its libraries. None for a
    folder of pages (its files are not fingerprinted, so it is parsed every time) or a file that cannot be
    read (its reader says why, in its own words)."""
    if source.kind == "htmldir":
        return None
    path = Path(source.path)
    try:
        stat = path.stat()
        edges = _edges(path, stat.st_size)
    except OSError:
        return None
    identity = {
        "path": source.path,
        "resolved": str(path.resolve()),
        "kind": source.kind,
        "base_url": source.base_url,
        "bytes": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "edges": edges,
        "params": params,
        "versions": manifest.versions(),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]


def content_edges(source: Source) -> str | None:
    """The xxh3 of a file's first and last MiB (None for a folder of pages or a file that cannot be read):
    with its size and mtime, what tells a rewritten file from the one extracted."""
    if source.kind == "htmldir":
        return None
    try:
        return _edges(Path(source.path), Path(source.path).stat().st_size)
    except OSError:
        return None


def _edges(path: Path, size: int) -> str:
    digest = xxhash.xxh3_64()
    with open(path, "rb") as f:
        digest.update(f.read(EDGE))
        if size > EDGE:
            f.seek(max(EDGE, size - EDGE))
            digest.update(f.read(EDGE))
    return digest.hexdigest()


def whole_entries(work: Path, keys: list[str | None]) -> dict[int, tuple[str, dict]]:
    """The inputs (by position) whose entry is whole: {position: (key, its entry.json)}."""
    found = {}
    for file_no, key in enumerate(keys):
        entry = _read_entry(work / PARSED / key) if key else None
        if entry is not None:
            found[file_no] = (key, entry)
    return found


def _read_entry(folder: Path) -> dict | None:
    try:
        entry = json.loads((folder / ENTRY).read_text(encoding="utf-8"))
        sizes = {name: (folder / name).stat().st_size for name in entry["files"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return entry if sizes == entry["files"] else None


def keep(work: Path, raw_dir: Path, file_no: int, key: str) -> int:
    """Make raw_dir/file-<file_no>/ (a file's raw tables, just parsed) the entry `key`, replacing any
    entry of that key; returns the file's records (rows of its raw pages)."""
    source = raw_dir / f"file-{file_no:06d}"
    source.mkdir(parents=True, exist_ok=True)  # a file without records wrote nothing
    staged = work / "tmp" / f"{PARSED}-{key}"
    shutil.rmtree(staged, ignore_errors=True)
    staged.mkdir(parents=True)
    files = sorted(path.name for path in source.glob("*.parquet"))
    for name in files:
        _link(source / name, staged / name)
    pages = source / "pages.parquet"
    records = pq.ParquetFile(pages).metadata.num_rows if pages.exists() else 0
    entry = {"file_no": file_no, "records": records, "files": {n: (staged / n).stat().st_size for n in files}}
    (staged / ENTRY).write_text(json.dumps(entry, indent=1), encoding="utf-8")
    target = work / PARSED / key
    target.parent.mkdir(exist_ok=True)
    if target.exists():  # --force parsed it again
        _drop(work, target)
    os.replace(staged, target)
    return records


def use(work: Path, raw_dir: Path, file_no: int, key: str, entry: dict) -> int:
    """Put the entry `key` into raw_dir/file-<file_no>/ as the raw tables of the input at that position:
    linked when it was parsed at the same position, else rewritten with every record_id's file number
    moved (batches.numbered); returns its records."""
    source, out = work / PARSED / key, raw_dir / f"file-{file_no:06d}"
    out.mkdir(parents=True, exist_ok=True)
    shift = (file_no - entry["file_no"]) << 32
    for name in entry["files"]:
        if shift:
            _moved(source / name, out / name, shift)
        else:
            _link(source / name, out / name)
    return int(entry["records"])


def _moved(source: Path, out: Path, shift: int) -> None:
    """A copy of a raw table with `shift` added to its record_id column (a table without one as it is)."""
    reader = pq.ParquetFile(source)
    schema = reader.schema_arrow
    at = schema.get_field_index("record_id")
    with pq.ParquetWriter(out, schema) as writer:
        for batch in reader.iter_batches():
            if at >= 0:
                moved = pc.add(batch.column(at), shift)
                batch = batch.set_column(at, schema.field(at), moved)
            writer.write_batch(batch)


def _link(source: Path, out: Path) -> None:
    try:
        os.link(source, out)
    except OSError:  # a file system without hard links
        shutil.copyfile(source, out)


def prune(work: Path, current: set[str]) -> None:
    """Drop the entries of inputs no longer given or changed: every entry whose key is not in `current`.
    Called after the tables are switched in, so a failed run keeps the entries the last result came from."""
    folder = work / PARSED
    if folder.is_dir():
        for entry in folder.iterdir():
            if entry.name not in current:
                _drop(work, entry)


def _drop(work: Path, entry: Path) -> None:
    """Remove an entry: first renamed into DIR/tmp, so a kill part-way never leaves a part of it in place."""
    gone = work / "tmp" / f"{PARSED}-dropped-{entry.name}"
    shutil.rmtree(gone, ignore_errors=True)
    os.replace(entry, gone)
    shutil.rmtree(gone, ignore_errors=True)
