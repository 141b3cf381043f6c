"""`lshsql run --bags` and `lshsql extract` with --engine duckdb and --engine spark (local[2]) on the same
inputs: wall time (median of --runs) and peak RSS summed over the process tree, the JVM included.

    python bench/spark_engine.py --docs 10000 --runs 3 --out bench/RESULTS.md

The bags are bench/gen_bags.py's (made once, kept in --data); the crawl is the shared crawls' WARC files
(--crawl, one Spark task each). Each run is a fresh `lshsql` process in an empty work folder, so the Spark
numbers include starting the JVM; a monitor samples /proc every 0.2 s. Both engines' pairs, and pages, are
compared after the runs (they must be the same rows).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_bags import generate  # noqa: E402
from results import machine, write_section  # noqa: E402
from scale import tree_rss  # noqa: E402

LSHSQL = str(Path(sys.executable).parent / "lshsql")
ENGINES = {
    "duckdb": ["--engine", "duckdb", "--threads", "2"],
    "spark": ["--engine", "spark", "--spark-master", "local[2]", "--spark-conf", "spark.driver.memory=4g"],
}


def measure(cmd: list[str]) -> dict:
    """Run cmd; its wall time and the peak RSS (MB) of its process tree."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak, done = [0], threading.Event()

    def monitor() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(0.2)

    thread = threading.Thread(target=monitor, daemon=True)
    thread.start()
    output = proc.communicate()[0]
    done.set()
    thread.join()
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])} failed ({proc.returncode}):\n{output[-3000:]}")
    return {"wall": wall, "rss_mb": peak[0] / 2**20}


def one_run(bags: Path, work: Path, threshold: float, engine: str) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    cmd = [LSHSQL, "run", "--bags", str(bags), "--weighting", "none", "--threshold", str(threshold)]
    result = measure([*cmd, "--work", str(work), "--quiet", *ENGINES[engine]])
    return {**result, "rows": pq.read_table(work / "pairs.parquet").num_rows}


def one_extract(crawl: list[str], work: Path, engine: str) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    result = measure([LSHSQL, "extract", *crawl, "--work", str(work), "--quiet", *ENGINES[engine]])
    return {**result, "rows": pq.read_table(work / "pages.parquet").num_rows}


def same_rows(a: Path, b: Path, table: str) -> bool:
    rows = [pq.read_table(w / f"{table}.parquet").to_pylist() for w in (a, b)]
    return rows[0] == rows[1]


def table(results: dict, rows: str) -> list[str]:
    lines = [f"| engine | wall s (median) | runs | peak RSS MB | {rows} |", "|---|---|---|---|---|"]
    for engine, runs in results.items():
        walls = ", ".join(f"{r['wall']:.1f}" for r in runs)
        lines.append(
            f"| {engine} | {statistics.median(r['wall'] for r in runs):.1f} | {walls} | "
            f"{max(r['rss_mb'] for r in runs):.0f} | {runs[0]['rows']:,} |"
        )
    return lines


def markdown(docs: int, rows: int, threshold: float, runs: dict, extracts: dict, crawl: list[str]) -> str:
    same_pairs, same_pages = runs.pop("same"), extracts.pop("same")
    mb = sum(Path(f).stat().st_size for f in crawl) / 1e6
    lines = [
        "## The Spark engine: `lshsql run --bags` and `lshsql extract` on DuckDB and on Spark local[2]",
        "",
        f"{date.today().isoformat()}, {machine()}. `python bench/spark_engine.py` (`make bench-spark`); a "
        "fresh process and work folder per run (Spark's JVM start included); wall time the median of the "
        "runs, peak RSS summed over the process tree (Python, DuckDB, JVM, Python workers).",
        "",
        f"**`lshsql run --bags`**: {docs:,} synthetic documents ({rows:,} bag rows, bench/gen_bags.py), "
        f"`--weighting none --threshold {threshold}`. Same pairs on both engines: "
        f"{'yes' if same_pairs else 'NO'}.",
        "",
        *table(runs, "pairs"),
        "",
        f"**`lshsql extract`**: the {len(crawl)} WARC files of ../shared/data/crawls ({mb:.1f} MB gzipped), "
        "2 worker processes on DuckDB, one Spark task per file on Spark. Same pages, links and fragments on "
        f"both engines: {'yes' if same_pages else 'NO'}.",
        "",
        *table(extracts, "pages"),
        "",
        "On one machine DuckDB is the faster engine by far: Spark pays for the JVM, a job per stage and per "
        "CENTER round (per bucket of fragments in extraction), and Python UDF workers. The Spark engine is "
        "for data beyond one machine.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data", type=Path, default=Path("bench-data/spark"))
    parser.add_argument("--crawl", type=Path, default=Path("../shared/data/crawls"))
    parser.add_argument("--out", type=Path, default=Path("bench/RESULTS.md"))
    args = parser.parse_args()
    corpus = args.data / f"b{args.docs}"
    if not (corpus / "meta.json").exists():
        print(f"generating {args.docs:,} documents ...", flush=True)
        generate(corpus, args.docs, 200_000, 90.0, 0.2, 1)
    bags = corpus / "docs.parquet"
    crawl = sorted(str(p) for p in args.crawl.glob("*.warc.gz"))
    runs: dict = {}
    extracts: dict = {}
    for engine in ENGINES:
        for number in range(args.runs):
            result = one_run(bags, args.data / f"w-{engine}", args.threshold, engine)
            print(json.dumps({"run --bags": engine, "run": number + 1, **result}), flush=True)
            runs.setdefault(engine, []).append(result)
            result = one_extract(crawl, args.data / f"x-{engine}", engine)
            print(json.dumps({"extract": engine, "run": number + 1, **result}), flush=True)
            extracts.setdefault(engine, []).append(result)
    runs["same"] = same_rows(args.data / "w-duckdb", args.data / "w-spark", "pairs")
    extracts["same"] = all(
        same_rows(args.data / "x-duckdb", args.data / "x-spark", t)
        for t in ("pages", "links", *(f"fragments/bucket={i}/data" for i in range(16)))
    )
    rows = pq.read_metadata(bags).num_rows
    write_section(args.out, "spark", markdown(args.docs, rows, args.threshold, runs, extracts, crawl))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
