"""lshsql side by side with datasketch and rensa (and Spark MLlib where asked), medians of several runs.

    python bench/peers.py --sizes 10000,100000 --thresholds 0.5,0.8 --runs 3 --out bench/RESULTS.md

Drives the team's harness, ../shared/bench/compare.py (read its README): one synthetic corpus per size
(gen_corpus.py, seeded), exact ground truth, each system in its own process on the same corpus, and
recall/precision against the truth. The peers run with the bench virtualenv's Python (--peer-python); lshsql
is the `lshsql` next to this interpreter. Each configuration is repeated --runs times; the table gives the
median wall time (process start to pairs written) and the ratio of medians against lshsql.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import machine, write_section  # noqa: E402

HARNESS = Path(__file__).resolve().parents[2] / "shared" / "bench"


def run_compare(
    python: str, corpus: Path, threshold: float, work: Path, systems: str, lshsql_args: str = ""
) -> dict:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    cmd = [
        python,
        str(HARNESS / "compare.py"),
        "--bags",
        str(corpus / "docs.parquet"),
        "--threshold",
        str(threshold),
        "--work",
        str(work),
        "--systems",
        systems,
        "--wait-idle",
        "120",
        "--no-exact-row",  # the truth's own row; its pair count is in the heading
    ]
    if lshsql_args and "lshsql" in systems.split(","):  # the same command as compare.py's, with more options
        systems = ",".join(name for name in systems.split(",") if name != "lshsql")
        cmd[cmd.index("--systems") + 1] = systems
        lshsql = Path(sys.executable).parent / "lshsql"
        command = (
            f"{shlex.quote(str(lshsql))} run --bags {{bags}} --weighting none --threshold {{threshold}} "
            "--work {work}"
        )
        cmd += ["--system-cmd", f"lshsql={command} {lshsql_args}"]
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return json.loads((work / f"{threshold}" / "results.json").read_text())


def summarize(runs: list[dict]) -> list[dict]:
    """Per system: median wall time and memory, and the quality of the last run (deterministic systems)."""
    names = [row["name"] for row in runs[0]["rows"] if not row.get("skip")]
    truth = runs[0]["truth_pairs"]
    out = []
    for name in names:
        rows = [next(r for r in run["rows"] if r["name"] == name) for run in runs]
        quality = rows[-1]["eval"]
        out.append(
            {
                "name": name,
                "seconds": statistics.median(r["run"]["wall_s"] for r in rows),
                "rss_mb": statistics.median(r["run"]["peak_rss_mb"] for r in rows),
                "pairs": quality["pairs"],
                "recall": quality["found"] / truth if truth else 0.0,
                "precision": quality["good"] / quality["pairs"] if quality["pairs"] else 0.0,
                "other_load": max(r["run"].get("other_load_cores") or 0 for r in rows),
            }
        )
    return out


def table(label: str, threshold: float, n_docs: int, truth: int, systems: list[dict], n_runs: int) -> str:
    reference = next((s for s in systems if s["name"] == "lshsql"), None)
    lines = [
        f"### {label}: {n_docs:,} docs, T = {threshold} ({truth:,} exact pairs), median of {n_runs} runs",
        "",
        "| system | median s | docs/s | peak RSS MB | pairs | recall | precision | time vs lshsql |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in systems:
        ratio = f"{s['seconds'] / reference['seconds']:.2f}x" if reference else "n/a"
        lines.append(
            f"| {s['name']} | {s['seconds']:.2f} | {n_docs / s['seconds']:,.0f} | {s['rss_mb']:.0f} | "
            f"{s['pairs']:,} | {s['recall']:.4f} | {s['precision']:.4f} | {ratio} |"
        )
    busy = [s["name"] for s in systems if s["other_load"] > 0.25]
    if busy:
        lines.append(f"\nOther processes used more than 0.25 cores during: {', '.join(busy)}.")
    return "\n".join(lines)


def results_body(args: argparse.Namespace, sections: list[str]) -> str:
    """The RESULTS.md section: how the tables were made, then the tables."""
    command = shlex.join(sys.argv[1:])
    return (
        f"## Side by side with peers (`bench/peers.py {command}`, {date.today()})\n\n"
        f"Machine: {machine()}. Harness: ../shared/bench/compare.py; corpus from its gen_corpus.py "
        "(its default seed, 42, recorded in the corpus meta.json). "
        "Wall time of each system's process: start-up, reading docs.parquet, sketching, LSH, verification, "
        "writing pairs. Ratio > 1x means lshsql is faster."
        + (f" lshsql ran with `{args.lshsql_args}`." if args.lshsql_args else "")
        + (
            " The exact truth is lshsql's prefix-filter join (bench/truth.py, sql/70_truth.sql): the "
            "harness's exact.py runs out of disk here. Where exact.py's truth exists (10k, 100k), "
            "bench/truth.py compares the two pair for pair."
            if args.truth == "lshsql"
            else ""
        )
        + "\n\n"
        + "\n\n".join(sections)
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--thresholds", default="0.5,0.8")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--systems", default="lshsql,datasketch,rensa")
    parser.add_argument("--peer-python", default=".bench-venv/bin/python")
    parser.add_argument("--data", type=Path, default=Path("bench-data"))
    parser.add_argument("--out", type=Path, default=Path("bench/RESULTS.md"))
    parser.add_argument(
        "--lshsql-args", default="", help='more options of lshsql run, e.g. "--memory-limit 4GB"'
    )
    parser.add_argument(
        "--truth",
        choices=("harness", "lshsql"),
        default="harness",
        help="lshsql: the exact truth from bench/truth.py (sql/70_truth.sql) when none is cached yet",
    )
    parser.add_argument(
        "--truth-batches", type=int, default=1, help="bench/truth.py --batches (16 at 1M docs, T = 0.5)"
    )
    parser.add_argument("--section", default="peers", help="the RESULTS.md section to write")
    args = parser.parse_args()
    if not (HARNESS / "compare.py").exists():
        sys.exit(f"bench: {HARNESS}/compare.py not found (../shared beside the repo?)")
    sections = []
    for n_docs in (int(s) for s in args.sizes.split(",")):
        corpus = args.data / f"c{n_docs}"
        if not (corpus / "docs.parquet").exists():
            subprocess.run(
                [
                    args.peer_python,
                    str(HARNESS / "gen_corpus.py"),
                    "--docs",
                    str(n_docs),
                    "--out",
                    str(corpus),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        for threshold in (float(t) for t in args.thresholds.split(",")):
            runs = []
            work = args.data / f"w{n_docs}"
            if args.truth == "lshsql":  # writes the truth where compare.py finds it, if none is cached
                truth = [sys.executable, str(Path(__file__).with_name("truth.py")), "--work", str(work)]
                truth += ["--batches", str(args.truth_batches)]
                subprocess.run(
                    [*truth, "--bags", str(corpus / "docs.parquet"), "--thresholds", str(threshold)],
                    check=True,
                )
            for i in range(args.runs):
                shutil.rmtree(work / f"{threshold}", ignore_errors=True)  # keep the cached truth
                runs.append(
                    run_compare(args.peer_python, corpus, threshold, work, args.systems, args.lshsql_args)
                )
                print(f"{n_docs} docs, T={threshold}: run {i + 1}/{args.runs} done", flush=True)
            systems = summarize(runs)
            sections.append(
                table(
                    f"{n_docs // 10**6}M docs" if n_docs % 10**6 == 0 else f"{n_docs // 1000}k docs",
                    threshold,
                    n_docs,
                    runs[0]["truth_pairs"],
                    systems,
                    args.runs,
                )
            )
            print(sections[-1], flush=True)
            write_section(args.out, args.section, results_body(args, sections))  # a later failure keeps it
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
