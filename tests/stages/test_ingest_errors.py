"""Inputs that give no usable record: one line saying what the records look like and what to use instead,
and nothing left behind that a second try would take as up to date."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lshsql import manifest
from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.sources.extract import extract, extract_if_changed
from lshsql.sources.ingest import IngestParams, ingest, ingest_if_changed

ONE = db.Resources(memory_limit="1GB", threads=1)
DOCUMENTS = [{"id": f"doc{i}", "text": f"the text of document {i}"} for i in range(3)]


def write_jsonl(path, records) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def lshsql(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lshsql", *args], capture_output=True, text=True, timeout=300
    )


def test_documents_given_as_a_crawl_point_at_dedup_and_ingest(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", DOCUMENTS)
    with pytest.raises(InputError) as error:
        extract([corpus], tmp_path / "w", resources=ONE)
    message = str(error.value)
    assert message.startswith("no usable HTML page among 3 records (3 missing_url): ")
    assert f"{corpus} looks like documents (fields id, text), not crawled pages (url, html)" in message
    assert "`lshsql dedup`" in message and "`lshsql ingest`" in message and "\n" not in message


def test_pages_without_a_url_get_no_documents_hint(tmp_path):
    pages = write_jsonl(tmp_path / "pages.jsonl", [{"html": "<p>x</p>"}])
    with pytest.raises(InputError) as error:
        extract([pages], tmp_path / "w", resources=ONE)
    assert str(error.value) == "no usable HTML page among 1 records (1 missing_url)"


def test_a_failed_extraction_is_never_up_to_date(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", DOCUMENTS)
    work = tmp_path / "w"
    for _ in range(2):  # the second try fails the same way: nothing was recorded
        with pytest.raises(InputError, match="no usable HTML page among 3 records"):
            extract_if_changed([corpus], work, resources=ONE)
    assert "extract" not in manifest.read(work)["stages"]
    assert not (work / "pages.parquet").exists() and not (work / "fragments").exists()


def test_a_failed_extraction_keeps_the_one_before(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [{"url": "http://a.example/", "html": "<title>a</title>"}])
    corpus = write_jsonl(tmp_path / "corpus.jsonl", DOCUMENTS)
    work = tmp_path / "w"
    extract([good], work, resources=ONE)
    before = manifest.read(work)["stages"]["extract"]
    with pytest.raises(InputError, match="looks like documents"):
        extract_if_changed([corpus], work, resources=ONE)
    assert manifest.read(work)["stages"]["extract"] == before
    with pytest.raises(InputError, match="looks like documents"):
        extract_if_changed([corpus], work, resources=ONE)


def test_cli_run_on_documents_fails_the_same_way_twice(tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", DOCUMENTS)
    args = ("run", corpus, "--work", str(tmp_path / "w"), "--quiet", "--threads", "1")
    first, second = lshsql(*args), lshsql(*args)
    for result in (first, second):
        assert result.returncode != 0 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("lshsql: error: no usable HTML")
        assert "`lshsql dedup`" in result.stderr
    assert first.stderr == second.stderr


def test_a_missing_text_field_names_the_fields_found_and_the_option(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "body": "x y"}, {"id": "b", "body": "x z"}])
    with pytest.raises(InputError) as error:
        ingest([corpus], tmp_path / "w", IngestParams(), ONE)
    assert str(error.value) == (
        "no usable document among 2 records (2 missing_text): "
        f"{corpus}: no field 'text' (fields: id, body); name it with --text-column"
    )
    with pytest.raises(InputError, match=r"no field 'key' or 'text' \(fields: id, body\); name them with "):
        ingest([corpus], tmp_path / "w", IngestParams(id_column="key"), ONE)
    assert ingest([corpus], tmp_path / "w", IngestParams(text_column="body"), ONE).pages_used == 2


def test_null_text_in_every_record_is_counted_without_a_hint(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": None}])
    with pytest.raises(InputError) as error:
        ingest([corpus], tmp_path / "w", IngestParams(), ONE)
    assert str(error.value) == "no usable document among 1 records (1 missing_text)"


def test_a_parquet_file_without_the_text_column_names_the_option(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": ["a"], "body": ["x"]}), path)
    with pytest.raises(InputError) as error:
        ingest([str(path)], tmp_path / "w", IngestParams(), ONE)
    assert str(error.value) == f"{path}: no column 'text' (columns: id, body); name it with --text-column"


def test_a_failed_ingest_is_never_up_to_date(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "body": "x y"}])
    work = tmp_path / "w"
    for _ in range(2):
        with pytest.raises(InputError, match="no field 'text'"):
            ingest_if_changed([corpus], work, IngestParams(), ONE)
    assert "extract" not in manifest.read(work)["stages"]
    result = lshsql("run", "--work", str(work), "--quiet")  # no extraction to run on, not zero rows
    assert result.returncode != 0 and "no fragments" in result.stderr, result.stderr
