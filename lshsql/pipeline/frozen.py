"""`--freeze-idf`: DIR/frozen_idf.parquet, the document frequencies and URL count of the first run with the
option, which the bags stage (sql/20_bags.sql) then keeps for every term they know: adding URLs no longer
moves the TF-IDF weights of the others, so their bags, and with them their signatures and pairs, are reused.
A run without the option reads an empty frozen_idf and counts every df afresh (the file stays for later)."""

from __future__ import annotations

import json
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
STAGED = Path("tmp") / FROZEN  # a vocabulary frozen by this run, until its bags stage has succeeded
META = b"lshsql_described"  # the file's Parquet metadata: what its counts describe (`described`)
EMPTY = (
    "select cast(null as bigint) as term_hash, cast(null as bigint) as n_urls, "
    "cast(null as bigint) as corpus_urls where false"
)


def described(params, from_bags: bool) -> dict:
    """What a frozen vocabulary's counts describe: the unit a bag describes, whether aliases were mapped and
    the kind of input (fragments of a crawl or documents, or a bags table)."""
    return {"unit": params.unit, "aliases": params.aliases, "input": "bags" if from_bags else "fragments"}


def ensure(work: Path, describing: dict) -> Path:
    """The frozen file this run's bags read: DIR/frozen_idf.parquet when the folder has one (a ParamError
    when its counts describe other bags), else one written now from this run's terms and URL count into
    DIR/tmp, which `publish` puts in place once the bags stage has succeeded (a refused run leaves none)."""
    path = work / FROZEN
    if path.exists():
        recorded = pq.read_schema(path).metadata or {}
        if json.loads(recorded.get(META, b"null")) != describing:
            now = _text(json.dumps(describing).encode())
            raise ParamError(
                f"--freeze-idf: {path} counts other bags than this run's ({_text(recorded.get(META))}; now "
                f"{now}): delete it to freeze again, or give --no-freeze-idf"
            )
        return path
    terms = output_path(work, "terms")
    if "n_urls" not in pq.read_schema(terms).names:
        raise ParamError(f"--freeze-idf: {terms} has no n_urls column; run again with --force")
    table = schemas.read(terms, columns=["term_hash", "n_urls"])
    n_urls = pq.ParquetFile(output_path(work, "urls")).metadata.num_rows
    corpus = pa.array([n_urls] * table.num_rows, pa.int64())
    schema = schemas.schema("frozen_idf").with_metadata({META: json.dumps(describing, sort_keys=True)})
    frozen = pa.table(
        [table.column("term_hash"), pc.cast(table.column("n_urls"), pa.int64()), corpus], schema=schema
    )
    staged = work / STAGED
    staged.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(frozen, staged, compression="zstd")
    return staged


def _text(raw: bytes | None) -> str:
    """'unit url, aliases true, input fragments' of the described JSON (or 'nothing recorded')."""
    if not raw:
        return "nothing recorded"
    return ", ".join(f"{k} {json.dumps(v).strip(chr(34))}" for k, v in sorted(json.loads(raw).items()))


def current(work: Path) -> Path:
    """The frozen file of the folder, or the one this run is about to put in place."""
    path = work / FROZEN
    return path if path.exists() else work / STAGED


def publish(work: Path) -> None:
    """Put the file this run froze in place, after its bags stage succeeded."""
    if (work / STAGED).exists() and not (work / FROZEN).exists():
        os.replace(work / STAGED, work / FROZEN)


def identity(work: Path) -> str | None:
    """What the bags stage's fingerprint takes of the frozen vocabulary (another file reruns it)."""
    return manifest.file_identity(current(work))


def register(engine: Engine, work: Path, frozen: bool) -> str:
    """The view frozen_idf the bags files read: the frozen file with --freeze-idf, else no rows. Returns the
    view's select for the compiled SQL."""
    if frozen:
        engine.register({"frozen_idf": str(current(work))})
        return parquet_view(work, str(work / FROZEN))  # where it is once the stage has succeeded
    engine.view("frozen_idf", EMPTY)
    return EMPTY
