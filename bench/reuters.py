"""Hierarchical clustering on Reuters-21578: LSH single-link against exact single-link, scored by TOPICS.

    python bench/reuters.py --sizes 1000,10000,all --runs 3 --out bench/RESULTS.md

For each size: the first N stories (NEWID order) with a BODY and at least one topic (`ingest
--require-label --limit N`; `all` = every such story, 10,377), then

- `hierarchy` (LSH single-link): the stages bags -> signatures and the levels r_start .. r_min, timed;
- `hierarchy --method exact` (single-link over every exact pair >= t) up to --exact-max documents;
- `cut` at each similarity in --cuts, scored against the TOPICS labels: pairwise precision, recall,
  F-measure and accuracy over document pairs (a pair with a shared topic belongs together), as in Korelin &
  Blekanov's evaluation.

`body` adds every story with a BODY (19,043, labelled or not), the size of the published 20k run: it is
clustered whole and scored on its labelled stories. Times are medians of --runs runs, in this process
(DuckDB and numpy only; the Python start-up and imports, ~1 s, are not included).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import machine, write_section  # noqa: E402

from lshsql import db  # noqa: E402
from lshsql.evaluate import score_clusters  # noqa: E402
from lshsql.hierarchy import HierarchyParams, cut, hierarchy  # noqa: E402
from lshsql.ingest import IngestParams, ingest  # noqa: E402
from lshsql.params import Params  # noqa: E402

REUTERS = Path(__file__).resolve().parents[2] / "shared" / "data" / "reuters21578"
PUBLISHED = {  # Korelin & Blekanov: single-link s / LSH single-link s, at 1k / 10k / 20k documents
    1000: ("4", "3"),
    10000: ("410", "41"),
    20000: ("> 3600", "90"),
}


def prepare(size: str, folder: Path, resources: db.Resources) -> tuple[Path, dict]:
    """An ingested work folder of `size` stories, and what ingest did."""
    work = folder / f"reuters-{size}"
    limit = None if size in ("all", "body") else int(size)
    params = IngestParams(limit=limit, require_label=size != "body")
    started = time.perf_counter()
    summary = ingest([str(REUTERS)], work, params, resources)
    return work, {"documents": summary.pages_used, "ingest_s": time.perf_counter() - started}


def timed_hierarchy(work: Path, params: HierarchyParams, pipeline: Params, resources, runs: int) -> dict:
    """Median seconds of the stages up to signatures plus the hierarchy, each run from the ingested folder."""
    seconds, levels = [], []
    for _ in range(runs):
        for stale in ("term_counts", "urls", "terms", "bags", "element_hashes", "signatures"):
            (work / f"{stale}.parquet").unlink(missing_ok=True)
        started = time.perf_counter()
        summary = hierarchy(work, params, pipeline, resources)
        seconds.append(time.perf_counter() - started)
        levels = summary.levels
    return {
        "seconds": statistics.median(seconds),
        "runs": seconds,
        "clusters": summary.clusters,
        "levels": levels,
    }


def scores(work: Path, cuts: list[float], resources) -> dict[float, dict]:
    out = {}
    for h in cuts:
        path, counts = cut(work, h, resources)
        out[h] = {**score_clusters(path, work / "labels.parquet", resources), **counts}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,all,body")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--threshold", type=float, default=0.25, help="t of the hierarchy (and the exact one)"
    )
    parser.add_argument("--cuts", default="0.25,0.3,0.35")
    parser.add_argument("--headline-cut", type=float, default=None, help="the cut of the summary table")
    parser.add_argument("--r-start", type=int, default=20)
    parser.add_argument("--r-min", type=int, default=2)
    parser.add_argument("--delta", type=int, default=2)
    parser.add_argument("--exact-max", type=int, default=10000)
    parser.add_argument(
        "--exact-runs", type=int, default=1, help="runs of exact single-link above 1k documents"
    )
    parser.add_argument("--memory-limit", default="8GB")
    parser.add_argument("--out", type=Path, default=Path("bench/RESULTS.md"))
    args = parser.parse_args()
    if not REUTERS.exists():
        sys.exit(f"{REUTERS} not found: the benchmark needs ../shared/data")
    cuts = [float(c) for c in args.cuts.split(",")]
    headline = args.headline_cut if args.headline_cut is not None else cuts[len(cuts) // 2]
    if headline not in cuts:
        sys.exit(f"--headline-cut {headline} is not one of --cuts {args.cuts}")
    lsh_params = HierarchyParams(args.threshold, args.r_start, args.r_min, args.delta)
    exact_params = HierarchyParams(args.threshold, method="exact")
    pipeline = Params(weighting="none")
    rows = []
    with tempfile.TemporaryDirectory(dir="bench-data" if Path("bench-data").is_dir() else None) as tmp:
        resources = db.Resources(memory_limit=args.memory_limit, temp_directory=f"{tmp}/duckdb")
        for size in args.sizes.split(","):
            work, info = prepare(size, Path(tmp), resources)
            print(f"{size}: {info['documents']} documents, ingest {info['ingest_s']:.1f} s", flush=True)
            row = {"size": size, **info}
            if info["documents"] <= args.exact_max:
                runs = args.runs if info["documents"] <= 1000 else args.exact_runs
                row["exact"] = timed_hierarchy(work, exact_params, pipeline, resources, runs)
                row["exact_scores"] = scores(work, cuts, resources)
                print(f"  exact {row['exact']['seconds']:.2f} s", flush=True)
            row["lsh"] = timed_hierarchy(work, lsh_params, pipeline, resources, args.runs)
            row["lsh_scores"] = scores(work, cuts, resources)
            print(f"  lsh {row['lsh']['seconds']:.2f} s", flush=True)
            rows.append(row)
    body = render(rows, cuts, headline, lsh_params, args.runs, args.exact_runs)
    print(body)
    write_section(args.out, "reuters", body)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def render(
    rows: list[dict], cuts: list[float], headline: float, params: HierarchyParams, runs: int, exact_runs: int
) -> str:
    lines = [
        f"## Hierarchical clustering on Reuters-21578 (`bench/reuters.py`, {date.today().isoformat()})",
        "",
        f"Machine: {machine()}. Stories with a BODY and at least one TOPICS label, in NEWID order; `body` is"
        " every story with a BODY (labelled or not), clustered whole and scored on its labelled stories."
        " Bags of stemmed words with their counts (`--weighting none`, min_df 2, max_df 0.5), m = 80."
        f" Hierarchy t = {params.threshold}, r = {params.r_start} down to {params.r_min} by {params.delta},"
        " each level's threshold the S-curve midpoint (1/b)^(1/r) or t, merges by exact weighted Jaccard;"
        " the exact single-link reference uses the same t."
        f" Seconds: median of {runs} runs (exact single-link above 1k documents: {exact_runs})"
        " of bags -> signatures -> hierarchy; ingest shown apart. Scores: pairwise over document pairs, a"
        " pair sharing a topic belongs together; accuracy = the pairs on which clusters and topics agree.",
        "",
        f"### Cut at similarity {headline}",
        "",
        "| documents | ingest s | exact single-link s | LSH single-link s | published exact / LSH s | "
        "method | clusters | accuracy % | precision % | recall % | F % |",
        "|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        n = row["documents"]
        published = PUBLISHED.get(min(PUBLISHED, key=lambda p: abs(p - n)), ("", ""))
        exact_s = f"{row['exact']['seconds']:.2f}" if "exact" in row else "-"
        for method in ("exact", "lsh"):
            if f"{method}_scores" not in row:
                continue
            q = row[f"{method}_scores"][headline]
            scores = [q["pairwise_accuracy"], q["pairwise_precision"], q["pairwise_recall"], q["pairwise_f"]]
            lines.append(
                f"| {n:,} ({row['size']}) | {row['ingest_s']:.1f} | {exact_s} | "
                f"{row['lsh']['seconds']:.2f} | {published[0]} / {published[1]} | {method} | "
                f"{q['clusters']:,} | " + " | ".join(_pct(x) for x in scores) + " |"
            )
    lines += ["", "### Every cut (F % of exact / LSH single-link; clusters in brackets)", ""]
    lines.append("| documents | " + " | ".join(f"cut {h}" for h in cuts) + " |")
    lines.append("|---:|" + "---|" * len(cuts))
    for row in rows:
        cells = []
        for h in cuts:
            lsh = row["lsh_scores"][h]
            exact = row.get("exact_scores", {}).get(h)
            left = f"{_pct(exact['pairwise_f'])} ({exact['clusters']:,})" if exact else "-"
            cells.append(f"{left} / {_pct(lsh['pairwise_f'])} ({lsh['clusters']:,})")
        lines.append(f"| {row['documents']:,} ({row['size']}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
