"""A one-file HTML report of a finished run: S-curve, similarities, cluster sizes, Table 1, largest clusters.

The report is self-contained (inline CSS, plots as inline SVG drawn by matplotlib, one inline script for
the clusters' filter; no scripts, fonts or images loaded from anywhere) and deterministic: the same work
folder gives the same bytes.

Example:
    >>> write_report("work/example")  # doctest: +SKIP
    PosixPath('work/example/report.html')
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from lshsql import __version__, manifest, workdir
from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.pipeline import output_path
from lshsql.pipeline.runner import shingled
from lshsql.tools import explore
from lshsql.tools import report_plots as plots
from lshsql.tools.report_clusters import CLUSTERS, MEMBERS, clusters_html, serve_address
from lshsql.tools.report_eval import eval_html, read_eval

REPORT = "report.html"
SHOWN_PARAMS = (
    "threshold",
    "k",
    "l",
    "num_perm",
    "banding",
    "weighting",
    "min_df",
    "max_df",
    "scale",
    "max_bucket",
    "verify",
    "clustering",
    "seed",
)
NUM1 = {1: "num"}
CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #222;
       max-width: 1040px; margin: 0 auto; padding: 1.5em 2em 4em; line-height: 1.45; background: #fff; }
h1 { font-size: 1.7em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2.2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.sub { color: #666; margin-top: 0; }
nav { font-size: 0.92em; margin: 0.8em 0 1.2em; }
nav a { margin-right: 1em; color: #3b6ea8; text-decoration: none; }
figure { margin: 1em 0 0.5em; }
figure svg { width: 100%; max-width: 820px; height: auto; display: block; }
figcaption, p.caption { color: #555; font-size: 0.93em; margin-top: 0.4em; max-width: 820px; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.8em 0; }
th, td { border: 1px solid #d6d6d6; padding: 0.3em 0.6em; vertical-align: top; text-align: left; }
th { background: #f3f5f8; }
tr:nth-child(even) td { background: #fafafa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.params td, table.params th { padding: 0.2em 0.7em; }
td.url { overflow-wrap: anywhere; }
td.details { font-size: 0.9em; color: #444; overflow-wrap: anywhere; }
table.clusters { width: 100%; table-layout: fixed; }
table.clusters th:nth-child(1) { width: 2.2em; } table.clusters th:nth-child(2) { width: 3.2em; }
table.clusters th:nth-child(3), table.clusters th:nth-child(4) { width: 5.2em; }
table.clusters th:nth-child(5) { width: 24%; } table.clusters th:nth-child(6) { width: 15%; }
table.clusters th { white-space: normal; }
ul.members { font-size: 0.95em; }
td.url a { color: #1d4f8a; text-decoration: none; }
ul.members { margin: 0; padding-left: 1.1em; }
code { background: #f4f4f4; padding: 0 0.25em; }
.note { color: #777; font-style: italic; }
span.title { font-weight: 600; }
span.link { color: #555; }
.where { color: #888; font-size: 0.85em; white-space: nowrap; }
ul.members li { margin-bottom: 0.25em; }
table.eval td:nth-child(3) { color: #555; }
"""


def write_report(
    work: str | Path,
    out: Path | None = None,
    resources: db.Resources | None = None,
    serve_url: str | None = None,
) -> Path:
    """Write the HTML report of a finished run in `work` to `out` (default `work/report.html`), its queries
    run by DuckDB within `resources` (default: as for `run`). With `serve_url` (the address of `lshsql
    serve` over the same folder) members link to its pages; without, each shows where its page is stored.

    Raises InputError when the work folder has no pairs or clusters yet, ParamError for a bad serve_url.
    """
    serve = serve_address(serve_url)
    work = Path(work)
    if not work.is_dir():
        raise InputError(f"{work}: no such work folder")
    for relation in ("pairs", "clusters"):
        if not output_path(work, relation).exists():
            raise InputError(f"{work}: no {relation} yet; run `lshsql run --work {work}` first")
    data = manifest.read(work)
    params = data.get("params") or {}
    if params.get("k") is None or params.get("l") is None or params.get("threshold") is None:
        raise InputError(f"{work}: manifest.json has no run parameters; run `lshsql run --work {work}` first")
    out = Path(out) if out is not None else work / REPORT
    page = _render(work, data, params, db.for_work(work, resources), serve)
    out.parent.mkdir(parents=True, exist_ok=True)
    workdir.write_text(out, page)
    return out


# ---------------------------------------------------------------- data


def _stats(work: Path, num_perm: int, resources: db.Resources) -> dict:
    """Pair-similarity and cluster-size histograms and a few totals, read from the Parquet files.

    Similarities are counted in bins of width 1/num_perm centred on the values the min-hash estimate can
    take; the estimate itself (n_agree/num_perm) is counted too when the pairs were verified."""
    pairs, clusters = str(output_path(work, "pairs")), str(output_path(work, "clusters"))
    with db.connect(resources) as con:
        similarity = con.execute(
            "select cast(round(similarity * $m) as bigint) as bin, count(*) from read_parquet($p) "
            "group by bin order by bin",
            {"p": pairs, "m": num_perm},
        ).fetchall()
        estimate = con.execute(
            "select n_agree, count(*) from read_parquet($p) where jaccard is not null "
            "group by n_agree order by n_agree",
            {"p": pairs},
        ).fetchall()
        sizes = con.execute(
            "select size, count(*) from read_parquet($c) where is_center group by size order by size",
            {"c": clusters},
        ).fetchall()
        urls = con.execute("select count(*) from read_parquet($c)", {"c": clusters}).fetchone()[0]
    return {
        "similarity": [(int(b), int(n)) for b, n in similarity],
        "estimate": [(int(a), int(n)) for a, n in estimate],  # empty unless verified
        "sizes": [(int(s), int(n)) for s, n in sizes],
        "n_pairs": sum(n for _, n in similarity),
        "n_clusters": sum(n for _, n in sizes),
        "n_urls": int(urls),
    }


# ---------------------------------------------------------------- plots


def _num(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) >= 1 or value == 0 else f"{value:.4g}"
    return escape(str(value))


def _param(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower() if value is not None else "default"
    if isinstance(value, float):
        return f"{value:g}"
    return escape(str(value))


def _table(
    header: list[str], rows: list[list[str]], classes: dict[int, str] | None = None, cls: str = ""
) -> str:
    """An HTML table of already-escaped cells; `classes` gives columns a CSS class ("num": right-aligned)."""
    classes = classes or {}

    def cell(tag: str, i: int, value: str) -> str:
        return f'<{tag} class="{classes[i]}">{value}</{tag}>' if i in classes else f"<{tag}>{value}</{tag}>"

    head = "".join(cell("th", i, escape(h)) for i, h in enumerate(header))
    body = "\n".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def _figure_html(svg: str, caption: str) -> str:
    return f"<figure>\n{svg}\n<figcaption>{caption}</figcaption>\n</figure>"


def _header(work: Path, data: dict, params: dict, stats: dict) -> str:
    versions = data.get("versions", {})
    made_with = f"lshsql {escape(__version__)}"
    if versions.get("lshsql") and versions["lshsql"] != __version__:
        made_with += f" (run made with lshsql {escape(versions['lshsql'])})"
    rows = [[escape(name), _param(params.get(name))] for name in SHOWN_PARAMS if name in params]
    totals = [
        ["URLs", _num(stats["n_urls"])],
        ["pairs", _num(stats["n_pairs"])],
        ["clusters", _num(stats["n_clusters"])],
        ["singletons", _num(dict(stats["sizes"]).get(1, 0))],
    ]
    return f"""<h1>lshsql report: {escape(work.resolve().name)}</h1>
<p class="sub">Work folder <code>{escape(str(work))}</code> &middot; report by {made_with}</p>
<nav><a href="#scurve">S-curve</a><a href="#similarities">Similarities</a><a href="#sizes">Cluster sizes</a>\
<a href="#stages">Stages</a><a href="#clusters">Largest clusters</a><a href="#eval">Evaluation</a></nav>
<div style="display:flex; gap:2.5em; flex-wrap:wrap">
<div><h3>Parameters</h3>
{_table(["parameter", "value"], rows, NUM1, "params")}</div>
<div><h3>Results</h3>
{_table(["", "count"], totals, NUM1, "params")}</div>
</div>"""


def _where_caption(work: Path, serve: str | None) -> str:
    if serve is not None:
        return (
            f"Titles and sizes link to the pages of <code>lshsql serve</code> at {escape(serve)} (the "
            "related URLs, the stored capture); start it over this work folder to follow them."
        )
    return (
        "After each URL, the crawl file and byte offset its page was read from; "
        f"<code>lshsql show URL --html URL --work {escape(str(work))}</code> prints that stored page."
    )


def _render(work: Path, data: dict, params: dict, resources: db.Resources, serve: str | None) -> str:
    threshold, k, l = params["threshold"], params["k"], params["l"]  # noqa: E741
    num_perm = int(params.get("num_perm") or 80)
    stats = _stats(work, num_perm, resources)
    seed, banding = int(params.get("seed", 1)), bool(params.get("banding"))
    scurve, recall = plots.scurve_svg(threshold, k, l, num_perm, seed, banding)
    info = explore.info(work).rows
    stage_rows = [
        [escape(name), _num(rows), _num(seconds), escape(details)] for name, rows, seconds, details in info
    ]
    total = sum(r[2] or 0.0 for r in info)
    stage_rows.append(["<b>total</b>", "", f"<b>{total:,.3f}</b>", ""])
    singletons = dict(stats["sizes"]).get(1, 0)
    largest = max((s for s, _ in stats["sizes"]), default=0)
    if stats["estimate"]:
        similarity_caption = (
            f"How many of the {stats['n_pairs']:,} pairs kept have each similarity, the exact weighted "
            f"Jaccard of the two URLs' term bags (pairs below {threshold:g} are dropped); the outline is "
            f"the min-hash estimate of the same pairs, the fraction of the {num_perm} min-hashes that agree."
        )
    else:
        similarity_caption = (
            f"How many of the {stats['n_pairs']:,} pairs kept have each similarity, estimated as the "
            f"fraction of the {num_perm} min-hashes on which the two URLs agree (pairs below "
            f"{threshold:g} are dropped)."
        )
    sections = [
        _header(work, data, params, stats),
        '<h2 id="scurve">1. Which pairs LSH finds</h2>',
        _figure_html(
            scurve,
            f"The chance that two URLs with similarity s land in the same bucket of at least one of the "
            f"l = {l} tables of k = {k} min-hashes; at the threshold {threshold:g} (dashed line) a pair is "
            f"found with probability {recall:.3f}, and more similar pairs even more surely.",
        ),
        '<h2 id="similarities">2. Similarities of the pairs kept</h2>',
        _figure_html(
            plots.similarity_svg(stats, num_perm, threshold),
            similarity_caption,
        ),
        '<h2 id="sizes">3. Cluster sizes</h2>',
        _figure_html(
            plots.sizes_svg(stats),
            f"The number of clusters of each size, both axes logarithmic: {singletons:,} URLs have no "
            f"similar URL and form a cluster of their own, and the largest cluster has {largest:,} URLs.",
        ),
        '<h2 id="stages">4. Stages: rows and seconds (Table 1)</h2>',
        '<p class="caption">What each stage of the run wrote and how long it took, as in Table 1 of '
        "Haveliwala et al. (2000); extract counts the pages used.</p>",
        _table(["stage", "rows", "seconds", "details"], stage_rows, {1: "num", 2: "num", 3: "details"}),
        _figure_html(plots.timings_svg(info), "Seconds spent in each stage of the run."),
        f'<h2 id="clusters">5. The {CLUSTERS} largest clusters</h2>',
        f'<p class="caption">The biggest groups of related URLs (at most {CLUSTERS}, so that the file stays '
        "small for any crawl; <code>lshsql clusters</code> lists them all), each with its center, the terms "
        "that weigh most in its URLs' descriptions (summed TF-IDF, each shown as the word most often written "
        f"for it; <code>cluster_labels</code>) and its first {MEMBERS} members in URL order with their "
        f"titles. {_where_caption(work, serve)} Pair share is "
        "the share of its member pairs that are pairs: 1 when every member is similar to every other, low "
        "for a chain of URLs each similar only to the next; min pair similarity is that of its least "
        "similar pair (<code>lshsql clusters --sort pair_share</code> lists the chains first). Type in the "
        "filter to keep the clusters whose text has every word typed.</p>",
        clusters_html(work, resources, serve, shingled(data.get("stages") or {})),
        '<h2 id="eval">6. Evaluation</h2>',
        eval_html(read_eval(work)),
    ]
    body = "\n".join(sections)
    title = f"lshsql report: {escape(work.resolve().name)}"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="lshsql {escape(__version__)}">
<title>{title}</title>
<style>{CSS}</style>
</head>
<body>
{body}
</body>
</html>
"""
