"""The bag digests reuse compares (engines/digests.py) against the formula written out row by row in Python:
sum over a bag's rows of splitmix64's finalizer of term_hash XOR copies * golden, copies = round(weight)
(halves away from zero), at least 1; and equal whatever the order of the rows."""

from __future__ import annotations

import random

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lshsql.engines.base import DuckDBEngine
from lshsql.engines.digests import add_bag_digests
from lshsql.errors import InputError
from lshsql.pipeline import reuse

MASK = 2**64 - 1
GOLDEN = 0x9E3779B97F4A7C15


def finalize(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def copies(weight: float) -> int:
    whole = int(weight)  # weights are positive: int() is the floor
    return max(whole + (1 if weight - whole >= 0.5 else 0), 1)


def reference(rows: list[tuple[int, int, float]], n_urls: int) -> tuple[list[int], list[int]]:
    sums, counts = [0] * (n_urls + 1), [0] * (n_urls + 1)
    for url_id, term_hash, weight in rows:
        sums[url_id] = (sums[url_id] + finalize(term_hash ^ (copies(weight) * GOLDEN) & MASK)) & MASK
        counts[url_id] += 1
    return sums, counts


def kernel(rows: list[tuple[int, int, float]], n_urls: int) -> tuple[list[int], list[int]]:
    sums, counts = np.zeros(n_urls + 1, np.uint64), np.zeros(n_urls + 1, np.int64)
    ids, terms, weights = (np.array(column) for column in zip(*rows, strict=True))
    add_bag_digests(ids.astype(np.int64), terms.astype(np.int64), weights.astype(np.float64), sums, counts)
    return [int(s) for s in sums], [int(c) for c in counts]


def test_digests_follow_the_formula_and_ignore_row_order():
    rng = random.Random(5)
    # halves round up, below 1 counts once; 1e15 + 0.5 is the largest half a weight (MAX_WEIGHT) can hold
    weights = [1.0, 0.2, 0.5, 1.5, 2.5, 2.4999999, 3.0, 7.5, 100.0, 1e15, 1e15 - 0.5, 2.0**40 + 0.5]
    rows = [
        (rng.randint(1, 40), rng.randrange(2**63), rng.choice(weights) if rng.random() < 0.5 else 1.0)
        for _ in range(2_000)
    ]
    expected = reference(rows, 40)
    assert kernel(rows, 40) == expected
    rng.shuffle(rows)
    assert kernel(rows, 40) == expected
    assert expected[1][0] == 0 and sum(expected[1]) == 2_000


def test_a_different_copy_count_changes_the_digest():
    one = kernel([(1, 12345, 1.0)], 1)
    assert kernel([(1, 12345, 0.3)], 1) == one  # below 1: one copy still
    assert kernel([(1, 12345, 1.5)], 1) != one  # two copies


def test_a_bag_row_of_a_url_id_urls_does_not_have_is_refused(tmp_path):
    """The kernel indexes its sums by url_id unchecked: bags out of step with urls get a one-line error."""
    pq.write_table(
        pa.table({"url_id": [1, 2], "url": ["a", "b"], "n_terms": [1, 1]}), tmp_path / "urls.parquet"
    )
    bags = {"url_id": [1, 3], "term_hash": [5, 6], "tf": [1.0, 1.0], "df": [1, 1], "weight": [1.0, 1.0]}
    pq.write_table(pa.table(bags), tmp_path / "bags.parquet")
    with (
        duckdb.connect() as con,
        pytest.raises(InputError, match=r"url_id 3 is not one of urls.parquet's 1..2"),
    ):
        reuse.bag_digests(DuckDBEngine(con), tmp_path, tmp_path / "tmp" / "digests.parquet")


def test_set_digests_are_equal_for_equal_sets_in_any_order_and_apart_otherwise():
    from lshsql.engines.digests import set_digests

    draw = random.Random(11)
    sets = [draw.sample(range(1, 2**62), draw.randint(1, 40)) for _ in range(5000)]
    sets += [
        [x + 1 for x in sets[0]],
        sets[1][:-1],
        [*sets[2], sets[3][0]],
    ]  # a changed, a lost, a new element
    shuffled = [draw.sample(s, len(s)) for s in sets]
    counts = np.array([len(s) for s in sets])
    flat = lambda groups: np.array([x for s in groups for x in s], np.int64)  # noqa: E731
    digests, again = set_digests(flat(sets), counts), set_digests(flat(shuffled), counts)
    assert digests.shape == (len(sets), 2) and (digests == again).all()
    assert len({tuple(row) for row in digests.tolist()}) == len(sets)  # 5,003 sets, 5,003 digests
    # each half on its own tells them apart too: the two sums are independent mixes
    assert len(set(digests[:, 0].tolist())) == len(set(digests[:, 1].tolist())) == len(sets)
