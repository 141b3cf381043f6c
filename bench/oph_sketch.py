"""The signatures stage and its kernel with each sketch: m min-hashes (m = 80) against one-permutation
hashing with optimal densification (--sketch oph, m = 80, 128, 256).

    python bench/oph_sketch.py --runs 3 --out bench/RESULTS.md

Corpus: the peers harness's 100k documents (sets). The stage is timed as in bench/minhash_kernel.py:
`pipeline.run(only=("signatures",), force=True)` in a fresh process per run, after one untimed run that
fills the numba cache; wall seconds from the manifest, CPU (user + sys) of the process over the call. The
kernels get the bags' term hashes in memory (flat, with offsets), on one thread.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from minhash_kernel import load_bags  # noqa: E402
from results import machine, write_section  # noqa: E402

from lshsql import pipeline  # noqa: E402
from lshsql.engines import duckdb as db  # noqa: E402
from lshsql.params import Params  # noqa: E402

SKETCHES = (("minhash", 80), ("oph", 80), ("oph", 128), ("oph", 256))
STAGE_RUN = """
import json, resource, sys
from lshsql import pipeline
from lshsql.engines import duckdb as db
from lshsql.params import Params
work, bags, threads, sketch, m = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
resources = db.Resources(memory_limit="8GB", threads=threads, temp_directory=work + "/tmp")
params = Params(weighting="none", threshold=0.5, sketch=sketch, num_perm=m)
before = resource.getrusage(resource.RUSAGE_SELF)
summary = pipeline.run(work, params, bags=bags, resources=resources, only=("signatures",), force=True)
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
print(json.dumps({"seconds": summary.stages["signatures"]["seconds"], "cpu": cpu}))
"""


def stage_run(work: Path, bags: Path, threads: int, sketch: str, m: int) -> dict:
    cmd = [sys.executable, "-c", STAGE_RUN, str(work), str(bags), str(threads), sketch, str(m)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def kernel_seconds(
    terms: np.ndarray, offsets: np.ndarray, sketch: str, m: int, runs: int
) -> tuple[float, float]:
    """Median wall and CPU seconds of one sketch's kernel over all URLs, on one thread."""
    from lshsql.engines import minhash, oph
    from lshsql.lsh import family

    counts = np.diff(offsets)
    if sketch == "oph":
        salt = family.oph_salt(1)
        call = lambda t, c: oph.set_signatures(t, c, m, salt)  # noqa: E731
    else:
        a, b = family.coefficient_arrays(1, m)
        call = lambda t, c: minhash.set_signatures(t, c, a, b)  # noqa: E731
    call(terms[:1], np.ones(1, np.int64))  # compiled (or loaded) before timing
    walls, cpus = [], []
    for _ in range(runs):
        cpu0, started = time.process_time(), time.perf_counter()
        call(terms, counts)
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu0)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("bench-data/c100000"))
    parser.add_argument("--work", type=Path, default=None, help="[a temporary folder]")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/RESULTS.md"))
    args = parser.parse_args()
    bags = args.corpus / "docs.parquet"
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        resources = db.Resources(memory_limit="8GB", threads=args.threads, temp_directory=str(work / "tmp"))
        pipeline.run(
            work, Params(weighting="none"), bags=bags, resources=resources, only=pipeline.STAGE_NAMES[:4]
        )
        terms, offsets = load_bags(work)
        rows = []
        for sketch, m in SKETCHES:
            stage_run(work, bags, args.threads, sketch, m)  # fills the numba cache
            runs = [stage_run(work, bags, args.threads, sketch, m) for _ in range(args.runs)]
            stage = statistics.median(r["seconds"] for r in runs), statistics.median(r["cpu"] for r in runs)
            rows.append((sketch, m, *stage, *kernel_seconds(terms, offsets, sketch, m, args.runs)))
    lines = [
        "## The signatures stage with each sketch (`bench/oph_sketch.py`)",
        "",
        f"Machine: {machine()}. Date: {date.today()}. Medians of {args.runs} runs. Corpus: the peers",
        f"harness's 100k documents, {len(offsets) - 1:,} URLs, {len(terms):,} elements (sets). The stage",
        f"(Parquet in and out, DuckDB + UDF, {args.threads} threads) and the kernel alone (bags in memory,",
        "one thread); CPU is user + sys of the process over the timed call.",
        "",
        "| sketch | m | stage wall s | stage CPU s | kernel wall s | kernel CPU s |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {s} | {m} | {a:.2f} | {b:.2f} | {c:.2f} | {d:.2f} |" for s, m, a, b, c, d in rows]
    write_section(args.out, "oph-sketch", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
