"""Readers: every record read is yielded once, as a page to parse or with its skip reason."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

import pytest

from lshsql.engines.duckdb import Resources
from lshsql.errors import InputError
from lshsql.sources.extract import extract
from lshsql.sources.readers import Source, iter_records, resolve_sources, sniff_kind
from tests.conftest import (
    html_response,
    plain_records,
    shared,
    write_jsonl,
    write_records,
    write_single_member_gzip,
    write_warc,
)

MAX = 2**20


def reasons(source: Source) -> list[tuple[str | None, str | None]]:
    return [(r.url, r.skip_reason) for r in iter_records(source, MAX)]


def test_warc_records_are_used_or_skipped_by_reason(tmp_path):
    path = write_warc(
        tmp_path / "c.warc.gz",
        [
            html_response("http://a.example/ok", "<p>ok</p>"),
            html_response("http://a.example/404", "<p>gone</p>", status="404 Not Found"),
            html_response("http://a.example/img.png", b"\x89PNG....", content_type="image/png"),
            html_response("http://a.example/x", "<p>xhtml</p>", content_type="application/xhtml+xml"),
            {"type": "request", "url": "http://a.example/ok"},
            {"type": "revisit", "url": "http://a.example/ok"},
            {"type": "metadata", "url": "http://a.example/ok"},
            {"type": "resource", "url": "http://a.example/r"},
        ],
    )
    assert reasons(Source(str(path), "warc")) == [
        (None, "warcinfo"),
        ("http://a.example/ok", None),
        ("http://a.example/404", "http_status"),
        ("http://a.example/img.png", "not_html"),
        ("http://a.example/x", None),
        ("http://a.example/ok", "request"),
        ("http://a.example/ok", "revisit"),
        ("http://a.example/ok", "metadata"),
        ("http://a.example/r", "resource"),
    ]


def test_offsets_point_at_each_record(tmp_path):
    from warcio.archiveiterator import ArchiveIterator

    path = write_warc(
        tmp_path / "c.warc.gz", [html_response(f"http://a.example/{i}", "<p>x</p>") for i in range(3)]
    )
    records = list(iter_records(Source(str(path), "warc"), MAX))
    with open(path, "rb") as f:
        for record in records:
            f.seek(record.source_offset)
            found = next(iter(ArchiveIterator(f)))
            assert found.rec_headers.get_header("WARC-Target-URI") == record.url


def test_gzip_encoded_body_is_decoded(tmp_path):
    body = gzip.compress(b"<title>zipped</title>")
    path = write_warc(
        tmp_path / "c.warc.gz",
        [html_response("http://a.example/", body, headers=[("Content-Encoding", "gzip")])],
    )
    record = list(iter_records(Source(str(path), "warc"), MAX))[1]
    assert record.body == b"<title>zipped</title>"


def test_single_member_gzip_is_read_whole(tmp_path):
    path = write_single_member_gzip(
        tmp_path / "one.warc.gz", [html_response(f"http://a.example/{i}", "<p>x</p>") for i in range(3)]
    )
    got = reasons(Source(str(path), "warc"))
    assert got == [(None, "warcinfo")] + [(f"http://a.example/{i}", None) for i in range(3)]


def test_pages_over_the_size_limit_are_skipped(tmp_path):
    path = write_warc(
        tmp_path / "c.warc", [html_response("http://a.example/", "<p>" + "x" * 5000 + "</p>")], compress=False
    )
    record = list(iter_records(Source(str(path), "warc"), 1000))[1]
    assert record.skip_reason == "too_large"


def extracted(path: Path, work: Path) -> tuple[int, int, dict[str, int]]:
    """(records read, pages used, skipped by reason) of `extract` of one crawl, in this process."""
    summary = extract([str(path)], work, resources=Resources(memory_limit="1GB", threads=1))
    return summary.records_read, summary.pages_used, summary.skipped


@pytest.mark.parametrize(
    ("tail", "last", "skipped"),
    [
        (b"\x00\x01\x02 garbage\r\n\r\n", [(None, "read_error")], {"warcinfo": 1, "read_error": 1}),
        (b"\x00\x00\r\n", [], {"warcinfo": 1}),
    ],
    ids=["garbage", "padding"],
)
def test_corrupt_tail_is_counted_as_read_error_and_padding_is_not(tmp_path, tail, last, skipped):
    path = write_warc(tmp_path / "c.warc", [html_response("http://a.example/", "<p>x</p>")], compress=False)
    size = path.stat().st_size
    path.write_bytes(path.read_bytes() + tail)
    records = list(iter_records(Source(str(path), "warc"), MAX))
    assert [(r.url, r.skip_reason) for r in records] == [
        (None, "warcinfo"),
        ("http://a.example/", None),
        *last,
    ]
    assert records[1].body == b"<p>x</p>"
    if last:  # the junk is one unreadable record, at the offset where it starts, with no body
        assert (records[-1].record_type, records[-1].source_offset, records[-1].body) == (
            "unreadable",
            size,
            None,
        )
    assert extracted(path, tmp_path / "work") == (2 + len(last), 1, skipped)


def warc_record(kind: str, url: str, payload: bytes) -> bytes:
    return (
        (
            f"WARC/1.0\r\nWARC-Type: {kind}\r\nWARC-Target-URI: {url}\r\nWARC-Record-ID: <urn:uuid:0>\r\n"
            f"WARC-Date: 2024-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype={kind}\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        ).encode()
        + payload
        + b"\r\n\r\n"
    )


def test_unparseable_http_headers_are_counted_not_fatal(tmp_path):
    """A request is skipped before its HTTP head is read; a response whose HTTP head is no status line
    has no status (`http_status`), one with no HTTP head at all is `no_http_headers`; the page after them
    is read."""
    path = write_warc(tmp_path / "c.warc", [html_response("http://a.example/", "<p>x</p>")], compress=False)
    broken = [
        warc_record("request", "http://a.example/", b"x"),
        warc_record("response", "http://a.example/no-status", b"x"),
        warc_record("response", "http://a.example/no-head", b""),
    ]
    after = plain_records(write_warc(tmp_path / "after.warc", pages(1), compress=False))[1]
    path.write_bytes(path.read_bytes() + b"".join(broken) + after)
    records = list(iter_records(Source(str(path), "warc"), MAX))
    assert [(r.url, r.skip_reason, r.status) for r in records] == [
        (None, "warcinfo", None),
        ("http://a.example/", None, 200),
        ("http://a.example/", "request", None),
        ("http://a.example/no-status", "http_status", None),
        ("http://a.example/no-head", "no_http_headers", None),
        ("http://a.example/0", None, 200),
    ]
    skipped = {"warcinfo": 1, "request": 1, "http_status": 1, "no_http_headers": 1}
    assert extracted(path, tmp_path / "work") == (6, 2, skipped)


def pages(n: int) -> list[dict]:
    """n pages of a few hundred words each (gzip cannot shrink them to nothing)."""
    return [
        html_response(f"http://a.example/{i}", "<p>" + " ".join(f"w{i * j % 9973}" for j in range(300)))
        for i in range(n)
    ]


@pytest.mark.parametrize("compress", [False, True])
def test_a_record_cut_short_is_skipped_as_truncated_not_used_in_part(tmp_path, compress):
    records = plain_records(write_warc(tmp_path / "c.warc", pages(3), compress=False))
    path = write_records(tmp_path / "w.warc", records, compress)
    data = path.read_bytes()
    last = len(data) - (len(gzip.compress(records[-1], mtime=0)) if compress else len(records[-1]))
    path.write_bytes(data[: last + (len(data) - last) * 2 // 3])  # into the last record's body
    assert reasons(Source(str(path), "warc")) == [
        (None, "warcinfo"),
        ("http://a.example/0", None),
        ("http://a.example/1", None),
        ("http://a.example/2", "truncated"),
    ]


@pytest.mark.parametrize("compress", [False, True])
def test_a_record_cut_inside_its_header_is_truncated(tmp_path, compress):
    records = plain_records(write_warc(tmp_path / "c.warc", pages(2), compress=False))
    path = write_records(tmp_path / "w.warc", [*records[:-1], records[-1][:60]], compress)
    assert reasons(Source(str(path), "warc"))[-1] == (None, "truncated")


def test_the_cut_end_of_a_real_crawl_is_truncated(tmp_path):
    """The shared fixture cut after 700,000 bytes, as `head -c` does: its last page is no longer whole."""
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(shared("crawls", "fixture-small.warc.gz").read_bytes()[:700_000])
    records = list(iter_records(Source(str(path), "warc"), 32 * MAX))
    assert [r.skip_reason for r in records[-2:]] == [None, "truncated"] and records[-1].body is None
    assert sum(r.skip_reason == "truncated" for r in records) == 1


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("wrong", [lambda n: 999999999999, lambda n: n + 50], ids=["huge", "50 too many"])
def test_a_wrong_content_length_does_not_swallow_the_records_after_it(tmp_path, compress, wrong):
    records = plain_records(write_warc(tmp_path / "c.warc", pages(10), compress=False))
    records[3] = re.sub(
        rb"Content-Length: (\d+)", lambda m: b"Content-Length: %d" % wrong(int(m[1])), records[3], count=1
    )
    path = write_records(tmp_path / "w.warc", records, compress)
    assert reasons(Source(str(path), "warc")) == [
        (None, "warcinfo"),
        *((f"http://a.example/{i}", "truncated" if i == 2 else None) for i in range(10)),
    ]


@pytest.mark.parametrize("compress", [False, True])
def test_a_page_with_a_warc_header_line_in_it_is_one_record(tmp_path, compress):
    html = "<pre>\nWARC/1.0\r\nWARC-Type: response\r\nContent-Length: 5\r\n\r\n</pre>"
    path = write_warc(tmp_path / "c.warc", [html_response("http://a.example/", html), *pages(1)], compress)
    got = list(iter_records(Source(str(path), "warc"), MAX))
    assert [(r.url, r.skip_reason) for r in got[1:]] == [
        ("http://a.example/", None),
        ("http://a.example/0", None),
    ]
    assert got[1].body == html.encode()


def test_gzip_members_cut_across_records_are_read_as_one_stream(tmp_path):
    plain = write_warc(tmp_path / "c.warc", pages(4), compress=False).read_bytes()
    path = tmp_path / "chunks.warc.gz"
    path.write_bytes(b"".join(gzip.compress(plain[i : i + 700], mtime=0) for i in range(0, len(plain), 700)))
    expected = [(None, "warcinfo"), *((f"http://a.example/{i}", None) for i in range(4))]
    assert reasons(Source(str(path), "warc")) == expected
    real = shared("real-warc", "warcio", "example-wrong-chunks.warc.gz")
    assert [(r.record_type, r.skip_reason) for r in iter_records(Source(str(real), "warc"), MAX)] == [
        ("response", None),
        ("request", "request"),
    ]


def damaged_member(record: bytes, damage: str) -> bytes:
    if damage == "first line":
        return gzip.compress(record.replace(b"WARC/1.0", b"WARX/1.0", 1), mtime=0)
    if damage == "content length":
        return gzip.compress(re.sub(rb"Content-Length: \d+", b"Content-Length: n", record, count=1), mtime=0)
    member = bytearray(gzip.compress(record, mtime=0))
    member[20:40] = bytes(20)  # corrupt deflate data
    return bytes(member)


@pytest.mark.parametrize("damage", ["first line", "content length", "deflate data"])
def test_one_broken_record_of_a_gzip_warc_loses_only_itself(tmp_path, damage):
    records = plain_records(write_warc(tmp_path / "c.warc", pages(5), compress=False))
    path = tmp_path / "w.warc.gz"
    members = [gzip.compress(r, mtime=0) for r in records]
    members[3] = damaged_member(records[3], damage)
    path.write_bytes(b"".join(members))
    got = list(iter_records(Source(str(path), "warc"), MAX))
    assert [r.skip_reason for r in got] == ["warcinfo", None, None, "read_error", None, None]
    assert [r.url for r in got if r.body] == [f"http://a.example/{i}" for i in (0, 1, 3, 4)]
    assert got[3].source_offset == sum(map(len, members[:3]))


def test_real_arc_file_is_read():
    records = list(iter_records(Source(str(shared("real-warc", "pywb", "example.arc.gz")), "warc"), MAX))
    assert [(r.record_type, r.skip_reason) for r in records] == [("warcinfo", "warcinfo"), ("response", None)]


def test_jsonl_lines_are_used_or_skipped(tmp_path):
    path = write_jsonl(
        tmp_path / "pages.jsonl",
        [
            {"url": "http://a.example/", "html": "<p>x</p>"},
            "{not json",
            {"html": "<p>no url</p>"},
            {"url": "http://a.example/nohtml"},
            {"url": "http://a.example/err", "html": "<p>x</p>", "status": 500},
        ],
    )
    assert reasons(Source(str(path), "jsonl")) == [
        ("http://a.example/", None),
        (None, "bad_json"),
        (None, "missing_url"),
        ("http://a.example/nohtml", "missing_html"),
        ("http://a.example/err", "http_status"),
    ]


def test_html_folder_with_manifest(tmp_path):
    (tmp_path / "p1.html").write_text("<p>one</p>")
    write_jsonl(
        tmp_path / "manifest.jsonl",
        [
            {"url": "http://a.example/p1", "path": "p1.html"},
            {"url": "http://a.example/p2", "path": "missing.html"},
        ],
    )
    [source] = resolve_sources([str(tmp_path)])
    assert source.kind == "htmldir"
    assert reasons(source) == [("http://a.example/p1", None), ("http://a.example/p2", "missing_file")]


def test_html_folder_with_base_url(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text("<p>i</p>")
    (tmp_path / "sub" / "a page.htm").write_text("<p>a</p>")
    (tmp_path / "notes.txt").write_text("not html")
    [source] = resolve_sources([str(tmp_path)], base_url="http://a.example/docs")
    assert [url for url, _ in reasons(source)] == [
        "http://a.example/docs/index.html",
        "http://a.example/docs/sub/a%20page.htm",
    ]


def test_sources_expand_folders_and_globs_in_order(tmp_path):
    for name in ("b.warc.gz", "a.warc.gz"):
        write_warc(tmp_path / name, [])
    (tmp_path / "readme.txt").write_text("x")
    assert [s.path for s in resolve_sources([str(tmp_path)])] == [
        str(tmp_path / "a.warc.gz"),
        str(tmp_path / "b.warc.gz"),
    ]
    assert len(resolve_sources([str(tmp_path / "*.warc.gz")])) == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"hello world", "not a WARC, ARC or JSON Lines file"),
        (gzip.compress(b"hello world", mtime=0), "not a WARC, ARC or JSON Lines file"),
    ],
)
def test_files_that_are_not_crawls_are_refused(tmp_path, content, message):
    path = tmp_path / "x.warc"
    path.write_bytes(content)
    with pytest.raises(InputError, match=message):
        sniff_kind(str(path))


def test_missing_path_is_refused(tmp_path):
    with pytest.raises(InputError, match="no such file or directory"):
        resolve_sources([str(tmp_path / "nope.warc.gz")])


def test_jsonl_values_of_a_wrong_type_are_skipped_as_bad_value(tmp_path):
    """Every type JSON (and Python's json: NaN) can give, in every field: a wrong one is `bad_value`."""
    page = {"url": "http://a.example/", "html": "<p>x</p>"}
    path = write_jsonl(
        tmp_path / "pages.jsonl",
        [
            page,
            {**page, "content_type": 5},
            {**page, "content_type": ["text/html"]},
            {**page, "status": 99999999999999},  # out of range of the int32 column
            {**page, "status": -1},
            {**page, "status": True},
            {**page, "status": 200.0},
            {**page, "status": float("nan")},
            {**page, "status": "200"},
            {**page, "html": 5},
            {**page, "html": {"p": "x"}},
            {**page, "status": 301, "location": 5},
            {**page, "url": 5},
            {**page, "url": None},
            {**page, "status": None},  # null: no status, as before
            "[1, 2]",  # JSON, not an object
            "[" * 100_000 + "]" * 100_000,  # nested deeper than the parser can go
        ],
    )
    assert reasons(Source(str(path), "jsonl")) == [
        ("http://a.example/", None),
        *[("http://a.example/", "bad_value")] * 11,
        (None, "bad_value"),
        (None, "missing_url"),
        ("http://a.example/", "http_status"),
        (None, "bad_json"),
        (None, "bad_json"),
    ]


def test_jsonl_lone_surrogates_become_replacement_characters(tmp_path):
    path = tmp_path / "pages.jsonl"
    path.write_text(
        '{"url": "http://a.example/\\ud800", "html": "<a href=\\"/x\\udfff\\">a\\ud800</a>", '
        '"content_type": "text/html; charset=\\ud800"}\n'
        '{"url": "http://a.example/r", "status": 301, "location": "/y\\ud800"}\n',
        encoding="ascii",
    )
    used, redirect = iter_records(Source(str(path), "jsonl"), MAX)
    assert used.skip_reason is None and used.url == "http://a.example/\ufffd"
    assert used.body.decode("utf-8") == '<a href="/x\ufffd">a\ufffd</a>'
    assert used.content_type == "text/html; charset=\ufffd"
    assert (redirect.skip_reason, redirect.location) == ("http_status", "/y\ufffd")


def cut_gzip_jsonl(path, n: int, keep: float) -> Path:
    """A gzipped JSON Lines file of n pages, cut after `keep` of its compressed bytes."""
    lines = "".join(
        json.dumps({"url": f"http://a.example/{i}", "html": f"<p>{i} {i * 7919}</p>"}) + "\n"
        for i in range(n)
    )
    whole = gzip.compress(lines.encode())
    path.write_bytes(whole[: int(len(whole) * keep)])
    return path


def test_a_cut_gzip_jsonl_keeps_the_records_before_the_cut(tmp_path):
    path = cut_gzip_jsonl(tmp_path / "cut.jsonl.gz", 2000, 0.5)
    *used, cut = iter_records(Source(str(path), "jsonl"), MAX)
    assert len(used) > 100 and all(r.skip_reason is None for r in used)
    assert [r.url for r in used] == [f"http://a.example/{i}" for i in range(len(used))]
    assert (cut.record_type, cut.skip_reason) == ("unreadable", "read_error")
    early = cut_gzip_jsonl(tmp_path / "early.jsonl.gz", 2000, 0.002)  # cut before the first line
    with pytest.raises(InputError, match="early.jsonl.gz: cannot read as JSON Lines"):
        list(iter_records(Source(str(early), "jsonl"), MAX))


def test_manifest_paths_outside_the_folder_are_refused(tmp_path):
    site, outside = tmp_path / "site", tmp_path / "secret.html"
    (site / "sub").mkdir(parents=True)
    outside.write_text("<title>secret</title>")
    (site / "p1.html").write_text("<p>one</p>")
    (site / "link.html").symlink_to(outside)
    (site / "inner.html").symlink_to(site / "p1.html")
    write_jsonl(
        site / "manifest.jsonl",
        [
            {"url": "http://a.example/1", "path": "p1.html"},
            {"url": "http://a.example/2", "path": "sub/../p1.html"},
            {"url": "http://a.example/3", "path": "inner.html"},
            {"url": "http://a.example/4", "path": str(outside)},
            {"url": "http://a.example/5", "path": "../secret.html"},
            {"url": "http://a.example/6", "path": "sub/../../secret.html"},
            {"url": "http://a.example/7", "path": "link.html"},
            {"url": "http://a.example/8", "path": ""},
            {"url": "http://a.example/9", "path": "p1\u0000.html"},
            {"url": "http://a.example/10", "path": "p1\ud800.html"},
            {"url": "http://a.example/11", "path": 5},
            {"url": "http://a.example/12"},
        ],
    )
    [source] = resolve_sources([str(site)])
    records = list(iter_records(source, MAX))
    assert [(r.url.rsplit("/", 1)[1], r.skip_reason) for r in records] == [
        ("1", None),
        ("2", None),
        ("3", None),
        ("4", "path_outside_folder"),
        ("5", "path_outside_folder"),
        ("6", "path_outside_folder"),
        ("7", "path_outside_folder"),
        ("8", "missing_path"),
        ("9", "bad_value"),
        ("10", "bad_value"),
        ("11", "bad_value"),
        ("12", "missing_path"),
    ]
    assert not [r for r in records if r.body and b"secret" in r.body]


def test_html_folder_with_base_url_refuses_symlinks_out(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (tmp_path / "secret.html").write_text("<title>secret</title>")
    (site / "index.html").write_text("<p>i</p>")
    (site / "link.html").symlink_to(tmp_path / "secret.html")
    [source] = resolve_sources([str(site)], base_url="http://a.example/")
    assert reasons(source) == [
        ("http://a.example/index.html", None),
        ("http://a.example/link.html", "path_outside_folder"),
    ]


def test_html_folder_file_names_that_are_not_utf8(tmp_path):
    """A name's bytes that are not UTF-8 are percent-encoded in the URL and written as \\xNN in
    source_file: nothing Arrow would refuse."""
    (tmp_path / "ok.html").write_text("<p>ok</p>")
    odd = os.path.join(os.fsencode(tmp_path), b"caf\xe9.html")
    with open(odd, "wb") as f:
        f.write(b"<p>latin-1 name</p>")
    [source] = resolve_sources([str(tmp_path)], base_url="http://a.example/")
    records = list(iter_records(source, MAX))
    assert [(r.url, r.skip_reason) for r in records] == [
        ("http://a.example/caf%E9.html", None),
        ("http://a.example/ok.html", None),
    ]
    assert records[0].source_file == str(tmp_path / "caf\\xe9.html")
    assert records[0].body == b"<p>latin-1 name</p>"
