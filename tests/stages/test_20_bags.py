"""term_counts, urls, terms and bags on hand-made fragments: TF-IDF values worked out by hand."""

from __future__ import annotations

import math

import pytest

from lshsql.params import Params
from tests.conftest import run_stage

# Three URLs: A = apple x2, banana; B = apple, cherry; C = banana, cherry, durian (durian in one URL only).
FRAGMENTS = [
    {
        "url": "http://a/",
        "kind": "anchor",
        "source_url": "http://s/",
        "position": 0,
        "terms": ["apple", "banana"],
    },
    {"url": "http://a/", "kind": "title", "source_url": "http://a/", "position": 0, "terms": ["apple"]},
    {
        "url": "http://b/",
        "kind": "anchor",
        "source_url": "http://s/",
        "position": 1,
        "terms": ["apple", "cherry"],
    },
    {
        "url": "http://c/",
        "kind": "anchor",
        "source_url": "http://s/",
        "position": 2,
        "terms": ["banana", "cherry", "durian"],
    },
]


def bags(tmp_path, **params) -> dict[tuple[int, str], float]:
    p = Params(**{"min_df": 1, "max_df": 1.0, **params}).resolved(from_bags=False)
    run_stage(tmp_path, "term_counts", p, {"fragments": FRAGMENTS})
    run_stage(tmp_path, "urls", p)
    run_stage(tmp_path, "terms", p)
    return {(r["url_id"], r["term"]): r["weight"] for r in named(tmp_path, run_stage(tmp_path, "bags", p))}


def named(work, rows: list[dict]) -> list[dict]:
    """Bag rows with the text of their term (bags name a term by term_hash; terms has the text)."""
    text = {t["term_hash"]: t["term"] for t in read_rows(work / "terms.parquet")}
    return sorted(({**r, "term": text[r["term_hash"]]} for r in rows), key=lambda r: (r["url_id"], r["term"]))


def read_rows(path) -> list[dict]:
    import duckdb

    with duckdb.connect() as con:
        return con.read_parquet(str(path)).to_arrow_table().to_pylist()


def test_terms_are_numbered_in_hash_order(tmp_path):
    from lshsql.udf import term_hash

    p = Params().resolved(from_bags=False)
    run_stage(tmp_path, "term_counts", p, {"fragments": FRAGMENTS})
    terms = run_stage(tmp_path, "terms", p)
    words = ["apple", "banana", "cherry", "durian"]
    import pyarrow as pa

    hashes = dict(zip(words, term_hash(pa.array(words)).to_pylist(), strict=True))
    assert sorted((r["term"], r["term_hash"]) for r in terms) == sorted(hashes.items())
    assert [r["term_id"] for r in terms] == [1, 2, 3, 4]
    assert [r["term_hash"] for r in terms] == sorted(hashes.values())


def test_term_counts_and_url_ids(tmp_path):
    p = Params().resolved(from_bags=False)
    counts = run_stage(tmp_path, "term_counts", p, {"fragments": FRAGMENTS})
    assert [(r["url"], r["term"], r["tf"]) for r in counts] == [
        ("http://a/", "apple", 2.0),
        ("http://a/", "banana", 1.0),
        ("http://b/", "apple", 1.0),
        ("http://b/", "cherry", 1.0),
        ("http://c/", "banana", 1.0),
        ("http://c/", "cherry", 1.0),
        ("http://c/", "durian", 1.0),
    ]
    urls = run_stage(tmp_path, "urls", p)
    assert [(r["url_id"], r["url"], r["n_terms"]) for r in urls] == [
        (1, "http://a/", 2),
        (2, "http://b/", 2),
        (3, "http://c/", 3),
    ]


def test_tfidf_weights_normalized_to_100(tmp_path):
    w = bags(tmp_path)
    idf2, idf1 = math.log(3 / 2), math.log(3)
    # A: apple 2*idf2, banana idf2 -> 2/3 and 1/3 of 100
    assert w[(1, "apple")] == pytest.approx(200 / 3) and w[(1, "banana")] == pytest.approx(100 / 3)
    assert w[(2, "apple")] == pytest.approx(50) and w[(2, "cherry")] == pytest.approx(50)
    total_c = 2 * idf2 + idf1
    assert w[(3, "durian")] == pytest.approx(100 * idf1 / total_c)  # 57.53
    assert w[(3, "banana")] == pytest.approx(100 * idf2 / total_c)  # 21.23
    for url_id in (1, 2, 3):
        assert sum(v for (u, _), v in w.items() if u == url_id) == pytest.approx(100)


def test_document_frequency_limits(tmp_path):
    assert (3, "durian") not in bags(tmp_path / "a", min_df=2)
    # max_df 0.5 of 3 URLs keeps terms in at most 1.5 URLs: only durian; A and B are left with empty bags.
    assert bags(tmp_path / "b", max_df=0.5) == {(3, "durian"): pytest.approx(100)}


def test_empty_bags_are_counted(tmp_path):
    import json

    from lshsql.pipeline import run

    p = Params(max_df=0.5, min_df=1)
    (tmp_path / "fragments" / "bucket=0").mkdir(parents=True)
    run_stage(tmp_path, "term_counts", p.resolved(False), {"fragments": FRAGMENTS})
    run(tmp_path, p, only=("term_counts", "urls", "terms", "bags"))
    entry = json.loads((tmp_path / "manifest.json").read_text())["stages"]["bags"]
    assert (entry["urls"], entry["urls_with_bag"], entry["urls_empty_bag"]) == (3, 1, 2)


def test_tf_and_none_weightings(tmp_path):
    w = bags(tmp_path / "tf", weighting="tf")
    assert w[(1, "apple")] == pytest.approx(200 / 3) and w[(3, "durian")] == pytest.approx(100 / 3)
    w = bags(tmp_path / "none", weighting="none")
    assert w[(1, "apple")] == 2.0 and w[(1, "banana")] == 1.0  # counts as they are, not normalized


def test_scale(tmp_path):
    w = bags(tmp_path, scale=10)
    assert w[(2, "apple")] == pytest.approx(5)


def test_user_bags_are_summed_and_bad_rows_counted(tmp_path):
    import json

    from lshsql.pipeline import run
    from tests.conftest import write_table

    bags_file = write_table(
        tmp_path / "in.parquet",
        [
            {"url": "u1", "term": "x", "weight": 1.5},
            {"url": "u1", "term": "x", "weight": 1.0},
            {"url": "u1", "term": "y", "weight": 2.0},
            {"url": "u2", "term": "x", "weight": 1.0},
            {"url": None, "term": "x", "weight": 1.0},
            {"url": "u2", "term": None, "weight": 1.0},
            {"url": "u2", "term": "z", "weight": 0.0},
        ],
    )
    run(
        tmp_path / "w",
        Params(weighting="none", threshold=0.5),
        bags=bags_file,
        only=("term_counts", "urls", "terms", "bags"),
    )
    entry = json.loads((tmp_path / "w" / "manifest.json").read_text())["stages"]["term_counts"]
    assert entry["rows_skipped"] == {"null_url": 1, "null_term": 1, "weight_not_positive": 1}
    # term_counts is a view of the user's table, not a copy; the bags stage adds up the repeated rows
    assert entry["view"] and not (tmp_path / "w" / "term_counts.parquet").exists()
    rows = run_stage(tmp_path / "w", "bags", Params(weighting="none", min_df=1, max_df=1.0).resolved(True))
    rows = named(tmp_path / "w", rows)
    assert [(r["url_id"], r["term"], r["weight"]) for r in rows] == [
        (1, "x", 2.5),
        (1, "y", 2.0),
        (2, "x", 1.0),
    ]


def test_terms_sharing_a_hash_stop_the_run(tmp_path, monkeypatch):
    """Bags know a term by its 63-bit hash alone, so two terms with one hash must not pass silently."""
    import pyarrow as pa

    from lshsql import udf
    from lshsql.errors import StageError

    monkeypatch.setattr(udf, "term_hash", lambda terms: pa.array([7] * len(terms), type=pa.int64()))
    p = Params().resolved(from_bags=False)
    run_stage(tmp_path, "term_counts", p, {"fragments": FRAGMENTS})
    with pytest.raises(StageError, match="share a 63-bit term_hash"):
        run_stage(tmp_path, "terms", p)
