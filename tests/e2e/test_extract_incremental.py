"""Incremental extraction: inputs parsed before are not read again (their raw tables are kept in
DIR/parsed), and the final tables are the bytes an extraction from scratch of the same inputs writes,
whether an input is added, changed, removed or moved, or the run is killed part-way."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lshsql import manifest, workdir
from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.sources import parsed
from lshsql.sources.extract import ExtractParams, extract, extract_if_changed
from tests.conftest import html_response, write_warc
from tests.e2e.test_work_folder import kill_9_while_workers_run

PARAMS = ExtractParams(window=3, buckets=4)


def site(host: str, words: str, n: int = 4) -> list[dict]:
    """n pages of one host linking to each other and to the first page of the other host."""
    other = "http://b.example/" if host == "a.example" else "http://a.example/"
    return [
        html_response(
            f"http://{host}/{i}.html",
            f"<title>{words} {i}</title><p>{words} <a href='/{(i + 1) % n}.html'>next {words} page</a> "
            f"and <a href='{other}'>the other site</a> {words}</p>",
        )
        for i in range(n)
    ]


@pytest.fixture
def crawls(tmp_path: Path) -> dict[str, str]:
    """Two crawls of two sites that link to each other; b's home page is also in a (b's capture is
    later, so the duplicate across files is resolved the same way whichever was parsed when)."""
    a = site("a.example", "apple") + [html_response("http://b.example/", "<title>old home</title>")]
    b = [html_response("http://b.example/", "<title>B home</title>", date="2024-02-01T00:00:00Z")]
    return {
        "a": str(write_warc(tmp_path / "a.warc.gz", a)),
        "b": str(write_warc(tmp_path / "b.warc.gz", b + site("b.example", "banana"))),
    }


def run(inputs: list[str], work: Path, force: bool = False):
    resources = db.Resources(memory_limit="1GB", threads=1, temp_directory=str(work / "tmp"))
    return extract(inputs, work, PARAMS, resources, force=force)


def tables(work: Path) -> dict[str, str]:
    """The sha256 of each final table of the extraction (fragments by bucket)."""
    names = [*workdir.EXTRACT_TABLES, *(Path(p).relative_to(work) for p in workdir.fragment_files(work))]
    return {str(name): hashlib.sha256((work / name).read_bytes()).hexdigest() for name in names}


def from_scratch(inputs: list[str], tmp_path: Path) -> dict[str, str]:
    work = tmp_path / f"scratch-{len(list(tmp_path.glob('scratch-*')))}"
    run(inputs, work)
    return tables(work)


def entries(work: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """Each kept entry's files with their inode and mtime (ns): a rewritten file changes both."""
    return {
        entry.name: {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(entry.iterdir())}
        for entry in sorted((work / parsed.PARSED).iterdir())
    }


def test_an_added_input_is_the_only_one_parsed(crawls, tmp_path):
    work = tmp_path / "w"
    first = run([crawls["a"]], work)
    assert (first.files_parsed, first.files_reused) == (1, 0)
    assert first.lines()[0] == "files read:      1"
    kept = entries(work)
    assert len(kept) == 1
    both = run([crawls["a"], crawls["b"]], work)
    assert (both.files_parsed, both.files_reused) == (1, 1)
    assert both.lines()[0] == "files read:      2 (1 parsed, 1 reused)"
    counts = manifest.read(work)["stages"]["extract"]["counts"]
    assert (counts["files_parsed"], counts["files_reused"]) == (1, 1)
    after = entries(work)
    assert len(after) == 2 and {k: after[k] for k in kept} == kept  # a's entry untouched
    assert tables(work) == from_scratch([crawls["a"], crawls["b"]], tmp_path)
    # b.example/ is in both files: the later capture (in b) wins, as from scratch
    pages = pq.read_table(work / "pages.parquet").to_pylist()
    home = {p["title"]: p["skip_reason"] for p in pages if p["url"] == "http://b.example/"}
    assert home == {"old home": "duplicate_url", "B home": None}
    # the rate is of the HTML parsed now: the used pages of b, the second input
    parsed_now = sum(p["n_bytes"] for p in pages if p["skip_reason"] is None and p["record_id"] >> 32 == 1)
    assert first.html_bytes_parsed is None and 0 < both.html_bytes_parsed == parsed_now < both.html_bytes
    assert f"MB of HTML ({parsed_now / 1e6:.1f} MB read now), " in both.lines()[-2]


def test_a_changed_input_is_parsed_again(crawls, tmp_path):
    work = tmp_path / "w"
    run([crawls["a"], crawls["b"]], work)
    before = entries(work)
    write_warc(Path(crawls["b"]), site("b.example", "cherry", n=5))  # same name, other content
    again = run([crawls["a"], crawls["b"]], work)
    assert (again.files_parsed, again.files_reused) == (1, 1)
    after = entries(work)
    assert len(after) == 2 and len(set(after) & set(before)) == 1  # b's old entry dropped
    assert tables(work) == from_scratch([crawls["a"], crawls["b"]], tmp_path)
    titles = {p["title"] for p in pq.read_table(work / "pages.parquet").to_pylist()}
    assert "cherry 4" in titles and "banana 0" not in titles


def test_a_file_rewritten_with_the_same_size_and_time_is_parsed_again(tmp_path):
    """The content fingerprint: other bytes put back with the file's old size and mtime."""
    path = write_warc(tmp_path / "c.warc", site("a.example", "apple"), compress=False)
    work = tmp_path / "w"
    run([str(path)], work)
    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(b"apple", b"grape"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    again = run([str(path)], work)
    assert (again.files_parsed, again.files_reused) == (1, 0)
    assert tables(work) == from_scratch([str(path)], tmp_path)
    assert "grape 0" in {p["title"] for p in pq.read_table(work / "pages.parquet").to_pylist()}


def test_run_sees_a_file_rewritten_with_the_same_size_and_time(tmp_path):
    """`run` decides by the folder's fingerprint whether to extract at all: the same rule as the entries'."""
    path = write_warc(tmp_path / "c.warc", site("a.example", "apple"), compress=False)
    work = tmp_path / "w"
    resources = db.Resources(memory_limit="1GB", threads=1, temp_directory=str(work / "tmp"))
    assert extract_if_changed([str(path)], work, PARAMS, resources) is not None
    assert extract_if_changed([str(path)], work, PARAMS, resources) is None  # up to date
    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(b"apple", b"grape"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = extract_if_changed([str(path)], work, PARAMS, resources)
    assert again is not None and (again.files_parsed, again.files_reused) == (1, 0)
    assert "grape 0" in {p["title"] for p in pq.read_table(work / "pages.parquet").to_pylist()}


def test_a_file_that_grows_while_it_is_parsed_is_read_again_next_time(crawls, tmp_path, monkeypatch):
    """A crawler appending to a WARC while lshsql reads it: the folder records the file as it was before
    it was read, so the next run extracts again and gets the appended pages."""
    from lshsql.sources import extract as extract_module

    parse_all = extract_module._parse_all
    grown = Path(crawls["a"])

    def parse_then_grow(*args, **kwargs):
        n = parse_all(*args, **kwargs)
        grown.write_bytes(grown.read_bytes() + Path(crawls["b"]).read_bytes())  # gzip members concatenate
        return n

    work = tmp_path / "w"
    resources = db.Resources(memory_limit="1GB", threads=1, temp_directory=str(work / "tmp"))
    monkeypatch.setattr(extract_module, "_parse_all", parse_then_grow)
    extract_if_changed([crawls["a"]], work, PARAMS, resources)
    monkeypatch.setattr(extract_module, "_parse_all", parse_all)
    assert not (work / parsed.PARSED).exists() or not any((work / parsed.PARSED).iterdir())
    again = extract_if_changed([crawls["a"]], work, PARAMS, resources)
    assert again is not None and again.files_parsed == 1
    assert tables(work) == from_scratch([crawls["a"]], tmp_path)
    assert "banana 0" in {p["title"] for p in pq.read_table(work / "pages.parquet").to_pylist()}


def test_a_removed_input_has_its_rows_removed(crawls, tmp_path):
    work = tmp_path / "w"
    run([crawls["a"], crawls["b"]], work)
    alone = run([crawls["a"]], work)
    assert (alone.files_parsed, alone.files_reused) == (0, 1)
    assert tables(work) == from_scratch([crawls["a"]], tmp_path)
    assert len(entries(work)) == 1  # b's entry dropped once the new tables were switched in
    pages = pq.read_table(work / "pages.parquet").to_pylist()
    assert {p["source_file"] for p in pages} == {crawls["a"]}
    assert [p["skip_reason"] for p in pages if p["url"] == "http://b.example/"] == [None]  # a's capture


def test_reordered_inputs_reuse_both_and_number_records_by_the_new_order(crawls, tmp_path):
    work = tmp_path / "w"
    run([crawls["a"], crawls["b"]], work)
    kept = entries(work)
    moved = run([crawls["b"], crawls["a"]], work)
    assert (moved.files_parsed, moved.files_reused) == (0, 2)
    assert entries(work) == kept  # moved record ids are written to the run's raw folder, not the entry
    assert tables(work) == from_scratch([crawls["b"], crawls["a"]], tmp_path)
    files = {
        r["source_file"]: r["record_id"] >> 32 for r in pq.read_table(work / "pages.parquet").to_pylist()
    }
    assert files == {crawls["b"]: 0, crawls["a"]: 1}


def test_force_parses_every_input_again(crawls, tmp_path):
    work = tmp_path / "w"
    run([crawls["a"], crawls["b"]], work)
    before = tables(work)
    kept = entries(work)
    forced = run([crawls["a"], crawls["b"]], work, force=True)
    assert (forced.files_parsed, forced.files_reused) == (2, 0)
    assert forced.lines()[0] == "files read:      2"
    after = entries(work)
    assert set(after) == set(kept) and after != kept  # the same keys, new files
    assert tables(work) == before


def test_only_options_the_parse_depends_on_make_it_parse_again(crawls, tmp_path):
    """Site templates are found over all rows (sql/01..05): another --template-share parses nothing again;
    another --window parses everything again."""
    work, inputs = tmp_path / "w", [crawls["a"], crawls["b"]]
    run(inputs, work)
    share = ExtractParams(window=3, buckets=4, template_share=0.9, templates="cut")
    resources = db.Resources(memory_limit="1GB", threads=1, temp_directory=str(work / "tmp"))
    again = extract(inputs, work, share, resources)
    assert (again.files_parsed, again.files_reused) == (0, 2)
    scratch = tmp_path / "scratch"
    extract(inputs, scratch, share, resources)
    assert tables(work) == tables(scratch)
    wider = extract(inputs, work, ExtractParams(window=5, buckets=4), resources)
    assert (wider.files_parsed, wider.files_reused) == (2, 0)


def test_a_failed_run_keeps_the_last_result_and_its_entries(crawls, tmp_path):
    work = tmp_path / "w"
    run([crawls["a"]], work)
    before, kept = tables(work), entries(work)
    broken = tmp_path / "broken.warc.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00" + b"not gzip at all " * 8)
    with pytest.raises(InputError, match="broken.warc.gz: not a readable gzip file"):
        run([crawls["a"], str(broken)], work)
    assert tables(work) == before and entries(work) == kept
    assert workdir.extraction_problem(work) is None


def test_a_half_written_entry_is_not_taken(crawls, tmp_path):
    """An entry whose file lost bytes (or its entry.json) is parsed again, not used."""
    work = tmp_path / "w"
    run([crawls["a"]], work)
    (entry,) = (work / parsed.PARSED).iterdir()
    pages = entry / "pages.parquet"
    pages.unlink()
    pages.write_bytes(b"PAR1")
    again = run([crawls["a"]], work)
    assert (again.files_parsed, again.files_reused) == (1, 0)
    (entry / parsed.ENTRY).write_text("{not json", encoding="utf-8")
    assert (run([crawls["a"]], work).files_parsed, len(entries(work))) == (1, 1)
    assert tables(work) == from_scratch([crawls["a"]], tmp_path)


def test_an_entry_without_a_used_count_is_still_used(crawls, tmp_path):
    """Entries made before they counted their used records (what ingest --limit reads) stay valid."""
    work = tmp_path / "w"
    run([crawls["a"]], work)
    (entry,) = (work / parsed.PARSED).iterdir()
    data = json.loads((entry / parsed.ENTRY).read_text(encoding="utf-8"))
    assert data.pop("used") == 5  # a's 4 pages and b's old home page
    (entry / parsed.ENTRY).write_text(json.dumps(data), encoding="utf-8")
    again = run([crawls["a"], crawls["b"]], work)
    assert (again.files_parsed, again.files_reused) == (1, 1)
    assert tables(work) == from_scratch([crawls["a"], crawls["b"]], tmp_path)


def test_a_folder_of_pages_is_parsed_every_time(crawls, tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "index.html").write_text("<title>C</title><a href='http://a.example/'>apple site</a>")
    (pages / "manifest.jsonl").write_text(
        json.dumps({"file": "index.html", "url": "http://c.example/"}) + "\n"
    )
    work = tmp_path / "w"
    run([crawls["a"], str(pages)], work)
    again = run([crawls["a"], str(pages)], work)
    assert (again.files_parsed, again.files_reused) == (1, 1)
    assert len(entries(work)) == 1
    assert tables(work) == from_scratch([crawls["a"], str(pages)], tmp_path)


def big_crawl(path: Path, n_pages: int = 300) -> str:
    """A crawl of several batches, so that worker processes parse it: pages of many links."""
    page = "<title>t</title>" + " ".join(f"<a href='/p{i}'>word{i} text</a> more words" for i in range(40))
    return str(write_warc(path, [html_response(f"http://big.example/{n}", page) for n in range(n_pages)]))


@pytest.mark.slow  # processes started and killed: make test-all (CI) runs it
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_kill_9_while_parsing_an_added_input_keeps_the_last_result(crawls, tmp_path):
    work = tmp_path / "w"
    run([crawls["a"]], work)
    before, kept = tables(work), entries(work)
    entry = manifest.read(work)["stages"]["extract"]
    inputs = [crawls["a"], big_crawl(tmp_path / "big.warc.gz")]
    options = ["--window", "3", "--buckets", "4", "--threads", "2", "-q"]  # PARAMS
    command = [sys.executable, "-m", "lshsql", "extract", *inputs, "--work", str(work), *options]
    assert kill_9_while_workers_run(command), "the extraction ended before it could be killed while parsing"
    assert tables(work) == before and entries(work) == kept
    assert manifest.read(work)["stages"]["extract"] == entry
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "files read:      2 (1 parsed, 1 reused)" in result.stdout
    assert tables(work) == from_scratch(inputs, tmp_path)


def test_the_rate_counts_captures_a_later_one_replaced(crawls, tmp_path):
    """From scratch, b's old home page in a is parsed, then replaced by b's later capture: the HTML parsed
    (and rated) is the used pages' and that capture's, not the used pages' alone."""
    summary = run([crawls["a"], crawls["b"]], tmp_path / "w")
    pages = pq.read_table(tmp_path / "w" / "pages.parquet").to_pylist()
    replaced = sum(p["n_bytes"] for p in pages if p["skip_reason"] == "duplicate_url")
    assert replaced > 0 and summary.files_reused == 0
    assert summary.html_bytes_parsed == summary.html_bytes + replaced
    assert " MB read now), " in summary.lines()[-2]
    alone = run([crawls["b"]], tmp_path / "b")  # nothing replaced, nothing reused: the plain line
    assert alone.html_bytes_parsed is None and "read now" not in alone.lines()[-2]
