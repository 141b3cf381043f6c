"""The work folder's guards: one writer at a time, extractions switched in whole, leftovers removed.

A command that writes to a work folder holds its lock (`writing`), an OS file lock that dies with the
process, so a killed run never leaves a stale lock. The first writer to take it removes what killed runs
left behind. Extraction and ingest write their tables beside the old ones and switch them in whole
(`publish_extraction`); the manifest's entry lists every file with its size, and every read checks it
(`require_extraction`).
"""

from __future__ import annotations

import fcntl
import functools
import inspect
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ParamSpec, TypeVar

from lshsql import manifest
from lshsql.errors import InputError

LOCK = ".lshsql.lock"
EXTRACT_TABLES = ("pages.parquet", "links.parquet", "url_aliases.parquet", "surface_forms.parquet")
INGEST_TABLES = (*EXTRACT_TABLES, "labels.parquet")
FRAGMENTS = "fragments"

P = ParamSpec("P")
R = TypeVar("R")
_held: dict[Path, tuple[int, int]] = {}  # work folder -> (lock file descriptor, depth) of this process


@contextmanager
def writing(work: str | Path, create: bool = True) -> Iterator[Path]:
    """Hold the work folder's writer lock for the block (re-entrant in one process: `run CRAWL` extracts
    and runs the stages under one lock), making the folder unless `create` is False. A second writer stops
    at once with a one-line error naming the folder and the process holding it. Readers take no lock."""
    work = Path(work)
    if not create and not work.is_dir():
        raise InputError(f"{work}: no such work folder")
    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{work}: cannot create the work folder: {e.strerror or e}") from None
    key = work.resolve()
    if key in _held:
        fd, depth = _held[key]
        _held[key] = (fd, depth + 1)
        try:
            yield work
        finally:
            _held[key] = (fd, _held[key][1] - 1)
        return
    fd = _take_lock(work)
    _held[key] = (fd, 1)
    try:
        remove_leftovers(work)
        yield work
    finally:
        del _held[key]
        os.close(
            fd
        )  # closing releases the lock; the file stays, so no other process can race on its creation


def _take_lock(work: Path) -> int:
    path = work / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise InputError(f"{work}: cannot write to the work folder: {e.strerror or e}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise InputError(
            f"{work}: another lshsql process (pid {holder}) is writing to this work folder; wait for it to "
            "finish, or use another --work"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def remove_leftovers(work: Path) -> None:
    """Remove what a killed writer left: DIR/tmp (raw extraction tables, batches, staged outputs, spill
    files of processes no longer alive) and DuckDB's `tmp_*` files beside the outputs. Called with the lock
    held, so no live writer owns any of it; readers spill into DIR/tmp/duckdb/<pid>, kept while they live."""
    tmp = work / "tmp"
    if tmp.is_dir():
        for entry in tmp.iterdir():
            if entry.name == "duckdb" and entry.is_dir():
                _remove_dead_spill(entry)
            else:
                _remove(entry)
    for pattern in ("tmp_*", "*/tmp_*", "*/*/tmp_*"):
        for path in work.glob(pattern):
            _remove(path)
    for pattern in ("*.*.tmp", "*/*.*.tmp"):  # write_text's, the manifest's among them
        for path in work.glob(pattern):
            _remove(path)


def _remove_dead_spill(spill: Path) -> None:
    for entry in spill.iterdir():
        if not (entry.is_dir() and entry.name.isdigit() and alive(int(entry.name))):
            _remove(entry)


def alive(pid: int) -> bool:
    """Whether the process `pid` still runs (this one does)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    """Write a text file whole or not at all: a temporary file of this process, then a rename."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    os.replace(tmp, path)


# --- extraction: written beside the old one, switched in whole -----------------------------------------


@contextmanager
def scratch(work: Path, raw: str) -> Iterator[tuple[Path, Path]]:
    """(DIR/tmp/<raw>, DIR/tmp/extraction): the folder an extraction or ingest writes its raw tables to,
    and the one it writes its final tables to before `publish_extraction` moves them in; both made empty,
    and removed afterwards, on failure too."""
    folders = (work / "tmp" / raw, work / "tmp" / "extraction")
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    try:
        yield folders
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def extraction_up_to_date(work: Path, fingerprint: str, tables: tuple[str, ...], force: bool) -> bool:
    """The folder holds a whole extraction with this fingerprint: every file its manifest entry lists, and
    the tables. Never with `force`, which also sets a damaged manifest aside."""
    if force:
        manifest.set_aside_if_damaged(work)
        return False
    entry = manifest.read(work)["stages"].get("extract", {})
    whole = extraction_problem(work) is None and all((work / name).exists() for name in tables)
    return entry.get("fingerprint") == fingerprint and whole


def publish_extraction(work: Path, staged: Path, tables: tuple[str, ...], entry: dict) -> dict:
    """Move the staged tables and fragments into the work folder and record `entry` as the manifest's
    extract entry, with every file's size. The entry is marked incomplete before the first move and
    written whole after the last, so a crash in between leaves a folder every reader refuses."""
    data = manifest.read(work)
    data["stages"]["extract"] = {"incomplete": True}
    manifest.write(work, data)
    for name in (*tables, FRAGMENTS):
        _remove(work / name)
        if (staged / name).exists():
            os.replace(staged / name, work / name)
    shutil.rmtree(staged, ignore_errors=True)
    entry = {**entry, "files": extraction_files(work, tables)}
    manifest.record_stage(work, "extract", entry)
    return entry


def extraction_files(work: Path, tables: tuple[str, ...]) -> dict[str, int]:
    """Each file of an extraction (relative to the folder) with its size in bytes."""
    paths = [work / name for name in tables if (work / name).exists()]
    paths += sorted((work / FRAGMENTS).glob("bucket=*/*.parquet"))
    return {path.relative_to(work).as_posix(): path.stat().st_size for path in paths}


def extraction_problem(work: str | Path) -> str | None:
    """What is wrong with the folder's extraction (None: whole, or none recorded): an interrupted switch,
    or a file the manifest lists that is missing or has another size."""
    work = Path(work)
    entry = manifest.read(work)["stages"].get("extract")
    if entry is None:
        return None
    if entry.get("incomplete"):
        return "the last extraction was interrupted"
    missing = []
    for name, size in entry.get("files", {}).items():
        path = work / name
        if not path.is_file():
            missing.append(f"{name} is missing")
        elif path.stat().st_size != size:
            missing.append(f"{name} has {path.stat().st_size} bytes, not the {size} written")
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return missing[0] + more
    return None


def require_extraction(work: str | Path) -> None:
    """InputError when the folder's extraction is not whole: the stages must not read part of a crawl."""
    problem = extraction_problem(work)
    if problem:
        raise InputError(
            f"{work}: the extraction is incomplete ({problem}): give the crawl (or documents) again to "
            "extract it again"
        )


def fragment_files(work: str | Path) -> list[str]:
    """The fragment files of an extraction, in bucket order (a list, not a glob: a folder name with [ ] or
    ? must not reach DuckDB as a pattern)."""
    return sorted(str(path) for path in (Path(work) / FRAGMENTS).glob("bucket=*/*.parquet"))


def writer(function: Callable[P, R]) -> Callable[P, R]:
    """Run `function` (an API function with a `work` argument, a folder that exists) holding that folder's
    writer lock."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def locked(*args: P.args, **kwargs: P.kwargs) -> R:
        work = signature.bind(*args, **kwargs).arguments["work"]
        with writing(work, create=False):
            return function(*args, **kwargs)

    return locked
