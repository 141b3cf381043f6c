"""Bags -> clusters at 100k, 1M and 10M URLs: per stage seconds, rows, peak RSS and spill, and the growth.

    python bench/scale.py --sizes 100000,1000000,10000000 --memory-limit 8GB --out bench/RESULTS.md

Each size gets a synthetic bags table from bench/gen_bags.py (made once, kept in --data) and one
`lshsql run --bags ... --weighting none` in its own process with an explicit --memory-limit and 2 threads.
A monitor samples, every 0.2 s, the RSS summed over the process tree (/proc) and the bytes in DuckDB's
temp_directory (the spill); the run's progress lines ("  <stage> ...") tell which stage a sample belongs
to. Per-stage seconds and rows come from the run's manifest. Growth is the ratio of total seconds between
consecutive sizes (10x more URLs: near-linear is ~10x). A second table divides seconds by the units of
work (bag rows, the l * N band keys, candidate pairs), which tells growth in work (LSH's k and l grow with
N) from growth in cost per unit. The raw results go to DATA/results.json; --render writes the section
again from it, running nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_bags import generate  # noqa: E402
from results import machine, write_section  # noqa: E402

from lshsql.pipeline import STAGE_NAMES  # noqa: E402

LSHSQL = str(Path(sys.executable).parent / "lshsql")


def tree_rss(pid: int) -> int:
    """Bytes of RSS of a process and all its descendants."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                children = (task / "children").read_text().split()
                stack += [int(c) for c in children]
        except (OSError, ValueError):
            continue
    return total


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.path.getsize(os.path.join(root, name))
    return total


def run_size(bags: Path, work: Path, threshold: float, memory_limit: str, threads: int) -> dict:
    """One monitored run; returns per-stage seconds, rows, peak RSS and peak spill, and the totals."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    temp = work / "tmp" / "duckdb"
    cmd = [LSHSQL, "run", "--bags", str(bags), "--weighting", "none", "--threshold", str(threshold)]
    cmd += ["--work", str(work), "--memory-limit", memory_limit, "--threads", str(threads)]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    current = {"stage": "start"}
    peaks: dict[str, dict[str, int]] = {}
    done = threading.Event()

    def monitor() -> None:
        while not done.is_set():
            stage = current["stage"]
            peak = peaks.setdefault(stage, {"rss": 0, "spill": 0})
            peak["rss"] = max(peak["rss"], tree_rss(proc.pid))
            peak["spill"] = max(peak["spill"], dir_bytes(temp))
            time.sleep(0.2)

    thread = threading.Thread(target=monitor, daemon=True)
    thread.start()
    log = []
    for line in proc.stdout:
        log.append(line)
        stripped = line.strip()
        if stripped.endswith(" ...") and " " not in stripped[:-4]:
            current["stage"] = stripped[:-4]
    proc.wait()
    done.set()
    thread.join()
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"lshsql failed ({proc.returncode}):\n{''.join(log[-20:])}")
    stages = json.loads((work / "manifest.json").read_text())["stages"]
    rows = []
    for name in STAGE_NAMES:
        entry = stages.get(name, {})
        peak = peaks.get(name, {"rss": 0, "spill": 0})
        rows.append(
            {
                "stage": name,
                "seconds": entry.get("seconds", 0.0),
                "rows": entry.get("rows", 0),
                "rss_mb": peak["rss"] / 2**20,
                "spill_mb": peak["spill"] / 2**20,
            }
        )
    params = json.loads((work / "manifest.json").read_text())["params"]
    return {
        "wall": wall,
        "stages": rows,
        "peak_rss_mb": max(p["rss"] for p in peaks.values()) / 2**20,
        "peak_spill_mb": max(p["spill"] for p in peaks.values()) / 2**20,
        "k": params["k"],
        "l": params["l"],
    }


def markdown(results: dict[int, dict], threshold: float, threads: int) -> str:
    first = results[min(results)]  # the machine and date of the runs (rendered again with --render)
    lines = [
        "## Scale: bags -> clusters at 100k, 1M, 10M URLs (`bench/scale.py`)",
        "",
        f"Machine: {first.get('machine', 'not recorded')}. Date: {first.get('date', 'not recorded')}. "
        "One run per size (a 10M run takes long; the ratios",
        f"matter more than seconds). `lshsql run --bags --weighting none --threshold {threshold}",
        f"--memory-limit M --threads {threads}`, M in the table; bags from `bench/gen_bags.py`",
        "(~100 distinct terms per URL, Zipf vocabulary of 200k words, 20 % of URLs in near-duplicate",
        "groups).",
        "Peak RSS is summed over the process tree; spill is the peak size of DuckDB's temp directory.",
        "",
        "| URLs | bag rows | memory limit | total s | growth | peak RSS MB | peak spill MB | k, l | pairs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    previous = None
    for size, r in sorted(results.items()):
        total = sum(s["seconds"] for s in r["stages"])
        growth = f"{total / previous:.1f}x" if previous else "-"
        rows = {s["stage"]: s["rows"] for s in r["stages"]}
        lines.append(
            f"| {size:,} | {rows.get('term_counts', 0):,} | {r['memory_limit']} | {total:.1f} | {growth} "
            f"| {r['peak_rss_mb']:.0f} "
            f"| {r['peak_spill_mb']:.0f} | {r['k']}, {r['l']} | {rows.get('pairs', 0):,} |"
        )
        previous = total
    lines += ["", *work_units(results)]
    for size, r in sorted(results.items()):
        lines += ["", f"**{size:,} URLs**, per stage:", ""]
        lines += ["| stage | seconds | rows | peak RSS MB | peak spill MB |", "|---|---|---|---|---|"]
        for s in r["stages"]:
            cells = f"{s['seconds']:.2f} | {s['rows']:,} | {s['rss_mb']:.0f} | {s['spill_mb']:.0f}"
            lines.append(f"| {s['stage']} | {cells} |")
    return "\n".join(lines)


def work_units(results: dict[int, dict]) -> list[str]:
    """Seconds per unit of work, so that growth in work and growth in cost per unit can be told apart: bag
    rows (bags, signatures), band keys l * N (buckets) and candidate pairs (candidates, pairs)."""
    lines = [
        "Work and seconds per unit of work: bag rows for bags and signatures, the l * N band keys the",
        "buckets stage groups, and the candidate pairs the candidates and pairs stages make and score.",
        "Growth in brackets, against the size before.",
        "",
        "| URLs | bag rows | ns per bag row | band keys | ns per band key | candidates | ns per candidate |",
        "|---|---|---|---|---|---|---|",
    ]
    previous = None
    for size, r in sorted(results.items()):
        seconds = {s["stage"]: s["seconds"] for s in r["stages"]}
        rows = {s["stage"]: s["rows"] for s in r["stages"]}
        units = {
            "bag rows": (rows.get("bags", 0), seconds.get("bags", 0) + seconds.get("signatures", 0)),
            "band keys": (r["l"] * rows.get("urls", 0), seconds.get("buckets", 0)),
            "candidates": (rows.get("candidates", 0), seconds.get("candidates", 0) + seconds.get("pairs", 0)),
        }
        cells = []
        for name, (count, spent) in units.items():
            grown = f" ({count / previous[name]:.1f}x)" if previous and previous[name] else ""
            cells += [f"{count:,}{grown}", f"{spent / count * 1e9:.0f}" if count else "-"]
        lines.append(f"| {size:,} | {' | '.join(cells)} |")
        previous = {name: count for name, (count, _) in units.items()}
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--memory-limit", default="4GB,4GB,8GB", help="one per size, or one for all")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=Path("bench-data/scale"))
    parser.add_argument("--out", type=Path, default=Path("bench/RESULTS.md"))
    parser.add_argument(
        "--render", action="store_true", help="write the section again from DATA/results.json; runs nothing"
    )
    args = parser.parse_args()
    results = {}
    json_path = args.data / "results.json"
    if args.render:
        results = {int(size): r for size, r in json.loads(json_path.read_text()).items()}
        write_section(args.out, "scale", markdown(results, args.threshold, args.threads))
        print(f"wrote {args.out}")
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    limits = args.memory_limit.split(",")
    limits = dict(zip(sizes, limits if len(limits) == len(sizes) else limits[:1] * len(sizes), strict=True))
    for size in sizes:
        corpus = args.data / f"b{size}"
        if not (corpus / "meta.json").exists():
            print(f"generating {size:,} URLs ...", flush=True)
            generate(corpus, size, 200_000, 90.0, 0.2, 1)
        print(f"running {size:,} URLs ...", flush=True)
        results[size] = run_size(
            corpus / "docs.parquet", args.data / f"w{size}", args.threshold, limits[size], args.threads
        )
        results[size] |= {"memory_limit": limits[size], "machine": machine(), "date": str(date.today())}
        print(json.dumps({"size": size, **results[size]}), flush=True)
        json_path.write_text(json.dumps({str(k): v for k, v in results.items()}, indent=2))
    write_section(args.out, "scale", markdown(results, args.threshold, args.threads))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
