"""The planner's choice of m (80 or 128) in a run that leaves it open, on the example crawl."""

from __future__ import annotations

import json

import duckdb
import pytest

from lshsql.engines import duckdb as db
from lshsql.lsh import scurve
from lshsql.lsh.minhash import bag_signatures
from lshsql.lsh.plan import plan, sample_bags, sample_signatures, signature_width
from lshsql.params import Params
from lshsql.pipeline import params_for, run
from tests.conftest import copy_work


def _resources() -> db.Resources:
    return db.Resources(memory_limit="1GB", threads=2)


def _manifest(work) -> dict:
    return json.loads((work / "manifest.json").read_text())


@pytest.fixture(scope="module")
def chosen_128(example_extraction, tmp_path_factory):
    """The example crawl run at T = 0.5 with m left open, where a min-hash costs nothing: the planner
    takes 128 (its tables need fewer of them), the choice the real cost makes for millions of URLs."""
    patch = pytest.MonkeyPatch()
    patch.setattr(scurve, "POSITION_COST", 0.0)
    try:
        work = copy_work(example_extraction, tmp_path_factory.mktemp("m128") / "w")
        run(work, Params(threshold=0.5), resources=_resources())
    finally:
        patch.undo()
    return work


def test_the_planner_signs_the_sampled_bags_as_the_stage_did(example_run):
    """The choice is made before the signatures stage, on the sampled URLs' bags signed by the stage's own
    kernel: the same values as the stage's signatures of those URLs (TF-IDF bags, terms of several copies)."""
    with duckdb.connect() as con:
        signed, n_urls = sample_signatures(con, example_run / "signatures.parquet", 80)
        terms, copies, counts = sample_bags(con, example_run / "bags.parquet", n_urls)
    assert copies.max() > 1 and len(counts) == len(signed) > 100
    assert (bag_signatures(terms, copies, counts, seed=1, num_perm=80) == signed).all()


def test_a_small_run_keeps_80_and_records_why(example_run):
    made = _manifest(example_run)
    assert made["params"]["num_perm"] == made["requested_params"]["num_perm"] == 80
    expected = made["stages"]["signatures"]["num_perm_work"]
    assert set(expected) == {"80", "128"} and expected["80"] < expected["128"]


def test_a_run_that_chooses_128_is_the_run_given_128(chosen_128, example_extraction, tmp_path):
    made = _manifest(chosen_128)
    assert made["params"]["num_perm"] == 128
    expected = made["stages"]["signatures"]["num_perm_work"]
    assert expected["128"] <= scurve.NUM_PERM_GAIN * expected["80"]
    given = copy_work(example_extraction, tmp_path / "given")
    run(given, Params(threshold=0.5, num_perm=128), resources=_resources())
    assert "num_perm_work" not in _manifest(given)["stages"]["signatures"]
    assert (made["params"]["k"], made["params"]["l"]) == (
        _manifest(given)["params"]["k"],
        _manifest(given)["params"]["l"],
    )
    for name in ("signatures", "pairs", "clusters"):
        assert (chosen_128 / f"{name}.parquet").read_bytes() == (given / f"{name}.parquet").read_bytes(), name


def test_later_runs_keep_the_chosen_m_and_plan_reads_it(chosen_128, tmp_path):
    """The choice is kept like a given option (params_for, as `lshsql run` takes the options not given
    again), so that a later run (another threshold, more data) reuses the signatures; `lshsql plan --work`
    plans for the m of the folder's signatures."""
    work = copy_work(chosen_128, tmp_path / "w")
    summary = run(work, params_for(work, threshold=0.6), resources=_resources())
    assert summary.params.num_perm == 128 and summary.stages["signatures"].get("skipped")
    made = _manifest(work)
    assert made["requested_params"]["num_perm"] == made["params"]["num_perm"] == 128
    shown = plan(0.6, work=work)
    assert (shown.num_perm, shown.k, shown.l) == (128, made["params"]["k"], made["params"]["l"])


def test_an_api_rerun_keeps_the_folders_m(chosen_128, tmp_path):
    """A run given no m in a folder whose signatures were made keeps their m, through the Python API too."""
    work = copy_work(chosen_128, tmp_path / "w")
    summary = run(work, Params(threshold=0.6), resources=_resources())
    assert summary.params.num_perm == 128 and summary.stages["signatures"].get("skipped")


def test_a_run_of_the_stages_before_signatures_leaves_m_open(example_extraction, tmp_path):
    """Stages run without the signatures stage (and no signatures in the folder) fix no m for later runs:
    the run that signs the bags chooses it."""
    work = copy_work(example_extraction, tmp_path / "w")
    early = ("term_counts", "urls", "terms", "bags")
    run(work, Params(threshold=0.5), resources=_resources(), only=early)
    assert params_for(work).plans_num_perm
    run(work, params_for(work), resources=_resources())
    made = _manifest(work)
    assert "80" in made["stages"]["signatures"]["num_perm_work"]  # chosen by this run
    assert made["requested_params"]["num_perm"] == made["params"]["num_perm"] == 80


def test_plan_refuses_what_is_not_a_signatures_file_or_an_m(tmp_path):
    from lshsql.errors import InputError, ParamError

    (tmp_path / "signatures.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="signatures.parquet: not a readable Parquet file"):
        plan(0.5, work=tmp_path)
    with pytest.raises(ParamError, match="num_perm must be in 1..1024, got 0"):
        plan(0.5, num_perm=0)


def test_plan_for_another_m_than_the_folders_signatures(chosen_128, tmp_path):
    """`lshsql plan --work W --num-perm M`: for M above the width of the folder's signatures their sample
    cannot say anything, and the plan is the closed form's (it read h0 .. h{M-1} and failed); for M below
    it, their first M min-hashes are sampled."""
    above = plan(0.5, num_perm=256, work=chosen_128)
    assert (above.num_perm, above.n_urls) == (256, 0)
    assert (above.k, above.l) == scurve.choose_kl(0.5, 256, False, above.recall)
    below = plan(0.5, num_perm=80, work=chosen_128)
    assert below.num_perm == 80 and below.n_urls > 0


def test_a_threshold_no_m_reaches_is_refused_before_any_stage(example_extraction, tmp_path):
    """With m left to the planner, a threshold neither 80 nor 128 min-hashes can reach at the recall is the
    one-line error up front, as it was with m given, not after the bags stage."""
    from lshsql.errors import ParamError

    with pytest.raises(ParamError, match="no \\(k, l\\) reaches recall 0.95 at threshold 0.01 with m = 128"):
        scurve.resolve(Params(threshold=0.01), whole_sets=False)
    work = copy_work(example_extraction, tmp_path / "w")
    with pytest.raises(ParamError, match="threshold 0.01"):
        run(work, Params(threshold=0.01), resources=_resources())
    assert not (work / "term_counts.parquet").exists() and not (work / "bags.parquet").exists()
    # 0.05: no (k, l) of 80 min-hashes reaches the recall, 128's do, and the run takes them (the stages
    # after the signatures, some 4,000 tables of k = 2, are the buckets tests' and the run's own)
    assert scurve.resolve(Params(threshold=0.05), whole_sets=False).plans_num_perm
    through = ("term_counts", "urls", "terms", "bags", "signatures")
    low = run(
        copy_work(example_extraction, tmp_path / "low"),
        Params(threshold=0.05),
        resources=_resources(),
        only=through,
    )
    assert low.params.num_perm == 128 and low.params.l > 1000 and low.stages["signatures"]["rows"] > 4000
    assert signature_width(tmp_path / "low" / "signatures.parquet") == 128


def test_the_choice_of_m_on_a_users_bags_table(tmp_path):
    """Bags put in the folder by hand (the documented schema): a weight beyond BIGINT is the one-line error
    about copies (the sample's copies are not cast first), and a missing bags file is the stage's own
    error, not DuckDB's."""
    from lshsql.errors import InputError, StageError
    from tests.conftest import write_table

    rows = [
        {"url_id": u, "term_hash": t, "tf": 1.0, "df": 2, "weight": 1e19 if (u, t) == (2, 7) else 1.0}
        for u in (1, 2)
        for t in (7, 8)
    ]
    write_table(tmp_path / "w" / "bags.parquet", rows)
    with pytest.raises(InputError, match="a weight of 10,000,000,000,000,000,000 makes as many copies"):
        run(
            tmp_path / "w",
            Params(threshold=0.5, weighting="none"),
            resources=_resources(),
            only=("signatures",),
        )
    with pytest.raises(StageError, match="bags.parquet: missing; run the earlier stages first"):
        run(tmp_path / "empty", Params(threshold=0.5), resources=_resources(), only=("signatures",))
