"""Each input's raw tables (a crawl file's parsed rows, a document file's or in-memory table's normalized
rows), kept in DIR/parsed/<key>/ so that a later extraction or ingest reads only the inputs that are new or
changed and runs the global SQL (sql/01..05) over the kept rows of the others.

An entry's key is what counts as the same input read the same way (`Inputs.key`). An entry is made whole in
DIR/tmp and renamed into place, and its entry.json lists its files with their sizes, so a killed run never
leaves a part of an entry that is taken as valid. Entries are hard links to the raw tables of the run that
read them (a copy where links are refused); a kept entry is linked back into the next run's raw folder, or
rewritten with its record ids moved when its input's position among the inputs changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import xxhash

from lshsql import manifest, schemas

PARSED = "parsed"
ENTRY = "entry.json"
EDGE = 2**20  # the bytes read at each end of a file for its content fingerprint


@dataclass(frozen=True)
class Inputs:
    """The inputs of an extraction or ingest as their entries are keyed: each source, what it held before it
    was read (`content`, taken once, up front), the options its rows depend on and, for `ingest --limit`,
    the limit: an input's rows then depend on the documents used before it too (`key`)."""

    sources: list
    seen: list[dict | None]
    options: dict
    limit: int | None = None

    @classmethod
    def of(cls, sources: list, options: dict, limit: int | None = None) -> Inputs:
        """The inputs with their content as it is now, before any is read."""
        return cls(sources, [content(source) for source in sources], options, limit)

    def key(self, file_no: int, used_before: int) -> str | None:
        """The key of an input's entry: its path as given, kind and base URL, what it held (`content`), the
        options, the versions of lshsql and its libraries and, with a limit, the documents used before it
        (at most the limit: past it, every usable document is over_limit). None when it is not kept."""
        source, seen = self.sources[file_no], self.seen[file_no]
        if seen is None:
            return None
        identity = {
            "path": source.path,
            "kind": source.kind,
            "base_url": getattr(source, "base_url", None),
            **seen,
            "params": self.options,
            "versions": manifest.versions(),
        }
        if self.limit is not None:
            identity["used_before"] = min(used_before, self.limit)
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]

    def used_after(self, used: int | None, n_used: int | None) -> int | None:
        """The documents used before the next input (what a key counts, up to the limit), from those before
        this one and this one's: None when unknown (this one not read yet, the limit not reached); 0
        without a limit, where the count is not part of a key."""
        if self.limit is None:
            return 0
        if used is not None and used >= self.limit:
            return self.limit
        return None if used is None or n_used is None else min(used + n_used, self.limit)


def content(source) -> dict | None:
    """What tells an input apart from a changed one, taken before it is read: a file's resolved path, size,
    mtime (ns) and the xxh3 of its first and last MiB; an in-memory table's rows and digest (taken when
    its source was resolved). None for a folder of pages (its files are not fingerprinted, so it is read
    every time) or a file that cannot be read (its reader says why, in its own words)."""
    if source.kind == "htmldir":
        return None
    if getattr(source, "table", None) is not None:
        return {"rows": source.table.num_rows, "sha256": source.digest}
    path = Path(source.path)
    try:
        stat = path.stat()
        edges = _edges(path, stat.st_size)
    except OSError:
        return None
    return {
        "resolved": str(path.resolve()),
        "bytes": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "edges": edges,
    }


def content_edges(source) -> str | None:
    """The xxh3 of a file's first and last MiB (None for a folder of pages, an in-memory table or a file
    that cannot be read): with its size and mtime, what tells a rewritten file from the one read."""
    if source.kind == "htmldir" or getattr(source, "table", None) is not None:
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


def whole_entries(work: Path, inputs: Inputs) -> dict[int, tuple[str, dict]]:
    """The inputs (by position) whose entry is whole: {position: (key, its entry.json)}. With a limit, an
    input after one to be read is reused only once the limit is reached before it."""
    found, used = {}, 0
    for file_no in range(len(inputs.sources)):
        key = inputs.key(file_no, used) if used is not None else None
        entry = _read_entry(work / PARSED / key) if key else None
        if entry is not None:
            found[file_no] = (key, entry)
        used = inputs.used_after(used, entry.get("used") if entry else None)  # older entries lack it
    return found


def keep_and_use(
    work: Path, raw_dir: Path, inputs: Inputs, kept: dict[int, tuple[str, dict]]
) -> tuple[set[str], int]:
    """Once the inputs not in `kept` are read into raw_dir/file-<n>/: keep each as an entry (a folder of
    pages excepted, and a file that changed while it was read: it is read again next time), and put the
    kept entries into raw_dir. Returns the keys of the current inputs (`prune` drops the others) and the
    records of the kept entries used."""
    keys, records, used = set(), 0, 0
    for file_no in range(len(inputs.sources)):
        if file_no in kept:
            key, entry = kept[file_no]
            records += use(work, raw_dir, file_no, key, entry)
        else:
            key = inputs.key(file_no, used)
            entry = None
            if key and content(inputs.sources[file_no]) == inputs.seen[file_no]:
                entry = keep(work, raw_dir, file_no, key)
        if key:
            keys.add(key)
        if inputs.limit is not None:
            n_used = entry["used"] if entry else _used(raw_dir / f"file-{file_no:06d}" / "pages.parquet")
            used = inputs.used_after(used, n_used)
    return keys, records


def _read_entry(folder: Path) -> dict | None:
    try:
        entry = json.loads((folder / ENTRY).read_text(encoding="utf-8"))
        sizes = {name: (folder / name).stat().st_size for name in entry["files"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return entry if sizes == entry["files"] else None


def keep(work: Path, raw_dir: Path, file_no: int, key: str) -> dict:
    """Make raw_dir/file-<file_no>/ (a file's raw tables, just parsed) the entry `key`, replacing any
    entry of that key; returns its entry.json: the file's records (rows of its raw pages) and those used."""
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
    sizes = {n: (staged / n).stat().st_size for n in files}
    entry = {"file_no": file_no, "records": records, "used": _used(pages), "files": sizes}
    (staged / ENTRY).write_text(json.dumps(entry, indent=1), encoding="utf-8")
    target = work / PARSED / key
    target.parent.mkdir(exist_ok=True)
    if target.exists():  # --force parsed it again
        _drop(work, target)
    os.replace(staged, target)
    return entry


def _used(pages: Path) -> int:
    """The records of a raw pages table not skipped while read (what ingest --limit counts)."""
    if not pages.exists():
        return 0
    skip = schemas.read(pages, columns=["skip_reason"]).column(0)
    return skip.null_count


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
    reader = schemas.streamed(source)
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
