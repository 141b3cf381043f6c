"""cluster_labels: the heaviest terms of each cluster by summed tf * ln(N / df), on hand-made tables."""

from __future__ import annotations

import math

import duckdb
import pytest

from lshsql.engines import duckdb as db
from lshsql.params import Params
from lshsql.pipeline import labels
from tests.conftest import run_stage, write_table

LN2, LN3, LN6 = math.log(2), math.log(3), math.log(6)

# N = 6 URLs. Clusters: {1, 2} (center 1, cluster_id 20), {3, 4, 5} (center 3, cluster_id 10) and the
# singleton {6} (cluster_id 30).
CLUSTER_IDS = {1: 20, 3: 10, 6: 30}
CLUSTERS = [
    {"url_id": u, "center_id": c, "cluster_id": CLUSTER_IDS[c]}
    for u, c in ((1, 1), (2, 1), (3, 3), (4, 3), (5, 3), (6, 6))
]
TERMS = {11: "alpha", 12: "beta", 13: "gamma", 14: "configur", 15: "zeta", 16: "every"}
DF = {11: 2, 12: 2, 13: 3, 14: 3, 15: 1, 16: 6}  # every is in all 6 URLs: idf 0
BAG_TF = {
    1: {11: 1, 12: 1, 14: 2, 16: 5},
    2: {11: 1, 12: 1, 16: 1},
    3: {13: 2, 14: 1, 16: 1},
    4: {13: 1, 16: 1},
    5: {15: 1, 16: 1},
    6: {13: 1, 14: 1, 16: 1},
}
TABLES = {
    "clusters": CLUSTERS,
    "urls": [{"url_id": i, "url": f"http://u{i}/"} for i in range(1, 7)],
    "terms": [{"term_id": h - 10, "term_hash": h, "term": t} for h, t in TERMS.items()],
    # weight is what the run's --weighting made of the bag; labels use tf and df only, so it is nonsense here
    "bags": [
        {"url_id": u, "term_hash": h, "tf": float(tf), "df": DF[h], "weight": -1.0}
        for u, bag in BAG_TF.items()
        for h, tf in bag.items()
    ],
}
SURFACE_FORMS = [
    {"term": "alpha", "word": "alphas", "n": 2},  # a tie on n: the smaller word, alpha, wins
    {"term": "alpha", "word": "alpha", "n": 2},
    {"term": "configur", "word": "configure", "n": 3},
    {"term": "configur", "word": "configuration", "n": 5},
    {"term": "gamma", "word": "gammas", "n": 1},
    {"term": "unused", "word": "unused", "n": 9},
]  # beta and zeta have none: the term stands for itself

EXPECTED = [
    # cluster 1: alpha and beta tie at 2 ln 3 (by term: alpha first); configur 2 ln 2; every weighs 0
    (1, 1, "alpha", "alpha", 2 * LN3),
    (1, 2, "beta", "beta", 2 * LN3),
    (1, 3, "configur", "configuration", 2 * LN2),
    # cluster 3: gamma 2 ln 2 + ln 2; zeta ln 6; configur ln 2
    (3, 1, "gamma", "gammas", 3 * LN2),
    (3, 2, "zeta", "zeta", LN6),
    (3, 3, "configur", "configuration", LN2),
    # the singleton 6 gets no labels
]


def label_rows(tmp_path, tables=TABLES) -> list[tuple]:
    rows = run_stage(tmp_path, "cluster_labels", Params(), tables)
    return [(r["center_id"], r["rank"], r["term"], r["word"], r["weight"]) for r in rows]


def assert_rows(found, expected):
    assert [row[:4] for row in found] == [row[:4] for row in expected]
    assert [row[4] for row in found] == pytest.approx([row[4] for row in expected], rel=1e-12)


def test_top_terms_by_summed_tfidf_with_their_most_frequent_word(tmp_path):
    write_table(tmp_path / "surface_forms.parquet", SURFACE_FORMS)
    assert_rows(label_rows(tmp_path), EXPECTED)


def test_each_row_carries_the_clusters_stable_id(tmp_path):
    rows = run_stage(tmp_path, "cluster_labels", Params(), TABLES)
    assert {(r["center_id"], r["cluster_id"]) for r in rows} == {(1, 20), (3, 10)}


def test_without_surface_forms_the_term_is_its_own_word(tmp_path):
    assert not (tmp_path / "surface_forms.parquet").exists()  # a user's bags: the runner makes it empty
    found = label_rows(tmp_path)
    assert_rows(found, [(c, r, t, t, w) for c, r, t, _, w in EXPECTED])


def test_n_terms_keeps_the_heaviest(tmp_path, monkeypatch):
    monkeypatch.setattr(labels, "LABEL_TERMS", 1)
    write_table(tmp_path / "surface_forms.parquet", SURFACE_FORMS)
    assert_rows(label_rows(tmp_path), [EXPECTED[0], EXPECTED[3]])


def test_a_term_missing_from_terms_leaves_its_place_to_the_next(tmp_path, monkeypatch):
    """Labels are cut at each cluster's n-th heaviest term before the terms' text is joined; a term that
    terms lacks (a table a user put in the folder) must not take a place there: beta and configur, not beta
    alone."""
    monkeypatch.setattr(labels, "LABEL_TERMS", 2)
    tables = {**TABLES, "terms": [t for t in TABLES["terms"] if t["term"] != "alpha"]}
    found = label_rows(tmp_path, tables)
    assert [row[:3] for row in found] == [(1, 1, "beta"), (1, 2, "configur"), (3, 1, "gamma"), (3, 2, "zeta")]


def test_output_types_are_the_documented_ones(tmp_path):
    label_rows(tmp_path)
    with duckdb.connect() as con:
        described = con.execute(
            "select column_name, column_type from (describe select * from read_parquet($p))",
            {"p": str(tmp_path / "cluster_labels.parquet")},
        ).fetchall()
    assert described == [
        ("center_id", "BIGINT"),
        ("cluster_id", "BIGINT"),
        ("rank", "INTEGER"),
        ("term", "VARCHAR"),
        ("word", "VARCHAR"),
        ("weight", "DOUBLE"),
    ]


def test_a_cut_is_labelled_by_the_same_file(tmp_path):
    """labels.write: any flat clustering file (here the clusters with 2 and 3 merged into one cluster of
    five, in a cut made before cluster ids: its center_id stands for the id) labelled from the folder's
    bags, terms, urls and surface forms."""
    label_rows(tmp_path)  # writes the tables
    write_table(tmp_path / "surface_forms.parquet", SURFACE_FORMS)
    merged = [{"url_id": row["url_id"], "center_id": 1 if row["url_id"] <= 5 else 6} for row in CLUSTERS]
    cut = write_table(tmp_path / "cut.parquet", merged)
    resources = db.Resources(memory_limit="1GB", threads=1, temp_directory=str(tmp_path / "tmp"))
    with db.connect(resources) as con:
        rows = labels.write(con, tmp_path, cut, tmp_path / "cut_labels.parquet", "cut_labels")
        found = con.execute(
            "select center_id, rank, term, word, weight, cluster_id from read_parquet($p)",
            {"p": str(tmp_path / "cut_labels.parquet")},
        ).fetchall()
    assert {row[-1] for row in found} == {1}
    # alpha = beta 2 ln 3 (2.197) > configur = gamma 3 ln 2 (2.079; an exact tie, summed as decimals: by
    # term) > zeta ln 6 (1.792); the singleton 6 still gets none
    assert rows == 5
    assert_rows(
        found,
        [
            (1, 1, "alpha", "alpha", 2 * LN3),
            (1, 2, "beta", "beta", 2 * LN3),
            (1, 3, "configur", "configuration", 3 * LN2),
            (1, 4, "gamma", "gammas", 3 * LN2),
            (1, 5, "zeta", "zeta", LN6),
        ],
    )
