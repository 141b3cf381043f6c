"""Min-hash agreement is an unbiased estimate of Jaccard similarity (Broder 1997).

For one min-hash position, P(h(A) = h(B)) = J(A, B), so the agreement count over m independent positions is
Binomial(m, J): the fraction agreeing has mean J and variance J(1 - J)/m. The signatures stage flattens a
bag of integer weights q into the set {t#1..t#q}, so for weighted bags the same holds with the weighted
(multiset) Jaccard sum(min)/sum(max).

Tolerances (fixed seeds, so every check is deterministic; the bands say how unlikely a false alarm is):
  (a) mean error over the n pairs of one J: |mean| <= 3 * sqrt(J(1-J) / (m n))   (normal, 3 sigma: 0.27%)
  (b) per pair: |estimate - J| <= 4 * sqrt(J(1-J) / m) for >= 99% of pairs     (4 sigma: < 0.1% expected out)
Pairs use disjoint token sets, so their estimates are independent given the hash family.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lshsql import pipeline
from lshsql.params import Params
from tests.properties._support import resources, signature_matrix, write_parquet

M = 128
UNION = 300  # |A u B|: J = |A n B| / 300 is exact for every J below
JACCARDS = (0.1, 0.3, 0.5, 0.8, 0.95)
PAIRS_PER_J = 80
UNWEIGHTED_SEED = 20240601
WEIGHTED_PAIRS = 200
WEIGHTED_SEED = 7
MAX_WEIGHT = 6
SIGNATURE_STAGES = ("term_counts", "urls", "terms", "bags", "signatures")


def _agreement(work: Path, n_pairs: int) -> np.ndarray:
    """Fraction of the m positions on which the two URLs of pair i (urls p{i}/a, p{i}/b) agree."""
    urls, matrix = signature_matrix(work)
    row = {u: i for i, u in enumerate(urls)}
    a = matrix[[row[f"http://p{i:05d}.example/a"] for i in range(n_pairs)]]
    b = matrix[[row[f"http://p{i:05d}.example/b"] for i in range(n_pairs)]]
    assert a.shape == (n_pairs, M)
    return (a == b).mean(axis=1)


def _run_signatures(work: Path, bags: Path) -> None:
    params = Params(weighting="none", num_perm=M, threshold=0.5, seed=11)
    pipeline.run(work, params, bags=bags, resources=resources(work), only=SIGNATURE_STAGES)


def mean_error_ok(estimates: np.ndarray, truth: np.ndarray) -> tuple[bool, float, float]:
    """(|mean error| <= 3 standard errors, mean error, standard error) for independent estimates."""
    error = float(np.mean(estimates - truth))
    se = math.sqrt(float(np.sum(truth * (1 - truth))) / M) / len(truth)
    return abs(error) <= 3 * se, error, se


def fraction_within_4_sigma(estimates: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean(np.abs(estimates - truth) <= 4 * np.sqrt(truth * (1 - truth) / M) + 1e-12))


@pytest.fixture(scope="module")
def unweighted(tmp_path_factory) -> tuple[np.ndarray, np.ndarray]:
    """(exact J, estimated J) for 400 pairs of plain sets, 80 at each J."""
    rng = np.random.default_rng(UNWEIGHTED_SEED)
    urls, terms, truth = [], [], []
    pair = 0
    for j in JACCARDS:
        shared = round(j * UNION)
        only_a = (UNION - shared) // 2
        for _ in range(PAIRS_PER_J):
            tokens = [f"p{pair}t{i}" for i in rng.permutation(UNION)]  # shuffled: no positional pattern
            set_a = tokens[: shared + only_a]
            set_b = tokens[:shared] + tokens[shared + only_a :]
            assert len(set(set_a) & set(set_b)) / len(set(set_a) | set(set_b)) == shared / UNION
            for side, bag in (("a", set_a), ("b", set_b)):
                urls += [f"http://p{pair:05d}.example/{side}"] * len(bag)
                terms += bag
            truth.append(shared / UNION)
            pair += 1
    work = tmp_path_factory.mktemp("minhash_sets")
    _run_signatures(work, write_parquet(work / "input_bags.parquet", {"url": urls, "term": terms}))
    return np.array(truth), _agreement(work, pair)


@pytest.fixture(scope="module")
def weighted(tmp_path_factory) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(exact weighted Jaccard, support Jaccard, estimate) for 200 pairs of bags with integer weights."""
    rng = np.random.default_rng(WEIGHTED_SEED)
    urls, terms, weights, truth, support = [], [], [], [], []
    for pair in range(WEIGHTED_PAIRS):
        n_tokens = 60
        same = rng.uniform(0, 1)  # share of tokens with equal weights in both bags
        # Each token: equal weights (p = same), different weights in both, or in one bag only.
        kind = rng.choice(3, size=n_tokens, p=[same, 0.3 * (1 - same), 0.7 * (1 - same)])
        w_a = rng.integers(1, MAX_WEIGHT + 1, size=n_tokens)
        w_b = np.where(kind == 0, w_a, rng.integers(1, MAX_WEIGHT + 1, size=n_tokens))
        one_side = (kind == 2) & (rng.uniform(size=n_tokens) < 0.5)
        w_a, w_b = np.where(one_side, 0, w_a), np.where((kind == 2) & ~one_side, 0, w_b)
        w_a[0], w_b[0] = 1, 1  # neither bag is empty
        truth.append(np.minimum(w_a, w_b).sum() / np.maximum(w_a, w_b).sum())
        support.append(np.sum((w_a > 0) & (w_b > 0)) / np.sum((w_a > 0) | (w_b > 0)))
        for side, w in (("a", w_a), ("b", w_b)):
            kept = np.flatnonzero(w > 0)
            urls += [f"http://p{pair:05d}.example/{side}"] * len(kept)
            terms += [f"p{pair}t{i}" for i in kept]
            weights += [float(w[i]) for i in kept]
    work = tmp_path_factory.mktemp("minhash_weighted")
    bags = write_parquet(work / "input_bags.parquet", {"url": urls, "term": terms, "weight": weights})
    _run_signatures(work, bags)
    return np.array(truth), np.array(support), _agreement(work, WEIGHTED_PAIRS)


@pytest.mark.parametrize("j", JACCARDS)
def test_agreement_is_unbiased_for_plain_jaccard(unweighted, j):
    truth, estimate = unweighted
    group = np.isclose(truth, j)
    assert group.sum() == PAIRS_PER_J
    ok, error, se = mean_error_ok(estimate[group], truth[group])
    assert ok, f"J={j}: mean error {error:+.4f} outside 3 SE = {3 * se:.4f}"
    # The check has power: the Dice coefficient 2J/(1+J), a plausible wrong target, is rejected.
    dice = 2 * truth[group] / (1 + truth[group])
    assert not mean_error_ok(estimate[group], dice)[0]


def test_each_estimate_within_4_sigma(unweighted):
    truth, estimate = unweighted
    within = fraction_within_4_sigma(estimate, truth)
    assert within >= 0.99, f"only {within:.3f} of pairs within 4 sigma of their exact Jaccard"
    # Power: the same estimates scored against the neighbouring J group's value fail badly.
    shifted = np.array([JACCARDS[(JACCARDS.index(t) + 1) % len(JACCARDS)] for t in np.round(truth, 2)])
    assert fraction_within_4_sigma(estimate, shifted) < 0.5


def test_agreement_is_unbiased_for_weighted_jaccard(weighted):
    truth, support, estimate = weighted
    assert truth.min() < 0.3 and truth.max() > 0.8  # a spread of similarities
    ok, error, se = mean_error_ok(estimate, truth)
    assert ok, f"mean error {error:+.4f} outside 3 SE = {3 * se:.4f} (weighted Jaccard)"
    assert fraction_within_4_sigma(estimate, truth) >= 0.99
    # Power: ignoring the weights (Jaccard of the supports) is a wrong target and is rejected.
    assert not mean_error_ok(estimate, support)[0]
