"""Parquet inputs are read a batch at a time: the memory the readers hold does not grow with the file.

pyarrow pre-buffers by default, and its iter_batches then reads ahead every row group it is to return: a
dedup or an ingest of a 10 GB Parquet corpus held about 10 GB. Measured here by pyarrow's own allocation
count (not a timing), on a file of 40 row groups of incompressible text: a reader may hold a few row
groups, never a quarter of the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lshsql import schemas
from lshsql.engines.duckdb import Resources
from lshsql.sources import corpus, documents

ROW_GROUPS = 40
ROWS_PER_GROUP = 500


@pytest.fixture(scope="module")
def big_parquet(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("streaming") / "corpus.parquet"
    rows = ROW_GROUPS * ROWS_PER_GROUP
    texts = [os.urandom(400).hex() for _ in range(rows)]  # 800 characters a row that no codec shrinks
    table = pa.table({"id": [f"d{i}" for i in range(rows)], "text": texts})
    pq.write_table(table, path, row_group_size=ROWS_PER_GROUP, compression="none")
    return path


def peak_allocated(items: Iterable, size: Callable[[object], int] = lambda item: 1) -> tuple[int, int]:
    """(the summed size of `items`, the most bytes pyarrow held above what it held before) while they are
    consumed."""
    base, peak, total = pa.total_allocated_bytes(), 0, 0
    for item in items:
        total += size(item)
        peak = max(peak, pa.total_allocated_bytes() - base)
    return total, peak


def test_the_file_is_what_pre_buffering_would_hold(big_parquet):
    # the bar below means something: read the default way, pyarrow holds about the whole file
    _, peak = peak_allocated(pq.ParquetFile(big_parquet).iter_batches(batch_size=1000))
    assert peak > big_parquet.stat().st_size / 2


def test_streamed_reads_hold_a_row_group_or_so(big_parquet):
    rows, peak = peak_allocated(
        schemas.streamed(big_parquet).iter_batches(batch_size=1000), lambda batch: batch.num_rows
    )
    assert rows == ROW_GROUPS * ROWS_PER_GROUP
    assert peak < big_parquet.stat().st_size / 4


def test_dedup_scan_of_a_parquet_corpus_is_streamed(big_parquet, tmp_path):
    source = corpus.CorpusSource(str(big_parquet), "parquet")
    resources = Resources(memory_limit="1GB", threads=1, temp_directory=str(tmp_path / "spill"))
    batches = corpus.scan(source, "id", "text", None, resources)
    rows, peak = peak_allocated(batches, lambda batch: batch.num_rows)
    assert rows == ROW_GROUPS * ROWS_PER_GROUP
    assert peak < big_parquet.stat().st_size / 4


def test_ingest_of_a_parquet_file_is_streamed(big_parquet):
    source = documents.DocSource(str(big_parquet), "parquet")
    count, peak = peak_allocated(documents.iter_documents(source))
    assert count == ROW_GROUPS * ROWS_PER_GROUP
    assert peak < big_parquet.stat().st_size / 4
