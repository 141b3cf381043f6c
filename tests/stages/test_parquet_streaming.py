"""Parquet inputs are read a batch at a time: the memory the readers hold does not grow with the file.

pyarrow pre-buffers by default, and its iter_batches then reads ahead every row group it is to return, so
a dedup or an ingest of a Parquet corpus held memory as large as the file. Measured by pyarrow's own
allocation count (not a timing) on two files of random text stored uncompressed, of 20 and 80 row groups:
a reader's peak on the larger file stays that of the smaller one.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lshsql import schemas
from lshsql.engines.duckdb import Resources
from lshsql.sources import corpus, documents

ROWS_PER_GROUP = 500
SMALL, LARGE = 20, 80  # row groups


def write_corpus(path: Path, row_groups: int) -> Path:
    draw = random.Random(row_groups)
    rows = row_groups * ROWS_PER_GROUP
    table = pa.table(
        {"id": [f"d{i}" for i in range(rows)], "text": [draw.randbytes(400).hex() for _ in range(rows)]}
    )
    pq.write_table(table, path, row_group_size=ROWS_PER_GROUP, compression="none")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[int, Path]:
    folder = tmp_path_factory.mktemp("streaming")
    return {groups: write_corpus(folder / f"corpus{groups}.parquet", groups) for groups in (SMALL, LARGE)}


def settled_allocation() -> int:
    """The bytes pyarrow holds once a reader read before has let go of its buffers: a pre-buffered read's
    I/O threads free them after the reader is gone, and counted into the base they made the next peak small."""
    gc.collect()
    held, steady, deadline = pa.total_allocated_bytes(), 0, time.monotonic() + 10
    while steady < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
        now = pa.total_allocated_bytes()
        steady, held = (steady + 1 if now == held else 0), now
    return held


def peak_allocated(items: Iterable, size: Callable[[object], int] = lambda item: 1) -> tuple[int, int]:
    """(the summed size of `items`, the most bytes pyarrow held above what it held before) while they are
    consumed."""
    base, peak, total = settled_allocation(), 0, 0
    for item in items:
        total += size(item)
        peak = max(peak, pa.total_allocated_bytes() - base)
    return total, peak


def check_streamed(files: dict[int, Path], read: Callable[[Path], Iterator], size=lambda item: 1) -> None:
    """Every row read from both files, and the larger file's peak no more than the smaller one's, with room
    for a last batch and a footer of other sizes (read pre-buffered, it is over three times that)."""
    peaks = {}
    for groups, path in files.items():
        count, peaks[groups] = peak_allocated(read(path), size)
        assert count == groups * ROWS_PER_GROUP
    assert peaks[LARGE] < 1.5 * peaks[SMALL]


def test_pre_buffered_reads_grow_with_the_file(files):
    # the check below means something: read the way pyarrow does by default, the peak is the file
    def read(path: Path) -> Iterator[pa.RecordBatch]:
        return pq.ParquetFile(path, pre_buffer=True).iter_batches(batch_size=1000)

    peaks = {groups: peak_allocated(read(path))[1] for groups, path in files.items()}
    assert peaks[LARGE] > 3 * peaks[SMALL]
    assert peaks[LARGE] > files[LARGE].stat().st_size / 2


def test_streamed_reads_hold_a_few_batches(files):
    check_streamed(
        files, lambda path: schemas.streamed(path).iter_batches(batch_size=1000), lambda batch: batch.num_rows
    )


def test_dedup_scan_of_a_parquet_corpus_is_streamed(files):
    resources = Resources(memory_limit="1GB", threads=1)  # a Parquet scan does not open DuckDB

    def read(path: Path) -> Iterator[pa.RecordBatch]:
        return corpus.scan(corpus.CorpusSource(str(path), "parquet"), "id", "text", None, resources)

    check_streamed(files, read, lambda batch: batch.num_rows)


def test_dedup_copy_of_the_kept_rows_is_streamed(files):
    resources = Resources(memory_limit="1GB", threads=1)

    def read(path: Path) -> Iterator[pa.RecordBatch]:
        return corpus.rows(corpus.CorpusSource(str(path), "parquet"), resources)

    check_streamed(files, read, lambda batch: batch.num_rows)


def test_ingest_of_a_parquet_file_is_streamed(files):
    check_streamed(files, lambda path: documents.iter_documents(documents.DocSource(str(path), "parquet")))
