"""element_hashes and signatures: flattening of weighted bags and the min-hash family, against a plain-Python
reference."""

from __future__ import annotations

import pyarrow as pa

from lshsql.engines import udf
from lshsql.engines.udf import PRIME
from lshsql.lsh import family
from lshsql.lsh.scurve import resolve
from lshsql.params import Params
from tests.conftest import run_stage

BAGS = [
    {"url_id": 1, "term": "apple", "weight": 2.6},  # 3 copies
    {"url_id": 1, "term": "pear", "weight": 0.2},  # rounds to 0, still counts once
    {"url_id": 2, "term": "apple", "weight": 1.4},  # 1 copy
]


def with_hashes(rows: list[dict]) -> list[dict]:
    hashes = udf.term_hash(pa.array([r["term"] for r in rows])).to_pylist()
    return [{**r, "term_hash": h, "tf": 1.0, "df": 1} for r, h in zip(rows, hashes, strict=True)]


def reference(rows: list[dict], params: Params) -> dict[int, list[int]]:
    """min over elements term#1..term#q of ((a_i x + b_i) mod 2^40) >> 9, written out in Python integers."""
    coefficients = family.coefficients(params.seed, params.num_perm).to_pylist()[0]
    elements: dict[int, list[int]] = {}
    for r in rows:
        q = max(1, round(r["weight"]))
        xs = udf.element_hash(pa.array([r["term_hash"]] * q), pa.array(range(1, q + 1), type=pa.int32()))
        elements.setdefault(r["url_id"], []).extend(xs.to_pylist())
    return {
        url_id: [
            min(((coefficients[f"a{i}"] * x + coefficients[f"b{i}"]) % 2**40) >> 9 for x in xs)
            for i in range(params.num_perm)
        ]
        for url_id, xs in elements.items()
    }


def signatures(tmp_path, params: Params, bags: list[dict]) -> list[dict]:
    run_stage(tmp_path, "element_hashes", params, {"bags": bags})
    return run_stage(tmp_path, "signatures", params)


def test_element_hashes_cover_every_copy_once(tmp_path):
    bags = with_hashes(BAGS)
    rows = run_stage(tmp_path, "element_hashes", resolve(Params(), True), {"bags": bags})
    apple, pear = bags[0]["term_hash"], bags[1]["term_hash"]
    # apple's largest weight rounds to 3 copies (2.6 in url 1), pear's 0.2 still counts once
    expected = sorted([(apple, 1), (apple, 2), (apple, 3), (pear, 1)])
    assert [(r["term_hash"], r["copy_number"]) for r in rows] == expected
    xs = udf.element_hash(pa.array([t for t, _ in expected]), pa.array([j for _, j in expected], pa.int32()))
    assert [r["x"] for r in rows] == xs.to_pylist()


def test_signatures_match_the_reference(tmp_path):
    params = resolve(Params(num_perm=16, seed=7, k=2, l=4), True)  # k, l: no LSH here
    bags = with_hashes(BAGS)
    rows = signatures(tmp_path, params, bags)
    got = {r["url_id"]: [r[f"h{i}"] for i in range(16)] for r in rows}
    assert got == reference(bags, params)


def test_flattening_counts_rounded_copies(tmp_path):
    # url 1 holds apple#1..#3 and pear#1; url 2 only apple#1, so url 2's elements are a subset of url 1's:
    # every min-hash of url 1 is <= url 2's, and equal exactly where apple#1 is url 1's minimum.
    params = resolve(Params(num_perm=64), True)
    rows = signatures(tmp_path, params, with_hashes(BAGS))
    one, two = ([r[f"h{i}"] for i in range(64)] for r in rows)
    assert all(a <= b for a, b in zip(one, two, strict=True))
    agree = sum(a == b for a, b in zip(one, two, strict=True)) / 64
    assert 0.05 < agree < 0.6  # expected 1/4: one of the four elements of url 1


def test_three_byte_signatures_are_truncated(tmp_path):
    params = resolve(Params(num_perm=8, signature_bytes=3, k=2, l=4), True)
    bags = with_hashes(BAGS)
    rows = signatures(tmp_path, params, bags)
    expected = reference(bags, resolve(Params(num_perm=8, k=2, l=4), True))
    assert {r["url_id"]: [r[f"h{i}"] for i in range(8)] for r in rows} == {
        u: [h % 2**24 for h in hs] for u, hs in expected.items()
    }


def test_family_is_a_function_of_the_seed():
    assert family.coefficients(1, 8).equals(family.coefficients(1, 8))
    assert not family.coefficients(1, 8).equals(family.coefficients(2, 8))
    a = family.coefficients(1, 80).to_pylist()[0]
    assert all(
        2**31 <= a[f"a{i}"] < 2**32 and a[f"a{i}"] % 2 == 1 and 0 <= a[f"b{i}"] < 2**32 for i in range(80)
    )
    # the largest a*x + b the stage can compute stays inside signed BIGINT
    assert (2**32 - 1) * (PRIME - 1) + 2**32 - 1 < 2**63
    tables = family.lsh_tables(Params(k=3, l=125, seed=1))
    assert tables == family.lsh_tables(Params(k=3, l=125, seed=1)) and len(tables) == 125
    assert all(len(set(t)) == 3 and all(0 <= i < 80 for i in t) for t in tables)
    assert family.lsh_tables(Params(k=4, l=20, banding=True)) == [
        list(range(4 * b, 4 * b + 4)) for b in range(20)
    ]
