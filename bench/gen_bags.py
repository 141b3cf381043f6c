"""Synthetic bags at scale, fast: 10 million URLs of ~100 terms each (a billion rows) in a few minutes.

The shared generator (../shared/bench/gen_corpus.py) draws every document in Python-level loops and takes
~80 s per million documents; this one draws a whole chunk of documents with a few numpy calls. Same kind of
data: terms from a Zipf-Mandelbrot vocabulary (p(rank) ~ 1/(rank + 2.7)), log-normal bag sizes (median
`--median` distinct terms), and a fraction of the URLs in planted near-duplicate groups of 2..10 members,
each member its group's base with 5-50 % of its terms replaced. Bags are sets: one row per (url, term).

Writes DIR/docs.parquet (url VARCHAR, term VARCHAR; both dictionary-encoded, so a billion rows take a few
GB) and DIR/meta.json. The content of chunk c depends only on (seed, c), so the file is the same for any
machine; chunks are written as they are made and memory stays at one chunk.

    python bench/gen_bags.py --docs 10000000 --out bench-data/scale/b10000000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHUNK = 100_000


def zipf_cdf(vocabulary: int, s: float = 1.0, q: float = 2.7) -> np.ndarray:
    p = 1.0 / (np.arange(1, vocabulary + 1, dtype=np.float64) + q) ** s
    cdf = np.cumsum(p / p.sum())
    cdf[-1] = 1.0
    return cdf


def chunk_rows(
    chunk: int, n_docs: int, cdf: np.ndarray, seed: int, median: float, dup_fraction: float
) -> tuple[np.ndarray, np.ndarray]:
    """(doc index, term id) of every row of documents chunk*CHUNK .. + n_docs, one row per distinct term."""
    rng = np.random.default_rng([seed, chunk])
    sizes = np.clip(rng.lognormal(np.log(median), 0.5, n_docs), 20, 8 * median).astype(np.int64)
    docs = np.repeat(np.arange(n_docs, dtype=np.int64), sizes)
    terms = np.searchsorted(cdf, rng.random(len(docs)), side="right").astype(np.int64)
    # Near-duplicates: the first dup_fraction of the chunk's documents form consecutive groups of 2..10;
    # every member copies its group's first document with a share of the terms replaced by fresh draws.
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    base, n_dup = 0, int(n_docs * dup_fraction)
    while base < n_dup:
        size = min(int(rng.integers(2, 11)), n_dup - base)
        for member in range(base + 1, base + size):
            take = min(sizes[member], sizes[base])
            copied = terms[starts[base] : starts[base] + take].copy()
            replaced = rng.random(take) < rng.uniform(0.05, 0.5)
            copied[replaced] = np.searchsorted(cdf, rng.random(int(replaced.sum())), side="right")
            terms[starts[member] : starts[member] + take] = copied
        base += size
    keys = np.unique((docs << 32) | terms)
    return keys >> 32, keys & 0xFFFFFFFF


def _chunk_rows(job: tuple) -> tuple[np.ndarray, np.ndarray]:
    return chunk_rows(*job)


def generate(out: Path, n_docs: int, vocabulary: int, median: float, dup_fraction: float, seed: int) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    cdf = zipf_cdf(vocabulary)
    words = pa.array([f"w{i:x}" for i in range(vocabulary)], type=pa.string())
    schema = pa.schema(
        [("url", pa.dictionary(pa.int32(), pa.string())), ("term", pa.dictionary(pa.int32(), pa.string()))]
    )
    started, rows = time.perf_counter(), 0
    firsts = list(range(0, n_docs, CHUNK))
    jobs = [
        (c, min(CHUNK, n_docs - first), cdf, seed, median, dup_fraction) for c, first in enumerate(firsts)
    ]
    with (
        multiprocessing.Pool(min(len(jobs), os.cpu_count() or 1)) as pool,
        pq.ParquetWriter(out / "docs.parquet", schema, compression="zstd") as writer,
    ):
        for first, (docs, terms) in zip(firsts, pool.imap(_chunk_rows, jobs), strict=True):
            n = min(CHUNK, n_docs - first)
            urls = pa.array([f"https://s{(first + i) % 9973}.example/p/{first + i}" for i in range(n)])
            table = pa.table(
                {
                    "url": pa.DictionaryArray.from_arrays(pa.array(docs.astype(np.int32)), urls),
                    "term": pa.DictionaryArray.from_arrays(pa.array(terms.astype(np.int32)), words),
                },
                schema=schema,
            )
            writer.write_table(table, row_group_size=1_000_000)
            rows += len(docs)
    meta = {
        "docs": n_docs,
        "rows": rows,
        "vocabulary": vocabulary,
        "median_terms": median,
        "dup_fraction": dup_fraction,
        "seed": seed,
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--vocabulary", type=int, default=200_000)
    parser.add_argument("--median", type=float, default=90.0, help="median distinct terms per URL")
    parser.add_argument("--dup-fraction", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    meta = generate(args.out, args.docs, args.vocabulary, args.median, args.dup_fraction, args.seed)
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
