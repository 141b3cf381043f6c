"""Stage `ingest`: documents (JSON Lines, Parquet, Reuters SGML) -> pages, fragments, labels; shingles."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lshsql import manifest
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.params import Params
from lshsql.pipeline import run
from lshsql.sources import documents
from lshsql.sources.ingest import IngestParams, ingest, ingest_if_changed
from lshsql.sources.text import shingles
from tests.conftest import REPO, shared

FIXTURES = REPO / "tests" / "fixtures" / "documents"
REUTERS = FIXTURES / "reuters.sgm"
JSONL = FIXTURES / "docs.jsonl"
ONE = db.Resources(memory_limit="1GB", threads=1)
TWO = db.Resources(memory_limit="1GB", threads=2)


def rows(query: str) -> list[tuple]:
    with duckdb.connect() as con:
        return con.execute(query).fetchall()


def fragments(work: Path) -> dict[tuple[str, str], list[str]]:
    """(url, kind) -> terms of every fragment in the work folder."""
    found = rows(f"select url, kind, terms from read_parquet('{work}/fragments/*/*.parquet')")
    return {(url, kind): terms for url, kind, terms in found}


def outputs(work: Path) -> dict[str, bytes]:
    files = ["pages.parquet", "links.parquet", "labels.parquet"]
    files += sorted(str(p.relative_to(work)) for p in (work / "fragments").glob("*/*.parquet"))
    return {name: (work / name).read_bytes() for name in files}


# --- shingles ------------------------------------------------------------------------------------------


def test_shingles_join_w_consecutive_words() -> None:
    assert shingles(["a", "b", "c", "d"], 2) == ["a b", "b c", "c d"]
    assert shingles(["a", "b", "c", "d"], 3) == ["a b c", "b c d"]


def test_shingles_of_width_one_are_the_words() -> None:
    assert shingles(["a", "b", "a"], 1) == ["a", "b", "a"]


def test_shingles_of_a_short_or_empty_list() -> None:
    assert shingles(["a", "b"], 3) == ["a b"]
    assert shingles(["a", "b", "c"], 3) == ["a b c"]
    assert shingles([], 2) == []


@pytest.mark.parametrize("width", [0, -1, True, 1.5])
def test_shingles_refuse_a_bad_width(width) -> None:
    with pytest.raises(ValueError, match="shingle width"):
        shingles(["a"], width)


# --- Reuters SGML --------------------------------------------------------------------------------------


def test_reuters_records_topics_entities_and_encodings(tmp_path):
    summary = ingest([str(REUTERS)], tmp_path, IngestParams(), ONE)
    assert (summary.records_read, summary.pages_used, summary.skipped) == (5, 4, {"no_body": 1})
    pages = rows(f"select url, record_type, encoding, title, skip_reason from '{tmp_path}/pages.parquet'")
    assert pages == [
        ("1", "reuters", "utf-8", "WHEAT EXPORTS RISE IN ZÜRICH", None),
        ("2", "reuters", "utf-8", "COMPUTER SHOW OPENS", None),
        ("3", "reuters", "utf-8", "BRIEF ITEM WITHOUT A BODY", "no_body"),
        ("4", "reuters", "utf-8", "<ACME CORP> BUYS WIDGETS & GADGETS", None),
        ("5", "reuters", "windows-1252", "BUNDESBANK MEETS IN MUNICH", None),  # the raw 0xFC byte
    ]
    terms = fragments(tmp_path)
    assert terms[("4", "content")] == [
        "acm",
        "corp",
        "said",
        "agre",
        "buy",
        "widget",
        "gadget",
        "mln",
        "dlr",
        "reuter",
    ]
    assert terms[("4", "title")] == ["acm", "corp", "buy", "widget", "gadget"]
    assert "münchen" in terms[("5", "content")] and "zürich" in terms[("1", "content")]
    assert ("3", "content") not in terms and len(terms) == 8
    assert rows(f"select * from '{tmp_path}/labels.parquet'") == [
        ("1", "grain"),
        ("1", "wheat"),
        ("4", "acq"),
        ("5", "money-fx"),
    ]
    assert rows(f"select count(*) from '{tmp_path}/links.parquet'") == [(0,)]


def test_reuters_text_has_entities_decoded_and_control_characters_dropped():
    doc = [d for d in documents.iter_documents(documents.DocSource(str(REUTERS), "reuters")) if d.id == "4"][
        0
    ]
    assert doc.text == "<Acme Corp> said it agreed to buy Widgets & Gadgets Inc\nfor 12 mln dlrs.\n Reuter"
    assert doc.source_offset == REUTERS.read_bytes().index(
        b'<REUTERS TOPICS="YES" LEWISSPLIT="TRAIN" CGISPLIT="TRAINING-SET" OLDID="5004"'
    )


@pytest.mark.parametrize("chunk", [7, 64, 1000])
def test_reuters_elements_split_across_read_chunks_are_found(chunk):
    whole = list(documents._iter_reuters(str(REUTERS)))
    assert list(documents._iter_reuters(str(REUTERS), chunk)) == whole and len(whole) == 5


def test_reuters_require_label_skips_documents_without_topics(tmp_path):
    summary = ingest([str(REUTERS)], tmp_path, IngestParams(require_label=True), ONE)
    assert summary.skipped == {"no_body": 1, "no_label": 1}
    assert summary.pages_used == 3 and summary.labelled_documents == 3


# --- JSON Lines and Parquet ----------------------------------------------------------------------------


def test_jsonl_every_record_used_or_skipped_with_its_reason(tmp_path):
    summary = ingest([str(JSONL)], tmp_path, IngestParams(), ONE)
    assert summary.records_read == 10 == summary.pages_used + sum(summary.skipped.values())
    assert summary.skipped == {"bad_json": 1, "missing_id": 1, "missing_text": 1, "duplicate_url": 1}
    # the text read is the used documents' and that of a1's first record, which the last one replaced
    (replaced,) = rows(f"select n_bytes from '{tmp_path}/pages.parquet' where skip_reason = 'duplicate_url'")
    assert replaced[0] > 0 and summary.text_bytes_read == summary.text_bytes + replaced[0]
    pages = rows(f"select url, source_offset, skip_reason from '{tmp_path}/pages.parquet'")
    lines = JSONL.read_bytes().splitlines(keepends=True)
    offsets = [sum(map(len, lines[:i])) for i, line in enumerate(lines) if line.strip()]
    assert [offset for _, offset, _ in pages] == offsets
    assert [(url, reason) for url, _, reason in pages] == [
        ("a1", "duplicate_url"),  # the id appears again at the end: the record read last wins
        (None, "bad_json"),
        (None, "missing_id"),
        ("e1", "missing_text"),
        ("7", None),  # an integer id becomes a string
        ("n1", None),
        ("n2", None),
        ("s1", None),
        ("s2", None),
        ("a1", None),
    ]
    terms = fragments(tmp_path)
    assert terms[("a1", "content")] == [
        "wheat",
        "harvest",
        "broke",
        "record",
        "farmer",
        "sold",
        "grain",
        "export",
    ]
    assert terms[("a1", "title")] == ["wheat", "harvest"]
    assert ("e1", "content") not in terms
    assert rows(f"select * from '{tmp_path}/labels.parquet'") == [
        ("7", "crude"),
        ("7", "ship"),
        ("a1", "grain"),
        ("n1", "baking"),
        ("n2", "baking"),
        ("s1", "space"),
    ]


def test_gzipped_jsonl_reads_the_same(tmp_path):
    packed = tmp_path / "docs.jsonl.gz"
    packed.write_bytes(gzip.compress(JSONL.read_bytes()))
    ingest([str(JSONL)], tmp_path / "plain", IngestParams(), ONE)
    ingest([str(packed)], tmp_path / "gz", IngestParams(), ONE)
    query = "select url, source_offset, skip_reason, n_bytes from '{}/pages.parquet'"
    assert rows(query.format(tmp_path / "gz")) == rows(query.format(tmp_path / "plain"))


def test_parquet_rows_by_record_batch_with_named_columns(tmp_path, monkeypatch):
    monkeypatch.setattr(documents, "_PARQUET_BATCH", 2)  # several record batches from 5 rows
    table = pa.table(
        {
            "doc": [10, 11, None, 13, 14],
            "body": [
                "red apples and green pears",
                None,
                "no id",
                "ripe yellow bananas",
                "sweet red cherries",
            ],
            "labels": [["fruit", "red"], ["fruit"], [], [], None],
        }
    )
    path = tmp_path / "docs.bin"  # the format comes from the first bytes, not the name
    pq.write_table(table, path)
    params = IngestParams(id_column="doc", text_column="body")
    summary = ingest([str(path)], tmp_path / "w", params, ONE)
    assert summary.skipped == {"missing_text": 1, "missing_id": 1} and summary.pages_used == 3
    pages = rows(f"select url, record_type, source_offset, skip_reason from '{tmp_path}/w/pages.parquet'")
    assert pages == [
        ("10", "document", 0, None),
        ("11", "document", 1, "missing_text"),
        (None, "document", 2, "missing_id"),
        ("13", "document", 3, None),
        ("14", "document", 4, None),
    ]
    assert fragments(tmp_path / "w")[("13", "content")] == ["ripe", "yellow", "banana"]
    assert rows(f"select * from '{tmp_path}/w/labels.parquet'") == [("10", "fruit"), ("10", "red")]
    with pytest.raises(InputError, match="no column 'id'"):
        ingest([str(path)], tmp_path / "x", IngestParams(), ONE)


def test_folder_reads_only_document_files_in_sorted_order(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "README.txt").write_text("not a document")
    (tmp_path / "in" / "b.jsonl").write_text(json.dumps({"id": "b", "text": "beta words"}) + "\n")
    (tmp_path / "in" / "a.sgm").write_bytes(REUTERS.read_bytes())
    sources = documents.resolve_documents([str(tmp_path / "in")])
    assert [(Path(s.path).name, s.kind) for s in sources] == [("a.sgm", "reuters"), ("b.jsonl", "jsonl")]


# --- options -------------------------------------------------------------------------------------------


def test_limit_uses_the_first_usable_documents_in_input_order(tmp_path):
    summary = ingest([str(JSONL)], tmp_path, IngestParams(limit=2), ONE)
    assert summary.pages_used == 2
    assert summary.skipped == {"bad_json": 1, "missing_id": 1, "missing_text": 1, "over_limit": 5}
    used = rows(f"select url, title from '{tmp_path}/pages.parquet' where skip_reason is null")
    assert used == [("a1", "Old wheat report"), ("7", "Tanker traffic")]


def test_require_label_skips_unlabelled_documents(tmp_path):
    summary = ingest([str(JSONL)], tmp_path, IngestParams(require_label=True), ONE)
    assert summary.skipped["no_label"] == 1 and summary.pages_used == 5
    assert rows(f"select url from '{tmp_path}/pages.parquet' where skip_reason = 'no_label'") == [("s2",)]


def test_shingle_option_makes_terms_from_consecutive_normalized_words(tmp_path):
    ingest([str(JSONL)], tmp_path / "words", IngestParams(), ONE)
    ingest([str(JSONL)], tmp_path / "sh", IngestParams(shingle=2), ONE)
    words_, shingled = fragments(tmp_path / "words"), fragments(tmp_path / "sh")
    assert shingled[("a1", "content")][:3] == ["wheat harvest", "harvest broke", "broke record"]
    assert all(shingled[key] == shingles(terms, 2) for key, terms in words_.items())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shingle": 0}, "shingle must be >= 1"),
        ({"shingle": True}, "shingle must be >= 1"),
        ({"limit": 0}, "limit must be >= 1"),
        ({"format": "csv"}, "unknown format 'csv'"),
        ({"language": "xx"}, "unknown language 'xx'"),
        ({"id_column": "text"}, "both 'text'"),
    ],
)
def test_bad_params_are_refused(options, message):
    with pytest.raises(ParamError, match=message):
        IngestParams(**options)


# --- determinism, manifest, pipeline -------------------------------------------------------------------


def test_output_is_byte_identical_whatever_the_workers(tmp_path):
    params = IngestParams(batch_records=2)  # several batches, finished out of order by the pool
    ingest([str(JSONL), str(REUTERS)], tmp_path / "one", params, ONE)
    ingest([str(JSONL), str(REUTERS)], tmp_path / "two", params, TWO)
    one, two = outputs(tmp_path / "one"), outputs(tmp_path / "two")
    assert len(one) == 3 + 16 and one == two


def test_manifest_entry_and_skipping_when_unchanged(tmp_path):
    summary = ingest([str(JSONL)], tmp_path, IngestParams(), ONE)
    entry = manifest.read(tmp_path)["stages"]["extract"]
    assert entry["kind"] == "documents" and len(entry["fingerprint"]) == 16
    assert entry["params"]["shingle"] is None and entry["params"]["id_column"] == "id"
    assert entry["counts"]["pages_used"] == summary.pages_used == 6
    assert entry["counts"]["skipped"] == summary.skipped
    assert ingest_if_changed([str(JSONL)], tmp_path, IngestParams(), ONE) is None
    again = ingest_if_changed([str(JSONL)], tmp_path, IngestParams(limit=3), ONE)
    assert again is not None and again.pages_used == 3
    assert manifest.read(tmp_path)["stages"]["extract"]["fingerprint"] != entry["fingerprint"]


def test_run_after_ingest_pairs_the_near_duplicates(tmp_path):
    ingest([str(JSONL)], tmp_path, IngestParams(), TWO)
    run(tmp_path, Params(threshold=0.3), resources=TWO)
    pairs = rows(f"select u, v from '{tmp_path}/pairs.parquet'")
    assert ("n1", "n2") in pairs
    assert not [p for p in pairs if ("n1" in p or "n2" in p) and p != ("n1", "n2")]
    clusters = dict(rows(f"select url, center from '{tmp_path}/clusters.parquet'"))
    assert clusters["n1"] == clusters["n2"] != clusters["s1"]


def test_no_usable_document_is_an_input_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "x"}\nnot json\n')
    with pytest.raises(
        InputError, match=r"no usable document among 2 records \(1 bad_json, 1 missing_text\)"
    ):
        ingest([str(path)], tmp_path / "w", IngestParams(), ONE)


# --- command line --------------------------------------------------------------------------------------


def lshsql(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lshsql", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_prints_the_summary_and_skips_when_up_to_date(tmp_path):
    args = ("ingest", str(JSONL), "--work", str(tmp_path / "w"), "--quiet", "--threads", "1")
    result = lshsql(*args)
    assert result.returncode == 0, result.stderr
    assert "records read:    10 = 6 documents used + 4 skipped" in result.stdout
    assert "  skipped bad_json: 1" in result.stdout
    assert "labels:          6 rows, 5 distinct, on 5 documents" in result.stdout
    assert "URLs described:  6" in result.stdout
    again = lshsql(*args)
    assert again.returncode == 0 and again.stdout.startswith("up to date")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["/nonexistent/docs.jsonl"], "/nonexistent/docs.jsonl: no such file"),
        ([str(JSONL), "--shingle", "0"], "shingle must be >= 1"),
        ([str(JSONL), "--format", "xml"], "unknown format 'xml'"),
        ([str(JSONL), "--format", "parquet"], "not a readable Parquet file"),
        ([str(JSONL), "--text-column", "body"], "no field 'body' (fields: id, title, text, label); name it"),
        ([str(JSONL), "--extra-stopwords", "/nonexistent/stop.txt"], "stop.txt"),
    ],
)
def test_cli_bad_input_gives_one_line_and_a_nonzero_exit(tmp_path, args, message, lshsql_command):
    result = lshsql_command("ingest", *args, "--work", str(tmp_path / "w"), "--quiet")
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("lshsql: error: ") and message in result.stderr
    assert "Traceback" not in result.stderr


# --- the real collection -------------------------------------------------------------------------------


@pytest.mark.slow  # the whole real collection from ../shared
def test_reuters_21578_all_files(tmp_path):
    folder = shared("reuters21578")
    summary = ingest([str(folder)], tmp_path, IngestParams(require_label=True), TWO)
    assert len(summary.files) == 22 and summary.records_read == 21_578
    assert summary.pages_used == 10_377  # a BODY and at least one topic
    assert summary.skipped == {"no_body": 2_535, "no_label": 8_666}
    assert summary.labelled_documents == 10_377


def test_a_file_that_breaks_while_read_is_a_one_line_error(tmp_path):
    """A corrupt data page of a Parquet file, a gzip stream cut before its first line: InputError, never a
    traceback."""
    table = pa.table(
        {"id": [str(i) for i in range(20000)], "text": [f"words {i} more {i * 7}" for i in range(20000)]}
    )
    parquet = tmp_path / "docs.parquet"
    pq.write_table(table, parquet, compression="zstd", row_group_size=5000)
    data = bytearray(parquet.read_bytes())
    for i in range(len(data) // 3, len(data) // 3 + 64):  # inside the first row groups' pages
        data[i] ^= 0xFF
    parquet.write_bytes(bytes(data))
    jsonl = tmp_path / "docs.jsonl.gz"
    jsonl.write_bytes(cut_gzip_documents(5000, 0.002))  # cut before its first line
    for path in (parquet, jsonl):
        with pytest.raises(InputError, match="cannot be read|cannot read|not a readable"):
            ingest([str(path)], tmp_path / f"w-{path.stem}", IngestParams())


def cut_gzip_documents(n: int, keep: float) -> bytes:
    """A gzipped JSON Lines file of n documents, cut after `keep` of its compressed bytes."""
    lines = "".join(json.dumps({"id": str(i), "text": f"x y z {i * 7919}"}) + "\n" for i in range(n))
    whole = gzip.compress(lines.encode())
    return whole[: int(len(whole) * keep)]


def test_a_cut_gzip_jsonl_keeps_the_documents_before_the_cut(tmp_path):
    path = tmp_path / "docs.jsonl.gz"
    path.write_bytes(cut_gzip_documents(5000, 0.5))
    summary = ingest([str(path)], tmp_path / "w", IngestParams(), ONE)
    assert summary.skipped == {"read_error": 1} and summary.pages_used > 100
    assert summary.records_read == summary.pages_used + 1
    used = rows(f"select url from '{tmp_path}/w/pages.parquet' where skip_reason is null order by record_id")
    assert [url for (url,) in used] == [str(i) for i in range(summary.pages_used)]


def test_jsonl_bad_values_are_skipped_or_cleaned(tmp_path):
    """A wrong type in any field is `bad_value`; lone surrogates become U+FFFD; nothing stops the ingest."""
    path = tmp_path / "docs.jsonl"
    path.write_text(
        "\n".join(
            [
                '{"id": "ok", "text": "plain words", "title": "T", "label": "a", "labels": ["b", 3, 1.5]}',
                '{"id": "s\\ud800", "text": "odd \\udfff words", "title": "x\\ud800", "label": "l\\ud800"}',
                '{"id": 99999999999999999999999, "text": "a huge integer id"}',
                '{"id": "nan", "text": "a NaN label is no label", "label": NaN}',
                '{"id": true, "text": "x"}',
                '{"id": 1.5, "text": "x"}',
                '{"id": ["x"], "text": "x"}',
                '{"id": "t5", "text": 5}',
                '{"id": "tl", "text": ["x"]}',
                '{"id": "ti", "text": "x", "title": 5}',
                '{"id": "lb", "text": "x", "labels": [{"a": 1}]}',
                '{"id": "lt", "text": "x", "label": true}',
                '{"id": "e", "text": null}',
                "[1]",
                "[" * 100_000,
            ]
        )
        + "\n",
        encoding="ascii",
    )
    summary = ingest([str(path)], tmp_path / "w", IngestParams(), ONE)
    assert summary.records_read == 15 == summary.pages_used + sum(summary.skipped.values())
    assert summary.pages_used == 4
    assert summary.skipped == {"bad_value": 8, "missing_text": 1, "bad_json": 2}
    used = rows(f"select url, title from '{tmp_path}/w/pages.parquet' where skip_reason is null order by url")
    assert used == [("99999999999999999999999", None), ("nan", None), ("ok", "T"), ("s\ufffd", "x\ufffd")]
    assert fragments(tmp_path / "w")[("s\ufffd", "content")] == ["odd", "word"]
    assert rows(f"select * from '{tmp_path}/w/labels.parquet'") == [
        ("ok", "1.5"),
        ("ok", "3"),
        ("ok", "a"),
        ("ok", "b"),
        ("s\ufffd", "l\ufffd"),
    ]
