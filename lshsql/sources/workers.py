"""The pool of worker processes extract and ingest share: batches of records are parsed in parallel and
their rows streamed, in input order, to raw Parquet; a worker dies with the main process."""

from __future__ import annotations

import ctypes
import itertools
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lshsql.sources.nltk_import import only_lshsql_here

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
) -> int:
    """The loop extract and ingest share: batches of (records to parse, records skipped) are parsed by a
    pool of worker processes (at most 2 batches per worker in flight, so memory stays bounded; an input of
    one batch in this process) and their rows streamed, in input order, to raw_dir/<table>.parquet; returns
    the number of records read. `parse` must be picklable (a module-level function or a partial of one).
    `extent`, for progress: (the input bytes read up to an item (record_id, record), the input's bytes)."""
    batches = iter(batches)
    head = list(itertools.islice(batches, 2))
    if len(head) < 2:  # one batch is parsed here: a pool would only add its start and the batch's round trip
        workers = 1
    writers = {t: pq.ParquetWriter(raw_dir / f"{t}.parquet", schema) for t, schema in tables.items()}
    pool = (
        ProcessPoolExecutor(workers, initializer=start_worker, initargs=(os.getpid(),))
        if workers > 1
        else None
    )
    pending: deque[Future | tuple] = deque()
    n_read = n_size = 0

    def write(batches: tuple[pa.RecordBatch, ...]) -> None:
        for table, batch in zip(tables, batches, strict=True):
            if batch.num_rows:
                writers[table].write_batch(batch)

    try:
        for batch, skipped in itertools.chain(head, batches):
            n_read += len(batch) + len(skipped)
            n_size += sum(size_of(record) for _, record in batch)
            if skipped:
                write(skipped_rows(skipped))
            if batch:
                pending.append(pool.submit(parse, batch) if pool else parse(batch))
            while len(pending) > 2 * workers:
                write(_result(pending.popleft()))
            if progress and extent:
                last = max(batch[-1:] + skipped[-1:], key=lambda item: item[0])
                progress(n_read, n_size, extent[0](*last), extent[1])
            elif progress:
                progress(n_read, n_size)
        while pending:
            write(_result(pending.popleft()))
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
        for writer in writers.values():
            writer.close()
    return n_read


def start_worker(parent: int) -> None:
    """A worker process's start: it dies with the main process and runs nothing but lshsql."""
    die_with_parent(parent)
    only_lshsql_here()


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


def _result(item: Future | tuple) -> tuple:
    return item.result() if isinstance(item, Future) else item
