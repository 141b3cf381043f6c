"""`--freeze-idf`: DIR/frozen_idf.parquet, the document frequencies and URL count of the first run with the
option, which the bags stage (sql/20_bags.sql) then keeps for every term they know: adding URLs no longer
moves the TF-IDF weights of the others, so their bags, and with them their signatures and pairs, are reused.
A run without the option reads an empty frozen_idf and counts every df afresh (the file stays for later)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lshsql import manifest, schemas
from lshsql.engines.base import Engine
from lshsql.errors import ParamError
from lshsql.pipeline.compiled import parquet_view
from lshsql.pipeline.stages import output_path

FROZEN = "frozen_idf.parquet"
EMPTY = (
    "select cast(null as bigint) as term_hash, cast(null as bigint) as n_urls, "
    "cast(null as bigint) as corpus_urls where false"
)


def ensure(work: Path) -> Path:
    """DIR/frozen_idf.parquet, written from this run's terms and URL count when the folder has none yet
    (under a temporary name, then renamed: never half-written)."""
    path = work / FROZEN
    if path.exists():
        return path
    terms = output_path(work, "terms")
    if "n_urls" not in pq.read_schema(terms).names:
        raise ParamError(f"--freeze-idf: {terms} has no n_urls column; run again with --force")
    table = pq.read_table(terms, columns=["term_hash", "n_urls"])
    n_urls = pq.ParquetFile(output_path(work, "urls")).metadata.num_rows
    corpus = pa.array([n_urls] * table.num_rows, pa.int64())
    frozen = pa.table(
        [table.column("term_hash"), pc.cast(table.column("n_urls"), pa.int64()), corpus],
        schema=schemas.schema("frozen_idf"),
    )
    staged = work / "tmp" / FROZEN
    staged.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(frozen, staged, compression="zstd")
    os.replace(staged, path)
    return path


def identity(work: Path) -> str | None:
    """What the bags stage's fingerprint takes of the frozen vocabulary (another file reruns it)."""
    return manifest.file_identity(work / FROZEN)


def register(engine: Engine, work: Path, frozen: bool) -> str:
    """The view frozen_idf the bags files read: the frozen file with --freeze-idf, else no rows. Returns the
    view's select for the compiled SQL."""
    if frozen:
        engine.register({"frozen_idf": str(work / FROZEN)})
        return parquet_view(work, str(work / FROZEN))
    engine.view("frozen_idf", EMPTY)
    return EMPTY
