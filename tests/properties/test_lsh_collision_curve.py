"""The candidates stage follows the LSH S-curve, and its bucket cap emits exactly the pairs it promises.

Synthetic signatures (no hashing involved): for pair i of similarity s, URLs 2i+1 and 2i+2 agree at each of
the m positions independently with probability s; every other value is unique in the whole table, so two
URLs of different pairs never share a bucket. Then:

  banding (b bands of r disjoint rows): P(candidate) = 1 - (1 - s^r)^b exactly.
  random tables (k indices per table, drawn from m = 80, tables may share indices): the closed form is only
  an approximation. Collisions in different tables are increasing events of the same independent agreements,
  hence positively correlated (Harris-FKG), so the true rate is <= the closed form. The exact rate for the
  drawn tables is estimated by Monte Carlo with the same agreement model (numpy, 200,000 draws).

Tolerance: the candidate count over N = 2000 pairs is Binomial(N, p), and must lie in its 4-sigma band
(about N p +- 4 sqrt(N p (1-p)), computed from the exact binomial tails, each < P(Z > 4) = 3.2e-5, since at
s = 0.8 the normal approximation fails). For the random tables p itself is widened by 4 Monte Carlo standard
errors sqrt(p(1-p)/200000).
Besides the statistics, the SQL result is checked exactly against the candidates and n_bands computed in
numpy from the same signatures.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from lshsql.lsh import family
from lshsql.lsh.scurve import collision_probability
from lshsql.params import Params
from tests.properties._support import run_stage, write_signatures

M = 80
K, L = 4, 20  # r = 4 rows x b = 20 bands uses all 80 positions; the S-curve rises around s = 0.45
SIMILARITIES = (0.2, 0.4, 0.5, 0.6, 0.8)
PAIRS_PER_S = 2000
MONTE_CARLO_DRAWS = 200_000


def synthetic_signatures(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(url_ids, signature matrix, s per pair): pair i is URLs 2i+1 and 2i+2."""
    rng = np.random.default_rng(seed)
    s = np.repeat(SIMILARITIES, PAIRS_PER_S)
    n = len(s)
    agree = rng.uniform(size=(n, M)) < s[:, None]
    values = rng.permutation(2 * n * M).astype(np.int64).reshape(2, n, M)  # unique values, shuffled
    first = values[0]
    second = np.where(agree, first, values[1])
    matrix = np.empty((2 * n, M), dtype=np.int64)
    matrix[0::2], matrix[1::2] = first, second
    assert matrix.max() < 2**31
    return np.arange(1, 2 * n + 1), matrix, s


def candidates(work: Path, url_ids, matrix, params: Params) -> dict[tuple[int, int], int]:
    write_signatures(work / "signatures.parquet", url_ids, matrix)
    run_stage(work, "buckets", params)
    run_stage(work, "candidates", params)
    table = pq.read_table(work / "candidates.parquet").to_pydict()
    return dict(zip(zip(table["u_id"], table["v_id"], strict=True), table["n_bands"], strict=True))


def expected_collisions(matrix: np.ndarray, tables: list[list[int]]) -> np.ndarray:
    """Per pair, the number of tables in which both URLs agree on all k indices (numpy, exact)."""
    agree = matrix[0::2] == matrix[1::2]
    return np.sum([agree[:, t].all(axis=1) for t in tables], axis=0)


FOUR_SIGMA_TAIL = 3.17e-5  # P(Z > 4) for a standard normal: each tail of the acceptance interval


def _log_pmf(x: int, n: int, p: float) -> float:
    if p <= 0 or p >= 1:
        return 0.0 if x == (0 if p <= 0 else n) else -math.inf
    return (
        math.lgamma(n + 1)
        - math.lgamma(x + 1)
        - math.lgamma(n - x + 1)
        + x * math.log(p)
        + (n - x) * math.log1p(-p)
    )


def binomial_interval(n: int, p: float) -> tuple[int, int]:
    """Counts [lo, hi] outside which each Binomial(n, p) tail has probability < P(Z > 4): the 4-sigma band,
    exact where the normal approximation is poor (p = 0.99997 at s = 0.8 expects 0.05 misses in 2000)."""
    pmf = [math.exp(_log_pmf(x, n, p)) for x in range(n + 1)]
    lo, tail = 0, 0.0
    while tail + pmf[lo] < FOUR_SIGMA_TAIL:
        tail += pmf[lo]
        lo += 1
    hi, tail = n, 0.0
    while tail + pmf[hi] < FOUR_SIGMA_TAIL:
        tail += pmf[hi]
        hi -= 1
    return lo, hi


def within(rate: float, p: float, n: int, p_error: float = 0.0) -> bool:
    """Is the count n*rate inside the 4-sigma band of Binomial(n, p'), for some p' in p +- 4 p_error?"""
    lo, _ = binomial_interval(n, max(0.0, p - 4 * p_error))
    _, hi = binomial_interval(n, min(1.0, p + 4 * p_error))
    return lo <= round(rate * n) <= hi


def monte_carlo_rate(s: float, tables: list[list[int]], rng: np.random.Generator) -> float:
    agree = rng.uniform(size=(MONTE_CARLO_DRAWS, M)) < s
    return float(np.mean(np.any([agree[:, t].all(axis=1) for t in tables], axis=0)))


def observed_rates(found: dict, s: np.ndarray) -> dict[float, float]:
    hit = np.array([(2 * i + 1, 2 * i + 2) in found for i in range(len(s))])
    return {sim: float(hit[s == sim].mean()) for sim in SIMILARITIES}


def check_exact(found: dict, matrix: np.ndarray, tables: list[list[int]]) -> None:
    n_bands = expected_collisions(matrix, tables)
    expected = {(2 * i + 1, 2 * i + 2): int(c) for i, c in enumerate(n_bands) if c}
    assert found == expected


def test_banding_follows_the_s_curve_exactly(tmp_path):
    params = Params(num_perm=M, k=K, l=L, banding=True, max_bucket=1000)
    tables = family.lsh_tables(params)
    assert sorted(i for t in tables for i in t) == list(range(M))  # disjoint bands covering all rows
    url_ids, matrix, s = synthetic_signatures(seed=1)
    found = candidates(tmp_path, url_ids, matrix, params)
    check_exact(found, matrix, tables)
    for sim, rate in observed_rates(found, s).items():
        p = collision_probability(sim, K, L)
        assert within(rate, p, PAIRS_PER_S), f"s={sim}: rate {rate:.4f}, S-curve {p:.4f}"
    # Power: the S-curve of one row more per band (a plausible off-by-one) is rejected.
    rates = observed_rates(found, s)
    assert not all(
        within(rates[sim], collision_probability(sim, K + 1, L), PAIRS_PER_S) for sim in SIMILARITIES
    )


def test_random_tables_match_their_exact_rate(tmp_path):
    params = Params(num_perm=M, k=K, l=L, banding=False, seed=3, max_bucket=1000)
    tables = family.lsh_tables(params)
    assert all(len(set(t)) == K for t in tables) and len({i for t in tables for i in t}) < M  # overlapping
    url_ids, matrix, s = synthetic_signatures(seed=2)
    found = candidates(tmp_path, url_ids, matrix, params)
    check_exact(found, matrix, tables)
    rng = np.random.default_rng(4)
    report = []
    for sim, rate in observed_rates(found, s).items():
        exact = monte_carlo_rate(sim, tables, rng)
        closed = collision_probability(sim, K, L)
        mc_error = math.sqrt(exact * (1 - exact) / MONTE_CARLO_DRAWS)
        assert within(rate, exact, PAIRS_PER_S, mc_error), f"s={sim}: rate {rate:.4f}, exact {exact:.4f}"
        # Harris-FKG: positively correlated tables collide less often than independent ones would.
        assert exact <= closed + 4 * mc_error + 1e-12
        report.append(
            f"s={sim}: observed {rate:.4f}, exact {exact:.4f}, closed form {closed:.4f} "
            f"(closed - exact = {closed - exact:+.4f})"
        )
    print("\nrandom LSH tables, k=4, l=20, m=80:\n  " + "\n  ".join(report))
    # Power: the S-curve of one index more per table is rejected.
    rates = observed_rates(found, s)
    assert not all(
        within(rates[sim], collision_probability(sim, K + 1, L), PAIRS_PER_S) for sim in SIMILARITIES
    )


@pytest.mark.parametrize(("sizes", "cap"), [((2, 3, 5, 12, 1), 4), ((10,), 10), ((11,), 10), ((7, 2), 2)])
@pytest.mark.parametrize("banding", [True, False])
def test_bucket_cap_emits_the_promised_pairs(tmp_path, sizes, cap, banding):
    """Groups of identical signatures: each group is one bucket per table. A bucket of N <= c members gives
    N(N-1)/2 pairs, one of N > c members c(2N-c-1)/2: the pairs with a member among its first c url_ids."""
    m, k, l = 12, 3, 4  # noqa: E741
    params = Params(num_perm=m, k=k, l=l, banding=banding, seed=5, max_bucket=cap)
    rng = np.random.default_rng(sum(sizes) + cap)
    order = rng.permutation(sum(sizes)) + 1  # url_ids of a group are not contiguous
    groups, start = [], 0
    for size in sizes:
        groups.append(sorted(int(u) for u in order[start : start + size]))
        start += size
    matrix = np.zeros((sum(sizes), m), dtype=np.int64)
    for g, members in enumerate(groups):
        matrix[np.array(members) - 1] = np.arange(m) + g * m  # same row within a group, unique across
    found = candidates(tmp_path, np.arange(1, sum(sizes) + 1), matrix, params)

    expected = {}
    for members in groups:
        for a, u in enumerate(members):
            for v in members[a + 1 :]:
                if a < cap:  # u is among the first `cap` members in url_id order
                    expected[(u, v)] = l
    assert found == expected

    def emitted(n: int) -> int:
        return n * (n - 1) // 2 if n <= cap else cap * (2 * n - cap - 1) // 2

    assert len(found) == sum(emitted(n) for n in sizes)
    # Power: without the cap, or with it off by one, the counts differ once a bucket exceeds cap + 1 (at
    # N = c + 1 the cap removes nothing: only pairs of two members both ranked after c are dropped).
    if any(n > cap + 1 for n in sizes):
        assert len(found) != sum(n * (n - 1) // 2 for n in sizes)
        assert len(found) != sum(emitted(n) for n in sizes if n <= cap) + sum(
            (cap + 1) * (2 * n - cap - 2) // 2 for n in sizes if n > cap
        )

    rows, stats = run_stage(tmp_path, "bucket_sizes", params)
    table = pq.read_table(tmp_path / "bucket_sizes.parquet").to_pydict()
    shared = sorted({n for n in sizes if n > 1})
    assert table["n_members"] == shared
    assert table["n_buckets"] == [l * sizes.count(n) for n in shared]
    assert table["n_pairs"] == [l * sizes.count(n) * n * (n - 1) // 2 for n in shared]
    assert table["n_pairs_emitted"] == [l * sizes.count(n) * emitted(n) for n in shared]
    assert stats["bucket_pairs_emitted"] == l * len(found)
    assert stats["buckets_capped"] == l * sum(1 for n in sizes if n > cap)
    assert stats["largest_bucket"] == max(sizes)
