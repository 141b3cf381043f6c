"""URL aliases end to end: redirects and canonical links of a hand-made crawl -> pages columns, url_aliases."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from lshsql import schemas
from lshsql.engines import duckdb as db
from lshsql.sources.anchors import parse_page
from lshsql.sources.extract import ExtractParams, extract
from lshsql.sources.ingest import IngestParams, ingest
from tests.conftest import html_response, shared, write_jsonl, write_warc

S = "http://s.example"


def rows(query: str, **params) -> list[tuple]:
    with duckdb.connect() as con:
        return con.execute(query, params).fetchall()


def run(crawl: list, work: Path, threads: int = 1, **params):
    resources = db.Resources(memory_limit="1GB", threads=threads, temp_directory=str(work / "tmp"))
    return extract([str(c) for c in crawl], work, ExtractParams(**params), resources)


def redirect(url: str, location: str | None, status: str = "301 Moved Permanently", **kw) -> dict:
    headers = [("Location", location)] if location is not None else []
    return html_response(url, "", status=status, headers=headers, **kw)


def page(url: str, head: str = "", body: str = "") -> dict:
    return html_response(url, f"<html><head><title>{url}</title>{head}</head><body>{body}</body></html>")


def canonical(href: str, rel: str = "canonical") -> str:
    return f'<link rel="{rel}" href="{href}">'


CRAWL = [
    # A 301 chain A -> B -> C (B's Location is absolute, not canonical yet), C a page.
    redirect(f"{S}/old/a", f"{S}/old/b"),
    redirect(f"{S}/old/b", "HTTP://S.example:80/new/c#top"),
    page(f"{S}/new/c"),
    # A 302 to a relative Location, resolved against the record's URL.
    redirect(f"{S}/go?id=1", "../new/d.html", status="302 Found"),
    # A cycle (307, 308) and a URL whose chain runs into it; a redirect to itself.
    redirect(f"{S}/loop1", "/loop2", status="307 Temporary Redirect"),
    redirect(f"{S}/loop2", "loop1", status="308 Permanent Redirect"),
    redirect(f"{S}/into-loop", "/loop1", status="303 See Other"),
    redirect(f"{S}/self", "/self", status="302 Found"),
    # Not redirects: a 301 without Location, a 404 with one, a redirect to a non-web URL.
    redirect(f"{S}/no-location", None),
    redirect(f"{S}/missing", "/elsewhere", status="404 Not Found"),
    redirect(f"{S}/mail", "mailto:someone@s.example"),
    # Canonical links: absolute; relative (rel with several tokens, any case; the first one wins);
    # the page itself; invalid; through <base href> to another site (no alias); to another host of the
    # same site (an alias); to a redirect (followed); overridden by a redirect.
    page(f"{S}/p1?ref=x", canonical(f"{S}/p1")),
    page(
        f"{S}/docs/p2-print.html",
        canonical("p2.html", rel="Alternate CANONICAL") + canonical("/elsewhere"),
    ),
    page(f"{S}/p3", canonical("/p3#top"), body="<a href='/old/a'>old a</a>"),
    page(f"{S}/p4", canonical("http://[bad/")),
    page(f"{S}/p6", '<base href="http://t.example/base/">' + canonical("x.html")),
    page("http://www.s.example/p7", canonical(f"{S}/p7")),
    page(f"{S}/p5", canonical(f"{S}/old/a")),
    page(f"{S}/both", canonical(f"{S}/p1")),
    redirect(f"{S}/both", "/new/c", date="2024-02-01T00:00:00Z"),
    # A page linking to the aliases, to a target and to a cycle member.
    page(
        f"{S}/",
        body="<a href='/old/a'>a</a> <a href='old/a'>a again</a> <a href='/old/b'>b</a> "
        "<a href='/go?id=1'>go</a> <a href='/p1?ref=x'>p1</a> <a href='/into-loop'>into</a> "
        "<a href='/loop1'>loop</a> <a href='/new/c'>c</a> <a href='http://other.example/'>out</a>",
    ),
]

EXPECTED_ALIASES = [
    (f"{S}/both", f"{S}/new/c", "redirect", 1, 0),
    (f"{S}/docs/p2-print.html", f"{S}/docs/p2.html", "canonical", 1, 0),
    (f"{S}/go?id=1", f"{S}/new/d.html", "redirect", 1, 1),
    (f"{S}/into-loop", f"{S}/loop1", "redirect", 1, 1),
    (f"{S}/old/a", f"{S}/new/c", "redirect", 2, 3),
    (f"{S}/old/b", f"{S}/new/c", "redirect", 1, 1),
    (f"{S}/p1?ref=x", f"{S}/p1", "canonical", 1, 1),
    (f"{S}/p5", f"{S}/new/c", "canonical", 3, 0),
    ("http://www.s.example/p7", f"{S}/p7", "canonical", 1, 0),
]


@pytest.fixture
def crawl(tmp_path) -> Path:
    return write_warc(tmp_path / "aliases.warc.gz", CRAWL)


def aliases(work: Path) -> list[tuple]:
    return rows(f"select * from '{work}/url_aliases.parquet'")


def test_url_aliases_are_as_worked_out_by_hand(tmp_path, crawl):
    work = tmp_path / "w"
    summary = run([crawl], work)
    assert aliases(work) == EXPECTED_ALIASES
    schemas.validate(work / "url_aliases.parquet", "url_aliases")
    # target_url is never itself an alias; the cycle's URLs and the self-redirect are no alias.
    found = {alias for alias, *_ in EXPECTED_ALIASES}
    assert not found & {target for _, target, *_ in EXPECTED_ALIASES}
    assert not found & {f"{S}/loop1", f"{S}/loop2", f"{S}/self", f"{S}/p3", f"{S}/p4", f"{S}/new/c"}
    # A canonical link to another site (registered domain) says the content is copied there: no alias.
    assert f"{S}/p6" not in found

    assert summary.aliases == {"redirect": 5, "canonical": 4}
    assert summary.links_collapsed == 7
    assert "URL aliases:     9 (5 redirect, 4 canonical), 7 links collapsed" in summary.lines()
    # Redirects stay skipped pages: the books balance as before.
    assert summary.records_read == summary.pages_used + sum(summary.skipped.values())
    assert summary.skipped == {"warcinfo": 1, "http_status": 11}
    counts = json.loads((work / "manifest.json").read_text())["stages"]["extract"]["counts"]
    assert counts["aliases"] == {"redirect": 5, "canonical": 4} and counts["links_collapsed"] == 7


def test_pages_carry_redirect_and_canonical_urls(tmp_path, crawl):
    work = tmp_path / "w"
    run([crawl], work)
    found = rows(
        f"select url, status, skip_reason, redirect_url, canonical_url from '{work}/pages.parquet' "
        "where url is not null order by record_id"
    )
    assert found == [
        (f"{S}/old/a", 301, "http_status", f"{S}/old/b", None),
        (f"{S}/old/b", 301, "http_status", f"{S}/new/c", None),
        (f"{S}/new/c", 200, None, None, None),
        (f"{S}/go?id=1", 302, "http_status", f"{S}/new/d.html", None),
        (f"{S}/loop1", 307, "http_status", f"{S}/loop2", None),
        (f"{S}/loop2", 308, "http_status", f"{S}/loop1", None),
        (f"{S}/into-loop", 303, "http_status", f"{S}/loop1", None),
        (f"{S}/self", 302, "http_status", f"{S}/self", None),
        (f"{S}/no-location", 301, "http_status", None, None),
        (f"{S}/missing", 404, "http_status", None, None),
        (f"{S}/mail", 301, "http_status", None, None),
        (f"{S}/p1?ref=x", 200, None, None, f"{S}/p1"),
        (f"{S}/docs/p2-print.html", 200, None, None, f"{S}/docs/p2.html"),
        (f"{S}/p3", 200, None, None, None),
        (f"{S}/p4", 200, None, None, None),
        (f"{S}/p6", 200, None, None, "http://t.example/base/x.html"),
        ("http://www.s.example/p7", 200, None, None, f"{S}/p7"),
        (f"{S}/p5", 200, None, None, f"{S}/old/a"),
        (f"{S}/both", 200, None, None, f"{S}/p1"),
        (f"{S}/both", 301, "http_status", f"{S}/new/c", None),
        (f"{S}/", 200, None, None, None),
    ]
    assert [f.name for f in pq.read_schema(work / "pages.parquet")][-2:] == ["redirect_url", "canonical_url"]


def test_url_aliases_are_byte_identical_between_runs(tmp_path, crawl):
    run([crawl], tmp_path / "one", threads=1)
    run([crawl], tmp_path / "two", threads=2)
    one, two = (
        hashlib.sha256((tmp_path / w / "url_aliases.parquet").read_bytes()).digest() for w in ("one", "two")
    )
    assert one == two


def test_the_latest_redirect_of_a_url_wins_and_a_redirect_to_itself_gives_way(tmp_path):
    crawl = write_warc(
        tmp_path / "c.warc.gz",
        [
            redirect(f"{S}/r", "/new", date="2024-03-01T00:00:00Z"),
            redirect(f"{S}/r", "/old", date="2023-03-01T00:00:00Z"),
            redirect(f"{S}/q", "/q", date="2024-03-01T00:00:00Z"),
            page(f"{S}/q", canonical("/q-canonical")),
        ],
    )
    run([crawl], tmp_path / "w")
    assert aliases(tmp_path / "w") == [
        (f"{S}/q", f"{S}/q-canonical", "canonical", 1, 0),
        (f"{S}/r", f"{S}/new", "redirect", 1, 0),
    ]


def test_a_page_captured_after_its_redirect_is_live_again(tmp_path):
    """Only the latest capture of a URL counts, redirects and pages alike (as sql/01 picks pages): an old
    301 must not fold a page that is live again into the redirect's target."""
    crawl = write_warc(
        tmp_path / "c.warc.gz",
        [
            redirect(f"{S}/back", "/new", date="2020-01-01T00:00:00Z"),
            page(f"{S}/back", body="<p>live again</p>") | {"date": "2024-01-01T00:00:00Z"},
            page(f"{S}/gone", body="<p>old page</p>") | {"date": "2020-01-01T00:00:00Z"},
            redirect(f"{S}/gone", "/new", date="2024-01-01T00:00:00Z"),
        ],
    )
    run([crawl], tmp_path / "w")
    assert aliases(tmp_path / "w") == [(f"{S}/gone", f"{S}/new", "redirect", 1, 0)]


def test_long_chains_stop_at_ten_hops(tmp_path):
    # u00 -> u01 -> ... -> u12: only the URLs at most 10 hops from u12 reach it.
    chain = [redirect(f"{S}/u{i:02}", f"/u{i + 1:02}") for i in range(12)]
    chain.append(page(f"{S}/u12", body="<a href='/u00'>start</a>"))
    run([write_warc(tmp_path / "c.warc.gz", chain)], tmp_path / "w")
    found = aliases(tmp_path / "w")
    assert [alias[-3:] for alias, *_ in found] == [f"u{i:02}" for i in range(2, 12)]
    assert {target for _, target, *_ in found} == {f"{S}/u12"}
    assert [hops for _, _, _, hops, _ in found] == list(range(10, 0, -1))


def test_aliases_use_the_url_options_of_the_links(tmp_path):
    crawl = write_warc(
        tmp_path / "c.warc.gz",
        [
            redirect("http://u.example/x?utm_source=news&b=2&a=1", "/y?utm_medium=m"),
            page("http://u.example/", body="<a href='/x?a=1&b=2&utm_source=other'>x</a>"),
        ],
    )
    run([crawl], tmp_path / "w", strip_tracking=True, sort_query=True)
    assert aliases(tmp_path / "w") == [("http://u.example/x?a=1&b=2", "http://u.example/y", "redirect", 1, 1)]


def test_jsonl_redirects_need_no_html(tmp_path):
    jsonl = write_jsonl(
        tmp_path / "pages.jsonl",
        [
            {"url": "http://j.example/old", "status": 301, "location": "/new"},
            {"url": "http://j.example/gone", "status": 404, "location": "/new"},
            {"url": "http://j.example/new", "html": "<title>New</title><a href='/old'>old</a>"},
        ],
    )
    summary = run([jsonl], tmp_path / "w")
    assert summary.skipped == {"http_status": 1, "missing_html": 1}
    assert rows(
        f"select url, skip_reason, redirect_url from '{tmp_path}/w/pages.parquet' order by record_id"
    ) == [
        ("http://j.example/old", "http_status", "http://j.example/new"),
        ("http://j.example/gone", "missing_html", None),
        ("http://j.example/new", None, None),
    ]
    assert aliases(tmp_path / "w") == [("http://j.example/old", "http://j.example/new", "redirect", 1, 1)]


def test_a_crawl_without_aliases_writes_an_empty_table(tmp_path, small_site):
    summary = run([write_warc(tmp_path / "c.warc.gz", small_site)], tmp_path / "w")
    assert aliases(tmp_path / "w") == [] and summary.aliases == {} and summary.links_collapsed == 0
    schemas.validate(tmp_path / "w" / "url_aliases.parquet", "url_aliases")
    assert "URL aliases:     0 (0 redirect, 0 canonical), 0 links collapsed" in summary.lines()


def test_ingest_writes_an_empty_url_aliases_table(tmp_path):
    docs = write_jsonl(
        tmp_path / "docs.jsonl", [{"id": "d1", "text": "apples"}, {"id": "d2", "text": "pears"}]
    )
    work = tmp_path / "w"
    summary = ingest([str(docs)], work, IngestParams(), db.Resources(memory_limit="1GB", threads=1))
    assert summary.records_read == summary.pages_used + sum(summary.skipped.values()) == 2
    assert aliases(work) == []
    schemas.validate(work / "url_aliases.parquet", "url_aliases")
    assert rows(
        f"select count(*) from '{work}/pages.parquet' where redirect_url is null and canonical_url is null"
    ) == [(2,)]


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (canonical("http://a.example/other"), "http://a.example/other"),
        (canonical("/x?b=1#frag", rel="Alternate  CANONICAL"), "http://a.example/x?b=1"),
        (canonical("/first") + canonical("/second"), "http://a.example/first"),
        (canonical("/p"), None),  # the page itself
        (canonical(""), None),
        (canonical("javascript:void(0)"), None),
        (canonical("http://[bad/"), None),
        (canonical("/x", rel="canonicalish"), None),
        ('<base href="http://b.example/d/">' + canonical("q"), "http://b.example/d/q"),
        ("", None),
    ],
)
def test_parse_page_reads_the_canonical_link_of_the_head(head, expected):
    html = f"<html><head><title>t</title>{head}</head><body><p>words</p></body></html>"
    assert parse_page(html.encode(), "http://a.example/p").canonical_url == expected


def test_a_canonical_link_in_the_body_is_ignored():
    html = "<html><head><title>t</title></head><body><p>x</p><link rel=canonical href=/y></body></html>"
    assert parse_page(html.encode(), "http://a.example/p").canonical_url is None


@pytest.mark.slow
def test_the_noisy_crawl_gives_its_redirect(tmp_path):
    crawl = shared("crawls", "fixture-small.noisy.warc.gz")
    noise = [json.loads(line) for line in Path(f"{crawl}.noise.jsonl").read_text().splitlines()]
    [moved] = [fault["url"] for fault in noise if fault["noise"] == "redirect_301"]
    summary = run([crawl], tmp_path / "w", threads=2)
    found = rows(f"select * from '{tmp_path}/w/url_aliases.parquet' where alias_url = $url", url=moved)
    assert found == [
        (moved, "https://www.postgresql.example/docs/15/spi-transaction.html", "redirect", 1, 0),
    ]
    assert summary.aliases.get("redirect") == 1
