"""`lshsql dedup`'s reading: every record into DIR/records.parquet, and each document's shingle set and
min-hash signature straight into the bags and signatures tables the stages read."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lshsql import schemas
from lshsql.engines import duckdb as db
from lshsql.engines.digests import set_digests
from lshsql.errors import InputError
from lshsql.lsh.minhash import set_signatures
from lshsql.pipeline import Log
from lshsql.sources import corpus
from lshsql.sources.corpus import CorpusSource
from lshsql.sources.shingles import shingle_hashes
from lshsql.tools.dedup_against import copy_earlier_sets

if TYPE_CHECKING:
    from lshsql.tools.dedup import DedupParams

RECORDS_SCHEMA = pa.schema(
    [
        ("source", pa.int32()),
        ("source_path", pa.string()),
        ("ord", pa.int64()),
        ("id", pa.string()),
        ("n_bytes", pa.int64()),
        ("n_shingles", pa.int64()),
        ("seq", pa.int64()),
        ("keep", pa.string()),
        ("skip_reason", pa.string()),
        ("digest_a", pa.int64()),  # the shingle set's two 64-bit digests (engines/digests.set_digests)
        ("digest_b", pa.int64()),
    ]
)


class Writers:
    """DIR/records.parquet (one row per record read), bags.parquet and signatures.parquet (the tables the
    stages read) written batch by batch."""

    def __init__(self, work: Path, num_perm: int) -> None:
        self.bags_schema = schemas.schema("bags")
        self.signatures_schema = pa.schema(
            [("url_id", pa.int64()), *((f"h{i}", pa.int32()) for i in range(num_perm))]
        )
        self.records = pq.ParquetWriter(work / "records.parquet", RECORDS_SCHEMA)
        # hashes do not compress: no codec, and a dictionary only for the constant columns
        self.bags = pq.ParquetWriter(
            work / "bags.parquet", self.bags_schema, compression="none", use_dictionary=["tf", "df", "weight"]
        )
        self.signatures = pq.ParquetWriter(
            work / "signatures.parquet", self.signatures_schema, compression="none", use_dictionary=False
        )

    def add_sets(self, url_ids: np.ndarray, hashes: np.ndarray, counts: np.ndarray, signatures) -> None:
        """The sets of documents url_ids (in order): their bags rows and signatures."""
        if not len(url_ids):
            return
        n = len(hashes)
        ones = pa.array(np.ones(n))
        bag_columns = [
            pa.array(np.repeat(url_ids, counts)),
            pa.array(hashes),
            ones,
            pa.nulls(n, pa.int64()),
            ones,
        ]
        self.bags.write_batch(pa.RecordBatch.from_arrays(bag_columns, schema=self.bags_schema))
        columns = [pa.array(url_ids), *(pa.array(signatures[:, i]) for i in range(signatures.shape[1]))]
        self.signatures.write_batch(pa.RecordBatch.from_arrays(columns, schema=self.signatures_schema))

    def close(self) -> None:
        for writer in (self.records, self.bags, self.signatures):
            writer.close()


def read_all(
    sources: list[CorpusSource],
    work: Path,
    params: DedupParams,
    resources: db.Resources,
    earlier: dict | None,
    log: Log | None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Read every source in order into DIR/records.parquet, bags.parquet and signatures.parquet (url_ids in
    reading order, after the earlier corpus's kept documents); shingles and signatures are computed in
    `threads` threads; `progress` is called with the records and bytes of text read after each batch.
    Returns the bytes of text read."""
    last_id = earlier["kept"] if earlier else 0
    n_records = n_bytes = 0
    writers = Writers(work, params.num_perm)
    written: list = []  # futures of the writer thread, in order; each gives the batch's bytes of text
    try:
        if earlier:
            copy_earlier_sets(earlier, writers, resources)
        # Kernels in `threads` threads; one writer thread appends the batches in order, so neither the
        # reading (DuckDB) nor the Parquet encoding waits for the other.
        # one DuckDB for every file: opening one per file dominated a folder of many small files
        with (
            ThreadPoolExecutor(resources.threads) as pool,
            ThreadPoolExecutor(1) as writer,
            db.connect(resources) as con,
        ):
            for index, source in enumerate(sources):
                if log:
                    log(f"  reading {source.path} ...")
                columns = (params.id_column, params.text_column, params.keep_column)
                pending: list = []
                for batch in corpus.scan(source, *columns, resources, con):
                    pending.append((batch, pool.submit(_sets_of, batch.column(2), params)))
                    if progress:
                        n_records += batch.num_rows
                        n_bytes += batch.column(2).nbytes
                        progress(n_records, n_bytes)
                    while len(pending) > 2 * resources.threads or (pending and pending[0][1].done()):
                        last_id = _hand_over(writer, written, writers, index, source.path, pending, last_id)
                while pending:
                    last_id = _hand_over(writer, written, writers, index, source.path, pending, last_id)
        text_bytes = sum(future.result() for future in written)
    finally:
        writers.close()
    _check_some_text(sources, work, params, resources)
    return text_bytes


def _hand_over(
    writer, written: list, writers: Writers, index: int, path: str, pending: list, last_id: int
) -> int:
    """Give the oldest shingled batch, with url_ids after last_id, to the writer thread; at most a few
    batches wait there. Returns the last url_id given."""
    batch, future = pending.pop(0)
    sets = future.result()
    while len(written) > 4 and not written[-5].done():
        written[-5].result()
    written.append(writer.submit(_write_batch, writers, index, path, batch, sets, last_id))
    return last_id + int((sets[1] > 0).sum())


def _sets_of(texts: pa.Array, params: DedupParams) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(shingle hashes, count per text, signatures and digests of the texts with shingles), in a worker
    thread."""
    n, chars = params.shingling()
    hashes, counts = shingle_hashes(texts, n, chars)
    signatures = set_signatures(hashes, counts[counts > 0], params.seed, params.num_perm)
    return hashes, counts, signatures, set_digests(hashes, counts[counts > 0])


def _write_batch(
    writers: Writers, index: int, path: str, batch: pa.RecordBatch, sets: tuple, last_id: int
) -> int:
    """Append one scanned batch: its records, and the sets of its documents with shingles (_sets_of) under
    url_ids after last_id. Returns its bytes of text."""
    hashes, counts, signatures, digests = sets
    n_bytes = pc.fill_null(pc.binary_length(batch.column(2)), 0).cast(pa.int64())
    has_sets = counts > 0
    url_ids = np.arange(last_id + 1, last_id + 1 + int(has_sets.sum()), dtype=np.int64)
    seq = np.zeros(len(counts), dtype=np.int64)
    seq[has_sets] = url_ids
    digest_a, digest_b = np.zeros(len(counts), np.int64), np.zeros(len(counts), np.int64)
    digest_a[has_sets], digest_b[has_sets] = digests[:, 0], digests[:, 1]
    no_words = pc.and_(pc.is_null(batch.column(4)), pa.array(~has_sets))
    columns = [
        pa.array(np.full(batch.num_rows, index, dtype=np.int32)),
        pa.array([path] * batch.num_rows, pa.string()),
        batch.column(0).cast(pa.int64()),
        batch.column(1).cast(pa.string()),
        n_bytes,
        pa.array(counts),
        pa.array(seq, mask=~has_sets),
        batch.column(3).cast(pa.string()),
        pc.if_else(no_words, pa.scalar("no_words"), batch.column(4)),
        pa.array(digest_a, mask=~has_sets),
        pa.array(digest_b, mask=~has_sets),
    ]
    writers.records.write_batch(pa.RecordBatch.from_arrays(columns, schema=RECORDS_SCHEMA))
    writers.add_sets(url_ids, hashes, counts[has_sets], signatures)
    return int(pc.sum(n_bytes).as_py() or 0)


def _check_some_text(
    sources: list[CorpusSource], work: Path, params: DedupParams, resources: db.Resources
) -> None:
    """InputError when there is nothing to compare: no record at all, or none with the text column (a
    wrong --text-column, named with the fields the records have)."""
    with db.connect(resources) as con:
        total, no_text = con.execute(
            "select count(*), count(*) filter (where skip_reason = 'no_text') from read_parquet($p)",
            {"p": str(work / "records.parquet")},
        ).fetchall()[0]
    if total == 0:
        raise InputError(f"no records in {', '.join(s.path for s in sources)}")
    if no_text == total:
        found = corpus.fields(sources[0], resources)
        raise corpus.missing_text_column(sources[0].path, params.text_column, found)
