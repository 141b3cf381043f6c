"""Extraction speed: pages/s and MB/s of HTML for `lshsql extract`, median of several runs.

    python bench/extract_speed.py --runs 5 --out bench/RESULTS.md [CRAWL ...]

Runs the CLI as a user would (a new process each run, all cores), so the times include start-up,
reading, parsing in worker processes and DuckDB's final ordered writes.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import machine, write_section  # noqa: E402

DEFAULT_CRAWL = Path(__file__).resolve().parents[2] / "shared" / "data" / "crawls" / "postgresql15.warc.gz"


def one_run(crawl: list[str], threads: int | None) -> dict:
    with tempfile.TemporaryDirectory() as work:
        cmd = [sys.executable, "-m", "lshsql", "extract", *crawl, "--work", work, "--quiet"]
        if threads:
            cmd += ["--threads", str(threads)]
        started = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        seconds = time.perf_counter() - started
        # Every page parsed counts, including later captures of a URL that lost to a newer one.
        pages, size = duckdb.sql(
            f"select count(*), sum(n_bytes) from '{work}/pages.parquet' "
            "where skip_reason is null or skip_reason = 'duplicate_url'"
        ).fetchall()[0]
    return {"seconds": seconds, "pages": pages, "mb": size / 1e6}


def repeated(crawl: Path, times: int, folder: Path) -> Path:
    """The crawl concatenated `times` times: gzip members concatenate, so it is a valid, bigger WARC."""
    path = folder / f"{crawl.name.split('.')[0]}-x{times}.warc.gz"
    data = crawl.read_bytes()
    path.write_bytes(data * times)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("crawl", nargs="*", default=[str(DEFAULT_CRAWL)])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/RESULTS.md"))
    args = parser.parse_args()
    if not Path(args.crawl[0]).exists():
        sys.exit(f"bench: {args.crawl[0]} not found (../shared beside the repo?)")
    rows, medians = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        inputs = [("as shipped", args.crawl)]
        if len(args.crawl) == 1:
            inputs.append(("x4 concatenated", [str(repeated(Path(args.crawl[0]), 4, Path(scratch)))]))
        for name, crawl in inputs:
            for threads in (1, None):
                runs = [one_run(crawl, threads) for _ in range(args.runs)]
                median = statistics.median(r["seconds"] for r in runs)
                pages, mb = runs[0]["pages"], runs[0]["mb"]
                label = "1 worker" if threads == 1 else "all cores"
                medians[(name, label)] = median
                rows.append(
                    f"| {name} | {label} | {pages} | {mb:.1f} | {median:.2f} | "
                    f"{min(r['seconds'] for r in runs):.2f} | {pages / median:.0f} | {mb / median:.1f} |"
                )
                print(rows[-1], flush=True)
    ratios = ", ".join(
        f"{name}: {medians[(name, '1 worker')] / medians[(name, 'all cores')]:.2f}x" for name, _ in inputs
    )
    table = "\n".join(rows)
    body = f"""## Extraction speed (`bench/extract_speed.py`, {date.today()})

Crawl: {Path(args.crawl[0]).name}. Machine: {machine()}.
Whole `lshsql extract` process (interpreter start-up, reading, parsing in worker processes, DuckDB's final
ordered Parquet), median of {args.runs} runs each. MB are of HTML parsed.

| input | workers | pages | MB | median s | best s | pages/s | MB/s |
|---|---|---|---|---|---|---|---|
{table}

All cores vs 1 worker (ratio of medians): {ratios}."""
    write_section(args.out, "extract", body)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
