"""Site templates out of anchor windows (sources/templates.py, sql/02_template_blocks.sql), and windows stopped
at block edges (anchors.py), on hand-made sites."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from lshsql import workdir
from lshsql.engines import duckdb as db
from lshsql.errors import ParamError
from lshsql.sources.anchors import parse_page
from lshsql.sources.extract import ExtractParams, extract
from lshsql.sources.templates import trim_batch
from tests.conftest import write_jsonl

SITE = "http://site.example"
NAV = "<ul class='nav'><li><a href='/'>Home page</a></li><li><a href='/next{i}'>Onward chapter</a></li></ul>"
FOOTER = "<div class='footer'>Copyright the manual writers</div>"
# page i: nav bar and footer on every page; a content paragraph whose link is the page's own; pages 0 and 1
# share one more content paragraph (a block on two pages only); the content text before the nav bar must
# not reach a content link's window across the nav.
PAGE = (
    "<html><head><title>Page {i}</title></head><body><p>alpha beta {lead}</p>"
    + NAV
    + "<p><a href='/topic{i}'>"
    "{topic} subject</a> delta epsilon</p>{shared}" + FOOTER + "</body></html>"
)
TOPICS = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "iris", "juniper"]
SHARED = "<p>see also <a href='/shared'>shared thing</a> zeta</p>"


def site(tmp_path: Path, n: int = 10) -> Path:
    rows = [
        {
            "url": f"{SITE}/p{i}",
            "html": PAGE.format(i=i, topic=TOPICS[i], lead=TOPICS[-1 - i], shared=SHARED if i < 2 else ""),
        }
        for i in range(n)
    ]
    return write_jsonl(tmp_path / "site.jsonl", rows)


def extracted(tmp_path: Path, name: str, n: int = 10, **params) -> Path:
    work = tmp_path / name
    extract([str(site(tmp_path, n))], work, ExtractParams(stem=False, **params), db.Resources(threads=1))
    return work


def fragments(work: Path) -> dict[str, list[str]]:
    """url -> the terms of its anchor fragments, in source order."""
    rows = duckdb.execute(
        "select url, list(terms order by source_url, position) from read_parquet($f) where kind = 'anchor' "
        "group by url",
        {"f": workdir.fragment_files(work)},
    ).fetchall()
    return {url: [t for terms in lists for t in terms] for url, lists in rows}


def template_links(work: Path) -> set[str]:
    rows = duckdb.execute(
        "select distinct target_url from read_parquet($p) where is_template",
        {"p": str(work / "links.parquet")},
    ).fetchall()
    return {url for (url,) in rows}


def test_nav_bar_and_footer_are_template_content_is_not(tmp_path):
    work = extracted(tmp_path, "filter")
    assert template_links(work) == {f"{SITE}/"} | {f"{SITE}/next{i}" for i in range(10)}
    described = fragments(work)
    # no template word in any window; the window still reaches the paragraph before the nav bar
    assert described[f"{SITE}/topic3"] == ["alpha", "beta", "grape", "damson", "subject", "delta", "epsilon"]
    # a template link to one URL on every page keeps its anchor text; one whose target changes from page
    # to page keeps the content words around it, not its own
    home = described[f"{SITE}/"]
    assert home.count("home") == 10 and "damson" in home and not {"onward", "copyright"} & set(home)
    assert described[f"{SITE}/next3"] == ["alpha", "beta", "grape", "damson", "subject", "delta", "epsilon"]
    # a block on two pages of ten is content
    shared = described[f"{SITE}/shared"]
    assert shared.count("thing") == 2 and {"zeta", "apple", "banana"} <= set(shared)
    assert not {"home", "onward", "copyright"} & set(shared)


def test_cut_stops_windows_at_template_blocks(tmp_path):
    described = fragments(extracted(tmp_path, "cut", templates="cut"))
    assert described[f"{SITE}/topic3"] == ["damson", "subject", "delta", "epsilon"]
    assert described[f"{SITE}/"] == ["home", "page"] * 10 and f"{SITE}/next3" not in described
    shared = described[f"{SITE}/shared"]
    assert shared.count("thing") == 2 and {"zeta", "apple", "banana"} <= set(shared)


def test_keep_gives_the_papers_windows_and_still_flags_template_links(tmp_path):
    work = extracted(tmp_path, "keep", templates="keep")
    assert f"{SITE}/next3" in template_links(work)
    topic = fragments(work)[f"{SITE}/topic3"]
    # the window runs across the nav bar into the paragraph before it, and into the footer
    assert topic == ["alpha", "beta", "grape", "home", "page", "onward", "chapter", "damson", "subject"] + [
        "delta",
        "epsilon",
        "copyright",
        "manual",
        "writers",
    ]


def test_a_site_of_one_or_two_pages_has_no_template(tmp_path):
    for n in (1, 2):
        work = extracted(tmp_path, f"small{n}", n=n)
        assert template_links(work) == set()
        assert fragments(work)[f"{SITE}/topic0"][3:7] == ["home", "page", "onward", "chapter"]


def test_the_share_decides(tmp_path):
    # the shared paragraph is on 2 of 4 pages: template at share 0.5 (and 2 < 3 pages: not template)
    work = extracted(tmp_path, "share", n=4, template_share=0.5)
    assert f"{SITE}/shared" not in template_links(work)
    with pytest.raises(ParamError, match="template share"):
        ExtractParams(template_share=0)
    with pytest.raises(ParamError, match="templates mode"):
        ExtractParams(templates="nav")


def test_the_summary_counts_template_links(tmp_path):
    site_file = site(tmp_path)
    params = ExtractParams(stem=False, templates="cut")
    summary = extract([str(site_file)], tmp_path / "w", params, db.Resources(threads=1))
    assert summary.links_template == 20
    assert any("template links: 20 (" in line and "10 of them without" in line for line in summary.lines())


def test_windows_can_stop_at_block_edges():
    body = b"<ul><li>one two <a href='/x'>link</a> three</li><li>four five</li></ul><p>six</p>"
    plain = parse_page(body, "http://a.example/", window=8).links[0]
    assert plain.before == ["one", "two"] and plain.after == ["three", "four", "five", "six"]
    cut = parse_page(body, "http://a.example/", window=8, window_blocks=True).links[0]
    assert cut.before == ["one", "two"] and cut.anchor == ["link"] and cut.after == ["three"]


def test_block_keys_follow_words_and_host():
    body = b"<p>same words</p><div><a href='/x'>same words</a></div><p>other</p>"
    page = parse_page(body, "http://a.example/", window=8)
    link = page.links[0]
    assert len(page.blocks) == 2  # two blocks of the same words are one key; the other block another
    assert link.block in page.blocks and len(set(link.blocks)) == 2
    other_host = parse_page(body, "http://b.example/", window=8)
    assert set(other_host.blocks).isdisjoint(page.blocks)


def test_trim_batch_by_hand():
    # terms a b [c] d e with blocks 1 2 [3] 2 4: template {2}: the window is cut to c only; a template link
    # (block 2) keeps its anchor [x] where its block names one target, else is dropped; a title row (no blocks) is untouched
    batch = pa.RecordBatch.from_pydict(
        {
            "terms": [["a", "b", "c", "d", "e"], ["w", "x", "y"], ["t"]],
            "block": [3, 2, None],
            "blocks": [[1, 2, 3, 2, 4], [5, 2, 6], None],
            "anchor_from": [2, 1, None],
            "anchor_to": [3, 2, None],
        },
        schema=pa.schema(
            [
                ("terms", pa.list_(pa.string())),
                ("block", pa.int64()),
                ("blocks", pa.list_(pa.int64())),
                ("anchor_from", pa.int32()),
                ("anchor_to", pa.int32()),
            ]
        ),
    )
    templates, none = np.array([2], dtype=np.int64), np.array([], dtype=np.int64)
    assert trim_batch(batch, templates, templates).column("terms").to_pylist() == [["c"], ["x"], ["t"]]
    assert trim_batch(batch, templates, none).column("terms").to_pylist() == [["c"], ["t"]]
    assert trim_batch(batch, np.array([7], dtype=np.int64), none).column("terms").to_pylist() == [
        ["a", "b", "c", "d", "e"],
        ["w", "x", "y"],
        ["t"],
    ]
    # across (filter): every template term goes, the rest stays; a template link's own anchor stays where
    # its block names one target
    assert trim_batch(batch, templates, none, across=True).column("terms").to_pylist() == [
        ["a", "c", "e"],
        ["w", "y"],
        ["t"],
    ]
    assert trim_batch(batch, templates, templates, across=True).column("terms").to_pylist() == [
        ["a", "c", "e"],
        ["w", "x", "y"],
        ["t"],
    ]
