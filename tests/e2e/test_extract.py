"""`extract` end to end: hand-checked small crawls, the example crawl, the noisy crawls, every real WARC."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.sources.batches import bucket_of
from lshsql.sources.extract import ExtractParams, extract
from tests.conftest import (
    EXAMPLE_CRAWL,
    html_response,
    plain_records,
    shared,
    write_jsonl,
    write_records,
    write_warc,
)


def rows(query: str, **params) -> list[tuple]:
    with duckdb.connect() as con:
        return con.execute(query, params).fetchall()


def one_thread(work: Path) -> db.Resources:
    return db.Resources(memory_limit="1GB", threads=1, temp_directory=str(work / "tmp"))


def run(crawl: list, work: Path, threads: int = 1, **params):
    resources = db.Resources(memory_limit="1GB", threads=threads, temp_directory=str(work / "tmp"))
    return extract([str(c) for c in crawl], work, ExtractParams(**params), resources)


def test_small_site_tables_are_as_worked_out_by_hand(tmp_path, small_site):
    crawl = write_warc(tmp_path / "site.warc.gz", small_site)
    summary = run([crawl], tmp_path / "w", window=2, buckets=4)
    w = tmp_path / "w"
    assert (summary.records_read, summary.pages_used, summary.skipped) == (4, 3, {"warcinfo": 1})
    assert rows(
        f"select url, title, n_out_links, skip_reason from '{w}/pages.parquet' order by record_id"
    ) == [
        (None, None, None, "warcinfo"),
        ("http://site.example/", "Home", 2, None),
        ("http://site.example/a.html", "Apples", 2, None),
        ("http://site.example/b.html", "Bananas", 1, None),
    ]
    assert rows(
        f"select source_url, position, target_url, is_internal, anchor_text from '{w}/links.parquet'"
    ) == [
        ("http://site.example/", 0, "http://site.example/a.html", True, "apple orchard"),
        ("http://site.example/", 1, "http://site.example/b.html", True, "banana plantation"),
        ("http://site.example/a.html", 0, "http://site.example/b.html", True, "bananas"),
        ("http://site.example/a.html", 1, "http://other.example/x", False, "other fruit"),
        ("http://site.example/b.html", 0, "http://site.example/", True, "home"),
    ]
    # Window 2 counts words as written, then stopwords go ("to", "the", "and", "or", "other", "see",
    # "back" are on the Glasgow list) and Porter stems: "welcome to the [apple orchard] and the" -> appl orchard.
    fragments = rows(
        f"select url, kind, source_url, terms from read_parquet('{w}/fragments/*/*.parquet') "
        "order by url, kind, source_url"
    )
    assert fragments == [
        ("http://other.example/x", "anchor", "http://site.example/a.html", ["banana", "fruit"]),
        ("http://site.example/", "anchor", "http://site.example/b.html", ["home"]),
        ("http://site.example/", "title", "http://site.example/", ["home"]),
        ("http://site.example/a.html", "anchor", "http://site.example/", ["appl", "orchard"]),
        ("http://site.example/a.html", "title", "http://site.example/a.html", ["appl"]),
        ("http://site.example/b.html", "anchor", "http://site.example/", ["banana", "plantat", "page"]),
        ("http://site.example/b.html", "anchor", "http://site.example/a.html", ["banana"]),
        ("http://site.example/b.html", "title", "http://site.example/b.html", ["banana"]),
    ]


def test_fragments_are_bucketed_by_a_stable_hash_of_the_url(tmp_path, small_site):
    crawl = write_warc(tmp_path / "site.warc.gz", small_site)
    run([crawl], tmp_path / "w", buckets=4)
    for bucket in range(4):
        urls = rows(f"select distinct url from '{tmp_path}/w/fragments/bucket={bucket}/data.parquet'")
        assert all(bucket_of(url, 4) == bucket for (url,) in urls)
    # Golden values: xxh64 (seed 0) is fixed by its specification, so buckets never move between versions.
    assert bucket_of("", 1_000_003) == 0xEF46DB3751D8E999 % 1_000_003
    assert bucket_of("http://site.example/", 2**63) == 18426470450300092296 % 2**63


def test_latest_capture_of_a_url_wins(tmp_path):
    crawl = write_warc(
        tmp_path / "dup.warc.gz",
        [
            html_response("http://a.example/p", "<title>new</title>", date="2024-05-01T00:00:00Z"),
            html_response("http://a.example/p", "<title>old</title>", date="2023-05-01T00:00:00Z"),
            html_response("http://A.example:80/q#x", "<title>first</title>"),
            html_response("http://a.example/q", "<title>second</title>"),
        ],
    )
    summary = run([crawl], tmp_path / "w")
    assert summary.skipped == {"warcinfo": 1, "duplicate_url": 2}
    used = rows(f"select url, title from '{tmp_path}/w/pages.parquet' where skip_reason is null order by url")
    assert used == [("http://a.example/p", "new"), ("http://a.example/q", "second")]
    titles = rows(f"select terms from read_parquet('{tmp_path}/w/fragments/*/*.parquet') order by url")
    assert titles == [(["new"],), (["second"],)]


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory) -> tuple:
    """The example crawl extracted by 2 workers, once for the tests that check it: (summary, work). In
    batches of 32 pages: its 120 pages are one batch by default, which is parsed without workers."""
    work = tmp_path_factory.mktemp("two-workers") / "w"
    return run([EXAMPLE_CRAWL], work, threads=2, batch_records=32), work


def test_books_balance_and_manifest_records_the_run(two_workers):
    summary, work = two_workers
    manifest = json.loads((work / "manifest.json").read_text())
    entry = manifest["stages"]["extract"]
    assert entry["counts"]["records_read"] == summary.records_read
    assert summary.records_read == summary.pages_used + sum(summary.skipped.values())
    assert entry["params"]["window"] == 8 and entry["inputs"][0]["path"] == str(EXAMPLE_CRAWL)
    assert {"duckdb", "lshsql", "pyarrow"} <= set(manifest["versions"])
    assert not (work / "tmp" / "extract").exists()


def test_example_crawl_counts(two_workers):
    s, w = two_workers
    assert (s.records_read, s.pages_used, s.skipped) == (121, 120, {"warcinfo": 1})
    assert (s.links, s.links_internal, s.links_external) == (21057, 8549, 8510)
    assert s.links_skipped == {"empty": 60, "fragment_only": 3926, "mailto": 12}
    # every followable link gives a fragment, a template link's with the template words taken out
    assert s.links_template == 2802 and s.fragments == {"anchor": 17059, "title": 120}
    assert "  template links: 2802 (in blocks repeated on a site's pages), 0 of them without a fragment" in (
        s.lines()
    )
    assert s.urls_described == 4436
    # In- and out-degree are a query away.
    top = rows(
        f"select target_url, count(*) from '{w}/links.parquet' where target_url is not null "
        "group by 1 order by 2 desc, 1 limit 1"
    )
    assert top[0][1] > 100


def file_digests(work: Path) -> dict[str, str]:
    files = [work / "pages.parquet", work / "links.parquet", *sorted((work / "fragments").rglob("*.parquet"))]
    return {str(f.relative_to(work)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def test_outputs_are_byte_identical_with_one_or_two_workers(example_extraction, two_workers):
    # conftest's example_extraction is the example crawl extracted by 1 worker
    one, two = file_digests(example_extraction), file_digests(two_workers[1])
    # source_file is the same path in both runs, so even pages.parquet must match.
    assert one == two and len(one) == 18


def test_options_change_what_is_extracted(tmp_path, small_site):
    crawl = write_warc(tmp_path / "site.warc.gz", small_site)
    run([crawl], tmp_path / "raw", window=0, stem=False, stopwords=False, content=True, buckets=1)
    fragments = dict(
        rows(
            f"select kind || ' ' || source_url || ' ' || url, terms "
            f"from '{tmp_path}/raw/fragments/bucket=0/data.parquet'"
        )
    )
    assert fragments["anchor http://site.example/ http://site.example/a.html"] == ["apple", "orchard"]
    assert fragments["content http://site.example/ http://site.example/"] == [
        "welcome",
        "to",
        "the",
        "apple",
        "orchard",
        "and",
        "the",
        "banana",
        "plantation",
        "pages",
    ]


def test_jsonl_and_html_folder_inputs(tmp_path):
    jsonl = write_jsonl(
        tmp_path / "pages.jsonl",
        [
            {"url": "http://j.example/", "html": "<title>J</title><a href='/x'>x link</a>"},
            "broken line",
        ],
    )
    s = run([jsonl], tmp_path / "wj")
    assert (s.records_read, s.pages_used, s.skipped) == (2, 1, {"bad_json": 1})
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<title>Index</title><a href='about.html'>about us</a>")
    s = extract(
        [str(site)], tmp_path / "wh", ExtractParams(base_url="http://h.example/"), one_thread(tmp_path)
    )
    assert s.pages_used == 1
    assert rows(f"select target_url from '{tmp_path}/wh/links.parquet'") == [("http://h.example/about.html",)]


def test_a_crawl_without_records_is_an_error(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "manifest.jsonl").write_text("\n")
    with pytest.raises(InputError, match="empty crawl: no records in"):
        run([tmp_path / "site"], tmp_path / "w")
    empty = tmp_path / "empty.warc.gz"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty file, not a crawl"):
        run([empty], tmp_path / "w")


def test_a_crawl_without_usable_pages_is_an_error(tmp_path):
    crawl = write_warc(
        tmp_path / "c.warc.gz", [html_response("http://a.example/", "x", status="404 Not Found")]
    )
    with pytest.raises(
        InputError, match=r"no usable HTML page among 2 records \(1 http_status, 1 warcinfo\)"
    ):
        run([crawl], tmp_path / "w")


NOISE_OUTCOME = {
    "huge_line": None,
    "truncated": None,
    "messy_links": None,
    "gzip_encoded": None,
    "latin1": None,
    "latin1_mislabeled": None,
    "request": "request",
    "revisit": "revisit",
    "binary_as_html": "binary_body",
    "redirect_301": "http_status",
    "http_404": "http_status",
    "image": "not_html",
    "empty": "empty_body",
    "duplicate": "duplicate_url",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fixture-small.noisy.warc.gz", "postgresql15.noisy.warc.gz"])
def test_every_injected_fault_is_used_or_counted(tmp_path, name):
    crawl = shared("crawls", name)
    noise = [json.loads(line) for line in Path(f"{crawl}.noise.jsonl").read_text().splitlines()]
    summary = run([crawl], tmp_path / "w", threads=2)
    assert summary.records_read == summary.pages_used + sum(summary.skipped.values())
    pages = f"{tmp_path}/w/pages.parquet"
    for fault in noise:
        found = rows(
            f"select record_type, skip_reason, encoding, title from '{pages}' where url = $url "
            "order by record_id",
            url=fault["url"],
        )
        outcomes = {(record_type, reason) for record_type, reason, _, _ in found}
        expected = NOISE_OUTCOME[fault["noise"]]
        assert (fault["warc_type"], expected) in outcomes, (fault, found)
        if fault["noise"].startswith("latin1"):
            [(_, _, encoding, title)] = [f for f in found if f[1] is None]
            assert encoding == "cp1252" and "\ufffd" not in title
        if fault["noise"] == "gzip_encoded":
            assert found[0][3] and "\ufffd" not in found[0][3]
    assert "parse_error" not in summary.skipped and "read_error" not in summary.skipped


def test_broken_records_are_counted_and_the_records_around_them_used(tmp_path, small_site):
    """A gzip crawl cut inside its last record, a plain crawl with a Content-Length far too large, a gzip
    crawl with one broken header: each broken record is counted, every other one read."""
    records = plain_records(write_warc(tmp_path / "site.warc", small_site, compress=False))
    cut = write_records(tmp_path / "cut.warc.gz", records, compress=True)
    cut.write_bytes(cut.read_bytes()[: -len(gzip.compress(records[-1], mtime=0)) // 2])
    long = [
        *records[:2],
        re.sub(rb"Content-Length: \d+", b"Content-Length: 999999999999", records[2]),
        *records[3:],
    ]
    write_records(tmp_path / "long.warc", long, compress=False)
    bad = [*records[:2], records[2].replace(b"WARC/1.0", b"WARC/1.0 broken", 1), *records[3:]]
    write_records(tmp_path / "bad.warc.gz", bad, compress=True)
    crawl = [tmp_path / name for name in ("cut.warc.gz", "long.warc", "bad.warc.gz")]
    summary = run(crawl, tmp_path / "w")
    # used: / (3 captures), a.html (cut.warc.gz), b.html (2 captures); 3 duplicates
    assert summary.skipped == {"duplicate_url": 3, "read_error": 1, "truncated": 2, "warcinfo": 3}
    assert (summary.records_read, summary.pages_used) == (12, 3)
    assert summary.records_read == summary.pages_used + sum(summary.skipped.values())


def test_links_over_max_links_are_counted_in_the_summary_and_manifest(tmp_path, small_site):
    """The 5 links of a page with --max-links 2: 2 extracted, 3 counted; an older capture of the page,
    skipped as duplicate_url, is not counted."""
    many = "<p>" + " ".join(f"<a href='/{i}.html'>page {i}</a>" for i in range(5)) + "</p>"
    crawl = write_warc(
        tmp_path / "c.warc.gz",
        [
            *small_site,
            html_response("http://site.example/many", many, date="2023-01-01T00:00:00Z"),
            html_response("http://site.example/many", many),
        ],
    )
    summary = run([crawl], tmp_path / "w", max_links_per_page=2)
    assert (summary.links_over_cap, summary.pages_over_cap) == (3, 1)
    assert "  links over --max-links: 3 on 1 pages, not extracted" in summary.lines()
    assert summary.records_read == summary.pages_used + sum(summary.skipped.values()) == 6
    counts = json.loads((tmp_path / "w" / "manifest.json").read_text())["stages"]["extract"]["counts"]
    assert (counts["links_over_cap"], counts["pages_over_cap"]) == (3, 1)
    assert rows(f"select count(*) from '{tmp_path}/w/links.parquet' where source_url like '%many'") == [(2,)]
    assert "links over" not in "\n".join(run([crawl], tmp_path / "w2").lines())
    with pytest.raises(ParamError, match="max links per page must be positive"):
        ExtractParams(max_links_per_page=0)


@pytest.mark.slow
def test_every_real_warc_is_processed_without_a_crash(tmp_path):
    root = shared("real-warc")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "LICENSE")
    used = {}
    for i, path in enumerate(files):
        try:
            used[path.name] = run([path], tmp_path / f"w{i}").pages_used
        except InputError as e:
            assert "no usable HTML page" in str(e), (path, e)
            used[path.name] = 0
    assert used["iana.warc.gz"] == 16 and used["warcfile.warc.gz"] == 16 and used["example.arc.gz"] == 1
    assert used["example-bad-non-chunked.warc.gz"] == 1 and used["example-bad.warc.gz.bad"] == 1


def test_a_gzip_file_without_deflate_data_is_a_one_line_error(tmp_path):
    broken = tmp_path / "broken.warc.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00" + b"not gzip at all " * 8)
    with pytest.raises(InputError, match=r"broken.warc.gz: not a readable gzip file: Error -3"):
        extract([str(broken)], tmp_path / "work")


def test_a_spark_task_reads_relative_paths_from_the_drivers_directory(tmp_path, small_site, monkeypatch):
    """extract.parse_file, the body of one Spark task (run here without Spark): a relative input path is
    read from the driver's working directory and recorded as given; where that directory does not exist
    (another machine), a one-line error says so; a missing file is a one-line error too."""
    from lshsql.sources.extract import parse_file
    from lshsql.sources.readers import Source

    write_warc(tmp_path / "crawl.warc.gz", small_site)
    monkeypatch.chdir("/")  # an executor's working directory is not the driver's
    relative = (0, Source("crawl.warc.gz", "warc"))
    n_read, error = parse_file(relative, ExtractParams(), str(tmp_path / "raw"), cwd=str(tmp_path))
    assert (n_read, error) == (4, None)  # warcinfo + 3 pages
    pages = pq.read_table(tmp_path / "raw" / "file-000000" / "pages.parquet").to_pylist()
    assert {p["source_file"] for p in pages} == {"crawl.warc.gz"}
    n_read, error = parse_file(
        relative, ExtractParams(), str(tmp_path / "raw"), cwd=str(tmp_path / "elsewhere")
    )
    assert n_read == 0 and error.startswith("crawl.warc.gz: a relative path, and the directory")
    gone = (1, Source(str(tmp_path / "gone.warc.gz"), "warc"))
    n_read, error = parse_file(gone, ExtractParams(), str(tmp_path / "raw"), cwd=str(tmp_path))
    assert n_read == 0 and "gone.warc.gz: not a readable WARC/ARC file" in error and "\n" not in error


def test_extract_refuses_an_unknown_engine_before_reading_and_leaves_no_scratch(tmp_path, small_site):
    from lshsql.engines.base import DuckDBEngine

    crawl = [str(write_warc(tmp_path / "crawl.warc.gz", small_site))]
    with pytest.raises(ParamError, match="unknown engine 'Spark'"):
        extract(crawl, tmp_path / "work", engine="Spark")
    with duckdb.connect() as con, pytest.raises(ParamError, match="pass engine='duckdb'"):
        extract(crawl, tmp_path / "work", engine=DuckDBEngine(con))
    assert not (tmp_path / "work").exists()  # refused before anything was read or written
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "manifest.jsonl").write_text("\n")
    with pytest.raises(InputError, match="empty crawl"):  # a failure after parsing: no scratch left
        extract([str(tmp_path / "site")], tmp_path / "w2")
    assert (tmp_path / "w2").exists() and not (tmp_path / "w2" / "tmp" / "extract").exists()


def test_jsonl_bad_values_never_stop_the_extract(tmp_path):
    """Wrong types, lone surrogates (url, html, an href in it, content_type, location) and a status out of
    the int32 column's range reach neither Arrow nor DuckDB: each record is used or skipped."""
    path = tmp_path / "pages.jsonl"
    path.write_text(
        "\n".join(
            [
                '{"url": "http://a.example/", "html": "<title>A</title><a href=\\"/b\\ud800\\">to b</a>"}',
                '{"url": "http://a.example/\\ud800", "html": "<title>S\\udc00</title>"}',
                '{"url": "http://a.example/ct", "html": "<p>x</p>", "content_type": 5}',
                '{"url": "http://a.example/st", "html": "<p>x</p>", "status": 99999999999999}',
                '{"url": "http://a.example/nan", "html": "<p>x</p>", "status": NaN}',
                '{"url": "http://a.example/r", "status": 301, "location": "/c\\ud800"}',
                '{"url": 5, "html": "<p>x</p>"}',
                "[" * 100_000,
            ]
        )
        + "\n",
        encoding="ascii",
    )
    s = run([path], tmp_path / "w")
    assert s.records_read == 8 == s.pages_used + sum(s.skipped.values())
    assert (s.pages_used, s.skipped) == (2, {"bad_value": 4, "bad_json": 1, "http_status": 1})
    w = tmp_path / "w"
    assert rows(f"select url, title from '{w}/pages.parquet' where skip_reason is null order by url") == [
        ("http://a.example/", "A"),
        ("http://a.example/%EF%BF%BD", "S\ufffd"),
    ]
    assert rows(f"select target_url from '{w}/links.parquet'") == [("http://a.example/b%EF%BF%BD",)]
    assert rows(f"select redirect_url from '{w}/pages.parquet' where redirect_url is not null") == [
        ("http://a.example/c%EF%BF%BD",)
    ]


def test_a_cut_gzip_jsonl_keeps_its_pages_and_counts_the_cut(tmp_path, monkeypatch, capsys):
    """The command, not a bare 'Aborted!': the pages before the cut are used and the cut is a read_error."""
    from lshsql import cli
    from tests.stages.test_sources import cut_gzip_jsonl

    crawl = cut_gzip_jsonl(tmp_path / "cut.jsonl.gz", 400, 0.5)
    argv = ["lshsql", "extract", str(crawl), "--work", str(tmp_path / "w"), "--threads", "1", "--quiet"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    out, err = capsys.readouterr()
    assert exit_.value.code == 0 and not err
    assert "  skipped read_error: 1" in out
    [(n_used, n_cut)] = rows(
        f"select count(*) filter (skip_reason is null), count(*) filter (skip_reason = 'read_error') "
        f"from '{tmp_path}/w/pages.parquet'"
    )
    assert n_used > 50 and n_cut == 1
