"""lsh_bag_overlap and lsh_bag_pack, the pairs stage's exact check: hand-checked bags, any order, sets
passed without copies, random bags against a Counter, and the SQL macros that stand in for them in a plain
DuckDB."""

from __future__ import annotations

from collections import Counter

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from lshsql import sqlfiles
from lshsql.engines import udf

BAG = pa.list_(pa.int64())


def overlap(u_terms, u_copies, v_terms, v_copies) -> list:
    """lsh_bag_overlap of two bags, each packed by lsh_bag_pack as the pairs stage does."""
    u = udf.bag_pack(pa.array(u_terms, BAG), pa.array(u_copies, BAG))
    v = udf.bag_pack(pa.array(v_terms, BAG), pa.array(v_copies, BAG))
    return udf.bag_overlap(u, v).to_pylist()


def test_pack_sorts_terms_with_their_copies_keeps_nulls_and_reads_slices():
    terms = pa.array([[5, -2, 2**63 - 1], None, [], [7], [9, 3]], BAG)
    copies = pa.array([None, None, None, [4], [1, 2]], BAG)
    packed = udf.bag_pack(terms, copies)
    got = [None if b is None else np.frombuffer(b, np.int64).tolist() for b in packed.to_pylist()]
    assert got == [[3, -2, 5, 2**63 - 1], None, [0], [1, 7, 4], [2, 3, 9, 2, 1]]
    sliced = udf.bag_pack(terms.slice(3), pa.chunked_array([copies.slice(3, 1), copies.slice(4)]))
    assert sliced.to_pylist() == packed.slice(3).to_pylist()


def test_hand_checked_bags():
    # sets: {1,2,3,4} and {3,4,5} share 2; bags: 3 (copies 2 and 5) and 4 (1 and 1) share min 2 + 1 = 3
    assert overlap(
        [[1, 2, 3, 4], [1, 2, 3, 4]], [None, [1, 1, 2, 1]], [[3, 4, 5], [3, 4, 5]], [None, [5, 1, 1]]
    ) == [2, 3]
    # a set against a bag: the set's terms count once each
    assert overlap([[7, 8]], [None], [[8, 7, 9]], [[4, 3, 1]]) == [2]
    # nothing shared, an empty bag, a NULL bag
    assert overlap([[1], [], None], [None, None, None], [[2], [2], [2]], [None, None, None]) == [0, 0, None]


def test_order_does_not_matter_and_hashes_may_be_large():
    big = [2**63 - 1, 2**62, 0, 12345]
    assert overlap([big], [[1, 2, 3, 4]], [big[::-1]], [[9, 9, 9, 9]]) == [10]


def test_terms_and_copies_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="differ in length"):
        overlap([[1, 2]], [[1]], [[1]], [None])
    with pytest.raises(ValueError, match="not a BLOB of lsh_bag_pack"):
        udf.bag_overlap(pa.array([b"1234567"]), pa.array([b"12345678"]))


def random_bags(rng, n: int) -> list[dict[int, int]]:
    """Bags drawn from a small vocabulary, so pairs share terms; half of them sets."""
    bags = []
    for i in range(n):
        terms = rng.choice(60, size=rng.integers(0, 40), replace=False)
        copies = rng.integers(1, 4, len(terms)) if i % 2 else np.ones(len(terms), int)
        bags.append(dict(zip((int(t) * 7919 for t in terms), map(int, copies), strict=True)))
    return bags


def columns(bags: list[dict[int, int]]) -> tuple[list, list]:
    """A bag's terms in a shuffled order, and its copies (NULL for a set)."""
    terms = [list(b) for b in bags]
    copies = [None if all(c == 1 for c in b.values()) else list(b.values()) for b in bags]
    return terms, copies


def test_random_bags_equal_the_multiset_intersection():
    rng = np.random.default_rng(5)
    u, v = random_bags(rng, 500), random_bags(rng, 500)
    want = [sum((Counter(a) & Counter(b)).values()) for a, b in zip(u, v, strict=True)]
    assert overlap(*columns(u), *columns(v)) == want
    assert any(want) and not all(want)


def test_the_sql_macro_gives_the_udfs_values():
    """sql/udf/lsh_bag_overlap.sql, which a stage's compiled SQL defines for the duckdb shell."""
    rng = np.random.default_rng(6)
    u, v = random_bags(rng, 300), random_bags(rng, 300)
    table = pa.table(
        {
            "ut": pa.array(columns(u)[0], BAG),
            "uc": pa.array(columns(u)[1], BAG),
            "vt": pa.array(columns(v)[0], BAG),
            "vc": pa.array(columns(v)[1], BAG),
        }
    )
    with duckdb.connect() as plain, duckdb.connect() as registered:
        for stand_in in ("lsh_bag_pack.sql", "lsh_bag_overlap.sql"):
            plain.execute((sqlfiles.sql_dir() / "udf" / stand_in).read_text())
        udf.register(registered)
        query = "select lsh_bag_overlap(lsh_bag_pack(ut, uc), lsh_bag_pack(vt, vc)) from t"
        for con in (plain, registered):
            con.register("t", table)
        assert plain.execute(query).fetchall() == registered.execute(query).fetchall()
