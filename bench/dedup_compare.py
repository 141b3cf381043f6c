"""`lshsql dedup` side by side with datatrove's MinHash dedup on one generated corpus, in one invocation.

    python bench/dedup_compare.py --mb 50 --thresholds 0.7 --runs 3
    python bench/dedup_compare.py --mb 1000 --thresholds 0.7 --runs 3 --md bench/RESULTS.md

Steps:
 1. Corpus: bench/gen_text_corpus.py (seeded; --shards files so that a peer that parallelises by file can
    use both cores), cached in DATA/text-<size>-s<seed>/.
 2. Truth: bench/dedup_truth.py, cached in the corpus's truth/ folder (every pair with 5-word shingle
    Jaccard >= T, exact).
 3. Each system in its own process, one after another, --runs times (the order rotates each run):
      lshsql           lshsql dedup FILES --out W/kept.jsonl --removed W/removed.parquet --work W/work
                       --threshold T [--lshsql-args]
      datatrove        bench/dedup_peers.py datatrove (its 4-step MinHash dedup, default English spaCy
                       tokenizer; 14 x 8 hashes, its default, for 0.65 <= T <= 0.75, else the banding of
                       112 hashes that benchlib.lsh_bands picks for T), --workers processes
      datatrove-split  the same with a whitespace word tokenizer instead of spaCy
      text-dedup       bench/dedup_peers.py textdedup: text_dedup.minhash with its defaults (250
                       permutations, its own bands x rows for T), --workers processes
    Timed from outside: wall clock from start to exit (interpreter start-up, reading, shingling, hashing,
    LSH, clustering, writing the kept documents and the removal list); peak RSS = the largest sum of RSS
    over the process group, sampled every 0.1 s, or wait4's ru_maxrss if larger; CPU seconds of the
    process tree; other load = CPU that processes outside the run used meanwhile, in cores.
 4. Scores against the truth (dedup_truth.py's docstring): removed documents, recall (of the truth's
    removals, by group: a group of n documents is done when any n - 1 of them are removed), precision
    (removals that still have a duplicate among the kept), pairs with J >= T both kept ("dups left"),
    and for lshsql, whose removal list names the kept document, the share of removals whose named
    partner is kept and has J >= T. For lshsql the output is also checked:
    kept + removed = all documents, kept in input order, kept rows' id and text as in the input.
 5. A markdown table per threshold (median wall time and RSS over the runs, scores of the last run,
    noted if runs differ); --md writes them as a dated section of that file (bench/RESULTS.md).

The project's Python runs this (it needs duckdb, numpy, pyarrow, and lshsql for its row); the datatrove rows
run with --peer-python (.dedup-venv, see the Makefile's bench-dedup target).
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
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import dedup_truth as dt  # noqa: E402
from results import machine, write_section  # noqa: E402

SYSTEMS = ("lshsql", "datatrove", "datatrove-split", "text-dedup")
PEER_NAMES = {
    "lshsql": "`lshsql dedup`",
    "datatrove": "datatrove",
    "datatrove-split": "datatrove",
    "text-dedup": "text-dedup",
}


# -- running and measuring a process ------------------------------------------------------------------------


def busy_cpu_s() -> float:
    """Machine-wide non-idle CPU seconds so far (/proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def group_sample(pgid: int, cpu_seen: dict[int, float]) -> int:
    """Sum of RSS (bytes) of the processes in process group `pgid`; records each one's CPU seconds so far
    in `cpu_seen` (workers started by a fork server are not children whose rusage wait4 reports)."""
    page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # from field 3 (state) on: see proc(5)
        if int(fields[2]) == pgid:  # pgrp
            total += int(fields[21]) * page  # rss
            cpu_seen[int(name)] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def run_monitored(cmd: list[str], log: Path, timeout: float, env: dict | None = None) -> dict:
    busy0 = busy_cpu_s()
    self0 = sum(os.times()[:2])
    cpu_seen: dict[int, float] = {}
    with open(log, "w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        peak = 0
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, group_sample(proc.pid, cpu_seen))
            if time.perf_counter() - start > timeout:
                timed_out = True
                os.killpg(proc.pid, 9)
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.1)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = max(usage.ru_utime + usage.ru_stime, sum(cpu_seen.values()))
    ours = cpu + sum(os.times()[:2]) - self0
    return {
        "wall_s": wall,
        "peak_rss_mb": max(peak / 2**20, usage.ru_maxrss / 1024),
        "cpu_s": cpu,
        "other_load_cores": max(0.0, busy_cpu_s() - busy0 - ours) / max(wall, 1e-9),
        "rc": proc.returncode,
        "timed_out": timed_out,
    }


def wait_idle(max_wait: float, limit: float = 0.25, window: float = 5.0) -> float:
    """Wait until other processes use < `limit` cores over `window` s, or `max_wait` s have passed."""
    start = time.perf_counter()
    while True:
        b0 = busy_cpu_s()
        time.sleep(window)
        load = (busy_cpu_s() - b0) / window
        if load < limit or time.perf_counter() - start >= max_wait:
            return time.perf_counter() - start
        print(f"  waiting for an idle machine ({load:.2f} cores busy)", flush=True)


def tail(path: Path, n: int = 3) -> str:
    try:
        lines = [x.rstrip() for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return ""
    return " / ".join(lines[-n:])[-400:]


def summary_line(log: Path) -> str:
    """lshsql dedup's own count and speed lines, joined."""
    keep = ("documents read", "groups", "time")
    lines = [x.strip() for x in log.read_text(errors="replace").splitlines() if x.startswith(keep)]
    return "; ".join(" ".join(x.split()) for x in lines)


# -- corpus and truth ---------------------------------------------------------------------------------------


def corpus(args: argparse.Namespace) -> Path:
    if args.corpus:
        return args.corpus
    size = f"{args.mb:g}mb" if args.mb else f"{args.docs}docs"
    folder = args.data / f"text-{size}-s{args.seed}"
    if not (folder / "meta.json").exists():
        print(f"corpus: generating {folder}", flush=True)
        cmd = [
            sys.executable,
            str(HERE / "gen_text_corpus.py"),
            "--out",
            str(folder),
            "--seed",
            str(args.seed),
        ]
        cmd += ["--mb", str(args.mb)] if args.mb else ["--docs", str(args.docs)]
        subprocess.run([*cmd, "--shards", str(args.shards)], check=True)
    return folder


def truth(folder: Path, ts: list[float], args: argparse.Namespace) -> dict:
    out = folder / "truth"
    meta = folder / "meta.json"
    missing = [
        t
        for t in ts
        if not (out / f"truth_{t:g}.parquet").exists()
        or (out / f"truth_{t:g}.parquet").stat().st_mtime < meta.stat().st_mtime
    ]
    if missing:
        print(f"truth: computing T = {', '.join(f'{t:g}' for t in missing)}", flush=True)
        cmd = [sys.executable, str(HERE / "dedup_truth.py"), str(folder), "--threshold"]
        cmd += [",".join(f"{t:g}" for t in missing), "--memory-limit", args.truth_memory_limit]
        subprocess.run(cmd, check=True)
    return json.loads((out / "truth.json").read_text())


# -- systems ------------------------------------------------------------------------------------------------


def datatrove_bands(t: float, override: str | None) -> tuple[int, int]:
    if override:
        b, r = override.split(":")
        return int(b), int(r)
    if 0.65 <= t <= 0.75:
        return 14, 8  # datatrove's MinhashConfig default
    return dt.bl.lsh_bands(t, 112)


def command(name: str, files: list[Path], t: float, work: Path, args: argparse.Namespace) -> list[str]:
    if name == "lshsql":
        cmd = [args.lshsql, "dedup", *map(str, files), "--out", str(work / "kept.jsonl")]
        cmd += [
            "--removed",
            str(work / "removed.parquet"),
            "--work",
            str(work / "work"),
            "--threshold",
            f"{t:g}",
        ]
        return cmd + shlex.split(args.lshsql_args)
    if name == "text-dedup":
        cmd = [
            args.peer_python,
            str(HERE / "dedup_peers.py"),
            "textdedup",
            *map(str, files),
            "--work",
            str(work),
        ]
        return cmd + ["--threshold", f"{t:g}", "--workers", str(args.workers)]
    b, r = datatrove_bands(t, args.datatrove_bands)
    cmd = [args.peer_python, str(HERE / "dedup_peers.py"), "datatrove", *map(str, files), "--work", str(work)]
    cmd += ["--buckets", str(b), "--rows", str(r), "--workers", str(args.workers)]
    return cmd + ["--tokenizer", "split" if name == "datatrove-split" else "spacy"]


def removal_list(name: str, work: Path) -> Path:
    return work / ("removed.parquet" if name == "lshsql" else "removed.jsonl")


def removed_by_kind(folder: Path, removed: Path) -> dict:
    """Removals by the planted kind of the document (planted.jsonl; 'original' when not derived)."""
    src = (
        f"read_json({dt.bl.sqlstr(str(removed))}, format='newline_delimited')"
        if removed.name.endswith(".jsonl")
        else f"read_parquet({dt.bl.sqlstr(str(removed))})"
    )
    planted = dt.bl.sqlstr(str(folder / "planted.jsonl"))
    columns = "columns={'id': 'VARCHAR', 'kind': 'VARCHAR'}"
    rows = dt.duckdb.sql(f"""
        SELECT coalesce(p.kind, 'original') AS kind, count(*)
        FROM (SELECT DISTINCT id::VARCHAR AS id FROM {src}) r
        LEFT JOIN read_json({planted}, format='newline_delimited', {columns}) p USING (id)
        GROUP BY ALL ORDER BY 2 DESC""").fetchall()
    return dict(rows)


def check_lshsql_output(folder: Path, files: list[Path], work: Path) -> dict:
    """kept + removed = every document once; kept in input order with id and text unchanged."""
    con = dt.duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    docs = dt.bl.sqlstr(str(folder / "truth" / "docs.parquet"))
    kept = dt.bl.sqlstr(str(work / "kept.jsonl"))
    removed = dt.bl.sqlstr(str(work / "removed.parquet"))
    columns = "columns={'id': 'VARCHAR', 'text': 'VARCHAR'}"
    con.execute(
        f"CREATE TABLE k0 AS SELECT id, text FROM read_json({kept}, format='newline_delimited', {columns})"
    )
    con.execute("CREATE TABLE k AS SELECT rowid AS i, id, md5(text) AS h FROM k0")
    con.execute(f"CREATE TABLE s0 AS SELECT id::VARCHAR AS id, text FROM {dt.read_sql(files)}")
    con.execute("CREATE TABLE src AS SELECT rowid AS pos, id, md5(text) AS h FROM s0")
    n_docs, n_kept, n_removed, both, missing, disorder, changed = con.execute(f"""
        WITH kp AS (SELECT k.i, s.pos, k.h = s.h AS same FROM k JOIN src s USING (id))
        SELECT (SELECT count(*) FROM read_parquet({docs})), (SELECT count(*) FROM k),
               (SELECT count(DISTINCT id) FROM read_parquet({removed})),
               (SELECT count(*) FROM k WHERE id IN (SELECT id::VARCHAR FROM read_parquet({removed}))),
               (SELECT count(*) FROM src WHERE id NOT IN (SELECT id FROM k)
                  AND id NOT IN (SELECT id::VARCHAR FROM read_parquet({removed}))),
               (SELECT count(*) FROM (SELECT pos < lag(pos) OVER (ORDER BY i) AS back FROM kp) WHERE back),
               (SELECT count(*) FROM kp WHERE NOT same)""").fetchone()
    ok = n_kept + n_removed == n_docs and not both and not missing and not disorder and not changed
    return {
        "ok": ok,
        "kept": n_kept,
        "removed": n_removed,
        "in_both": both,
        "in_neither": missing,
        "out_of_order": disorder,
        "text_changed": changed,
    }


# -- the table ----------------------------------------------------------------------------------------------


def summarize(name: str, runs: list[dict]) -> dict:
    ok = [r for r in runs if r["run"]["rc"] == 0 and "score" in r]
    if not ok:
        return {"name": name, "failed": tail(Path(runs[-1]["log"]))}
    scores = [json.dumps({k: v for k, v in r["score"].items() if k != "similarity_mae"}) for r in ok]
    return {
        "name": name,
        "runs": len(ok),
        "seconds": statistics.median(r["run"]["wall_s"] for r in ok),
        "all_seconds": [round(r["run"]["wall_s"], 1) for r in ok],
        "rss_mb": statistics.median(r["run"]["peak_rss_mb"] for r in ok),
        "cpu_s": statistics.median(r["run"]["cpu_s"] for r in ok),
        "other_load": max(r["run"]["other_load_cores"] for r in ok),
        "score": ok[-1]["score"],
        "same_scores": len(set(scores)) == 1,
        "timing": ok[-1].get("timing"),
        "output_check": ok[-1].get("output_check"),
        "summary": ok[-1].get("summary"),
        "by_kind": ok[-1].get("by_kind"),
    }


def table(mb: float, n_docs: int, t: float, truth_info: dict, systems: list[dict]) -> str:
    ref = next((s for s in systems if s["name"] == "lshsql" and "seconds" in s), None)
    lines = [
        f"### {mb:,.0f} MB of text, {n_docs:,} documents, T = {t:g}: the truth removes "
        f"{truth_info['truth_removed']:,} documents ({truth_info['truth_pairs']:,} pairs with J >= T)",
        "",
        "| system | runs | median s | MB/s | peak RSS MB | removed | recall | precision | dups left "
        "| partner ok | time vs lshsql |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    for s in systems:
        if "seconds" not in s:
            lines.append(f"| {s['name']} | failed | | | | | | | | | |")
            notes.append(f"{s['name']} failed: `{s['failed']}`")
            continue
        sc = s["score"]
        ratio = f"{s['seconds'] / ref['seconds']:.2f}x" if ref else "n/a"
        partner = f"{sc['partner']:.4f}" if "partner" in sc else "-"
        lines.append(
            f"| {s['name']} | {s['runs']} | {s['seconds']:.1f} | {mb / s['seconds']:.2f} "
            f"| {s['rss_mb']:,.0f} | {sc['removed']:,} | {sc['recall']:.4f} | {sc['precision']:.4f} "
            f"| {sc['left_pairs']:,} | {partner} | {ratio} |"
        )
        detail = f"{s['name']}: runs {s['all_seconds']} s, CPU {s['cpu_s']:.0f} s"
        if s.get("timing"):
            phases = {k: round(v, 1) for k, v in s["timing"].items() if k.endswith("_s")}
            detail += f", bands {s['timing']['buckets']} x {s['timing']['rows']}, phases {phases}"
        if s.get("output_check") is not None:
            check = s["output_check"]
            detail += ", output check " + ("passed" if check["ok"] else f"FAILED {check}")
        if s.get("by_kind"):
            detail += ", removed by planted kind " + ", ".join(f"{k} {v:,}" for k, v in s["by_kind"].items())
        if s.get("summary"):
            detail += f", its summary: `{s['summary']}`"
        if not s["same_scores"]:
            detail += ", scores differed between runs (the last run's are shown)"
        notes.append(detail)
        if s["other_load"] > 0.25:
            notes.append(
                f"{s['name']}: other processes used up to {s['other_load']:.2f} cores during its runs"
            )
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in notes)


def systems_named(names: list[str]) -> str:
    """'`lshsql dedup`, datatrove and text-dedup' for the systems that ran."""
    named = list(dict.fromkeys(PEER_NAMES[n] for n in names))
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def shown_args() -> list[str]:
    """The command's arguments without where its tables went (--md, --section, --work)."""
    shown, skip = [], False
    for arg in sys.argv[1:]:
        if skip:
            skip = False
        elif arg in ("--md", "--section", "--work"):
            skip = True
        elif not arg.startswith(("--md=", "--section=", "--work=")):
            shown.append(arg)
    return shown


def section(args: argparse.Namespace, meta: dict, tables: list[str]) -> str:
    counts = ", ".join(f"{k} {v:,}" for k, v in meta["counts"].items())
    return (
        f"## Dedup: {systems_named([n.strip() for n in args.systems.split(',') if n.strip()])} "
        f"(`bench/dedup_compare.py {shlex.join(shown_args())}`, {date.today()})\n\n"
        f"Machine: {machine()}. Corpus: bench/gen_text_corpus.py, seed {meta['seed']}, "
        f"{meta['text_mb']:,.0f} MB of text in {len(meta['files'])} JSON Lines files, "
        f"documents by kind: {counts} "
        "(edited copies and boilerplate copies fall on both sides of T; passage documents are planted "
        "non-duplicates). Truth: bench/dedup_truth.py, exact Jaccard of 5-word shingle sets. "
        "Wall time of the whole process (start-up to kept documents and removal list written); MB/s of "
        "text; recall: the truth's removals made (the truth keeps the first document in input order of each "
        "group of duplicates; a group of n counts as done when any n - 1 of its documents are removed); "
        "precision: share of removals with a kept duplicate (J >= T); dups left: pairs with J >= T both "
        "kept; partner ok: removals whose named kept document has J >= T. "
        + (f"lshsql ran with `{args.lshsql_args}`. " if args.lshsql_args else "")
        + f"datatrove and text-dedup: {args.workers} worker processes; datatrove-split: datatrove with a "
        "whitespace tokenizer instead of spaCy's (bench/dedup_peers.py says why).\n\n" + "\n\n".join(tables)
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--mb", type=float, help="corpus size in MB of text (e.g. 1000)")
    size.add_argument("--docs", type=int, help="corpus size in documents")
    size.add_argument("--corpus", type=Path, help="an existing corpus folder of gen_text_corpus.py")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--shards", type=int, default=4, help="corpus files (default 4)")
    parser.add_argument("--data", type=Path, default=Path("bench-data"))
    parser.add_argument("--thresholds", default="0.7")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--runs-for",
        action="append",
        default=[],
        metavar="SYSTEM=N",
        help="fewer (or more) runs for one system, e.g. datatrove=1 (spaCy makes it slow); repeatable",
    )
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma list of {', '.join(SYSTEMS)}")
    parser.add_argument(
        "--lshsql", default=str(Path(sys.executable).parent / "lshsql"), help="its executable"
    )
    parser.add_argument(
        "--lshsql-args", default="", help='more options, e.g. "--memory-limit 4GB --threads 2"'
    )
    parser.add_argument("--peer-python", default=".dedup-venv/bin/python", help="Python with the peers")
    parser.add_argument("--workers", type=int, default=2, help="datatrove's processes at a time")
    parser.add_argument("--datatrove-bands", help="B:R instead of the default choice, e.g. 14:8")
    parser.add_argument("--work", type=Path, help="default DATA/dedup-work")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="per run, seconds")
    parser.add_argument("--wait-idle", type=float, default=0, help="before each run, wait up to this many s")
    parser.add_argument("--truth-memory-limit", default="8GB")
    parser.add_argument("--md", type=Path, help="write the tables into this file (bench/RESULTS.md)")
    parser.add_argument("--section", default="dedup", help="its section name")
    args = parser.parse_args()
    if not (args.mb or args.docs or args.corpus):
        parser.error("one of --mb, --docs, --corpus is required")
    names = [s.strip() for s in args.systems.split(",") if s.strip()]
    for name in names:
        if name not in SYSTEMS:
            parser.error(f"unknown system {name}")
    if "lshsql" in names and not shutil.which(args.lshsql):
        sys.exit(f"no lshsql at {args.lshsql} (--lshsql)")
    if any(n != "lshsql" for n in names) and not Path(args.peer_python).exists():
        sys.exit(f"no {args.peer_python}: make .dedup-venv (see the Makefile) or pass --peer-python")
    runs_for = {n: args.runs for n in names}
    for item in args.runs_for:
        name, _, count = item.partition("=")
        if name not in runs_for:
            parser.error(f"--runs-for {item}: {name} is not in --systems")
        runs_for[name] = int(count)
    ts = [float(t) for t in args.thresholds.split(",")]
    folder = corpus(args)
    meta = json.loads((folder / "meta.json").read_text())
    files = [folder / f for f in meta["files"]]
    truth(folder, ts, args)
    mb = meta["text_bytes"] / 1e6
    work_root = args.work or args.data / "dedup-work"
    tables, results = [], {}
    for t in ts:
        runs: dict[str, list[dict]] = {n: [] for n in names}
        for i in range(max(runs_for.values())):
            order = names[i % len(names) :] + names[: i % len(names)]
            for name in (n for n in order if i < runs_for[n]):
                work = work_root / f"{t:g}" / name
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir(parents=True)
                if args.wait_idle:
                    wait_idle(args.wait_idle)
                log = work_root / f"{t:g}" / f"{name}.log"
                run = run_monitored(command(name, files, t, work, args), log, args.timeout)
                entry: dict = {"run": run, "log": str(log)}
                if run["rc"] == 0:
                    entry["score"] = dt.score(folder / "truth", t, str(removal_list(name, work)))
                    if (folder / "planted.jsonl").exists():
                        entry["by_kind"] = removed_by_kind(folder, removal_list(name, work))
                    if (work / "timing.json").exists():
                        entry["timing"] = json.loads((work / "timing.json").read_text())
                    if name == "lshsql":
                        entry["summary"] = summary_line(log)
                        if i == runs_for[name] - 1:
                            entry["output_check"] = check_lshsql_output(folder, files, work)
                runs[name].append(entry)
                sc = entry.get("score", {})
                nan = float("nan")
                print(
                    f"T={t:g} run {i + 1}/{runs_for[name]} {name}: {run['wall_s']:.1f} s, "
                    f"{run['peak_rss_mb']:.0f} MB, rc {run['rc']}, removed {sc.get('removed')}, "
                    f"recall {sc.get('recall', nan):.4f}, precision {sc.get('precision', nan):.4f}"
                    + ("" if run["rc"] == 0 else f" -- {tail(log)}"),
                    flush=True,
                )
        systems = [summarize(n, runs[n]) for n in names]
        truth_info = dt.score(folder / "truth", t, str(folder / "truth" / "docs.parquet"))  # for the totals
        tables.append(table(mb, meta["docs"], t, truth_info, systems))
        results[f"{t:g}"] = {"systems": systems, "runs": runs}
        print("\n" + tables[-1] + "\n", flush=True)
        (work_root / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
        if args.md:
            write_section(args.md, args.section, section(args, meta, tables))
    if args.md:
        print(f"written to {args.md}")


if __name__ == "__main__":
    main()
