"""signatures: flattening of weighted bags and the min-hash family, against a plain-Python reference, and
the compiled UDF lsh_minhash against its plain-SQL stand-in (sql/udf/lsh_minhash.sql) on random bags."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lshsql.engines import minhash, udf
from lshsql.engines.minhash import PRIME
from lshsql.lsh import family
from lshsql.lsh.scurve import resolve
from lshsql.params import Params
from lshsql.pipeline import compiled
from lshsql.pipeline.stages import template_context
from tests.conftest import rendered_contexts, run_stage

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
        xs = [minhash.element_hash(r["term_hash"], j) for j in range(1, q + 1)]
        elements.setdefault(r["url_id"], []).extend(xs)
    return {
        url_id: [
            min(((coefficients[f"a{i}"] * x + coefficients[f"b{i}"]) % 2**40) >> 9 for x in xs)
            for i in range(params.num_perm)
        ]
        for url_id, xs in elements.items()
    }


def signatures(tmp_path, params: Params, bags: list[dict]) -> list[dict]:
    return run_stage(tmp_path, "signatures", params, {"bags": bags})


def test_elements_are_every_copy_once():
    # apple of weight 2.6 is apple#1..#3; pear of weight 0.2 still counts once: with a = 1, b = 0 each
    # min-hash is the smallest x >> 9 of the bag's elements
    apple, pear = (r["term_hash"] for r in with_hashes(BAGS[:2]))
    bag = pa.array([[apple, pear]], pa.list_(pa.int64()))
    ones, zeros = pa.array([[1]], pa.list_(pa.int64())), pa.array([[0]], pa.list_(pa.int64()))
    got = minhash.minhash(bag, pa.array([[3, 0]], pa.list_(pa.int64())), ones, zeros).to_pylist()
    xs = [minhash.element_hash(apple, j) for j in (1, 2, 3)] + [minhash.element_hash(pear, 1)]
    assert got == [[min(xs) >> 9]]
    one_each = minhash.minhash(bag, pa.array([None], pa.list_(pa.int64())), ones, zeros).to_pylist()
    assert one_each == [[min(xs[0], xs[3]) >> 9]]


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


@pytest.mark.parametrize("sketch", ["minhash", "oph"])
def test_bags_of_one_copy_each_list_no_copies(tmp_path, monkeypatch, sketch):
    """When no weight rounds above 1 the runner renders the file without the list of copies (every group's
    would be NULL), and the signatures are those of the sets; one weight of 2.6 brings the list back."""
    rendered = rendered_contexts(monkeypatch, "one_copy_each")
    params = resolve(Params(num_perm=16, seed=7, k=2, l=4, sketch=sketch), True)
    sets = with_hashes([{**r, "weight": min(r["weight"], 1.4)} for r in BAGS])
    rows = signatures(tmp_path / "sets", params, sets)
    as_sets = signatures(tmp_path / "ones", params, [{**r, "weight": 1.0} for r in sets])
    assert rows == as_sets
    if sketch == "minhash":
        assert {r["url_id"]: [r[f"h{i}"] for i in range(16)] for r in rows} == reference(sets, params)
    weighted = signatures(tmp_path / "weighted", params, with_hashes(BAGS))
    assert rendered == [True, True, False]
    assert weighted != rows


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


def in_plain_duckdb(work, params: Params) -> list[tuple]:
    """The stage's compiled SQL run in a DuckDB without lshsql's UDFs: the stand-in macros compute it."""
    context = template_context(params)
    ran = compiled.Compiled("30_signatures.sql", {}, context, compiled.input_views(work, ("bags",)))
    text = compiled.text(work, "signatures", ran).replace("'bags.parquet'", repr(str(work / "bags.parquet")))
    with duckdb.connect() as con:
        return con.execute(text).fetchall()


WEIGHTS = st.sampled_from([0.2, 0.5, 1.0, 1.49, 1.5, 2.4, 3.0, 6.6])


@settings(deadline=None, max_examples=15)
@given(
    bags=st.dictionaries(
        st.tuples(st.integers(1, 6), st.integers(0, 2**63 - 1)), WEIGHTS, min_size=1, max_size=40
    ),
    signature_bytes=st.sampled_from([3, 4]),
    seed=st.integers(0, 1000),
)
def test_the_udf_equals_the_plain_sql_form(tmp_path_factory, bags, signature_bytes, seed):
    params = resolve(Params(num_perm=12, signature_bytes=signature_bytes, seed=seed, k=2, l=4), True)
    rows = [
        {"url_id": u, "term_hash": t, "tf": 1.0, "df": 1, "weight": w} for (u, t), w in sorted(bags.items())
    ]
    work = tmp_path_factory.mktemp("signatures")
    got = run_stage(work, "signatures", params, {"bags": rows})
    assert [tuple(r.values()) for r in got] == in_plain_duckdb(work, params)
    expected = reference(rows, resolve(Params(num_perm=12, seed=seed, k=2, l=4), True))
    modulus = 2 ** (8 * signature_bytes - 1) if signature_bytes == 4 else 2**24
    assert {r["url_id"]: [r[f"h{i}"] for i in range(12)] for r in got} == {
        u: [h % modulus for h in hs] for u, hs in expected.items()
    }


@settings(deadline=None, max_examples=30)
@given(
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=6),
    m=st.sampled_from([1, 3, 7, 80]),
    seed=st.integers(0, 2**32 - 1),
    weighted=st.booleans(),
)
def test_the_kernel_equals_the_formula_at_every_bag_size(sizes, m, seed, weighted):
    # the kernel folds elements four at a time: bags of 1 to 9 elements leave every remainder; the
    # extreme coefficients 2^32 - 1 take a * x + b to its largest, where a 64-bit product could wrap
    rng = np.random.default_rng(seed)
    terms = rng.integers(-(2**63), 2**63 - 1, size=sum(sizes), dtype=np.int64)
    copies = rng.integers(0, 4, size=sum(sizes)) if weighted else np.ones(sum(sizes), np.int64)
    a = np.concatenate([[2**32 - 1], rng.integers(0, 2**32, size=m - 1)])[:m]
    b = np.concatenate([[2**32 - 1], rng.integers(0, 2**32, size=m - 1)])[:m]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    bags = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(terms))
    copy_lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(copies))
    coefficient = (
        pa.array([a.tolist()] * len(sizes), pa.list_(pa.int64())),
        pa.array([b.tolist()] * len(sizes), pa.list_(pa.int64())),
    )
    got = minhash.minhash(bags, copy_lists if weighted else pa.nulls(len(sizes), bags.type), *coefficient)
    expected = []
    for d in range(len(sizes)):
        xs = [
            minhash.element_hash(int(terms[e]), j)
            for e in range(offsets[d], offsets[d + 1])
            for j in range(1, max(1, int(copies[e])) + 1)
        ]
        expected.append([min(((int(a[i]) * x + int(b[i])) % 2**40) >> 9 for x in xs) for i in range(m)])
    assert got.to_pylist() == expected


def test_coefficients_outside_32_bits_are_refused():
    bag = pa.array([[1, 2]], pa.list_(pa.int64()))
    none = pa.nulls(1, pa.list_(pa.int64()))
    for a, b in (([2**32], [0]), ([1], [-1])):
        with pytest.raises(ValueError, match="outside"):
            minhash.minhash(
                bag, none, pa.array([a], pa.list_(pa.int64())), pa.array([b], pa.list_(pa.int64()))
            )
