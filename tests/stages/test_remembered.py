"""params_for and extract_params_for: the options not given keep the last run's, as `lshsql run` does."""

from __future__ import annotations

import pytest

import lshsql
from lshsql import manifest
from lshsql.params import Params


def _saved(tmp_path, **data):
    manifest.write(tmp_path, {"stages": {}, **data})
    return tmp_path


def test_a_new_folder_gets_the_defaults_and_what_is_given(tmp_path):
    assert lshsql.params_for(tmp_path) == Params()
    assert lshsql.params_for(tmp_path, threshold=0.4, seed=None) == Params(threshold=0.4)


def test_options_not_given_keep_the_last_run_asked_for(tmp_path):
    work = _saved(tmp_path, requested_params={"threshold": 0.3, "num_perm": 64, "k": 4, "l": 20})
    assert lshsql.params_for(work) == Params(threshold=0.3, num_perm=64, k=4, l=20)
    assert lshsql.params_for(work, num_perm=96, k=None) == Params(threshold=0.3, num_perm=96, k=4, l=20)


@pytest.mark.parametrize("given", [{"threshold": 0.5}, {"recall": 0.9}])
def test_a_new_threshold_or_recall_lets_the_planner_choose_k_and_l_again(tmp_path, given):
    work = _saved(tmp_path, requested_params={"threshold": 0.3, "k": 4, "l": 20})
    assert lshsql.params_for(work, **given) == Params(**{"threshold": 0.3, **given})
    assert lshsql.params_for(work, threshold=0.3) == Params(threshold=0.3, k=4, l=20)  # the same: kept


def test_recall_with_both_k_and_l_is_a_param_error(tmp_path):
    with pytest.raises(lshsql.ParamError, match="--recall is the planner's"):
        lshsql.params_for(tmp_path, recall=0.9, k=3, l=10)
    with pytest.raises(TypeError, match="windw"):
        lshsql.params_for(tmp_path, windw=3)


def test_extraction_options_keep_the_last_extraction_but_not_ingest(tmp_path):
    from lshsql.sources.extract import ExtractParams

    kept = ExtractParams(window=4, buckets=8, extra_stopwords=frozenset({"foo"}), batch_records=7)
    entry = {"params": kept.to_json(), "extra_stopword_words": ["foo"]}
    work = _saved(tmp_path, stages={"extract": entry})
    assert lshsql.extract_params_for(work) == ExtractParams(
        window=4, buckets=8, extra_stopwords=frozenset({"foo"})
    )
    given = lshsql.extract_params_for(work, window=2, extra_stopwords=frozenset(), language=None)
    assert given == ExtractParams(window=2, buckets=8)
    manifest.write(tmp_path, {"stages": {"extract": {**entry, "kind": "documents"}}})
    assert lshsql.extract_params_for(work) == ExtractParams()
