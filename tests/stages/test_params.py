"""Parameters and the LSH planner."""

from __future__ import annotations

import pytest

from lshsql.errors import ParamError
from lshsql.lsh.scurve import (
    choose_kl,
    collision_probability,
    expected_candidates,
    resolve,
    tables_needed,
    tables_recall,
)
from lshsql.params import Params


def test_s_curve():
    assert collision_probability(1.0, 3, 10) == 1.0
    assert collision_probability(0.0, 3, 10) == 0.0
    assert collision_probability(0.5, 1, 1) == 0.5
    assert collision_probability(0.5, 2, 2) == pytest.approx(1 - 0.75**2)


@pytest.mark.parametrize("threshold", [0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95])
@pytest.mark.parametrize("banding", [False, True])
def test_planner_reaches_the_recall_with_fewest_false_positives(threshold, banding):
    try:
        k, l = choose_kl(threshold, 128, banding)
    except ParamError:
        assert banding  # banding is limited by b*r <= m; random tables are not
        return
    assert tables_recall(threshold, k, l, 128, banding=banding) >= 0.95
    assert k >= 2 and (not banding or k * l <= 128)
    # one table fewer would miss the recall: l is the smallest for its k
    assert l == 1 or tables_recall(threshold, k, l - 1, 128, banding=banding) < 0.95


def test_planner_choices_for_the_benchmark_thresholds():
    assert choose_kl(0.5, 80) == (3, 27)
    assert choose_kl(0.8, 80) == (7, 17)


def test_random_tables_collide_less_than_the_closed_form_and_the_planner_measures_them():
    """Random tables reuse the m min-hashes, so those sharing an index collide together: at s = 0.5 the 23
    tables of 3 that the closed form deems enough for 0.95 reach about 0.93 (measured on the drawn tables,
    as the candidates stage would find them, in tests/properties/test_lsh_collision_curve.py). Bands share
    nothing and follow the closed form exactly."""
    closed = collision_probability(0.5, 3, 23)
    drawn = tables_recall(0.5, 3, 23, 80)
    assert closed > 0.95 and drawn < 0.94
    assert tables_recall(0.5, 3, 23, 80, banding=True) == closed
    assert tables_recall(0.5, 3, choose_kl(0.5, 80, fixed_k=3)[1], 80) >= 0.95
    assert tables_needed(0.5, 3, 0.95, 80, banding=True) == 23
    # m = 16 min-hashes cannot give 0.95 at s = 0.2 (no two of them agree in 14% of pairs): said, not faked
    with pytest.raises(ParamError, match=r"with m = 16 min-hashes: raise --num-perm, or give -k and -l"):
        choose_kl(0.2, 16)


def test_fixed_k_or_l_is_respected():
    assert choose_kl(0.5, 80, fixed_k=4)[0] == 4
    k, l = choose_kl(0.5, 80, fixed_l=30)
    assert l == 30 and tables_recall(0.5, k, 30, 80) >= 0.95


def test_min_agree_rounds_up_but_forgives_float_noise():
    assert Params(threshold=0.2, num_perm=80, verify=False).min_agree == 16
    assert Params(threshold=0.21, num_perm=80, verify=False).min_agree == 17
    assert Params(threshold=0.7, num_perm=10, verify=False).min_agree == 7  # 0.7*10 = 7.000000000000001


def test_min_agree_with_verify_is_three_sigmas_lower():
    # sigma = sqrt(0.25 / 80) = 0.0559; (0.5 - 3 * 0.0559) * 80 = 26.6
    assert Params(threshold=0.5, num_perm=80).min_agree == 26
    assert Params(threshold=0.05, num_perm=4).min_agree == 1  # never below one agreeing position


def test_resolved_defaults_depend_on_the_input():
    crawl, bags = resolve(Params(), False), resolve(Params(), True)
    assert (crawl.min_df, crawl.max_df, bags.min_df, bags.max_df) == (2, 0.5, 1, 1.0)
    assert resolve(Params(k=3, l=125), False).l == 125


@pytest.mark.parametrize(
    "bad",
    [
        {"threshold": 0},
        {"threshold": 1.5},
        {"num_perm": 0},
        {"weighting": "bm25"},
        {"k": 0},
        {"signature_bytes": 2},
        {"clustering": "kmeans"},
        {"max_df": 0},
        {"max_bucket": 1},
        {"banding": True, "k": 10, "l": 10, "num_perm": 80},
        {"seed": -1},
        {"seed": 2**32},
        {"scale": float("inf")},
        {"scale": 1e300},
        {"scale": float("nan")},
        {"k": 5, "num_perm": 4},
    ],
)
def test_bad_parameters_are_refused(bad):
    with pytest.raises(ParamError):
        Params(**bad)


def test_planner_uses_the_datas_background_similarity():
    import numpy as np

    from lshsql.lsh.scurve import choose_kl_for_sample

    # Unrelated pairs agreeing on 10 of 80 min-hashes (similarity 0.125, a frequent vocabulary): the
    # closed form's k=3 would make ~4% of all pairs candidates; the sample-based choice takes a steeper
    # curve, still at recall 0.95 at T.
    histogram = np.zeros(81, dtype=np.int64)
    histogram[10] = 10_000
    k, l = choose_kl_for_sample(0.5, 80, histogram, n_urls=100_000)
    assert tables_recall(0.5, k, l, 80) >= 0.95 and k > 3
    assert expected_candidates(histogram, 100_000, k, l) < expected_candidates(histogram, 100_000, 3, 23) / 5
    # a pair agreeing on 10 positions collides in a table of 3 when all 3 indices are among the 10
    per_table = (10 * 9 * 8) / (80 * 79 * 78)
    assert expected_candidates(histogram, 100_000, 3, 23) == pytest.approx(
        100_000 * 99_999 / 2 * (1 - (1 - per_table) ** 23)
    )
    assert expected_candidates(histogram, 100_000, 3, 23) < 100_000 * 99_999 / 2 * collision_probability(
        0.125, 3, 23
    )
    # with nothing in the background, fewer tables win
    nothing = np.zeros(81, dtype=np.int64)
    nothing[0] = 10_000
    assert choose_kl_for_sample(0.5, 80, nothing, n_urls=100_000) == (2, 12)


@pytest.mark.parametrize(("values", "k", "l"), [(4, 3, 27), (4, 4, 66), (8, 2, 12), (6, 3, 27)])
def test_expected_candidates_match_the_drawn_tables(values, k, l):  # noqa: E741
    """On 400 random signatures (each position one of `values` values, so pairs agree on 80 / values
    positions on average), the candidates the planner expects from the pairs' agreement histogram are the
    ones the drawn tables make, within 3 %. Estimating from the similarity a/m, (a/m)^k per table, is not:
    it overestimates (by 6-20 % here, by 2.5 times at 100k bench documents, where most pairs agree on few
    positions)."""
    import numpy as np

    from lshsql.lsh import family
    from lshsql.lsh.plan import agreement_histogram

    signatures = np.random.default_rng(values * 100 + k).integers(0, values, size=(400, 80))
    histogram = agreement_histogram(signatures)
    made = set()
    for table in family.lsh_tables(Params(num_perm=80, k=k, l=l)):
        buckets: dict[tuple, list[int]] = {}
        for row, key in enumerate(map(tuple, signatures[:, table])):
            buckets.setdefault(key, []).append(row)
        made |= {(a, b) for rows in buckets.values() for i, a in enumerate(rows) for b in rows[i + 1 :]}
    expected = expected_candidates(histogram, 400, k, l)
    assert expected == pytest.approx(len(made), rel=0.03)
    by_similarity = 400 * 399 / 2 * float(histogram @ collision_probability(np.arange(81) / 80, k, l))
    by_similarity /= histogram.sum()
    assert by_similarity > 1.05 * len(made), by_similarity / len(made)


def test_pairwise_histogram_counts_every_pair_once():
    import numpy as np

    from lshsql.lsh.plan import agreement_histogram

    signatures = np.array([[1, 2, 3, 4], [1, 2, 0, 0], [1, 9, 9, 9], [1, 2, 3, 4]])
    # pairs: (0,1) 2, (0,2) 1, (0,3) 4, (1,2) 1, (1,3) 2, (2,3) 1
    assert agreement_histogram(signatures, block=2).tolist() == [0, 3, 2, 0, 1]


def _background(m: int, s: float, pairs: int = 499_500):
    """The agreement histogram of `pairs` sampled pairs each of whose m positions agrees with probability s."""
    import math

    import numpy as np

    pmf = [math.comb(m, a) * s**a * (1 - s) ** (m - a) for a in range(m + 1)]
    return np.round(np.array(pmf) * pairs).astype(np.int64)


def test_the_planner_takes_128_min_hashes_where_they_save_work(monkeypatch):
    """Pairs whose positions agree with probability 0.1 (a frequent vocabulary): at m = 128 their agreement
    spreads less, so fewer of them reach the tables' k agreeing positions, and fewer tables reach the
    recall; each min-hash costs POSITION_COST band keys a URL. At 10,000 URLs the longer signature costs
    more than it saves, at 10M it saves a quarter."""
    from lshsql.lsh import scurve

    histograms = {m: _background(m, 0.1) for m in scurve.NUM_PERM_CHOICES}
    assert scurve.choose_num_perm(0.5, histograms.get, 10_000)[0] == 80
    m, tables, work = scurve.choose_num_perm(0.5, histograms.get, 10_000_000)
    assert m == 128 and work[128] < 0.8 * work[80]
    assert tables == scurve.choose_kl_for_sample(0.5, 128, histograms[128], 10_000_000)
    for size in (80, 128):
        k, l = scurve.choose_kl_for_sample(0.5, size, histograms[size], 10_000_000)  # noqa: E741
        candidates = expected_candidates(histograms[size], 10_000_000, k, l)
        assert work[size] == pytest.approx(
            scurve.planned_work(l, 10_000_000, candidates) + scurve.POSITION_COST * size * 10_000_000
        )
    # a longer signature whose work is not below NUM_PERM_GAIN of the first choice's is not taken
    m, _, work = scurve.choose_num_perm(0.5, histograms.get, 100_000)
    assert m == 128 and 0.9 < work[128] / work[80] < scurve.NUM_PERM_GAIN
    monkeypatch.setattr(scurve, "NUM_PERM_GAIN", 0.9)
    assert scurve.choose_num_perm(0.5, histograms.get, 100_000)[0] == 80
    # where 128 min-hashes of each URL and one table would cost more than 80's whole plan, 128 is not
    # signed at all
    looked_at = []
    few = {m: _background(m, 0.0) for m in scurve.NUM_PERM_CHOICES}  # nothing in the background

    def histogram_of(m):
        looked_at.append(m)
        return few[m]

    m, tables, work = scurve.choose_num_perm(0.8, histogram_of, 100_000)
    assert (m, looked_at, list(work)) == (80, [80], [80])
    assert tables == scurve.choose_kl_for_sample(0.8, 80, few[80], 100_000)


def test_m_is_the_planners_only_with_k_and_l_for_random_min_hash_tables():
    open_m = resolve(Params(threshold=0.5), whole_sets=True)
    assert open_m.plans_num_perm and (open_m.num_perm, open_m.k, open_m.l) == (None, None, None)
    for given in ({"k": 3, "l": 27}, {"k": 3}, {"l": 27}, {"banding": True}, {"sketch": "oph"}):
        assert Params(threshold=0.5, **given).num_perm == 80, given
        assert not Params(threshold=0.5, **given).plans_num_perm
    given = resolve(Params(threshold=0.5, num_perm=128), whole_sets=True)
    assert (given.num_perm, given.k, given.l) == (128, *choose_kl(0.5, 128))
    with pytest.raises(ParamError, match="not chosen yet"):
        Params(threshold=0.5).min_agree  # noqa: B018
    with pytest.raises(ParamError, match="9 bands x 10 rows > 80"):  # m = 80 where -k or -l is given
        Params(banding=True, k=10, l=9)
