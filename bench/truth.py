"""Exact ground truth for the harness's compare.py from lshsql's own prefix-filter join (sql/70_truth.sql).

    python bench/truth.py --bags bench-data/c1000000/docs.parquet --thresholds 0.8 --work bench-data/w1000000

The harness's exact.py filled the 57 GB of free disk with spill at 1M documents, T = 0.8. This writes the
same relation, every pair (u < v) with Jaccard >= T and its value, as WORK/truth/truth_<T>.parquet with
the stamp compare.py checks, so compare.py reuses it instead of running exact.py. Where exact.py's truth is
already there (10k, 100k), it is compared instead, pair for pair and value for value, and left as it is:
that is how this way is checked against the harness's.

The corpus is token sets, so the weighted Jaccard of bags with weight 1 (`--weighting none`) is Jaccard.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

from lshsql import pipeline
from lshsql.engines import duckdb as db
from lshsql.params import Params
from lshsql.tools import evaluate


def stamp(bags: Path) -> str:
    """compare.py's key for a cached truth: the corpus's path, size and mtime."""
    st = os.stat(bags)
    return f"{os.path.abspath(bags)}|{st.st_size}|{int(st.st_mtime)}"


def lshsql_truth(
    bags: Path, threshold: float, scratch: Path, out: Path, resources: db.Resources, batches: int = 1
) -> dict:
    """Bags of the corpus, then sql/70_truth.sql (in `batches` parts); write (u, v, jaccard) to `out`.
    Returns timing: wall_s includes the bags stages when they run (the first threshold; later ones find
    them up to date), and peak_rss_mb is the process's peak so far."""
    start = time.perf_counter()
    pipeline.run(
        scratch,
        Params(weighting="none"),
        bags=bags,
        resources=resources,
        only=("term_counts", "urls", "terms", "bags"),
    )
    with db.connect(resources) as con:
        rows = evaluate.truth(con, scratch, threshold, batches)
        con.execute(
            "copy (select url_u.url as u, url_v.url as v, truth.jaccard "
            "from read_parquet($truth) as truth "
            "inner join read_parquet($urls) as url_u on truth.u_id = url_u.url_id "
            "inner join read_parquet($urls) as url_v on truth.v_id = url_v.url_id "
            "order by truth.u_id, truth.v_id) to $out (format parquet)",
            {
                "truth": str(scratch / evaluate.EVAL_DIR / "truth.parquet"),
                "urls": str(pipeline.output_path(scratch, "urls")),
                "out": str(out),
            },
        ).fetchall()
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    source = "lshsql sql/70_truth.sql" + (f" in {batches} batches" if batches > 1 else "")
    return {"wall_s": wall, "peak_rss_mb": peak, "rc": 0, "pairs": rows, "source": source}


def same_pairs(a: Path, b: Path, resources: db.Resources) -> tuple[int, int, int]:
    """(pairs in a, pairs in b, pairs in exactly one or with values more than 1e-9 apart)."""
    with db.connect(resources) as con:
        return con.execute(
            "with a as (select * from read_parquet($a)), b as (select * from read_parquet($b)) "
            "select (select count(*) from a), (select count(*) from b), count(*) "
            "from a full outer join b on a.u = b.u and a.v = b.v "
            "where a.u is null or b.u is null or abs(a.jaccard - b.jaccard) > 1e-9",
            {"a": str(a), "b": str(b)},
        ).fetchall()[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bags", type=Path, required=True, help="the corpus's docs.parquet (url, term)")
    parser.add_argument("--thresholds", default="0.8")
    parser.add_argument("--work", type=Path, required=True, help="compare.py's --work folder")
    parser.add_argument("--memory-limit", default="12GB")
    parser.add_argument("--threads", type=int, default=db.default_threads())
    parser.add_argument(
        "--batches",
        type=int,
        default=1,
        help="find the truth in this many parts (each joins 1/batches of the prefixes): 16 at 1M, T = 0.5",
    )
    args = parser.parse_args()
    truth_dir = args.work / "truth"
    truth_dir.mkdir(parents=True, exist_ok=True)
    scratch = args.work / "lshsql-truth"
    resources = db.Resources(args.memory_limit, args.threads, str(scratch / "tmp"))
    try:
        for threshold in (float(t) for t in args.thresholds.split(",")):
            check_or_write(args, threshold, truth_dir, scratch, resources)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the corpus's bags: 7 GB at 1M documents


def check_or_write(
    args: argparse.Namespace, threshold: float, truth_dir: Path, scratch: Path, resources: db.Resources
) -> None:
    """Compare with exact.py's cached truth for `threshold`, or write lshsql's where there is none."""
    name = f"truth_{threshold:g}"
    path, meta = truth_dir / f"{name}.parquet", truth_dir / f"{name}.json"
    cached = json.loads(meta.read_text()) if meta.exists() and path.exists() else {}
    if cached.get("stamp") == stamp(args.bags) and cached.get("run", {}).get("source"):
        print(f"T={threshold}: lshsql's truth is there already: {path}")
        return
    if cached.get("stamp") == stamp(args.bags):
        mine = scratch / f"{name}.parquet"
        run = lshsql_truth(args.bags, threshold, scratch, mine, resources, args.batches)
        n_harness, n_mine, differ = same_pairs(path, mine, resources)
        print(
            f"T={threshold}: exact.py {n_harness:,} pairs, lshsql {n_mine:,} pairs, {differ} differ "
            f"(lshsql {run['wall_s']:.1f} s, exact.py {cached['run']['wall_s']:.1f} s)"
        )
        if differ:
            sys.exit(f"T={threshold}: lshsql's truth differs from exact.py's")
        return
    run = lshsql_truth(args.bags, threshold, scratch, path, resources, args.batches)
    meta.write_text(json.dumps({"stamp": stamp(args.bags), "run": run}))
    print(
        f"T={threshold}: {run['pairs']:,} pairs in {run['wall_s']:.1f} s, "
        f"peak RSS {run['peak_rss_mb']:.0f} MB -> {path}"
    )


if __name__ == "__main__":
    main()
