"""The min-hash stage against the limit: hash evaluations per second of sql/30_signatures.sql and of a bare
numpy kernel doing the same arithmetic on the same elements in memory.

    python bench/minhash_kernel.py --runs 3 --out bench/RESULTS.md

One evaluation is h_i(x) = ((a_i * x + b_i) mod 2^40) >> 9 for one element x of one flattened bag and one
of the m hash functions, folded into the bag's running minimum. The stage is timed as
`pipeline.run(only=("signatures",), force=True)` on a work folder prepared once (its Parquet read, the
elements joined, m minimums per URL, the result written); the kernel gets the elements already in memory,
sorted by URL, and computes the same m minimums with numpy (int64 arithmetic as in SQL, then
np.minimum.reduceat per URL), once on one thread and once with the m functions split over all cores (numpy
releases the GIL). Both must give the same signatures: checked before timing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_bags import generate  # noqa: E402
from results import machine, write_section  # noqa: E402

from lshsql import pipeline  # noqa: E402
from lshsql.engines import duckdb as db
from lshsql.lsh import family
from lshsql.params import Params  # noqa: E402

MASK, SHIFT = (1 << 40) - 1, 9


def load_elements(work: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x of every element of every flattened bag, sorted by url_id; the first row of each URL; url ids."""
    with duckdb.connect() as con:
        table = con.execute(
            """
            select bags.url_id, element_hashes.x
            from read_parquet($bags) as bags
            inner join read_parquet($elements) as element_hashes
                on bags.term_hash = element_hashes.term_hash
                and element_hashes.copy_number <= greatest(1, cast(round(bags.weight) as integer))
            order by bags.url_id
            """,
            {"bags": str(work / "bags.parquet"), "elements": str(work / "element_hashes.parquet")},
        ).to_arrow_table()
    url_id = table["url_id"].to_numpy()
    x = table["x"].to_numpy()
    starts = np.flatnonzero(np.concatenate([[True], url_id[1:] != url_id[:-1]]))
    return x, starts, url_id[starts]


def kernel(x: np.ndarray, starts: np.ndarray, a: np.ndarray, b: np.ndarray, threads: int) -> np.ndarray:
    """m minimums per URL: column i is min over the URL's elements of ((a_i x + b_i) mod 2^40) >> 9."""
    out = np.empty((len(starts), len(a)), dtype=np.int64)
    block = 1 << 16  # elements per block: the temporaries stay in cache

    def one(i: int) -> None:
        column = np.empty(len(x), dtype=np.int64)
        for lo in range(0, len(x), block):
            chunk = x[lo : lo + block]
            np.multiply(chunk, a[i], out=column[lo : lo + block])
            np.add(column[lo : lo + block], b[i], out=column[lo : lo + block])
            np.bitwise_and(column[lo : lo + block], MASK, out=column[lo : lo + block])
            np.right_shift(column[lo : lo + block], SHIFT, out=column[lo : lo + block])
        out[:, i] = np.minimum.reduceat(column, starts)

    if threads == 1:
        for i in range(len(a)):
            one(i)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(one, range(len(a))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bags", type=Path, default=Path("bench-data/scale/b100000/docs.parquet"))
    parser.add_argument("--work", type=Path, default=Path("bench-data/kernel"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=db.default_threads())
    parser.add_argument("--out", type=Path, default=Path("bench/RESULTS.md"))
    args = parser.parse_args()
    if not args.bags.exists():  # the scale benchmark's 100k corpus, made the same way
        generate(args.bags.parent, 100_000, 200_000, 90.0, 0.2, 1)
    params = Params(weighting="none", threshold=0.5)
    resources = db.Resources(memory_limit="8GB", threads=args.threads, temp_directory=str(args.work / "tmp"))
    pipeline.run(args.work, params, bags=args.bags, resources=resources, only=pipeline.STAGE_NAMES[:6])

    stage_seconds = []
    for _ in range(args.runs):
        summary = pipeline.run(
            args.work, params, bags=args.bags, resources=resources, only=("signatures",), force=True
        )
        stage_seconds.append(summary.stages["signatures"]["seconds"])

    x, starts, url_ids = load_elements(args.work)
    coefficients = family.coefficients(params.seed, params.num_perm).to_pylist()[0]
    a = np.array([coefficients[f"a{i}"] for i in range(params.num_perm)], dtype=np.int64)
    b = np.array([coefficients[f"b{i}"] for i in range(params.num_perm)], dtype=np.int64)
    with duckdb.connect() as con:
        stored = con.execute(
            "select * exclude (url_id) from read_parquet($p) order by url_id",
            {"p": str(args.work / "signatures.parquet")},
        ).fetchnumpy()
    expected = np.column_stack([stored[f"h{i}"] for i in range(params.num_perm)])
    if not np.array_equal(kernel(x, starts, a, b, args.threads), expected):
        raise SystemExit("the numpy kernel and the signatures stage disagree")

    timings = {}
    for threads in sorted({1, args.threads}):
        seconds = []
        for _ in range(args.runs):
            started = time.perf_counter()
            kernel(x, starts, a, b, threads)
            seconds.append(time.perf_counter() - started)
        timings[threads] = statistics.median(seconds)

    evaluations = len(x) * params.num_perm
    stage = statistics.median(stage_seconds)
    rows = [
        ("signatures stage (DuckDB SQL, whole stage)", args.threads, stage),
        *[(f"numpy kernel, elements in memory, {t} thread(s)", t, s) for t, s in timings.items()],
    ]
    best_kernel = min(timings.values())
    lines = [
        "## Min-hash stage against a bare numpy kernel (`bench/minhash_kernel.py`)",
        "",
        f"Machine: {machine()}. Date: {date.today()}. Medians of {args.runs} runs. Bags: `{args.bags}`,",
        f"{len(url_ids):,} URLs, {len(x):,} elements, m = {params.num_perm}: {evaluations:,} evaluations of",
        "((a·x + b) mod 2^40) >> 9 folded into per-URL minimums. The stage's time includes reading its",
        "Parquet inputs, the join to element_hashes and writing signatures.parquet; the kernel's does not.",
        "Both give the same signatures (checked).",
        "",
        "| what | threads | seconds | evaluations/s | vs best kernel |",
        "|---|---|---|---|---|",
    ]
    for name, threads, seconds in rows:
        lines.append(
            f"| {name} | {threads} | {seconds:.2f} | {evaluations / seconds / 1e6:,.0f} M "
            f"| {seconds / best_kernel:.2f}x |"
        )
    write_section(args.out, "minhash-kernel", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
