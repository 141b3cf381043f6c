"""Surface forms: while words become terms, how often each (term, lowercased word) pair occurred; summed
over batches by sql/05_surface_forms.sql."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lshsql import schemas, sqlfiles
from lshsql.sources.batches import surface_batch
from lshsql.sources.text import SurfaceForms, TextOptions, make_normalizer, shingles, words


def test_running_runs_run_count_under_one_stem_with_their_words():
    forms = SurfaceForms(TextOptions())
    # Porter: running, runs, run -> run; "the" is a stopword; "Running" is counted as "running"
    terms = forms(["running", "runs", "the", "Running", "run", "running"])
    assert terms == ["run"] * 5
    assert sorted(forms.rows()) == [("run", "run", 1), ("run", "running", 3), ("run", "runs", 1)]


def test_counts_add_up_over_the_word_lists_of_a_batch():
    forms = SurfaceForms(TextOptions())
    forms(words("Configuration of the server"))
    forms(words("configure, configuring, CONFIGURATION"))
    forms([])
    assert sorted(forms.rows()) == [
        ("configur", "configuration", 2),
        ("configur", "configure", 1),
        ("configur", "configuring", 1),
        ("server", "server", 1),
    ]


def test_dropped_words_are_not_counted():
    forms = SurfaceForms(TextOptions(extra_stopwords=frozenset({"server"}), min_length=3))
    assert forms(["a", "to", "server", "servers", "ox"]) == ["server"]  # "servers" -> server
    assert sorted(forms.rows()) == [("server", "servers", 1)]


def test_without_stemming_the_word_is_the_term():
    forms = SurfaceForms(TextOptions(stem=False))
    forms(words("Dogs dogs running"))
    assert sorted(forms.rows()) == [("dogs", "dogs", 2), ("running", "running", 1)]


def test_russian_surface_words_keep_yo_while_the_term_folds_it():
    forms = SurfaceForms(TextOptions(language="ru"))
    assert forms(words("Ёлка ёлки елка и ёжик")) == ["елк", "елк", "елк", "ежик"]
    assert sorted(forms.rows()) == [
        ("ежик", "ёжик", 1),
        ("елк", "елка", 1),
        ("елк", "ёлка", 1),
        ("елк", "ёлки", 1),
    ]


def test_shingles_are_counted_with_the_shingle_of_their_surface_words():
    forms = SurfaceForms(TextOptions())
    assert forms.shingles(words("The running dogs ran to runs"), 2) == ["run dog", "dog ran", "ran run"]
    assert forms.shingles(words("running dogs"), 2) == ["run dog"]
    assert forms.shingles(words("dogs"), 3) == ["dog"]  # shorter than w: one shingle of all
    assert sorted(forms.rows()) == [
        ("dog", "dogs", 1),
        ("dog ran", "dogs ran", 1),
        ("ran run", "ran runs", 1),
        ("run dog", "running dogs", 2),
    ]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet="aeiourstnlDRUNgs ёЁл-", max_size=40), max_size=6),
    st.booleans(),
    st.sampled_from(["en", "ru"]),
)
def test_terms_are_the_normalizers_and_counts_are_the_terms(texts, stem, language):
    options = TextOptions(language=language, stem=stem)
    normalize, forms = make_normalizer(options), SurfaceForms(options)
    total = 0
    for text in texts:
        terms = forms(words(text))
        assert terms == normalize(words(text))
        total += len(terms)
    rows = forms.rows()
    assert sum(n for _, _, n in rows) == total
    assert all(word == word.lower() and normalize([word]) == [term] for term, word, _ in rows)
    assert len({(t, w) for t, w, _ in rows}) == len(rows)


def test_shingled_terms_are_the_shingles_of_the_normalized_words():
    options = TextOptions()
    text = words("Clustering the web: scalable techniques for clustering crawled pages")
    assert SurfaceForms(options).shingles(text, 3) == shingles(make_normalizer(options)(text), 3)


def test_surface_batch_has_the_raw_schema_without_a_record_id():
    forms = SurfaceForms(TextOptions())
    forms(["running", "runs"])
    batch = surface_batch(forms)
    assert batch.schema == schemas.raw_schema("surface_forms") == schemas.schema("surface_forms")
    assert batch.to_pylist() == [
        {"term": "run", "word": "running", "n": 1},
        {"term": "run", "word": "runs", "n": 1},
    ]
    assert surface_batch(None).num_rows == 0


def test_finishing_sql_adds_up_batches_and_orders_by_term_n_desc_word():
    raw = pa.table(
        {
            "term": ["run", "run", "configur", "run", "configur", "configur"],
            "word": ["runs", "running", "configure", "runs", "configuration", "configured"],
            "n": [1, 2, 3, 2, 3, 1],
        },
        schema=schemas.raw_schema("surface_forms"),
    )
    with duckdb.connect() as con:
        con.from_arrow(raw).create_view("surface_forms_raw")
        query, params = sqlfiles.final_select(con, sqlfiles.load("05_surface_forms.sql"), {})
        result = con.execute(query, params)
        types = [d[1] for d in result.description]
        rows = result.fetchall()
    # batches add up (runs: 1 + 2); ties on n by word (configuration before configure)
    assert rows == [
        ("configur", "configuration", 3),
        ("configur", "configure", 3),
        ("configur", "configured", 1),
        ("run", "runs", 3),
        ("run", "running", 2),
    ]
    assert types[2] == "BIGINT"


@pytest.mark.parametrize("w", [0, -1])
def test_bad_shingle_width_is_refused(w):
    with pytest.raises(ValueError, match="shingle width"):
        SurfaceForms(TextOptions()).shingles(["dogs"], w)


def test_windows_of_a_page_flow_are_its_slices_with_their_block_keys():
    forms = SurfaceForms(TextOptions())
    page = ["the", "running", "dogs", "ran", "and", "ran", "far", "away"]
    keys = [1, 1, 1, 2, 2, 2, 3, 3]
    # two windows, words 0..3 (anchor 1..2) and 2..6 (anchor 3..4); "away" is in neither
    flow = forms.flow(page, keys, [(0, 4), (2, 7)])
    assert forms.span(flow, 0, 1, 3, 4) == (["run", "dog", "ran"], [1, 1, 2], 0, 2)
    assert forms.span(flow, 2, 3, 4, 7) == (["dog", "ran", "ran", "far"], [1, 2, 2, 3], 1, 2)
    # counted per window, overlap counted twice; the word outside every window is not counted
    assert sorted(forms.rows()) == [
        ("dog", "dogs", 2), ("far", "far", 1), ("ran", "ran", 3), ("run", "running", 1)
    ]  # fmt: skip
