"""The signatures stage against compiled min-hash kernels on the same elements: its own numba kernel with
the bags in memory, and rensa's Rust sketch.

    python bench/minhash_kernel.py --runs 3 --peer-python .bench-venv/bin/python --out bench/RESULTS.md

Corpus: the peers harness's 100k documents (../shared/bench/gen_corpus.py, seed 42), sets, m = 80. The
stage is timed as `pipeline.run(only=("signatures",), force=True)` in a fresh process per run (reading
bags.parquet, listing each URL's terms, the UDF lsh_minhash, writing signatures.parquet): wall seconds from
the manifest and the process's CPU seconds (user + sys) over the call. The first run starts from an empty
numba cache (NUMBA_CACHE_DIR), so it pays the compilation; the median is over the runs after it. The
kernels get each document's term hashes already in memory as one flat array with offsets (Arrow's list
layout): lshsql's kernel on 1 and 2 threads (it releases the GIL), rensa's
`RMinHash.digest_matrix_from_flat_token_hashes` with 80 permutations (run by --peer-python, the peers'
venv; its row is left out without rensa).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import machine, write_section  # noqa: E402

from lshsql import pipeline  # noqa: E402
from lshsql.engines import duckdb as db  # noqa: E402
from lshsql.params import Params  # noqa: E402

HARNESS = Path(__file__).resolve().parents[1].parent / "shared" / "bench"
PARAMS = Params(weighting="none", threshold=0.5, num_perm=80)
STAGE_RUN = """
import json, resource, sys, time
from lshsql import pipeline
from lshsql.engines import duckdb as db
from lshsql.params import Params
work, bags, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
resources = db.Resources(memory_limit="8GB", threads=threads, temp_directory=work + "/tmp")
before = resource.getrusage(resource.RUSAGE_SELF)
summary = pipeline.run(work, Params(weighting="none", threshold=0.5), bags=bags, resources=resources,
                       only=("signatures",), force=True)
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
print(json.dumps({"seconds": summary.stages["signatures"]["seconds"], "cpu": cpu}))
"""
RENSA_RUN = """
import json, resource, sys, time
import numpy as np
from rensa import RMinHash
hashes, offsets = np.load(sys.argv[1]), np.load(sys.argv[2])
best = None
for _ in range(int(sys.argv[3])):
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    RMinHash.digest_matrix_from_flat_token_hashes(hashes, offsets, num_perm=80, seed=42)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(json.dumps({"seconds": time.perf_counter() - started, "cpu": cpu}))
"""


def stage_run(work: Path, bags: Path, threads: int, cache: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    cmd = [sys.executable, "-c", STAGE_RUN, str(work), str(bags), str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def load_bags(work: Path) -> tuple[np.ndarray, np.ndarray]:
    """Every URL's term hashes, flat in url_id order, and the offsets of each URL's first."""
    with duckdb.connect() as con:
        table = con.sql(
            "select url_id, term_hash from read_parquet($p) order by url_id, term_hash",
            params={"p": str(work / "bags.parquet")},
        ).to_arrow_table()
    url_id, terms = table["url_id"].to_numpy(), table["term_hash"].to_numpy()
    starts = np.flatnonzero(np.concatenate([[True], url_id[1:] != url_id[:-1], [True]]))
    return terms, starts.astype(np.int64)


def kernel_seconds(terms: np.ndarray, offsets: np.ndarray, threads: int, runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of lshsql's kernel (engines/minhash.py) over all URLs, split in
    `threads` contiguous parts."""
    from lshsql.engines import minhash
    from lshsql.lsh import family

    # uint32, as the UDF passes them (family32): int64 arrays would compile and time another kernel
    a, b = minhash.family32(*family.coefficient_arrays(PARAMS.seed, PARAMS.num_perm))
    n = len(offsets) - 1
    none, unweighted, valid = np.zeros(n + 1, np.int64), np.zeros(n, np.bool_), np.ones(n, np.bool_)
    out = np.zeros(n * len(a), np.int32)
    cuts = np.linspace(0, n, threads + 1).astype(int)

    def part(i: int) -> None:
        lo, hi = cuts[i], cuts[i + 1]
        minhash.signatures(
            offsets[lo : hi + 1], terms, none, none, unweighted, valid[lo:hi], a, b, out[lo * len(a) :]
        )

    minhash.set_signatures(terms[:1], np.ones(1, np.int64), *family.coefficient_arrays(1, 4))  # loaded
    walls, cpus = [], []
    for _ in range(runs):
        cpu0, started = time.process_time(), time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(part, range(threads)))
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu0)
    return statistics.median(walls), statistics.median(cpus)


def rensa_seconds(
    python: str, terms: np.ndarray, offsets: np.ndarray, runs: int
) -> tuple[float, float] | None:
    with tempfile.TemporaryDirectory() as tmp:
        np.save(f"{tmp}/hashes.npy", terms.astype(np.uint64))
        np.save(f"{tmp}/offsets.npy", offsets.astype(np.uint64))
        cmd = [python, "-c", RENSA_RUN, f"{tmp}/hashes.npy", f"{tmp}/offsets.npy", str(runs)]
        done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        print(f"rensa: left out ({done.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
        return None
    results = [json.loads(line) for line in done.stdout.splitlines()]
    return statistics.median(r["seconds"] for r in results), statistics.median(r["cpu"] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("bench-data/c100000"))
    parser.add_argument("--work", type=Path, default=Path("bench-data/kernel"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--peer-python", default=".bench-venv/bin/python")
    parser.add_argument("--out", type=Path, default=Path("bench/RESULTS.md"))
    args = parser.parse_args()
    bags = args.corpus / "docs.parquet"
    if not bags.exists():
        gen = [sys.executable, str(HARNESS / "gen_corpus.py"), "--docs", "100000", "--out", str(args.corpus)]
        subprocess.run(gen, check=True, stdout=subprocess.DEVNULL)
    resources = db.Resources(memory_limit="8GB", threads=args.threads, temp_directory=str(args.work / "tmp"))
    pipeline.run(args.work, PARAMS, bags=bags, resources=resources, only=pipeline.STAGE_NAMES[:4])

    with tempfile.TemporaryDirectory() as cache:
        first = stage_run(args.work, bags, args.threads, cache)
        warm = [stage_run(args.work, bags, args.threads, cache) for _ in range(args.runs)]
    stage = statistics.median(r["seconds"] for r in warm), statistics.median(r["cpu"] for r in warm)
    terms, offsets = load_bags(args.work)
    rows = [
        ("signatures stage, first run (numba compiles)", args.threads, first["seconds"], first["cpu"]),
        ("signatures stage (Parquet in and out, DuckDB + UDF)", args.threads, *stage),
    ]
    for threads in sorted({1, args.threads}):
        rows.append(
            (
                f"lshsql kernel, bags in memory, {threads} thread(s)",
                threads,
                *kernel_seconds(terms, offsets, threads, args.runs),
            )
        )
    rensa = rensa_seconds(args.peer_python, terms, offsets, args.runs)
    if rensa:
        rows.append(("rensa digest_matrix_from_flat_token_hashes, 80 perms", "rensa's", *rensa))
    elements = len(terms) * PARAMS.num_perm
    lines = [
        "## The signatures stage against compiled min-hash kernels (`bench/minhash_kernel.py`)",
        "",
        f"Machine: {machine()}. Date: {date.today()}. Medians of {args.runs} runs. Corpus: the peers",
        f"harness's 100k documents, {len(offsets) - 1:,} URLs, {len(terms):,} elements (sets), m = 80:",
        f"{elements:,} evaluations of ((a·x + b) mod 2^40) >> 9. The stage reads bags.parquet, lists each",
        "URL's terms, calls the UDF lsh_minhash and writes signatures.parquet; the kernels get the term",
        "hashes in memory. CPU is user + sys of the process over the timed call.",
        "",
        "| what | threads | wall s | CPU s | stage vs rensa (wall) |",
        "|---|---|---|---|---|",
    ]
    for name, threads, wall, cpu in rows:
        ratio = f"{stage[0] / rensa[0]:.1f}x" if rensa and name.startswith("signatures stage (") else ""
        lines.append(f"| {name} | {threads} | {wall:.2f} | {cpu:.2f} | {ratio} |")
    write_section(args.out, "minhash-kernel", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
