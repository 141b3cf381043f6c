"""Helpers shared by the property tests: Parquet in and out, one stage run on its own connection."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lshsql import pipeline
from lshsql.engines import duckdb as db
from lshsql.engines import udf
from lshsql.engines.base import DuckDBEngine
from lshsql.params import Params


def resources(tmp: Path, threads: int = 2) -> db.Resources:
    return db.Resources(memory_limit="2GB", threads=threads, temp_directory=str(Path(tmp) / "duckdb_tmp"))


def write_parquet(
    path: Path,
    columns: dict[str, list | np.ndarray],
    schema: pa.Schema | None = None,
    row_group_size: int | None = None,
) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns, schema=schema), path, row_group_size=row_group_size)
    return path


def read_columns(path: Path) -> dict[str, np.ndarray]:
    table = pq.read_table(path)
    return {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}


def signature_matrix(work: Path) -> tuple[list[str], np.ndarray]:
    """(urls in url_id order, m x n-urls matrix as rows of signatures): signatures joined to urls."""
    sig = pq.read_table(Path(work) / "signatures.parquet")
    urls = pq.read_table(Path(work) / "urls.parquet")
    url_of = dict(zip(urls.column("url_id").to_pylist(), urls.column("url").to_pylist(), strict=True))
    hashes = [c for c in sig.column_names if c != "url_id"]
    matrix = np.column_stack([sig.column(c).to_numpy() for c in hashes])
    return [url_of[i] for i in sig.column("url_id").to_pylist()], matrix


def write_signatures(path: Path, url_ids: np.ndarray, matrix: np.ndarray) -> Path:
    """signatures(url_id BIGINT, h0..h{m-1} INTEGER), the stage's own schema."""
    columns = {"url_id": pa.array(np.asarray(url_ids, dtype=np.int64))}
    for i in range(matrix.shape[1]):
        columns[f"h{i}"] = pa.array(np.asarray(matrix[:, i], dtype=np.int32))
    return write_parquet(path, columns)


def stage(name: str) -> pipeline.Stage:
    return next(s for s in pipeline.STAGES if s.name == name)


def run_stage(work: Path, name: str, params: Params, threads: int = 2) -> tuple[int, dict]:
    """One stage's runner on a fresh, short-lived connection, inputs read from `work`."""
    with db.connect(resources(work, threads)) as con:
        udf.register(con)
        return pipeline.RUNNERS[name](DuckDBEngine(con), stage(name), params, Path(work), None)


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
