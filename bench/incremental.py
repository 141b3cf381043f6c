"""A crawl or corpus that grows: the run in a folder that holds the last run against a run from scratch.

    python bench/incremental.py --docs 1000000 --runs 3 --out bench/RESULTS.md

Cases (--cases), each timed as whole processes (wall, CPU of the process and its children, peak RSS of the
tree):
- crawls: the run of ../shared/data/crawls/postgresql15.warc.gz, then the same folder given that crawl and
  fixture-small.warc.gz (4 unrelated sites, a tenth as many pages), against a fresh folder given both;
- grown: postgresql15.warc.gz split in two files by its responses, every tenth in the second (made once in
  --data): the run of the first, then of both (the whole crawl, a tenth of its pages new);
- handbook, handbook-frozen: the same with fixture-handbook-neardup.warc.gz (one other site) added, the
  second with --freeze-idf in all three runs (a fresh folder's first --freeze-idf run is a plain run: the
  reference; the frozen rerun's pairs differ from it by design);
- bags: a synthetic --bags table (bench/gen_bags.py, --docs URLs), and a copy of it grown by a tenth
  (the same URLs and rows, plus a tenth more URLs), the same way.
Each repetition restores the folder of the first run from a copy (not timed), then times the second run
and the fresh one, interleaved. Reported: the medians, their ratio, whether the two folders' pairs and
clusters are the same rows, and the share of the first run's URLs whose cluster_id (or, in a folder whose
clusters have none, whose cluster center) is the same after the second run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import machine, write_section  # noqa: E402
from scale import tree_rss  # noqa: E402

LSHSQL = str(Path(sys.executable).parent / "lshsql")
COMMON = ["--quiet", "--threads", "2", "--memory-limit", "4GB"]


def measure(cmd: list[str]) -> dict:
    """Run cmd to the end: wall seconds, CPU seconds (it and its children) and peak RSS (MB) of its tree."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak, done = [0], threading.Event()

    def monitor() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(0.2)

    thread = threading.Thread(target=monitor, daemon=True)
    thread.start()
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    thread.join()
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])} failed ({proc.returncode}):\n{output.decode()[-3000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": peak[0] / 2**20}


def grow_bags(data: Path, docs: int) -> tuple[Path, Path]:
    """DATA/grown.parquet (gen_bags.py, docs * 1.1 URLs) and DATA/base.parquet (its first `docs` URLs)."""
    data.mkdir(parents=True, exist_ok=True)
    grown, base = data / "grown.parquet", data / "base.parquet"
    if not grown.exists():
        made = data / "gen"
        subprocess.run(
            [sys.executable, str(Path(__file__).parent / "gen_bags.py"), "--docs", str(docs + docs // 10)]
            + ["--out", str(made)],
            check=True,
        )
        (made / "docs.parquet").rename(grown)
    if not base.exists():
        con = duckdb.connect()
        # gen_bags numbers URLs .../p/<i>: the first `docs` of them are the table before it grew
        con.execute(
            "copy (select * from read_parquet($grown) "
            "where cast(regexp_extract(url, '/p/([0-9]+)$', 1) as bigint) < $docs) to $base (format parquet)",
            {"grown": str(grown), "docs": docs, "base": str(base)},
        )
    return base, grown


def split_crawl(crawl: Path, data: Path) -> tuple[Path, Path]:
    """DATA/first.warc.gz (crawl's records but every tenth response) and DATA/tenth.warc.gz (those)."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.warcwriter import WARCWriter

    first, tenth = data / "first.warc.gz", data / "tenth.warc.gz"
    if first.exists() and tenth.exists():
        return first, tenth
    data.mkdir(parents=True, exist_ok=True)
    partial = [path.with_name(f"{path.name}.part") for path in (first, tenth)]
    with crawl.open("rb") as source, partial[0].open("wb") as a, partial[1].open("wb") as b:
        most, rest = WARCWriter(a, gzip=True), WARCWriter(b, gzip=True)
        responses = 0
        for record in ArchiveIterator(source):
            responses += record.rec_type == "response"
            is_tenth = record.rec_type == "response" and responses % 10 == 0
            (rest if is_tenth else most).write_record(record)
    for done, path in zip(partial, (first, tenth), strict=True):  # whole files only: a killed split is redone
        os.replace(done, path)
    return first, tenth


def same_rows(a: Path, b: Path, table: str) -> bool:
    """Whether two folders' tables hold the same rows in the same order, but for cluster_id: a folder that
    held an earlier run keeps that run's ids, a fresh one numbers its clusters from 1."""
    con = duckdb.connect()
    rows = []
    for work in (a, b):
        relation = con.read_parquet(str(work / f"{table}.parquet"))
        kept = [f'"{c}"' for c in relation.columns if c != "cluster_id"]
        rows.append(relation.select(", ".join(kept)).fetchall())
    return rows[0] == rows[1]


def ids_kept(before: Path, after: Path) -> float:
    """Share of the URLs clustered in `before` whose cluster keeps its id in `after` (cluster_id if the
    clusters have one, else the center URL)."""
    con = duckdb.connect()
    columns = [
        r[0]
        for r in con.execute(
            "describe select * from read_parquet($p)", {"p": str(before / "clusters.parquet")}
        ).fetchall()
    ]
    key = "cluster_id" if "cluster_id" in columns else "center"
    (share,) = con.execute(
        f"select avg(case when b.{key} = a.{key} then 1.0 else 0.0 end) "
        "from read_parquet($b) as b left join read_parquet($a) as a on a.url = b.url",
        {"b": str(before / "clusters.parquet"), "a": str(after / "clusters.parquet")},
    ).fetchone()  # key is one of two column names of this module
    return float(share or 0.0)


def case(name: str, first: list[str], second: list[str], runs: int, scratch: Path) -> dict:
    """Time the second run in the first run's folder against a fresh run of the second inputs."""
    base, kept, inc, fresh = (scratch / f"{name}-{s}" for s in ("base", "kept", "inc", "fresh"))
    for folder in (base, kept, inc, fresh):
        shutil.rmtree(folder, ignore_errors=True)
    first_run = measure([LSHSQL, "run", *first, "--work", str(base), *COMMON])
    results: dict[str, list[dict]] = {"incremental": [], "fresh": []}
    for _ in range(runs):
        shutil.rmtree(inc, ignore_errors=True)
        shutil.copytree(base, inc)
        results["incremental"].append(measure([LSHSQL, "run", *second, "--work", str(inc), *COMMON]))
        shutil.rmtree(fresh, ignore_errors=True)
        results["fresh"].append(measure([LSHSQL, "run", *second, "--work", str(fresh), *COMMON]))
    return {
        "first": first_run,
        **results,
        "same_pairs": same_rows(inc, fresh, "pairs"),
        "same_clusters": same_rows(inc, fresh, "clusters"),
        "ids_kept": ids_kept(base, inc),
    }


def markdown(cases: dict[str, tuple[str, dict]], runs: int) -> str:
    lines = [
        "## A growing crawl or corpus: the run in the last run's folder against a run from scratch",
        "",
        f"{date.today().isoformat()}, {machine()}. `python bench/incremental.py` (`make bench-incremental`); "
        f"`--threads 2 --memory-limit 4GB`, {runs} runs of each, interleaved, each second run in a copy "
        "of the first run's folder; wall and CPU seconds of the whole process, medians.",
        "",
        "| case | first run s | second run s (CPU) | from scratch s (CPU) | ratio | same pairs | "
        "same clusters (but their ids) | URLs keeping their cluster id |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, (what, r) in cases.items():
        inc_wall = statistics.median(x["wall"] for x in r["incremental"])
        fresh_wall = statistics.median(x["wall"] for x in r["fresh"])
        inc_cpu = statistics.median(x["cpu"] for x in r["incremental"])
        fresh_cpu = statistics.median(x["cpu"] for x in r["fresh"])
        lines.append(
            f"| {name}: {what} | {r['first']['wall']:.1f} | {inc_wall:.1f} ({inc_cpu:.1f}) | "
            f"{fresh_wall:.1f} ({fresh_cpu:.1f}) | {inc_wall / fresh_wall:.2f} | "
            f"{'yes' if r['same_pairs'] else 'NO'} | {'yes' if r['same_clusters'] else 'NO'} | "
            f"{100 * r['ids_kept']:.1f} % |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000, help="URLs of the bags table before it grows")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--crawls", type=Path, default=Path("../shared/data/crawls"))
    parser.add_argument("--data", type=Path, default=Path("bench-data/incremental"))
    parser.add_argument("--out", type=Path, default=Path("bench/RESULTS.md"))
    parser.add_argument("--cases", default="crawls,grown,handbook,handbook-frozen,bags")
    args = parser.parse_args()
    chosen = args.cases.split(",")
    scratch = args.data / "work"
    scratch.mkdir(parents=True, exist_ok=True)
    old, new = str(args.crawls / "postgresql15.warc.gz"), str(args.crawls / "fixture-small.warc.gz")
    handbook = str(args.crawls / "fixture-handbook-neardup.warc.gz")
    bags = ["--weighting", "none", "--threshold", str(args.threshold)]
    part, tenth = (
        (str(p) for p in split_crawl(Path(old), args.data / "grown")) if "grown" in chosen else ("", "")
    )
    plans = {
        "crawls": ("postgresql15 + fixture-small", [old], [old, new]),
        "grown": ("postgresql15, 90 % of its pages + the other 10 %", [part], [part, tenth]),
        "handbook": ("postgresql15 + handbook", [old], [old, handbook]),
        "handbook-frozen": (
            "postgresql15 + handbook, --freeze-idf",
            [old, "--freeze-idf"],
            [old, handbook, "--freeze-idf"],
        ),
    }
    cases = {
        name: (what, case(name, first, second, args.runs, scratch))
        for name, (what, first, second) in plans.items()
        if name in chosen
    }
    if "bags" in chosen:
        base, grown = grow_bags(args.data / f"b{args.docs}", args.docs)
        first, second = ["--bags", str(base), *bags], ["--bags", str(grown), *bags]
        cases["bags"] = (f"{args.docs:,} URLs + 10 %", case("bags", first, second, args.runs, scratch))
    body = markdown(cases, args.runs)
    print(body)
    write_section(args.out, "incremental", body)


if __name__ == "__main__":
    main()
