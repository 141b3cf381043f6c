"""The HTML report of a run: self-contained, deterministic, and rendered by a real headless browser."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.lsh.scurve import tables_recall
from lshsql.params import Params
from lshsql.pipeline import run
from lshsql.tools import explore
from lshsql.tools.report import url_html, write_report
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
    return explore.top_clusters(work, limit=1).rows[0][1]


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
    # nothing is loaded from elsewhere: no remote or local resources, no scripts
    lowered = page.lower()
    for needle in (
        'src="http',
        "src='http",
        '<link rel="stylesheet" href=',
        "<link",
        "<script",
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


def test_urls_and_terms_are_escaped():
    link = url_html('http://x.example/?a=1&b="<script>"')
    assert "<script>" not in link and "&amp;b=&quot;&lt;script&gt;&quot;" in link
    assert url_html("javascript:alert(1)") == "javascript:alert(1)"  # shown as text, never a link


def test_eval_figures_are_shown_when_present(work, tmp_path):
    copy = tmp_path / "work"
    shutil.copytree(work, copy, ignore=shutil.ignore_patterns("tmp", "report.html"))
    (copy / "eval").mkdir()
    evaluation = {
        "pairs": {"recall": 0.9412, "precision": 0.8731},
        "candidates": {"recall": 0.991, "precision": 0.0312},
        "overlap@10": 0.812,
        "clusters": {"purity": 0.77, "<b>odd key</b>": 3},
        "histograms": {"similarity": {"edges": [0.2, 0.4, 0.6, 0.8, 1.0], "counts": [10, 7, 3, 1]}},
        "note": "not a number",
    }
    (copy / "eval" / "eval.json").write_text(json.dumps(evaluation))
    page = write_report(copy).read_text(encoding="utf-8")
    for key, value in [
        ("pairs.recall", "0.9412"),
        ("candidates.precision", "0.0312"),
        ("overlap@10", "0.812"),
    ]:
        assert f'<td>{key}</td><td class="num">{value}</td>' in page
    assert "&lt;b&gt;odd key&lt;/b&gt;" in page and "<b>odd key</b>" not in page
    assert "histograms.similarity.counts" in page
    assert page.count("<svg") >= 5
    assert "No evaluation" not in page


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
