"""The pool of worker processes extract and ingest share: batches of records are parsed in parallel and
their rows streamed, in input order, to raw Parquet; a worker dies with the main process."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import itertools
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lshsql.imports import only_lshsql_here

# Allocations of container objects between the cyclic garbage collector's young collections: parsing a
# page makes tens of thousands of lists and tuples, none of them in cycles, which Python's default (700)
# collects again and again for nothing.
GC_YOUNG_THRESHOLD = 50_000

# called after each batch with (records read, bytes read) and, for inputs of known size, (input bytes
# read, input bytes in all)
Progress = Callable[..., None]


def write_raw_tables(
    batches: Iterator[tuple[list, list]],
    parse: Callable[[list], tuple[pa.RecordBatch, ...]],
    skipped_rows: Callable[[list], tuple[pa.RecordBatch, ...]],
    size_of: Callable[[object], int],
    tables: dict[str, pa.Schema],
    raw_dir: Path,
    workers: int,
    progress: Progress | None,
    extent: tuple[Callable[[int, object], int], int] | None = None,
    by_file: bool = False,
) -> int:
    """The loop extract and ingest share: batches of (records to parse, records skipped) are parsed by a
    pool of worker processes (at most 2 batches per worker in flight, so memory stays bounded; an input of
    one batch in this process) and their rows streamed, in input order, to raw_dir/<table>.parquet, or with
    `by_file` to raw_dir/file-<n>/<table>.parquet by their record's file number (a batch must then hold one
    file's records); returns the number of records read. `parse` must be picklable (a module-level function
    or a partial of one). `extent`, for progress: (the input bytes read up to an item (record_id, record),
    the input's bytes)."""
    batches = iter(batches)
    head = list(itertools.islice(batches, 2))
    if len(head) < 2:  # one batch is parsed here: a pool would only add its start and the batch's round trip
        workers = 1
    out = _Writers(tables, raw_dir, by_file)
    pool = (
        ProcessPoolExecutor(workers, initializer=start_worker, initargs=(os.getpid(),))
        if workers > 1
        else None
    )
    # (record_id of the batch's first record, its rows or their future), in input order
    pending: deque[tuple[int, Future | tuple]] = deque()
    n_read = n_size = 0
    with fewer_collections():
        try:
            for batch, skipped in itertools.chain(head, batches):
                n_read += len(batch) + len(skipped)
                n_size += sum(size_of(record) for _, record in batch)
                if skipped:
                    pending.append((skipped[0][0], skipped_rows(skipped)))
                if batch:
                    pending.append((batch[0][0], pool.submit(parse, batch) if pool else parse(batch)))
                while sum(isinstance(item, Future) for _, item in pending) > 2 * workers:
                    out.write(*_result(pending.popleft()))
                if progress and extent:
                    last = max(batch[-1:] + skipped[-1:], key=lambda item: item[0])
                    progress(n_read, n_size, extent[0](*last), extent[1])
                elif progress:
                    progress(n_read, n_size)
            while pending:
                out.write(*_result(pending.popleft()))
        finally:
            if pool:
                pool.shutdown(cancel_futures=True)
            out.close()
    return n_read


class _Writers:
    """One Parquet writer per raw table, in raw_dir or (by_file) in the folder of the file being written;
    a file's writers close when the next file's rows come, so open files stay few."""

    def __init__(self, tables: dict[str, pa.Schema], raw_dir: Path, by_file: bool) -> None:
        self.tables, self.raw_dir, self.by_file = tables, raw_dir, by_file
        self.folder: Path | None = None
        self.writers: dict[str, pq.ParquetWriter] = {}
        if not by_file:
            self._open(raw_dir)

    def write(self, record_id: int, batches: tuple[pa.RecordBatch, ...]) -> None:
        if self.by_file:
            folder = self.raw_dir / f"file-{record_id >> 32:06d}"
            if folder != self.folder:
                self.close()
                folder.mkdir(parents=True, exist_ok=True)
                self._open(folder)
        for table, batch in zip(self.tables, batches, strict=True):
            if batch.num_rows:
                self.writers[table].write_batch(batch)

    def _open(self, folder: Path) -> None:
        self.folder = folder
        self.writers = {t: pq.ParquetWriter(folder / f"{t}.parquet", s) for t, s in self.tables.items()}

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()
        self.writers = {}


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Young garbage collections every GC_YOUNG_THRESHOLD allocations instead of Python's default while
    pages are parsed in this process; the threshold before is back afterwards."""
    before = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def start_worker(parent: int) -> None:
    """A worker process's start: it dies with the main process and runs nothing but lshsql; the objects it
    inherits (modules) leave the garbage collector's view, and collections are rarer (fewer_collections)."""
    die_with_parent(parent)
    only_lshsql_here()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def die_with_parent(parent: int) -> None:
    """In a worker process: be killed when the main process dies, by any signal (kill -9 too), rather
    than parse on for nobody. Linux's PR_SET_PDEATHSIG; elsewhere workers end when their queue closes."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)


PR_SET_PDEATHSIG = 1


def _result(entry: tuple[int, Future | tuple]) -> tuple[int, tuple]:
    record_id, item = entry
    return record_id, item.result() if isinstance(item, Future) else item
