"""`lshsql dedup` end to end: planted near-duplicates and near-misses, keep policies, --against, formats
kept as they were, bad input, the CLI as a user runs it."""

from __future__ import annotations

import csv
import datetime
import decimal
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import types

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import lshsql
from lshsql.cli import app
from lshsql.engines.duckdb import Resources
from lshsql.errors import InputError, LshsqlError, ParamError
from lshsql.sources import corpus
from lshsql.tools import dedup_output
from lshsql.tools.dedup import DedupParams, dedup_files

RNG = np.random.default_rng(20261126)
VOCAB = [f"{a}{b}{c}" for a in "bcdfghklmnprstvz" for b in "aeiou" for c in "bcdfghklmnprstvz"][:3000]


def words(n: int) -> list[str]:
    return [VOCAB[i] for i in RNG.integers(0, len(VOCAB), n)]


def text(ws: list[str]) -> str:
    return " ".join(ws).capitalize() + "."


def planted() -> tuple[list[dict], dict[str, str]]:
    """Documents and the removals a correct dedup makes: {removed id: kept id}."""
    docs, expected = [], {}

    def add(doc_id, body, **extra):
        docs.append({"id": doc_id, "text": body, **extra})

    base = words(300)
    add("orig", text(base))
    add("exact", text(base))
    expected["exact"] = "orig"
    edited_src = words(400)
    edited = list(edited_src)
    for i in (50, 200, 350):
        edited[i] = "changed"
    add("edit-src", text(edited_src))
    add("edited", text(edited))
    expected["edited"] = "edit-src"
    paras = [words(100) for _ in range(4)]
    add("paras", "\n\n".join(text(p) for p in paras))
    add("reordered", "\n\n".join(text(p) for p in (paras[2], paras[0], paras[3], paras[1])))
    expected["reordered"] = "paras"
    plain = words(350)
    add("plain", text(plain))
    add(
        "boilerplate",
        text(plain) + " Subscribe to our newsletter for more stories like this one, it is free.",
    )
    expected["boilerplate"] = "plain"
    shared = words(200)  # near-misses: a long shared passage, Jaccard about 0.33 and 0.55
    add("share-a", text(shared + words(200)))
    add("share-b", text(shared + words(200)))
    add("share-c", text(shared + words(120)))
    add("share-d", text(words(60) + shared + words(100)))
    chain = words(480)  # A ~ B and B ~ C, A and C below the threshold: B goes, A and C stay
    add("chain-a", text(chain[0:400]))
    add("chain-b", text(chain[40:440]))
    add("chain-c", text(chain[80:480]))
    expected["chain-b"] = "chain-a"
    for i in range(25):
        add(f"other-{i}", text(words(int(RNG.integers(100, 300)))))
    return docs, expected


DOCS, EXPECTED = planted()


def write_jsonl(path, docs) -> None:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as f:
        for doc in docs:
            f.write(json.dumps(doc) + "\n")


def removed_map(work) -> dict[str, str]:
    table = lshsql.removed(work)
    return {row["id"]: row["kept_id"] for row in table.to_pylist() if row["reason"] == "duplicate"}


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dedup")
    write_jsonl(folder / "corpus.jsonl", DOCS)
    summary = dedup_files(
        [str(folder / "corpus.jsonl")],
        folder / "work",
        out=folder / "kept.jsonl",
        removed=folder / "removed.parquet",
    )
    return folder, summary


def test_planted_duplicates_removed_and_near_misses_kept(corpus_run):
    folder, summary = corpus_run
    assert removed_map(folder / "work") == EXPECTED
    kept_ids = [json.loads(line)["id"] for line in (folder / "kept.jsonl").read_text().splitlines()]
    assert kept_ids == [d["id"] for d in DOCS if d["id"] not in EXPECTED]  # input order
    assert (summary.records_read, summary.kept, summary.removed) == (len(DOCS), len(DOCS) - 5, 5)
    assert summary.groups == 5 and summary.largest_group == 2 and summary.skipped == {}


def test_removed_pairs_are_direct_near_duplicates(corpus_run):
    folder, _ = corpus_run
    table = pq.read_table(folder / "removed.parquet").to_pylist()
    assert [r["id"] for r in table] == [d["id"] for d in DOCS if d["id"] in EXPECTED]
    by_id = {d["id"]: i for i, d in enumerate(DOCS)}
    for r in table:
        assert r["reason"] == "duplicate" and r["similarity"] >= 0.7 and not r["kept_earlier"]
        assert r["row"] == by_id[r["id"]] and r["kept_row"] == by_id[r["kept_id"]]
    assert next(r for r in table if r["id"] == "exact")["similarity"] == 1.0


def test_kept_lines_are_the_input_lines_byte_for_byte(tmp_path):  # but blanks around the object
    lines = [
        '{"text": "Ünïcode and  spacing kept", "id": 1, "extra": {"nested": [1, 2.50, null]}}',
        '{"id":2,"text":"Ünïcode and  spacing kept"}',
        '  {"id": "x", "text": "\\u00dcn\\u00efcode escaped but another text entirely here"}',
    ]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    dedup_files([str(tmp_path / "in.jsonl")], tmp_path / "w", out=tmp_path / "out.jsonl")
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines() == [lines[0], lines[2].strip()]


def test_removed_rows_with_their_kept_document(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", DOCS)
    dedup_files(
        [str(tmp_path / "in.jsonl")], tmp_path / "w1", removed=tmp_path / "r.jsonl", removed_rows=True
    )
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [d["id"] for d in DOCS if d["id"] in EXPECTED]
    by_id = {d["id"]: i for i, d in enumerate(DOCS)}
    for r in rows:
        assert r["text"] == DOCS[by_id[r["id"]]]["text"]  # the record itself, with three fields added
        assert r["lshsql_kept_id"] == EXPECTED[r["id"]] and r["lshsql_kept_row"] == by_id[r["lshsql_kept_id"]]
        assert 0.7 <= r["lshsql_similarity"] <= 1.0
    pq.write_table(pa.Table.from_pylist(DOCS), tmp_path / "in.parquet")
    dedup_files(
        [str(tmp_path / "in.parquet")], tmp_path / "w2", removed=tmp_path / "r.parquet", removed_rows=True
    )
    table = pq.read_table(tmp_path / "r.parquet")
    assert table.column_names == ["id", "text", "lshsql_kept_row", "lshsql_kept_id", "lshsql_similarity"]
    assert table.column("lshsql_kept_id").to_pylist() == [EXPECTED[i] for i in table.column("id").to_pylist()]


@pytest.mark.parametrize("name", ["r.parquet", "r.csv", "r.csv.gz", "r.jsonl"])
def test_removed_rows_of_a_corpus_without_duplicates_have_the_columns(tmp_path, name):
    # nothing removed: the file still has the columns a removed row would have (JSON Lines has none to say)
    unique = [d for d in DOCS if d["id"] not in EXPECTED]
    write_jsonl(tmp_path / "in.jsonl", unique)
    summary = dedup_files(
        [str(tmp_path / "in.jsonl")], tmp_path / "w", out=tmp_path / "kept.parquet", removed=tmp_path / name,
        removed_rows=True,
    )  # fmt: skip
    assert summary.removed == 0
    columns = ["id", "text", "lshsql_kept_row", "lshsql_kept_id", "lshsql_similarity"]
    if name == "r.parquet":
        table = pq.read_table(tmp_path / name)
        assert table.num_rows == 0 and table.column_names == columns
        assert table.schema.field("lshsql_similarity").type == pa.float64()
    elif name == "r.jsonl":
        assert (tmp_path / name).read_bytes() == b""
    else:
        raw = (tmp_path / name).read_bytes()
        header = (gzip.decompress(raw) if name.endswith(".gz") else raw).decode()
        assert header.splitlines() == [",".join(f'"{c}"' for c in columns)]


def test_json_lines_and_parquet_together(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", DOCS[:20])
    pq.write_table(pa.Table.from_pylist(DOCS[20:]), tmp_path / "b.parquet")
    inputs = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.parquet")]
    for out in ("out.jsonl", "out.parquet", "out.csv"):
        dedup_files(inputs, tmp_path / f"w-{out}", out=tmp_path / out)
    kept = [d["id"] for d in DOCS if d["id"] not in EXPECTED]
    assert pq.read_table(tmp_path / "out.parquet").column("id").to_pylist() == kept
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == kept
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == '"id","text"'


def test_gzipped_in_and_out(tmp_path):
    write_jsonl(tmp_path / "in.jsonl.gz", DOCS)
    dedup_files([str(tmp_path / "in.jsonl.gz")], tmp_path / "w", out=tmp_path / "out.jsonl.gz")
    with gzip.open(tmp_path / "out.jsonl.gz", "rt") as f:
        assert len(f.read().splitlines()) == len(DOCS) - len(EXPECTED)


def test_parquet_round_trip_keeps_column_types(tmp_path):
    n = len(DOCS)
    table = pa.table(
        {
            "doc": pa.array(range(n), pa.int32()),
            "body": pa.array([d["text"] for d in DOCS], pa.large_string()),
            "when": pa.array(
                [datetime.datetime(2026, 1, 1, 12, i % 60) for i in range(n)], pa.timestamp("us", "UTC")
            ),
            "tags": pa.array([["a", str(i)] for i in range(n)], pa.list_(pa.string())),
            "meta": pa.array([{"k": i, "v": 0.5} for i in range(n)]),
            "price": pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2)),
        }
    )
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=7)
    params = DedupParams(id_column="doc", text_column="body")
    dedup_files([str(tmp_path / "in.parquet")], tmp_path / "w", params, out=tmp_path / "out.parquet")
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.schema.equals(table.schema)
    keep = [i for i, d in enumerate(DOCS) if d["id"] not in EXPECTED]
    assert out.equals(table.take(keep))
    assert {r["id"] for r in lshsql.removed(tmp_path / "w").to_pylist()} == {
        str(i) for i, d in enumerate(DOCS) if d["id"] in EXPECTED
    }


def test_csv_and_json_lines_to_parquet(tmp_path):
    import csv

    with open(tmp_path / "in.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, ["id", "text"])
        writer.writeheader()
        writer.writerows(DOCS)
    dedup_files([str(tmp_path / "in.csv")], tmp_path / "w1", out=tmp_path / "out.csv")
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        assert [r["id"] for r in csv.DictReader(f)] == [d["id"] for d in DOCS if d["id"] not in EXPECTED]
    write_jsonl(tmp_path / "in.jsonl", [{"n": i, **d} for i, d in enumerate(DOCS)])
    dedup_files([str(tmp_path / "in.jsonl")], tmp_path / "w2", out=tmp_path / "out.parquet")
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column_names == ["n", "id", "text"] and out.schema.field("n").type == pa.int64()
    assert out.column("id").to_pylist() == [d["id"] for d in DOCS if d["id"] not in EXPECTED]


def test_keys_duckdb_cannot_name_keep_their_names_in_parquet_and_csv(tmp_path):
    # read_json calls the second of two keys equal but for case `Text_1`, and turns rows with a key ""
    # into one JSON column; the outputs keep the input's keys and values
    rows = [{"n": i, **d, "Text": f"T{i}", "": "e" if i % 2 else None} for i, d in enumerate(DOCS)]
    kept = [r for r in rows if r["id"] not in EXPECTED]
    kept[0]["note"] = "naïve — 雪"
    write_jsonl(tmp_path / "in.jsonl", rows)
    dedup_files([str(tmp_path / "in.jsonl")], tmp_path / "w1", out=tmp_path / "out.parquet")
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column_names == ["n", "id", "text", "Text", "", "note"]
    assert out.column("Text").to_pylist() == [r["Text"] for r in kept]
    assert out.column("").to_pylist() == [r[""] for r in kept]
    assert out.column("note").to_pylist()[:2] == ["naïve — 雪", None]
    dedup_files([str(tmp_path / "in.jsonl")], tmp_path / "w2", out=tmp_path / "out.csv")
    header = (tmp_path / "out.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header == '"n","id","text","Text","","note"'


def test_nested_keys_equal_but_for_case_are_written_as_json_text(tmp_path):
    # read_json cannot make a struct of {"Content-Type": .., "content-type": ..} (HTTP headers as a crawler
    # records them): the columns are typed by their values' kinds, such objects kept as their JSON text
    rows = [
        {
            "n": i,
            **d,
            "headers": {"Content-Type": "text/html", "content-type": "text/plain"} if i == 0 else {"a": i},
            "score": i / 2,
            "ok": i % 2 == 0,
            "mixed": i if i % 3 else f"s{i}",
            "big": 2**63 + i,  # beyond BIGINT: DECIMAL(38, 0), as read_json types it
            "": "empty key",
        }
        for i, d in enumerate(DOCS)
    ]
    kept = [r for r in rows if r["id"] not in EXPECTED]
    write_jsonl(tmp_path / "in.jsonl", rows)
    dedup_files([str(tmp_path / "in.jsonl")], tmp_path / "w1", out=tmp_path / "out.parquet")
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column_names == ["n", "id", "text", "headers", "score", "ok", "mixed", "big", ""]
    assert out.column("big").to_pylist() == [decimal.Decimal(r["big"]) for r in kept]
    types = {f.name: f.type for f in out.schema}
    assert types["n"] == pa.int64() and types["score"] == pa.float64() and types["ok"] == pa.bool_()
    assert types["text"] == types["headers"] == types["mixed"] == pa.string()
    assert [json.loads(h) for h in out.column("headers").to_pylist()] == [r["headers"] for r in kept]
    assert out.column("mixed").to_pylist() == [str(r["mixed"]) for r in kept]  # a string as itself
    assert out.column("text").to_pylist() == [r["text"] for r in kept]
    assert out.column("score").to_pylist() == [r["score"] for r in kept]
    dedup_files([str(tmp_path / "in.jsonl")], tmp_path / "w2", out=tmp_path / "out.csv")
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        read = list(csv.DictReader(f))
    assert [json.loads(r["headers"]) for r in read] == [r["headers"] for r in kept]
    assert [r["n"] for r in read] == [str(r["n"]) for r in kept]
    # JSON Lines out and removed rows of no duplicate: nothing to type, so nothing typed
    unique = [r for r in rows if r["id"] not in EXPECTED]
    write_jsonl(tmp_path / "unique.jsonl", unique)
    dedup_files(
        [str(tmp_path / "unique.jsonl")], tmp_path / "w3", out=tmp_path / "u.jsonl", removed=tmp_path / "r.jsonl",
        removed_rows=True,
    )  # fmt: skip
    assert (tmp_path / "r.jsonl").read_bytes() == b"" and len(
        (tmp_path / "u.jsonl").read_text().splitlines()
    ) == len(unique)


def test_inputs_with_different_columns_make_one_table(tmp_path):
    # JSON Lines shards that type a key differently, a key only some have, and a Parquet file between
    # them: one output with every column, nulls where a row has none, in input order
    third = len(DOCS) // 3
    parts = DOCS[:third], DOCS[third : 2 * third], DOCS[2 * third :]
    write_jsonl(tmp_path / "a.jsonl", [{**d, "score": 1} for d in parts[0]])
    pq.write_table(
        pa.table(
            {
                "id": [d["id"] for d in parts[1]],
                "text": [d["text"] for d in parts[1]],
                "rank": [2.5] * len(parts[1]),
            }
        ),
        tmp_path / "b.parquet",
    )
    write_jsonl(tmp_path / "c.jsonl", [{**d, "score": 0.5, "tags": ["x"]} for d in parts[2]])
    inputs = [str(tmp_path / name) for name in ("a.jsonl", "b.parquet", "c.jsonl")]
    dedup_files(inputs, tmp_path / "w1", out=tmp_path / "out.parquet")
    out = pq.read_table(tmp_path / "out.parquet")
    kept = [d["id"] for d in DOCS if d["id"] not in EXPECTED]
    # columns in the order met, the JSON Lines inputs' keys together where the first of them is
    assert out.column_names == ["id", "text", "score", "tags", "rank"]
    assert out.column("id").to_pylist() == kept
    assert out.schema.field("score").type == pa.float64() and out.schema.field("rank").type == pa.float64()
    where = {d["id"]: i for i, d in enumerate(DOCS)}
    expected_score = [1.0 if where[k] < third else None if where[k] < 2 * third else 0.5 for k in kept]
    assert out.column("score").to_pylist() == expected_score
    assert out.column("rank").to_pylist() == [2.5 if third <= where[k] < 2 * third else None for k in kept]
    assert lshsql.dedup(inputs, tmp_path / "w2").equals(out)
    dedup_files(inputs[1::-1], tmp_path / "w4", out=tmp_path / "first.parquet")  # the Parquet file first
    assert pq.read_table(tmp_path / "first.parquet").column_names == ["id", "text", "rank", "score"]
    dedup_files(inputs[:2], tmp_path / "w3", out=tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_text(encoding="utf-8").splitlines()[0] == '"id","text","score","rank"'


def test_inputs_whose_columns_cannot_meet_are_refused_before_the_work(tmp_path):
    pq.write_table(pa.table({"id": [1], "text": ["one two three four five six"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": ["x"], "text": ["seven eight nine ten eleven"]}), tmp_path / "b.parquet")
    inputs = [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]
    with pytest.raises(InputError, match=r"b.parquet: its columns and those of the inputs before it cannot"):
        dedup_files(inputs, tmp_path / "w", out=tmp_path / "out.parquet")
    assert not (tmp_path / "w").exists() and not (tmp_path / "out.parquet").exists()
    summary = dedup_files(inputs, tmp_path / "w2", out=tmp_path / "out.jsonl")  # JSON Lines hold both
    assert summary.kept == 2
    dedup_files(inputs, tmp_path / "w3", out=tmp_path / "out.csv")  # and CSV, as text
    assert (tmp_path / "out.csv").read_text(encoding="utf-8").splitlines()[1:] == [
        '"1","one two three four five six"',
        '"x","seven eight nine ten eleven"',
    ]
    pq.write_table(pa.table({"id": [2.5], "text": ["seven eight nine ten eleven"]}), tmp_path / "c.parquet")
    pq.write_table(
        pa.table({"id": [2**53 + 1], "text": ["one two three four five six"]}), tmp_path / "a.parquet"
    )
    with pytest.raises(InputError, match="column 'id': a value cannot take the type double"):
        lshsql.dedup([str(tmp_path / "a.parquet"), str(tmp_path / "c.parquet")], tmp_path / "w4")


def test_a_key_typed_apart_by_the_shards_is_text_and_json_lines_stay_as_read(tmp_path):
    # a number in one shard and a string in another, an object and a list: DuckDB types such a key JSON,
    # whose strings are quoted; written as text they are the strings themselves
    texts = ["alpha beta gamma delta epsilon zeta eta", "one two three four five six seven eight"]
    write_jsonl(tmp_path / "a.jsonl", [{"id": "a", "text": texts[0], "year": 2020, "n": {"a": 1}}])
    write_jsonl(tmp_path / "b.jsonl", [{"id": "b", "text": texts[1], "year": 'say "hi"', "n": [1]}])
    inputs = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    dedup_files(inputs, tmp_path / "w1", out=tmp_path / "out.parquet")
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column("year").to_pylist() == ["2020", 'say "hi"']
    assert out.column("n").to_pylist() == ['{"a":1}', "[1]"]
    # JSON Lines out of JSON Lines and Parquet: the JSON Lines rows as they were read, byte for byte
    line = '{"id": "j", "text": "' + texts[0] + '", "Text": "T", "": 1, "big": 12345678901234567890123}'
    (tmp_path / "c.jsonl").write_text(line + "\n", encoding="utf-8")
    pq.write_table(pa.table({"id": ["p"], "text": [texts[1]]}), tmp_path / "d.parquet")
    dedup_files(
        [str(tmp_path / "c.jsonl"), str(tmp_path / "d.parquet")], tmp_path / "w2", out=tmp_path / "o.jsonl"
    )
    lines = (tmp_path / "o.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines[0] == line and json.loads(lines[1]) == {"id": "p", "text": texts[1]}


def test_keep_policies(tmp_path):
    docs = [dict(d) for d in DOCS]
    for i, d in enumerate(docs):
        d["score"] = 10 if d["id"] in EXPECTED else i % 5  # every removed one scores higher than its kept
        d["date"] = "2026-01-02" if d["id"] in EXPECTED else "2025-12-31"
    write_jsonl(tmp_path / "in.jsonl", docs)
    flipped = {removed: kept for removed, kept in EXPECTED.items() if removed != "chain-b"}
    for keep in ("score", "date"):
        work = tmp_path / keep
        dedup_files([str(tmp_path / "in.jsonl")], work, DedupParams(keep=keep))
        got = removed_map(work)
        for removed, kept in flipped.items():
            assert got[kept] == removed, keep  # the higher value stays
    with pytest.raises(InputError, match="no record has a 'nope' field to keep by"):
        dedup_files([str(tmp_path / "in.jsonl")], tmp_path / "nope", DedupParams(keep="nope"))
    dedup_files([str(tmp_path / "in.jsonl")], tmp_path / "longest", DedupParams(keep="longest"))
    longest = removed_map(tmp_path / "longest")
    assert longest["plain"] == "boilerplate" and longest["exact"] == "orig"  # a tie goes to input order


def test_against_an_earlier_corpus(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "SCAN_ROWS", 4)  # many batches: url_ids continue across them
    first, second = DOCS[:20], DOCS[20:]
    earlier_kept = {"orig", "edit-src", "paras"}  # kept by the first dedup
    copies = [{"id": "again-" + d["id"], "text": d["text"]} for d in first if d["id"] in earlier_kept]
    write_jsonl(tmp_path / "a.jsonl", first)
    write_jsonl(tmp_path / "b.jsonl", copies + second)
    dedup_files([str(tmp_path / "a.jsonl")], tmp_path / "wa")
    before = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (tmp_path / "wa").rglob("*")
        if p.is_file()
    }
    summary = dedup_files(
        [str(tmp_path / "b.jsonl")], tmp_path / "wb", against=tmp_path / "wa", out=tmp_path / "b_kept.jsonl"
    )
    after = {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (tmp_path / "wa").rglob("*")
        if p.is_file()
    }
    assert before == after  # the earlier folder is only read
    removed = {r["id"]: r for r in lshsql.removed(tmp_path / "wb").to_pylist()}
    for copy in copies:
        row = removed[copy["id"]]
        assert row["kept_earlier"] and row["kept_id"] == copy["id"][len("again-") :] in earlier_kept
    assert summary.removed_by_earlier == 3
    # the new folder indexes both corpora: a third one is checked against both
    write_jsonl(
        tmp_path / "c.jsonl",
        [{"id": "third", "text": DOCS[-1]["text"]}, {"id": "4th", "text": DOCS[0]["text"]}],
    )
    dedup_files([str(tmp_path / "c.jsonl")], tmp_path / "wc", against=tmp_path / "wb")
    assert removed_map(tmp_path / "wc") == {"third": DOCS[-1]["id"], "4th": DOCS[0]["id"]}
    with pytest.raises(InputError, match="names the work folder itself"):
        dedup_files([str(tmp_path / "c.jsonl")], tmp_path / "wb", against=tmp_path / "wb")
    assert (tmp_path / "wb" / "bags.parquet").exists()
    with pytest.raises(ParamError, match="--threshold"):
        dedup_files(
            [str(tmp_path / "c.jsonl")], tmp_path / "wd", DedupParams(threshold=0.8), against=tmp_path / "wb"
        )


def test_an_earlier_index_hashed_otherwise_is_refused(tmp_path, corpus_run):
    folder, _ = corpus_run
    earlier = tmp_path / "earlier"
    shutil.copytree(folder / "work", earlier)
    data = json.loads((earlier / "manifest.json").read_text())
    data["dedup"]["index"]["probe"] = 728277943280765549  # an index made before texts were NFKC-normalized
    (earlier / "manifest.json").write_text(json.dumps(data))
    write_jsonl(tmp_path / "new.jsonl", DOCS[:3])
    with pytest.raises(InputError, match="its shingles were hashed differently .*: dedup it again"):
        dedup_files([str(tmp_path / "new.jsonl")], tmp_path / "work", against=earlier)


def test_explain_clusters_and_query_read_a_dedup_folder(corpus_run):
    folder, _ = corpus_run
    work = str(folder / "work")
    runner = CliRunner()
    pair = runner.invoke(app, ["explain", "--work", work, "000000000003 edit-src", "000000000004 edited"])
    assert pair.exit_code == 0, pair.output
    lines = pair.output.splitlines()
    assert lines[:2] == ["u: 000000000003 edit-src (kept)", "v: 000000000004 edited (duplicate of edit-src)"]
    assert re.search(r"shingles: (\d+) shared, 15 only in u, 15 only in v: Jaccard 0\.9\d\d", lines[2])
    assert "words that differ (u | v):" in lines and any(" | changed" in line for line in lines)
    one = runner.invoke(app, ["explain", "--work", work, "000000000001 orig"])
    assert one.exit_code == 0 and "decision: kept" in one.output
    assert "exact copies (the same shingles): 1, compared as this document" in one.output
    clusters = runner.invoke(app, ["clusters", "--work", work, "--limit", "2"])
    assert clusters.exit_code == 0 and "000000000001 orig" in clusters.output
    table = lshsql.query(work, "select count(*) as n from duplicates where reason = 'duplicate'")
    assert table.to_pylist() == [{"n": 5}]
    # `run` would take it for a crawl's folder: it says whose folder it is and changes nothing
    before = (folder / "work" / "manifest.json").read_bytes()
    rerun = runner.invoke(app, ["run", "--work", work, "-q"])
    assert isinstance(rerun.exception, InputError)  # main() prints it as one line and exits with 2
    assert "the work folder of `lshsql dedup`" in str(rerun.exception)
    assert (folder / "work" / "manifest.json").read_bytes() == before


def test_character_shingles_for_text_without_spaces(tmp_path):
    hanzi = [chr(c) for c in range(0x4E00, 0x4E00 + 2000)]
    story = "".join(hanzi[i] for i in RNG.integers(0, 2000, 400))
    edited = story[:150] + "改" + story[151:300] + story[310:]
    docs = [{"id": "story", "text": story}, {"id": "edited", "text": edited}]
    docs += [
        {"id": f"other-{i}", "text": "".join(hanzi[j] for j in RNG.integers(0, 2000, 300))} for i in range(5)
    ]
    write_jsonl(tmp_path / "zh.jsonl", docs)
    dedup_files([str(tmp_path / "zh.jsonl")], tmp_path / "words")
    assert removed_map(tmp_path / "words") == {}  # one long word each: only exact copies would match
    dedup_files([str(tmp_path / "zh.jsonl")], tmp_path / "chars", DedupParams(char_shingle=3))
    assert removed_map(tmp_path / "chars") == {"edited": "story"}


def test_records_that_cannot_be_compared_are_counted(tmp_path):
    lines = [
        json.dumps(DOCS[0]),
        "this is not json",
        "[1, 2, 3]",
        json.dumps({"id": "null", "text": None}),
        json.dumps({"id": "number", "text": 42}),
        json.dumps({"id": "punct", "text": "!!! ---"}),
        json.dumps({"id": "missing"}),
        "",
        json.dumps(DOCS[1]),
    ]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    summary = dedup_files(
        [str(tmp_path / "in.jsonl")], tmp_path / "w", out=tmp_path / "out.jsonl", removed=tmp_path / "r.csv"
    )
    assert summary.skipped == {
        "malformed_json": 1,
        "no_text": 2,
        "no_words": 1,
        "not_an_object": 1,
        "text_not_a_string": 1,
    }
    assert (summary.records_read, summary.kept, summary.removed) == (8, 1, 1)  # the blank line is no record
    assert (tmp_path / "out.jsonl").read_text().splitlines() == [lines[0]]
    assert len((tmp_path / "r.csv").read_text().splitlines()) == 1 + 7


def test_bad_input_gives_one_line_errors(tmp_path):
    write_jsonl(tmp_path / "body.jsonl", [{"id": 1, "body": "some words here"}])
    with pytest.raises(InputError, match=r"no record has a 'text' field \(found: body, id\).*--text-column"):
        dedup_files([str(tmp_path / "body.jsonl")], tmp_path / "w1")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(InputError, match="no records"):
        dedup_files([str(tmp_path / "empty.jsonl")], tmp_path / "w2")
    with pytest.raises(InputError, match="name the output"):
        dedup_files([str(tmp_path / "body.jsonl")], tmp_path / "w3", out=tmp_path / "out.txt")
    pq.write_table(pa.table({"id": [1], "text": [3]}), tmp_path / "int.parquet")
    with pytest.raises(InputError, match="'text' is int64, not text"):
        dedup_files([str(tmp_path / "int.parquet")], tmp_path / "w4")
    with pytest.raises(InputError, match="no such file"):
        dedup_files([str(tmp_path / "missing.jsonl")], tmp_path / "w5")
    with pytest.raises(ParamError, match="threshold"):
        DedupParams(threshold=1.5)
    write_jsonl(tmp_path / "docs.jsonl", DOCS)
    with pytest.raises(
        ParamError, match=r"with m = 3 min-hashes: raise --num-perm$"
    ):  # dedup takes no -k, -l
        dedup_files([str(tmp_path / "docs.jsonl")], tmp_path / "w6", DedupParams(num_perm=3))


def test_a_folder_holding_earlier_outputs_and_other_work_folders(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    write_jsonl(folder / "corpus.jsonl", DOCS)
    for _ in range(2):  # the second run must not read the first one's outputs and work folder as input
        summary = dedup_files([str(folder)], folder / "kept.jsonl.work", out=folder / "kept.jsonl")
        assert summary.records_read == len(DOCS) and summary.removed == 5
    with pytest.raises(InputError, match="is an input and an output"):
        dedup_files([str(folder / "corpus.jsonl")], tmp_path / "w", out=folder / "corpus.jsonl")
    lshsql.run(tmp_path / "crawl", lshsql.Params(), bags=_bags(tmp_path))
    with pytest.raises(InputError, match="give dedup a work folder of its own"):
        dedup_files([str(folder / "corpus.jsonl")], tmp_path / "crawl")
    assert (tmp_path / "crawl" / "pairs.parquet").exists()  # untouched


def test_a_folder_of_the_users_is_never_a_work_folder(tmp_path):
    """dedup rewrites its work folder: one that holds other files is refused before anything is read or
    removed, as is an input inside an earlier dedup's work folder; a rerun removes only its own tables."""
    data, mine = tmp_path / "data", tmp_path / "mine"
    data.mkdir()
    mine.mkdir()
    write_jsonl(data / "corpus.jsonl", DOCS)
    pq.write_table(pa.table({"id": [1], "text": ["precious words"]}), mine / "precious.parquet")
    (mine / "tmp").mkdir()  # what a killed lshsql run leaves, and the lock's clean-up removes, elsewhere
    for name in ("tmp/notes.txt", "tmp_notes.txt", "report.v2.tmp"):
        (mine / name).write_text("mine")
    before = sorted(str(p.relative_to(mine)) for p in mine.rglob("*"))
    with pytest.raises(InputError, match="is not empty and not an lshsql work folder"):
        dedup_files([str(data / "corpus.jsonl")], mine, out=tmp_path / "kept.jsonl")
    assert sorted(str(p.relative_to(mine)) for p in mine.rglob("*")) == before
    (mine / "tmp" / "notes.txt").unlink()
    (mine / "tmp").rmdir()
    work = tmp_path / "w"
    dedup_files([str(data / "corpus.jsonl")], work, out=tmp_path / "kept.jsonl")
    (mine / "precious.parquet").rename(work / "mine.parquet")
    with pytest.raises(InputError, match="is inside the work folder"):
        dedup_files([str(work / "mine.parquet"), str(data / "corpus.jsonl")], work, out=tmp_path / "k.jsonl")
    dedup_files([str(data / "corpus.jsonl")], work, out=tmp_path / "kept.jsonl")
    assert (work / "mine.parquet").exists()
    # a folder a file browser has shown holds only its .DS_Store: empty for all that, and kept so
    shown = tmp_path / "shown"
    shown.mkdir()
    (shown / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    dedup_files([str(data / "corpus.jsonl")], shown, out=tmp_path / "kept.jsonl")
    assert (shown / ".DS_Store").read_bytes() == b"\0\0\0\1Bud1" and (shown / "duplicates.parquet").exists()


def test_outputs_are_checked_before_the_work(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", DOCS)
    inputs = [str(tmp_path / "in.jsonl")]
    with pytest.raises(InputError, match="names both the kept and the removed documents"):
        dedup_files(inputs, tmp_path / "w1", out=tmp_path / "o.jsonl", removed=tmp_path / "o.jsonl")
    with pytest.raises(InputError, match="no such folder"):
        dedup_files(inputs, tmp_path / "w2", out=tmp_path / "none" / "o.jsonl")
    with pytest.raises(InputError, match="is a table of the work folder"):
        dedup_files(inputs, tmp_path / "w3", out=tmp_path / "w3" / "duplicates.parquet")
    for folder in ("w1", "w2", "w3"):
        assert not (tmp_path / folder).exists()  # refused before the work folder was made
    dedup_files(inputs, tmp_path / "w4", out=tmp_path / "kept.jsonl", removed=tmp_path / "w4" / "removed.csv")
    assert (tmp_path / "w4" / "removed.csv").exists()  # in the work folder the dedup makes


def test_columns_that_cannot_be_read_or_written_as_asked_are_one_line_errors(tmp_path):
    struct_id = pa.table({"id": [{"a": 1}], "text": ["some words"], "tags": [["x"]], "blob": [b"\xff"]})
    pq.write_table(struct_id, tmp_path / "s.parquet")
    with pytest.raises(InputError, match="column 'id' is struct<a: int64>; an id is text or a number"):
        dedup_files([str(tmp_path / "s.parquet")], tmp_path / "w1")
    with pytest.raises(InputError, match="column 'blob' is binary; an id"):
        dedup_files([str(tmp_path / "s.parquet")], tmp_path / "w2", DedupParams(id_column="blob"))
    with pytest.raises(InputError, match="column 'tags' is list<element: string>; a column to keep by"):
        dedup_files([str(tmp_path / "s.parquet")], tmp_path / "w3", DedupParams(id_column="x", keep="tags"))
    with pytest.raises(InputError, match=r"the column 'id' \(struct<a: int64>\) cannot be written to a CSV"):
        dedup_files(
            [str(tmp_path / "s.parquet")], tmp_path / "w4", DedupParams(id_column="x"), out=tmp_path / "o.csv"
        )
    assert not (tmp_path / "o.csv").exists()
    for bad, message in (({"num_perm": -1}, "num_perm must be in"), ({"seed": -1}, "seed must be in")):
        with pytest.raises(ParamError, match=message):
            DedupParams(**bad)
    view = pa.table({"text": pa.array(["some words here"], pa.string_view())})
    pq.write_table(view, tmp_path / "v.parquet")
    with pytest.raises(InputError, match="column 'text' is string_view, not text"):
        dedup_files([str(tmp_path / "v.parquet")], tmp_path / "w6", out=tmp_path / "v.jsonl")
    dictionary = pa.table({"text": pa.array(["some words here", "some words here"]).dictionary_encode()})
    pq.write_table(dictionary, tmp_path / "d.parquet")
    summary = dedup_files(
        [str(tmp_path / "d.parquet")], tmp_path / "w5", out=tmp_path / "d.parquet.out.parquet"
    )
    assert (summary.kept, summary.removed) == (1, 1)
    assert pq.read_table(tmp_path / "d.parquet.out.parquet").column("text").to_pylist() == ["some words here"]


def test_no_usable_document_is_an_error_not_an_empty_output(tmp_path):
    (tmp_path / "bad.jsonl").write_text('[{"text": "in an array"}]\nnot json\n{"text": "!!!"}\n')
    with pytest.raises(
        InputError, match=r"no usable document among 3 records \(1 malformed_json, 1 no_words"
    ):
        dedup_files([str(tmp_path / "bad.jsonl")], tmp_path / "w", out=tmp_path / "kept.jsonl")
    assert not (tmp_path / "kept.jsonl").exists()


def test_compressed_outputs_have_the_same_bytes_every_time(tmp_path, monkeypatch, corpus_run):
    """gzip headers hold no time or file name (gzip.open writes both, the name of a temporary file)."""
    folder, _ = corpus_run
    outputs = {}
    for run, rows, moment in (("a", 5, 1.0e9), ("b", 3, 1.5e9)):  # as if at other times
        monkeypatch.setattr(corpus, "SCAN_ROWS", rows)
        monkeypatch.setattr(gzip, "time", types.SimpleNamespace(time=lambda moment=moment: moment))
        kept, removed = tmp_path / run / "kept.jsonl.gz", tmp_path / run / "removed.csv.gz"
        kept.parent.mkdir()
        dedup_files([str(folder / "corpus.jsonl")], tmp_path / run / "w", out=kept, removed=removed)
        outputs[run] = [kept.read_bytes(), removed.read_bytes()]
    assert outputs["a"] == outputs["b"]


def test_parquet_row_groups_do_not_follow_the_batches_written(tmp_path, monkeypatch):
    """The readers' batches depend on DuckDB's threads; the Parquet output's bytes must not."""
    monkeypatch.setattr(corpus, "SCAN_ROWS", 4)
    table = pa.table({"id": list(range(11)), "text": [f"words {i}" for i in range(11)]})
    written = []
    for cuts in ([3, 3, 3, 2], [1, 9, 1], [11]):
        path = tmp_path / f"{len(written)}.parquet"
        batches = iter(table.slice(sum(cuts[:i]), n).to_batches()[0] for i, n in enumerate(cuts))
        dedup_output._write_arrow(path, "parquet", str(path), batches, Resources(threads=1))
        written.append(path.read_bytes())
    assert written[0] == written[1] == written[2]
    groups = pq.ParquetFile(tmp_path / "0.parquet").metadata
    assert [groups.row_group(g).num_rows for g in range(groups.num_row_groups)] == [4, 4, 3]
    assert pq.read_table(tmp_path / "0.parquet").equals(table)


def test_json_lines_are_read_within_a_small_memory_limit(tmp_path):
    """DuckDB's JSON reader holds a buffer of twice the longest line it takes for each thread: the readers
    fit their threads and longest line to the memory limit, so a small file reads at a small limit."""
    write_jsonl(tmp_path / "in.jsonl", DOCS)
    for limit, threads in (("1GB", 2), ("400MB", 1)):
        resources = Resources(memory_limit=limit, threads=threads)
        summary = dedup_files([str(tmp_path / "in.jsonl")], tmp_path / f"w{threads}", resources=resources)
        assert summary.records_read == len(DOCS) and summary.removed == 5


def test_a_folder_of_many_files_opens_duckdb_a_few_times_not_per_file(tmp_path, monkeypatch):
    """One DuckDB for all the files' scans and one for all their kept lines' copies, not one per file for
    each: opening DuckDB dominated a folder of many small files."""
    from lshsql.engines import duckdb as db

    folder = tmp_path / "parts"
    folder.mkdir()
    for i, doc in enumerate(DOCS):
        write_jsonl(folder / f"part-{i:03d}.jsonl", [doc])
    opened = []
    connect = db.connect
    monkeypatch.setattr(db, "connect", lambda *args, **kwargs: opened.append(1) or connect(*args, **kwargs))
    summary = dedup_files([str(folder)], tmp_path / "w", out=tmp_path / "kept.jsonl")
    assert summary.records_read == len(DOCS) == len(list(folder.iterdir())) and summary.removed == 5
    assert len(opened) < 20 < len(DOCS)


def test_a_rerun_removes_the_temporary_output_of_a_killed_one(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", DOCS)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    left = tmp_path / f".kept.jsonl.{int(dead.stdout)}.tmp"
    left.write_text("half a file")
    dedup_files([str(tmp_path / "in.jsonl")], tmp_path / "w", out=tmp_path / "kept.jsonl")
    assert not left.exists() and (tmp_path / "kept.jsonl").exists()


def _bags(tmp_path):
    pq.write_table(pa.table({"url": ["a", "a", "b"], "term": ["x", "y", "x"]}), tmp_path / "bags.parquet")
    return tmp_path / "bags.parquet"


def test_one_document_and_no_id_column(tmp_path):
    write_jsonl(tmp_path / "one.jsonl", [{"text": "a single document"}])
    summary = dedup_files([str(tmp_path / "one.jsonl")], tmp_path / "w", out=tmp_path / "out.jsonl")
    assert (summary.kept, summary.removed) == (1, 0)
    assert (tmp_path / "out.jsonl").read_text() == '{"text": "a single document"}\n'


def test_same_input_same_bytes(tmp_path, corpus_run):
    folder, _ = corpus_run
    dedup_files([str(folder / "corpus.jsonl")], tmp_path / "again", out=tmp_path / "kept.jsonl")
    for name in ("duplicates.parquet", "pairs.parquet", "clusters.parquet", "signatures.parquet"):
        assert (tmp_path / "again" / name).read_bytes() == (folder / "work" / name).read_bytes(), name
    assert (tmp_path / "kept.jsonl").read_bytes() == (folder / "kept.jsonl").read_bytes()


def test_batches_and_threads_do_not_change_the_result(tmp_path, monkeypatch, corpus_run):
    folder, _ = corpus_run
    monkeypatch.setattr(corpus, "SCAN_ROWS", 3)
    resources = Resources(threads=1, memory_limit="1GB")
    dedup_files(
        [str(folder / "corpus.jsonl")], tmp_path / "w", out=tmp_path / "kept.jsonl", resources=resources
    )
    for name in ("duplicates.parquet", "pairs.parquet", "clusters.parquet"):
        assert (tmp_path / "w" / name).read_bytes() == (folder / "work" / name).read_bytes(), name
    for name in ("signatures.parquet", "bags.parquet"):  # the same rows, in row groups of other sizes
        assert pq.read_table(tmp_path / "w" / name).equals(pq.read_table(folder / "work" / name)), name
    assert (tmp_path / "kept.jsonl").read_bytes() == (folder / "kept.jsonl").read_bytes()


def test_python_api_takes_and_returns_tables(tmp_path):
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(DOCS)
    kept = lshsql.dedup(frame)
    assert isinstance(kept, pa.Table) and kept.column_names == ["id", "text"]
    assert kept.column("id").to_pylist() == [d["id"] for d in DOCS if d["id"] not in EXPECTED]
    kept_again = lshsql.dedup(pa.Table.from_pandas(frame), work=tmp_path / "w")
    assert kept_again.equals(kept)
    assert set(lshsql.removed(tmp_path / "w").column("id").to_pylist()) == set(EXPECTED)


@pytest.mark.slow  # a pseudo-terminal and a whole dedup in a subprocess
def test_cli_in_a_terminal(tmp_path):
    write_jsonl(tmp_path / "corpus.jsonl", DOCS)
    env = {**os.environ, "COLUMNS": "100"}
    command = [
        sys.executable,
        "-m",
        "lshsql",
        "dedup",
        str(tmp_path / "corpus.jsonl"),
        "--out",
        str(tmp_path / "kept.jsonl"),
    ]
    done = subprocess.run(
        [*command, "--removed", str(tmp_path / "removed.jsonl"), "-q"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert f"documents read:  {len(DOCS)} = {len(DOCS) - 5} kept + 5 removed" in done.stdout
    assert "groups:          5 with duplicates, the largest of 2 documents" in done.stdout
    assert (tmp_path / "kept.jsonl.work" / "duplicates.parquet").exists()
    removed = [json.loads(line) for line in (tmp_path / "removed.jsonl").read_text().splitlines()]
    assert {r["id"]: r["kept_id"] for r in removed} == EXPECTED
    bad = subprocess.run([*command, "--text-column", "body", "-q"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and bad.stdout == ""  # 2: bad input
    assert (
        bad.stderr.strip().count("\n") == 0
        and "--text-column" in bad.stderr
        and "Traceback" not in bad.stderr
    )


def test_a_column_dedup_only_copies_that_breaks_is_a_one_line_error(tmp_path):
    """The scan reads id and text; writing the kept rows reads every column again: a corrupt page of another
    column is met only then, after the kept rows before it were written. One line naming the file, exit 2,
    and neither the output nor its temporary file left behind."""
    n = 20_000
    table = pa.table(
        {
            "id": [str(i) for i in range(n)],
            "text": [f"words {i} and more words {i * 7}" for i in range(n)],
            "source": [f"https://example.org/{i * 7919}/page" for i in range(n)],
        }
    )
    path = tmp_path / "corpus.parquet"
    pq.write_table(table, path, compression="zstd", row_group_size=5000)
    chunk = pq.ParquetFile(path).metadata.row_group(2).column(2)  # the source column of rows 10000-14999
    start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
    end = start + chunk.total_compressed_size
    data = bytearray(path.read_bytes())
    for i in range((chunk.data_page_offset + end) // 2, end):  # the second half of its data pages
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    source = corpus.CorpusSource(str(path), "parquet")
    scanned = corpus.scan(source, "id", "text", None, Resources(threads=1, memory_limit="1GB"))
    assert sum(batch.num_rows for batch in scanned) == n
    out = tmp_path / "kept.parquet"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "lshsql",
            "dedup",
            str(path),
            "--out",
            str(out),
            "--work",
            str(tmp_path / "work"),
        ]
        + ["--threads", "1", "--memory-limit", "1GB", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2, run.stderr
    assert len(run.stderr.splitlines()) == 1
    assert re.match(r"lshsql: error: .*corpus\.parquet: cannot be read", run.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.parquet", "work"]


def test_running_out_of_memory_while_reading_is_the_machines_error_not_the_files(tmp_path, monkeypatch):
    path = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"id": ["1", "2"], "text": ["some words here", "other words there"]}), path)
    source = corpus.CorpusSource(str(path), "parquet")
    resources = Resources(threads=1, memory_limit="1GB")

    def exhausted(*args, **kwargs):
        raise pa.ArrowMemoryError("malloc of size 1099511627776 failed")
        yield

    monkeypatch.setattr(corpus, "_arrow_batches", exhausted)
    with pytest.raises(LshsqlError, match=r"corpus\.parquet: out of memory while reading it") as raised:
        list(corpus.scan(source, "id", "text", None, resources))
    assert not isinstance(raised.value, InputError)  # exit 1: not the input's fault
