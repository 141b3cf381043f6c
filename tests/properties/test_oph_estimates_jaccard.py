"""The one-permutation sketch (--sketch oph, engines/oph.py) estimates Jaccard without bias, and LSH on its
signatures follows the S-curve (Li, Owen & Zhang 2012; Shrivastava 2017).

Each position of two densified one-permutation signatures agrees with probability J(A, B) exactly, but the
positions are not independent: the bins split one sample of the union (without replacement), and an empty
bin copies another. So:
  (a) unbiased: over n pairs of one J, |mean(estimate) - J| <= 4 standard errors of the mean, measured from
      the estimates themselves (their variance is not the binomial one), for sets larger and smaller than m;
  (b) banded signatures (b bands of r disjoint bins) collide at 1 - (1 - J^r)^b within the 4-sigma band of
      Binomial(N, p) used for the min-hash curve, for sets larger than m, where the bins are all filled;
  (c) the random tables the planner chooses for this sketch find pairs at the rate it measured for them on
      its own simulated pairs (scurve._oph_agreements), on fresh pairs.
Fixed seeds: every check is deterministic. Pairs use disjoint random terms, so they are independent given
the salt.
"""

from __future__ import annotations

import numpy as np
import pytest

from lshsql.engines import oph
from lshsql.lsh import family
from lshsql.lsh.scurve import OPH_PLAN_UNION, choose_kl, collision_probability, tables_recall
from lshsql.params import Params
from tests.properties.test_lsh_collision_curve import within

JACCARDS = (0.1, 0.3, 0.5, 0.8, 0.95)
SALT = family.oph_salt(1)


def pair_signatures(j: float, union: int, pairs: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Signatures of `pairs` pairs of sets of `union` random terms sharing round(j * union): (first, second)."""
    shared = round(j * union)
    only = (union - shared) // 2
    terms = np.random.default_rng(seed).integers(0, 2**62, (pairs, union))
    first = terms[:, : shared + only]
    second = np.concatenate([terms[:, :shared], terms[:, shared + only :]], axis=1)
    counts = np.tile([first.shape[1], second.shape[1]], pairs)
    signatures = oph.set_signatures(np.concatenate([first, second], axis=1).ravel(), counts, m, SALT)
    return signatures[0::2], signatures[1::2]


@pytest.mark.parametrize(("union", "m"), [(300, 128), (40, 128), (12, 64)])
def test_the_agreement_is_an_unbiased_estimate_of_jaccard(union, m):
    for number, j in enumerate(JACCARDS):
        first, second = pair_signatures(j, union, 400, m, seed=100 + number)
        truth = round(j * union) / union
        estimates = (first == second).mean(axis=1)
        standard_error = max(estimates.std(ddof=1), 1 / m) / np.sqrt(len(estimates))
        assert abs(estimates.mean() - truth) <= 4 * standard_error, (union, m, j, estimates.mean())
    # power: a sketch that lost its densification rule (empty bins left unequal) would fall well below J
    first, second = pair_signatures(0.5, 12, 400, 64, seed=7)
    assert (first == second).mean() > 0.45


def test_banded_signatures_follow_the_s_curve():
    rows, bands, pairs = 4, 20, 2000
    rates = {}
    for number, s in enumerate((0.2, 0.4, 0.5, 0.6, 0.8)):
        first, second = pair_signatures(s, 300, pairs, rows * bands, seed=200 + number)
        rates[s] = float((first == second).reshape(pairs, bands, rows).all(axis=2).any(axis=1).mean())
        p = collision_probability(s, rows, bands)
        assert within(rates[s], p, pairs), f"s={s}: rate {rates[s]:.4f}, S-curve {p:.4f}"
    # power: the S-curve of one row more per band is rejected
    assert not all(
        within(rate, collision_probability(s, rows + 1, bands), pairs) for s, rate in rates.items()
    )


def test_the_planners_tables_find_pairs_at_the_rate_it_measured():
    for threshold, m in ((0.5, 128), (0.8, 256)):
        k, l = choose_kl(threshold, m, sketch="oph")  # noqa: E741
        promised = tables_recall(threshold, k, l, m, sketch="oph")
        assert promised >= 0.95
        first, second = pair_signatures(threshold, OPH_PLAN_UNION, 4000, m, seed=300)
        agree = first == second
        tables = family.lsh_tables(Params(num_perm=m, k=k, l=l, sketch="oph"))
        found = np.any([agree[:, t].all(axis=1) for t in tables], axis=0)
        assert within(float(found.mean()), promised, 4000, p_error=np.sqrt(0.05 * 0.95 / 20_000))


@pytest.mark.parametrize(("threshold", "union"), [(0.5, 4), (0.5, 10), (0.8, 10), (0.5, 20)])
def test_the_verify_cut_keeps_pairs_at_the_threshold_of_small_sets(threshold, union):
    # sets much smaller than m: a few elements fill every bin, and the agreements of pairs at J = T spread
    # wider than the binomial's (up to 1.4x its standard deviation at 4 to 10 elements); a cut of 3 binomial
    # sigmas lost 0.7-1.5 % of them, a minhash sketch's share is about 0.05 %
    params = Params(threshold=threshold, num_perm=80, sketch="oph")
    first, second = pair_signatures(threshold, union, 5000, 80, seed=int(threshold * 100) + union)
    assert round(threshold * union) / union == threshold
    below = ((first == second).sum(axis=1) < params.min_agree).mean()
    assert below <= 0.003, (threshold, union, below)
