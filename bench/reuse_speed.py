"""A `run --bags` of a table grown by 10 % in the folder of the run before it (reusing the unchanged URLs'
signatures and pairs) against a run from scratch on the grown table, and whether they wrote the same bytes.

FULL is the grown table (bench/gen_bags.py, or any url, term table); the table before it is FULL less the
URLs whose md5 is 0 mod 11 (written to OUT/before.parquet), so FULL adds 10 %. Each round prepares a folder
on the table before (not timed), then times the rerun on FULL there and a fresh run on FULL in a new folder,
in alternating order: whole-process wall and CPU seconds (`/usr/bin/time`), the stages' seconds from the
manifest, medians over the rounds. Writes the section `reuse` of bench/RESULTS.md.

    python bench/reuse_speed.py bench-data/reuse/b1000000/docs.parquet --out /tmp/reuse-bench --rounds 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from bench.results import machine, write_section

RESULTS = Path(__file__).with_name("RESULTS.md")
RUN = ["--weighting", "none", "--threshold", "0.5", "-q"]
STAGES = ("bags", "signatures", "buckets", "candidates", "pairs", "clusters", "cluster_labels")


def timed_run(bags: Path, work: Path, out: Path) -> dict:
    """One `lshsql run --bags` under /usr/bin/time: wall, user, sys seconds, peak RSS, the stages."""
    times = out / "time.txt"
    command = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", str(times), sys.executable, "-m", "lshsql"]
    subprocess.run([*command, "run", "--bags", str(bags), "--work", str(work), *RUN], check=True)
    wall, user, system, rss = times.read_text().split()[-4:]
    stages = json.loads((work / "manifest.json").read_text())["stages"]
    return {
        "wall": float(wall),
        "cpu": float(user) + float(system),
        "rss_mb": int(rss) // 1024,
        "stages": {name: stages[name].get("seconds", 0.0) for name in STAGES},
        "reuse": {name: stages[name].get("reuse") for name in ("signatures", "pairs")},
    }


def same_bytes(a: Path, b: Path) -> bool:
    """Signatures and pairs byte for byte; clusters but for cluster_id (a rerun keeps the ids of the run
    before it, a fresh run numbers its clusters from 1)."""
    same = all(
        (a / f"{n}.parquet").read_bytes() == (b / f"{n}.parquet").read_bytes()
        for n in ("signatures", "pairs")
    )
    tables = [pq.read_table(w / "clusters.parquet") for w in (a, b)]
    return same and tables[0].drop_columns(["cluster_id"]).equals(tables[1].drop_columns(["cluster_id"]))


def one_round(small: Path, full: Path, out: Path, number: int) -> dict:
    incremental, fresh = out / f"incremental{number}", out / f"fresh{number}"
    for folder in (incremental, fresh):
        shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "lshsql", "run", "--bags", str(small), "--work", str(incremental), *RUN],
        check=True,
    )
    order = [("incremental", full, incremental), ("fresh", full, fresh)]
    result = {
        name: timed_run(bags, work, out) for name, bags, work in (order if number % 2 == 0 else order[::-1])
    }
    result["same_bytes"] = same_bytes(incremental, fresh)
    shutil.rmtree(fresh)
    shutil.rmtree(incremental)
    return result


def before_table(full: Path, out: Path) -> Path:
    """FULL less 1 URL in 11 (by the md5 of the URL): the table FULL grew from by 10 %."""
    import duckdb

    small = out / "before.parquet"
    with duckdb.connect() as con:
        con.execute(
            "copy (select * from read_parquet($full) where md5_number(url) % 11 != 0) "
            "to $small (format parquet)",
            {"full": str(full), "small": str(small)},
        )
    return small


def render(rounds: list[dict], small: Path, full: Path) -> str:
    def median(kind: str, key: str, stage: str | None = None) -> float:
        values = [r[kind]["stages"][stage] if stage else r[kind][key] for r in rounds]
        return statistics.median(values)

    reuse = rounds[0]["incremental"]["reuse"]
    lines = [
        "## Reuse in a rerun on a grown bags table",
        "",
        f"Machine: {machine()}. `python bench/reuse_speed.py {full}`, {len(rounds)} rounds, medians: "
        f"incremental = `run --bags` of the grown table ({full}) in the folder of a run on the table it grew "
        "from by 10 % (1 URL in 11 left out), fresh = the same in a new folder; "
        f"`{' '.join(RUN[:-1])}`; wall and CPU (user + sys) of the whole process.",
        "",
        f"signatures: {reuse['signatures']}; pairs: {reuse['pairs']}. "
        "Same bytes (signatures, pairs; clusters but their ids) in every round: "
        f"{all(r['same_bytes'] for r in rounds)}.",
        "",
        "| | incremental | fresh | ratio |",
        "|---|---|---|---|",
    ]
    for label, key in (("wall s", "wall"), ("CPU s", "cpu")):
        a, b = median("incremental", key), median("fresh", key)
        lines.append(f"| {label} | {a:.1f} | {b:.1f} | {a / b:.2f} |")
    for stage in STAGES:
        a, b = median("incremental", "", stage), median("fresh", "", stage)
        lines.append(f"| {stage} s | {a:.2f} | {b:.2f} | {a / b:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("full", type=Path)
    parser.add_argument("--out", type=Path, default=Path("/tmp/reuse-bench"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    small = before_table(args.full, args.out)
    rounds = [one_round(small, args.full, args.out, number) for number in range(args.rounds)]
    (args.out / "results.json").write_text(json.dumps(rounds, indent=2))
    write_section(RESULTS, "reuse", render(rounds, small, args.full))


if __name__ == "__main__":
    main()
