"""Shingled documents keep their sets whole: no document-frequency cut-off unless one is asked for, so two
unrelated documents that share one shingle never become identical. A corpus small enough to check by hand."""

from __future__ import annotations

import json

import duckdb
import pytest

from lshsql.engines import duckdb as db
from lshsql.params import Params
from lshsql.pipeline import run
from lshsql.sources.ingest import IngestParams, ingest

ONE = db.Resources(memory_limit="1GB", threads=1)

# 3-word shingles (fruit names stem to themselves or to one stem each, none is a stopword):
#   d1: abc bcd cde                  d2: fga gab abc bch chk     -> share abc only: J = 1 / 7
#   d3: lmn mno nop opq              d4: lmn mno nop opr         -> share 3 of 5: J = 3 / 5
#   d5: stu tuv uvw                  shares nothing
CORPUS = [
    ("d1", "apple banana cherry durian elderberry"),
    ("d2", "fig grape apple banana cherry honeydew kiwi"),
    ("d3", "lemon mango nectarine orange papaya quince"),
    ("d4", "lemon mango nectarine orange papaya raspberry"),
    ("d5", "strawberry tangerine ugli vanilla watermelon"),
]


@pytest.fixture
def work(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in CORPUS))
    ingest([str(corpus)], tmp_path / "w", IngestParams(shingle=3), ONE)
    return tmp_path / "w"


def pairs(work) -> list[tuple]:
    with duckdb.connect() as con:
        return con.execute(f"select u, v, similarity from '{work}/pairs.parquet' order by u, v").fetchall()


def clustered(work) -> list[str]:
    with duckdb.connect() as con:
        return [
            url
            for (url,) in con.execute(f"select url from '{work}/clusters.parquet' order by url").fetchall()
        ]


def test_the_ingest_entry_says_it_shingled(work):
    entry = json.loads((work / "manifest.json").read_text())["stages"]["extract"]
    assert entry["kind"] == "documents" and entry["shingled"] is True


def test_shingled_documents_get_no_cut_offs_by_default(work):
    summary = run(work, Params(), resources=ONE)
    assert (summary.params.min_df, summary.params.max_df) == (1, 1.0)
    stages = json.loads((work / "manifest.json").read_text())["stages"]
    assert stages["bags"]["params"]["min_df"] == 1 and stages["bags"]["params"]["max_df"] == 1.0
    assert stages["bags"]["urls_empty_bag"] == 0 and "rows_dropped" not in str(summary.lines())
    # tfidf over N = 5: d3's three shared shingles (df 2) weigh ln 2.5 each and its own one ln 5; scaled to
    # sum to 100 they round to 21 and 37 copies. Shared 3 * 21 = 63 of 63 + 37 + 37 = 137.
    assert pairs(work) == [("d3", "d4", pytest.approx(63 / 137))]
    assert clustered(work) == ["d1", "d2", "d3", "d4", "d5"]  # every document in a cluster


def test_without_weights_the_similarity_is_the_jaccard_of_the_shingle_sets(work):
    run(work, Params(weighting="none"), resources=ONE)
    assert pairs(work) == [("d3", "d4", 3 / 5)]  # d1, d2 at 1/7 are below the threshold 0.2
    run(work, Params(weighting="none", threshold=0.1), resources=ONE)
    assert pairs(work) == [("d1", "d2", 1 / 7), ("d3", "d4", 3 / 5)]


def test_cut_offs_asked_for_are_applied_and_their_empty_bags_reported(work):
    # min_df 2 keeps the shingles of two documents only: d1 and d2 are each left with {apple banana
    # cherry} and so identical, d3 and d4 with their three shared shingles, d5 with nothing
    summary = run(work, Params(min_df=2, weighting="none"), resources=ONE)
    assert pairs(work) == [("d1", "d2", 1.0), ("d3", "d4", 1.0)]
    assert "d5" not in clustered(work)
    entry = json.loads((work / "manifest.json").read_text())["stages"]["bags"]
    assert (entry["urls"], entry["urls_with_bag"], entry["urls_empty_bag"]) == (5, 4, 1)
    assert (
        "bags: 1 of 5 URLs have an empty bag (every term dropped: --min-df, --max-df, or in every URL): "
        "in no pair and no cluster"
    ) in summary.lines()
    # without min_df again, no cut-off again
    run(work, Params(weighting="none"), resources=ONE)
    assert pairs(work) == [("d3", "d4", 3 / 5)]


def test_words_of_documents_keep_the_default_cut_offs(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in CORPUS))
    ingest([str(corpus)], tmp_path / "w", IngestParams(), ONE)
    summary = run(tmp_path / "w", Params(), resources=ONE)
    assert (summary.params.min_df, summary.params.max_df) == (2, 0.5)
