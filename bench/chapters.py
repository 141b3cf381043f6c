"""A labelled benchmark from documentation sites' own tables of contents: does lshsql find a page's chapter?

    python bench/chapters.py --variant default= --variant "keep=--templates keep" --out bench/RESULTS.md

Sites: the PostgreSQL 15 manual (../shared/data/crawls/postgresql15.warc.gz), labels from its index
page's table of contents and each chapter page's own (bench/chapter_labels.py, docbook_chapters); and the
Python 3.11 documentation from Debian's python3.11-doc package (fetched with `apt-get download` into
--data when missing), its HTML folder given to lshsql with --base-url, labels from the Library
Reference's index (sphinx_chapters). Each --variant NAME=ARGS runs `lshsql run` with those extra arguments
in a fresh work folder, at the default threshold (read back from the manifest, the same for every site),
and is scored on the labelled pages: the share with a labelled neighbour in the pairs, the chapter
precision of their five most similar labelled neighbours as `related` ranks them, pairwise precision and
recall of the clusters against chapters, and the five largest clusters with their top terms. The baseline
is TF-IDF cosine over each page's own visible text (bench/tfidf_cosine.py, in --baseline-python's venv).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import lxml.html
import numpy as np
from warcio.archiveiterator import ArchiveIterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chapter_labels as cl  # noqa: E402
from results import machine, write_section  # noqa: E402

from lshsql import api, manifest, urls  # noqa: E402
from lshsql.errors import InputError  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
PG_WARC = SHARED / "crawls" / "postgresql15.warc.gz"
PG_INDEX = "https://www.postgresql.example/docs/15/index.html"
PY_PACKAGE = "python3.11-doc"
PY_HTML = Path("usr/share/doc/python3.11/html")
PY_BASE = "https://docs.python.example/3.11/"
K = 5
TOP_CLUSTERS = 5
FIXED_COSINE = 0.3
CHECKED = 25  # labelled URLs whose lists are checked against `lshsql related` itself


@dataclass
class Site:
    name: str
    inputs: list[str]  # lshsql run's crawl arguments
    pages: dict[str, bytes]  # canonical URL -> HTML of every page of the crawl
    labels: dict[str, str]  # canonical URL -> chapter
    dropped: dict[str, int]
    toc: str  # where the labels come from, for the report
    runs: list[dict] = field(default_factory=list)
    baseline: dict = field(default_factory=dict)


def canonical(url: str) -> str:
    try:
        return urls.canonicalize(url)
    except urls.UrlError:
        return url


def _labelled(chapters: list[tuple[str, list[str]]], pages: dict[str, bytes]) -> tuple[dict, dict]:
    canonical_chapters = [(label, [canonical(u) for u in members]) for label, members in chapters]
    return cl.chapter_labels(canonical_chapters, set(pages))


def postgresql_site() -> Site:
    raw: dict[str, bytes] = {}
    with PG_WARC.open("rb") as f:
        for record in ArchiveIterator(f):
            if record.rec_type == "response" and record.http_headers.get_statuscode() == "200":
                raw[record.rec_headers.get_header("WARC-Target-URI")] = record.content_stream().read()
    pages = {canonical(u): b for u, b in raw.items()}
    labels, dropped = _labelled(cl.docbook_chapters(PG_INDEX, raw), pages)
    toc = (
        "index.html's table of contents: each preface, chapter, appendix and reference (SQL Commands,"
        " Client Applications, Server Applications) is a chapter; its own page and the pages its table of"
        " contents lists get its label. Part pages (several chapters), index.html, the legal notice, the"
        " bibliography and the book index have none."
    )
    return Site("PostgreSQL 15 manual", [str(PG_WARC)], pages, labels, dropped, toc)


def python_docs(data: Path) -> Path:
    """The HTML folder of Debian's python3.11-doc, downloaded and unpacked into data when missing."""
    folder = data / PY_PACKAGE
    if not (folder / PY_HTML / "library" / "index.html").exists():
        data.mkdir(parents=True, exist_ok=True)
        debs = sorted(data.glob(f"{PY_PACKAGE}_*.deb"))
        if not debs:
            print(f"fetching {PY_PACKAGE} with apt-get download into {data}", flush=True)
            subprocess.run(["apt-get", "download", PY_PACKAGE], cwd=data, check=True)
            debs = sorted(data.glob(f"{PY_PACKAGE}_*.deb"))
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(folder)], check=True)
    return folder / PY_HTML


def python_site(data: Path) -> Site:
    html = python_docs(data)
    raw = {PY_BASE + p.relative_to(html).as_posix(): p.read_bytes() for p in sorted(html.rglob("*.html"))}
    pages = {canonical(u): b for u, b in raw.items()}
    index = PY_BASE + "library/index.html"
    labels, dropped = _labelled(cl.sphinx_chapters(index, raw[index]), pages)
    toc = (
        "library/index.html (the Library Reference): each top-level entry is a chapter (Text Processing"
        " Services, Networking and Interprocess Communication, ...); its page and the module pages listed"
        " under it get its label. The other manuals (tutorial, language reference, C API, what's new, ...)"
        " and the index pages are in the run but unlabelled."
    )
    return Site("Python 3.11 documentation", [str(html), "--base-url", PY_BASE], pages, labels, dropped, toc)


def visible_text(html: bytes) -> str:
    """A page's own visible text: its body without script and style, whitespace collapsed."""
    root = lxml.html.fromstring(html)
    for element in root.xpath("//script | //style | //noscript"):
        element.drop_tree()
    body = root.find("body")
    return " ".join((body if body is not None else root).text_content().split())


# ---------------------------------------------------------------- lshsql


def run_variant(site: Site, name: str, args: str, work: Path, threads: int) -> dict:
    """`lshsql run` of the site with the variant's arguments in a fresh work folder (no option remembered
    from another variant), then its scores on the labelled pages."""
    shutil.rmtree(work, ignore_errors=True)
    command = [sys.executable, "-m", "lshsql", "run", *site.inputs, "--work", str(work), "--quiet"]
    command += ["--threads", str(threads), *shlex.split(args)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return {"name": name, "args": args, "error": done.stderr.strip().splitlines()[-1:]}
    labels = site.labels
    threshold = manifest.read(work)["params"]["threshold"]
    pairs = api.query(work, "select u, v from pairs").to_pylist()
    pair_list = [(p["u"], p["v"]) for p in pairs]
    clusters = {
        r["url"]: r["center"] for r in api.query(work, "select url, center from clusters").to_pylist()
    }
    ranked = related_lists(work)
    for url in sorted(labels)[:: max(1, len(labels) // CHECKED)]:
        try:
            found = api.related(work, url, limit=len(clusters)).column("related_url").to_pylist()
        except InputError:  # a page lshsql has no bag for: no neighbour
            found = []
        if found != ranked.get(url, []):
            raise SystemExit(
                f"{url}: `related` lists {found[:K]}, the benchmark's query {ranked.get(url, [])[:K]}"
            )
    top = api.top_clusters(work, limit=TOP_CLUSTERS, members=0).to_pylist()
    largest = []
    for row in top:
        members = [u for u, c in clusters.items() if c == row["center"]]
        chapters = Counter(labels[u] for u in members if u in labels)
        pages = sum(u in site.pages for u in members)
        largest.append(
            {**row, "pages": pages, "labelled": sum(chapters.values()), "chapters": chapters.most_common(2)}
        )
    return {
        "name": name,
        "args": args,
        "seconds": seconds,
        "threshold": threshold,
        "pairs": len(pair_list),
        "labelled_pairs": sum(u in labels and v in labels for u, v in pair_list),
        "share": cl.neighbour_share(labels, pair_list),
        "neighbours": cl.precision_at_k(labels, ranked, K),
        "clusters": cl.clustering_scores(labels, clusters),
        "largest": largest,
    }


# `lshsql related` for every URL at once: its order (similarity desc, then URL), checked against the API
RELATED = """
select url, list(related_url order by similarity desc, related_url) as related
from (
    select u as url, v as related_url, similarity from pairs
    union all
    select v as url, u as related_url, similarity from pairs
)
group by url
"""


def related_lists(work: Path) -> dict[str, list[str]]:
    """url -> the URLs `lshsql related` lists for it, in its order, from one query over the pairs."""
    return {row["url"]: row["related"] for row in api.query(work, RELATED).to_pylist()}


# ---------------------------------------------------------------- baseline


def baseline(site: Site, python: Path, folder: Path, n_pairs: int) -> dict:
    """TF-IDF cosine: five nearest labelled neighbours by cosine, and the share with a labelled neighbour
    at the cosine that gives as many labelled pairs as lshsql's first variant, and at FIXED_COSINE."""
    texts = folder / "texts.jsonl"
    with texts.open("w", encoding="utf-8") as f:
        for url, html in sorted(site.pages.items()):
            f.write(
                json.dumps({"url": url, "text": visible_text(html), "labelled": url in site.labels}) + "\n"
            )
    out = folder / "cosine.npy"
    subprocess.run(
        [str(python), str(Path(__file__).with_name("tfidf_cosine.py")), str(texts), str(out)], check=True
    )
    cosine = np.load(out)
    labelled = sorted(site.labels)
    neighbours = cl.precision_at_k(site.labels, cl.ranked_by_similarity(labelled, cosine, K), K)
    matched = cl.cosine_for_pairs(cosine, n_pairs)
    rows = []
    for at, how in ([(matched, "as many pairs")] if matched is not None else []) + [(FIXED_COSINE, "fixed")]:
        pairs = cl.pairs_at(labelled, cosine, at)
        share = cl.neighbour_share(site.labels, pairs)
        rows.append({"cosine": at, "how": how, "labelled_pairs": len(pairs), "share": share})
    return {"neighbours": neighbours, "rows": rows}


# ---------------------------------------------------------------- report


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def goal_lines(site: Site) -> list[str]:
    """Per variant, whether the 5-NN precision and neighbour-share goals are met (the largest clusters'
    topics are for a reader to judge, from the table after these lines)."""
    tfidf = site.baseline.get("neighbours", {}).get("precision")
    lines = []
    for run in site.runs:
        if "error" in run:
            continue
        precision, share = run["neighbours"]["precision"], run["share"]
        ahead = "no TF-IDF run" if tfidf is None else f"TF-IDF {_pct(tfidf)} %"
        met = precision is not None and precision >= 0.6 and (tfidf is None or precision > tfidf)
        lines.append(
            f"- {run['name']}: {K}-NN precision {_pct(precision)} % (goal >= 60 % and above {ahead}):"
            f" {'met' if met else 'not met'}; neighbour {_pct(share)} % (goal >= 90 %):"
            f" {'met' if share is not None and share >= 0.9 else 'not met'}."
        )
    return lines


def render(sites: list[Site], command: str, with_baseline: bool) -> str:
    lines = [
        f"## Chapters of documentation sites (`bench/chapters.py`, {date.today().isoformat()})",
        "",
        f"Machine: {machine()}. Command: `{command}`.",
        "",
        "Each page listed in a site's own table of contents gets its chapter as label; a page listed under"
        " two chapters, and the pages of a chapter with fewer than two pages in the crawl, get none."
        " lshsql runs on the whole site (every page, labelled or not) at its default threshold; the scores"
        " are over the labelled pages. *Neighbour*: paired with another labelled page (similarity at or"
        f" above the threshold). *{K}-NN precision*: the share of same-chapter pages among each labelled"
        f" page's first {K} labelled neighbours as `lshsql related` ranks them, averaged over the pages"
        f" that have one; *{K}-NN hits*: the same-chapter neighbours over {K} per labelled page, averaged"
        " over every labelled page (a page with fewer neighbours loses the missing ones). Pairwise"
        " precision and recall: pairs of labelled pages in one cluster against pairs in one chapter."
        " TF-IDF: scikit-learn's TfidfVectorizer (sublinear tf, English stopwords) over each page's"
        " visible body text (lxml, script and style removed), IDF over every page; its neighbours are the"
        f" {K} labelled pages of highest positive cosine, with no threshold; its neighbour share is at the"
        " cosine giving as many labelled pairs as lshsql's first variant, and at"
        f" {FIXED_COSINE}. Goals: {K}-NN precision at least 60 % and above TF-IDF's, at least 90 % of"
        " labelled pages with a neighbour, no largest cluster made of template links. Seconds: one"
        " `lshsql run` (extraction included), wall clock.",
    ]
    for site in sites:
        n_chapters = len(set(site.labels.values()))
        lines += [
            "",
            f"### {site.name}: {len(site.pages):,} pages, {len(site.labels):,} labelled in"
            f" {n_chapters} chapters",
            "",
            f"Labels: {site.toc} Left out: {site.dropped['in_two_chapters']} pages listed under two chapters,"
            f" {site.dropped['in_small_chapters']} pages of one-page chapters.",
            "",
            f"| method | arguments | threshold | neighbour % | {K}-NN precision % | {K}-NN hits % | "
            "labelled pairs | clusters | pairwise precision % | pairwise recall % | seconds |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for run in site.runs:
            if "error" in run:
                lines.append(f"| lshsql {run['name']} | `{run['args']}` | failed: {' '.join(run['error'])} |")
                continue
            nn, q = run["neighbours"], run["clusters"]
            lines.append(
                f"| lshsql {run['name']} | `{run['args'] or '(none)'}` | {run['threshold']:g} | "
                f"{_pct(run['share'])} | {_pct(nn['precision'])} | {_pct(nn['hits'])} | "
                f"{run['labelled_pairs']:,} | {q['clusters']:,} | {_pct(q['pairwise_precision'])} | "
                f"{_pct(q['pairwise_recall'])} | {run['seconds']:.1f} |"
            )
        if with_baseline and site.baseline:
            nn = site.baseline["neighbours"]
            for row in site.baseline["rows"]:
                lines.append(
                    f"| TF-IDF cosine | cosine >= {row['cosine']:.3f} ({row['how']}) | - | "
                    f"{_pct(row['share'])} | {_pct(nn['precision'])} | {_pct(nn['hits'])} | "
                    f"{row['labelled_pairs']:,} | - | - | - | - |"
                )
        lines += ["", *goal_lines(site)]
        lines += [
            "",
            f"The {TOP_CLUSTERS} largest clusters: URLs, of which pages of the crawl and labelled pages,"
            " their most common chapters, the center and the top terms (`lshsql clusters`).",
            "",
            "| variant | URLs | pages | labelled | chapters (pages) | center | top terms |",
            "|---|---:|---:|---:|---|---|---|",
        ]
        for run in site.runs:
            for c in run.get("largest", []):
                chapters = "; ".join(f"{label} ({n})" for label, n in c["chapters"]) or "-"
                lines.append(
                    f"| {run['name']} | {c['size']:,} | {c['pages']:,} | {c['labelled']:,} | {chapters} | "
                    f"{c['center']} | {c['top_terms']} |"
                )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--variant",
        action="append",
        metavar="NAME=ARGS",
        help="a name and the extra `lshsql run` arguments (repeatable; default: default=)",
    )
    parser.add_argument("--sites", default="postgresql,python", help="postgresql, python or both")
    parser.add_argument("--baseline-python", type=Path, default=Path(".chapters-venv/bin/python"))
    parser.add_argument("--data", type=Path, default=Path("bench-data/chapters"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/RESULTS.md"))
    args = parser.parse_args()
    variants = []
    for spec in args.variant or ["default="]:
        name, sep, extra = spec.partition("=")
        if not sep or not name:
            sys.exit(f"--variant {spec!r}: want NAME=ARGS (ARGS may be empty)")
        variants.append((name, extra))
    if not PG_WARC.exists():
        sys.exit(f"{PG_WARC} not found: the benchmark needs ../shared/data")
    with_baseline = args.baseline_python.exists()
    if not with_baseline:
        print(f"{args.baseline_python} not found: no TF-IDF baseline (make bench-chapters builds it)")
    makers = {"postgresql": postgresql_site, "python": lambda: python_site(args.data)}
    sites = []
    args.data.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.data) as tmp:
        for key in args.sites.split(","):
            if key not in makers:
                sys.exit(f"--sites: unknown site {key!r} (postgresql, python)")
            site = makers[key]()
            print(f"{site.name}: {len(site.pages)} pages, {len(site.labels)} labelled", flush=True)
            for name, extra in variants:
                run = run_variant(site, name, extra, Path(tmp) / f"{key}-{name}", args.threads)
                site.runs.append(run)
                print(
                    f"  {name}: {json.dumps({k: run.get(k) for k in ('share', 'neighbours', 'error')})}",
                    flush=True,
                )
            first = next((r for r in site.runs if "error" not in r), None)
            if with_baseline and first is not None:
                site.baseline = baseline(site, args.baseline_python, Path(tmp), first["labelled_pairs"])
                print(f"  TF-IDF: {json.dumps(site.baseline)}", flush=True)
            sites.append(site)
    command = "python bench/chapters.py " + " ".join(
        f"--variant {shlex.quote(f'{n}={a}')}" for n, a in variants
    )
    body = render(sites, command, with_baseline)
    print(body)
    write_section(args.out, "chapters", body)


if __name__ == "__main__":
    main()
