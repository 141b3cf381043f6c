"""The HTML report of a run: self-contained, deterministic, and rendered by a real headless browser."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.lsh.scurve import tables_recall
from lshsql.params import Params
from lshsql.pipeline import run
from lshsql.sources.ingest import IngestParams, ingest
from lshsql.tools import explore
from lshsql.tools.report import write_report
from lshsql.tools.report_clusters import CLUSTERS, top_terms
from tests.conftest import copy_work

CHROMIUM = Path("/usr/bin/chromium")
RESOURCES = db.Resources(memory_limit="2GB", threads=2)
BLUE = (0x3B, 0x6E, 0xA8)  # the plots' bar and line colour


@pytest.fixture(scope="module")
def work(example_run, tmp_path_factory) -> Path:
    """A finished, verified run of the example crawl (threshold 0.2, k and l chosen by the planner): a copy
    of conftest.example_run, whose Params() are these."""
    assert (Params().threshold, Params().verify) == (0.2, True)
    return copy_work(example_run, tmp_path_factory.mktemp("report-work") / "work")


@pytest.fixture(scope="module")
def report(work) -> Path:
    return write_report(work)


def top_center(work: Path) -> str:
    return explore.top_clusters(work, limit=1)["center"][0].as_py()


def test_report_is_one_self_contained_file_with_the_plots_and_figures(work, report):
    assert report == work / "report.html"
    page = report.read_text(encoding="utf-8")
    params = json.loads((work / "manifest.json").read_text())["params"]
    assert page.count("<svg") >= 4
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "threshold 0.2: recall" in page  # written on the S-curve
    recall = tables_recall(0.2, params["k"], params["l"], params["num_perm"], params["seed"])
    assert f"{recall:.3f}" in page
    assert f"k = {params['k']}, l = {params['l']}" in page
    assert html.escape(top_center(work)) in page
    for stage in ("term_counts", "signatures", "candidates", "pairs", "clusters"):
        assert f"<td>{stage}</td>" in page
    assert "No evaluation in this work folder" in page
    assert "the exact weighted Jaccard of the two URLs' term bags" in page  # verified pairs
    # nothing is loaded from elsewhere: no remote or local resources, one inline script (the filter)
    lowered = page.lower()
    assert lowered.count("<script") == 1 and "<script>" in lowered
    for needle in (
        'src="http',
        "src='http",
        '<link rel="stylesheet" href=',
        "<link",
        "<script src",
        "@import",
        " src=",
        "<img",
        "<iframe",
    ):
        assert needle not in lowered, needle
    assert re.findall(r"url\((?!#)", lowered) == []  # only the SVGs' own clip paths: url(#id)
    assert set(re.findall(r'xlink:href="(.)', page)) <= {"#"}  # glyphs and markers defined in place


def test_report_is_byte_identical_when_written_twice(work, tmp_path):
    first = write_report(work, tmp_path / "a.html").read_bytes()
    second = write_report(work, tmp_path / "b.html").read_bytes()
    assert first == second


def test_unverified_pairs_are_shown_as_min_hash_estimates(work, tmp_path):
    copy = tmp_path / "work"
    shutil.copytree(work, copy, ignore=shutil.ignore_patterns("tmp", "report.html"))
    run(copy, Params(threshold=0.2, verify=False), resources=RESOURCES)  # reruns pairs and clusters
    page = write_report(copy).read_text(encoding="utf-8")
    assert "estimated as the fraction of the 80 min-hashes" in page
    assert "exact weighted Jaccard" not in page


DROP_DOMAIN = "https://www.postgresql.example/docs/15/sql-dropdomain.html"


def stored(work: Path, url: str) -> tuple[str, int]:
    """The title and record offset pages.parquet keeps for url, read without lshsql."""
    return duckdb.execute(
        "select title, source_offset from read_parquet($p) where url = $u and skip_reason is null",
        {"p": str(work / "pages.parquet"), "u": url},
    ).fetchall()[0]  # whole: DuckDB keeps a half-fetched result open on the shared default connection


def cluster_rows(page: str) -> list[str]:
    return re.findall(r"<tr>.*?</tr>", page[page.index('id="cluster-rows"') :].split("</tbody>")[0])


def test_members_show_their_titles_and_where_their_page_is_stored(work, report):
    page = report.read_text(encoding="utf-8")
    rows = cluster_rows(page)
    assert len(rows) == CLUSTERS  # the example has 4,435 clusters: the table is capped
    assert f"at most {CLUSTERS}" in page
    title, offset = stored(work, DROP_DOMAIN)
    assert title == "DROP DOMAIN"
    assert (
        f'<span class="title">DROP DOMAIN</span><br><span class="link">{DROP_DOMAIN}</span> '
        f'<span class="where">crawl.warc.gz @ {offset:,}</span>'
    ) in page
    # a URL only linked to has no capture: its live page is marked as such, and a captured one is not linked
    assert ">not fetched: live</a>" in page
    assert f'href="{DROP_DOMAIN}"' not in page
    assert "http://127.0.0.1" not in page


def test_with_a_serve_address_members_link_to_its_pages(work, tmp_path):
    page = write_report(work, tmp_path / "r.html", serve_url="http://127.0.0.1:8000/").read_text("utf-8")
    top = explore.top_clusters(work, limit=1).to_pylist()[0]
    cluster_id, center_id = duckdb.execute(
        "select cluster_id, center_id from read_parquet($p) where url = $u",
        {"p": str(work / "clusters.parquet"), "u": top["center"]},
    ).fetchall()[0]
    assert cluster_id != center_id  # the link names the cluster by the id a rerun keeps
    first = cluster_rows(page)[0]
    assert f'<a href="http://127.0.0.1:8000/cluster/{cluster_id}">{top["size"]}</a>' in first
    quoted = "https%3A%2F%2Fwww.postgresql.example%2Fdocs%2F15%2Fsql-dropdomain.html"
    assert f'<a href="http://127.0.0.1:8000/url?u={quoted}"><span class="title">DROP DOMAIN</span>' in page
    assert f'<a class="where" href="http://127.0.0.1:8000/capture?u={quoted}">capture</a>' in page
    assert "not fetched: live" not in page and ".warc.gz @" not in page


@pytest.mark.parametrize("address", ["127.0.0.1:8000", "javascript:alert(1)", 'http://x/"><b>'])
def test_a_bad_serve_address_is_a_param_error(work, tmp_path, address):
    with pytest.raises(ParamError, match="serve-url must be an http"):
        write_report(work, tmp_path / "r.html", serve_url=address)


def test_the_command_writes_serve_links_and_refuses_a_bad_address_in_one_line(work, tmp_path, lshsql_command):
    out = tmp_path / "r.html"
    good = lshsql_command(
        "report", "--work", str(work), "--out", str(out), "--serve-url", "http://localhost:9/"
    )
    assert good.returncode == 0 and good.stdout.strip() == str(out), good.stderr
    assert 'href="http://localhost:9/cluster/' in out.read_text(encoding="utf-8")
    bad = lshsql_command("report", "--work", str(work), "--serve-url", "localhost:9")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        "lshsql: error: serve-url must be an http(s) address such as http://127.0.0.1:8000, got 'localhost:9'"
    ]


HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture(scope="module")
def shingled(tmp_path_factory) -> Path:
    """Eight documents ingested as 3-word shingles: two groups of four near-copies (one word changed in
    each), the court stories titled with markup, and one unrelated document."""
    court = "the supreme court ruled on monday that farmers must pay new taxes on imported grain"
    bank = "central bank officials raised interest rates sharply amid rising inflation worries"
    ids, texts, titles = [], [], []
    for name, sentence in (("court", court), ("bank", bank)):
        for i in range(4):
            changed = sentence.split()
            changed[3 * i] = "quickly"
            ids.append(f"{name}-{i}")
            texts.append(" ".join(changed))
            titles.append(f"Court {HOSTILE} ruling {i}" if name == "court" else None)
    ids.append("lone")
    texts.append("unrelated words about gardening tomatoes and roses")
    titles.append(None)
    work = tmp_path_factory.mktemp("shingled") / "work"
    table = pa.table({"id": ids, "text": texts, "title": titles})
    ingest([table], work, IngestParams(shingle=3), resources=RESOURCES)
    run(work, Params(), resources=RESOURCES)
    return work


def test_hostile_titles_are_escaped_and_shingled_labels_read_as_words(shingled):
    page = write_report(shingled).read_text(encoding="utf-8")
    assert page.lower().count("<script") == 1 and "<img" not in page.lower()
    assert (
        "Court &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; ruling 0"
        in page
    )
    terms = re.findall(r'<td class="terms">([^<]*)</td>', page)
    assert len(terms) == 3  # two clusters of four, the lone document
    for words in terms[:2]:
        assert len(words.split()) == len(set(words.split())) > 3  # each word once, not runs of shingles
    assert {"court", "supreme"} <= set(" ".join(terms).split())
    assert {"bank", "inflation"} <= set(" ".join(terms).split())


def test_top_terms_of_shingles_are_their_words_once_each():
    shingles = ["court ruled monday", "supreme court ruled", "ruled monday farmers"]
    assert top_terms(shingles, shingled=True) == ["court", "ruled", "monday", "supreme", "farmers"]
    assert top_terms(shingles, shingled=False) == shingles
    assert top_terms(shingles, shingled=True, n=2) == ["court", "ruled"]


EVALUATION = {
    "work": "w",
    "threshold": 0.2,
    "truth": {"pairs": 14908, "seconds": 7.9},
    "pairs": {"rows": 14818, "correct": 14818, "recall": 0.99396, "precision": 1.0},
    "candidates": {"rows": 143697, "correct": 14818, "recall": 0.99396, "precision": 0.10312},
    "histograms": {
        "edges": [i / 10 for i in range(11)],
        "missed": [0, 0, 89, 1, 0, 0, 0, 0, 0, 0],
        "wrong": [0] * 10,
    },
    "neighbours": {"k": 10, "sample": 100, "seed": 1, "evaluated": 98, "overlap": 0.544},
    "clusters": None,
    "seconds": 9.6,
}


def with_eval(work: Path, tmp_path: Path, evaluation: object) -> str:
    copy = tmp_path / "work"
    shutil.copytree(work, copy, ignore=shutil.ignore_patterns("tmp", "report.html"))
    (copy / "eval").mkdir()
    (copy / "eval" / "eval.json").write_text(json.dumps(evaluation))
    page = write_report(copy).read_text(encoding="utf-8")
    return page[page.index('<h2 id="eval">') :]


def test_the_evaluation_is_told_in_labelled_tables(work, tmp_path):
    section = with_eval(work, tmp_path, EVALUATION)
    assert "finds <b>14,908</b> pairs with a weighted Jaccard of at least 0.2" in section
    assert (
        "<tr><td>pairs kept</td><td class=num>14,818</td><td class=num>14,818</td>"
        "<td class=num>0.994</td><td class=num>1.000</td></tr>"
    ) in section
    assert "<td>LSH candidates (same bucket)</td><td class=num>143,697</td>" in section
    assert "<p>90 exact pairs were missed; no pair kept is below the threshold.</p>" in section
    assert section.count("<svg") == 1
    assert ">missed</text>" in section and ">kept wrongly</text>" not in section  # no empty series drawn
    assert "<b>0.544</b>" in section and "over 98 of 100 sampled URLs" in section
    assert "No cluster scores" in section and "histograms.missed" not in section


def test_no_plot_is_drawn_without_errors_and_cluster_scores_have_names(work, tmp_path):
    scores = {"urls": 50, "clusters": 7, "labels": 4, "multi_label": False, "purity": 0.82, "ari": 0.41}
    quiet = {"edges": EVALUATION["histograms"]["edges"], "missed": [0] * 10, "wrong": [0] * 10}
    section = with_eval(work, tmp_path, EVALUATION | {"histograms": quiet, "clusters": scores})
    assert "<svg" not in section
    assert "No exact pair was missed; no pair kept is below the threshold." in section
    assert "<tr><td>purity</td><td class=num>0.820</td>" in section
    assert "<tr><td>adjusted Rand index</td><td class=num>0.410</td>" in section
    assert "<tr><td>class F</td><td class=num>&ndash;</td>" in section  # not in the file: a dash
    assert "50 labelled URLs (7 clusters, 4 labels)" in section


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "could not be read"), ('{"overlap": 0.8}', "is not what `lshsql eval` writes")],
)
def test_an_unreadable_evaluation_is_one_note(work, tmp_path, content, message):
    copy = tmp_path / "work"
    shutil.copytree(work, copy, ignore=shutil.ignore_patterns("tmp", "report.html"))
    (copy / "eval").mkdir()
    (copy / "eval" / "eval.json").write_text(content)
    page = write_report(copy).read_text(encoding="utf-8")
    assert message in page and '<table class="eval"' not in page


def test_a_folder_without_pairs_or_clusters_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such work folder"):
        write_report(tmp_path / "missing")
    with pytest.raises(InputError, match="no pairs yet") as info:
        write_report(tmp_path)
    assert "\n" not in str(info.value)


def chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={cwd / 'profile'}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd)


def test_a_headless_browser_renders_the_report(work, report, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed (Debian: apt-get install -y chromium); browser check skipped")
    url = report.resolve().as_uri()
    dom = chromium("--dump-dom", url, cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr
    assert dom.stdout.count("<svg") >= 4
    for text in ("1. Which pairs LSH finds", "threshold 0.2: recall", "Cluster sizes", "Table 1"):
        assert text in dom.stdout, text
    assert html.escape(top_center(work)) in dom.stdout

    shot = tmp_path / "shot.png"
    result = chromium(f"--screenshot={shot}", "--window-size=1200,3000", url, cwd=tmp_path)
    assert result.returncode == 0 and shot.exists(), result.stderr
    assert shot.stat().st_size > 20_000
    from matplotlib.image import imread

    pixels = (imread(shot)[..., :3] * 255).round().astype(int)  # RGB(A) floats in [0, 1]
    assert pixels.shape[:2] == (3000, 1200)
    colours = {tuple(p) for p in pixels[::7, ::7].reshape(-1, 3)}
    assert len(colours) > 20, "the screenshot is (nearly) one colour"
    assert tuple(pixels[5, 5]) == (255, 255, 255)  # white page
    assert BLUE in colours, "no plot drawn in the plots' blue"


def test_the_filter_keeps_the_clusters_with_every_word_typed_in_a_browser(report, shingled, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed (Debian: apt-get install -y chromium); browser check skipped")
    dom = chromium("--dump-dom", report.resolve().as_uri() + "#q=btrfs%20filesystem", cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr
    rows = cluster_rows(dom.stdout.replace('<tr hidden="">', "<tr>HIDDEN"))
    assert len(rows) == CLUSTERS
    shown = [row for row in rows if "HIDDEN" not in row]
    assert len(shown) == 1 and "btrfs" in shown[0]
    assert f'id="shown" class="note">1 of {CLUSTERS} clusters shown<' in dom.stdout
    # the hostile titles stay text in a live page: the filter matches them, and no element is made from them
    page = write_report(shingled, tmp_path / "s.html")
    dom = chromium("--dump-dom", page.resolve().as_uri() + "#q=onerror", cwd=tmp_path)
    assert 'id="shown" class="note">1 of 3 clusters shown<' in dom.stdout
    assert "<img" not in dom.stdout and dom.stdout.count("<script") == 1


def test_the_links_to_serve_open_its_pages(work, tmp_path):
    import threading
    import urllib.request

    from lshsql.web import address, make_server

    server = make_server(work, port=0, resources=RESOURCES)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = address(server).rstrip("/")
        page = write_report(work, tmp_path / "r.html", serve_url=base).read_text(encoding="utf-8")
        row = next(r for r in cluster_rows(page) if "/capture?" in r)
        links = sorted(set(re.findall(r'href="([^"]+)"', row)))
        for kind in ("/cluster/", "/url?u=", "/capture?u="):
            assert any(link.startswith(base + kind) for link in links), kind
        for link in links:
            with urllib.request.urlopen(html.unescape(link), timeout=60) as response:
                assert response.status == 200, link
    finally:
        server.shutdown()
        server.server_close()
