"""DuckDB connections with every resource setting explicit: memory_limit, threads, temp_directory."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from lshsql.errors import ParamError, duckdb_message

if TYPE_CHECKING:
    import pyarrow as pa

DEFAULT_MEMORY_FRACTION = 0.5
_OPEN: dict[int, duckdb.DuckDBPyConnection] = {}  # connect()'s connections open now, for interrupt_all
_OPEN_LOCK = threading.Lock()
_MEMORY = re.compile(r"^\s*\d+(\.\d+)?\s*([KMGT]i?B|B)\s*$", re.IGNORECASE)


def default_memory_limit() -> str:
    """Half of the machine's RAM, in whole MB: leaves room for Python workers and the page cache."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "4GB"
    return f"{int(total * DEFAULT_MEMORY_FRACTION) // 2**20}MB"


def default_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Resources:
    """How much of the machine a run may use: DuckDB spills to `temp_directory` beyond `memory_limit`, and
    at most `max_spill` there (None: DuckDB's own bound, 90% of the free disk space)."""

    memory_limit: str = field(default_factory=default_memory_limit)
    threads: int = field(default_factory=default_threads)
    temp_directory: str | None = None
    max_spill: str | None = None

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise ParamError(f"threads must be at least 1, got {self.threads}")
        if not _MEMORY.match(self.memory_limit):
            raise ParamError(f"memory limit '{self.memory_limit}' is not a size like 4GB or 512MB")
        if self.max_spill is not None and not _MEMORY.match(self.max_spill):
            raise ParamError(f"max spill '{self.max_spill}' is not a size like 50GB or 512MB")


def arrow_table(relation: duckdb.DuckDBPyRelation) -> pa.Table:
    """A relation's rows as an Arrow table (to_arrow_table since DuckDB 1.4.2, fetch_arrow_table before)."""
    to_table = getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table
    return to_table()


def spill_directory(work: str | Path) -> str:
    """Where DuckDB spills for a work folder: DIR/tmp/duckdb/<pid>, one folder per process, so a reader
    beside a writer keeps its own, and a writer can remove those of processes that were killed."""
    return str(Path(work) / "tmp" / "duckdb" / str(os.getpid()))


def for_work(work: str | Path, resources: Resources | None = None) -> Resources:
    """`resources`, or the defaults (half the RAM, all cores) spilling to DIR/tmp/duckdb."""
    return resources or Resources(temp_directory=spill_directory(work))


@contextmanager
def connect(resources: Resources, database: str | Path = ":memory:") -> Iterator[duckdb.DuckDBPyConnection]:
    """Open DuckDB with the run's settings; always closed, which also avoids DuckDB's leak warning."""
    config = {
        "memory_limit": resources.memory_limit,
        "threads": resources.threads,
        # Every materialization orders its rows (an ORDER BY, a projection of a sorted CTE, or ordered parts
        # concatenated with the setting on for that copy), so DuckDB may reorder anything else.
        "preserve_insertion_order": False,
    }
    if resources.temp_directory:
        config["temp_directory"] = _writable_folder(resources.temp_directory)
    try:
        con = duckdb.connect(str(database), config=config)
    except duckdb.Error as e:
        raise ParamError(f"cannot open DuckDB with {config}: {e}") from None
    try:
        # DuckDB draws its progress bar on stdout, into a command's output (query --format json)
        con.execute("set enable_progress_bar = false")
        if resources.max_spill:
            # Set once open: given in the config beside temp_directory, DuckDB 2.0 reports the limit but does
            # not enforce it (1.6 GB spilled under an 8 MB limit).
            try:
                con.execute("set max_temp_directory_size = $size", {"size": resources.max_spill})
            except duckdb.Error as e:
                raise ParamError(f"max spill '{resources.max_spill}': {error_message(e)}") from None
        with _OPEN_LOCK:
            _OPEN[id(con)] = con
        yield con
    finally:
        with _OPEN_LOCK:
            _OPEN.pop(id(con), None)
        con.close()
        if resources.temp_directory:
            # DuckDB empties it on close; it stays while another connection of this process spills there
            with contextlib.suppress(OSError):
                Path(config["temp_directory"]).rmdir()


def interrupt_all() -> None:
    """Stop the query each open connection of connect() runs: it fails with DuckDB's InterruptException.
    Safe from another thread (the Ctrl-C relay of cli/interrupts.py)."""
    with _OPEN_LOCK:
        connections = list(_OPEN.values())
    for con in connections:
        with contextlib.suppress(duckdb.Error):  # closed since: the others are still stopped
            con.interrupt()


@contextmanager
def database_file(path: Path) -> Iterator[str]:
    """A path DuckDB can open as a database file for `path`. DuckDB reads a '?' in a database path as the
    start of options, so such a file is opened in a temporary folder and copied back when closed."""
    if "?" not in str(path):
        yield str(path)
        return
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / path.name
        if path.exists():
            shutil.copyfile(path, database)
        yield str(database)
        copy = path.with_name(path.name + ".new")
        shutil.copyfile(database, copy)
        os.replace(copy, path)


def _writable_folder(folder: str) -> str:
    """`folder`, made; or, where it cannot be (a read-only work folder a reader queries), a folder of this
    process under the system's temporary directory."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return folder
    except OSError:
        fallback = Path(tempfile.gettempdir()) / f"lshsql-spill-{os.getpid()}"
        fallback.mkdir(parents=True, exist_ok=True)
        return str(fallback)


def scalar(con: duckdb.DuckDBPyConnection, query: str, params: dict | None = None):
    """The single value of a query. fetchall(), because DuckDB 2.0 keeps a half-fetched result open and
    refuses the next call on the connection."""
    return con.execute(query, params or {}).fetchall()[0][0]


error_message = duckdb_message  # DuckDB's error on one line (lshsql/errors.py, where sqlfiles.py reaches it)


_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS |= {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def memory_limit_bytes(con: duckdb.DuckDBPyConnection) -> int:
    """DuckDB's memory_limit in bytes (it reports e.g. '7.4 GiB')."""
    text = scalar(con, "select current_setting('memory_limit')")
    match = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]i?B|B)\s*", str(text), re.IGNORECASE)
    if not match:
        raise ParamError(f"cannot read DuckDB's memory limit '{text}'")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])
