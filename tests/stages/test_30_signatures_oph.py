"""signatures with --sketch oph: the UDF lsh_oph and sql/30_signatures_oph.sql against a plain-Python
reference of one-permutation hashing with optimal densification, bins and probes written out in integers."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lshsql.engines import minhash, oph
from lshsql.lsh import family
from lshsql.lsh.scurve import resolve
from lshsql.params import Params
from lshsql.pipeline import compiled
from lshsql.pipeline.stages import sql_file, template_context
from tests.conftest import run_stage
from tests.stages.test_30_signatures import BAGS, with_hashes

MASK64 = 2**64 - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix(z: int) -> int:
    """splitmix64's finalizer, in Python integers."""
    z = (z + GOLDEN) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def bin_and_value(x: int, m: int, salt: int) -> tuple[int, int]:
    v = mix(x ^ salt)
    return ((v >> 32) * m) >> 32, v & (2**31 - 1)


def probe(i: int, attempt: int, m: int, salt: int) -> int:
    return ((mix(((i << 32) | attempt) ^ mix(salt ^ GOLDEN)) >> 32) * m) >> 32


def reference(xs: list[int], m: int, salt: int) -> list[int]:
    """Least value per bin; an empty bin takes the value of the first non-empty bin its probes reach."""
    bins: dict[int, int] = {}
    for x in xs:
        b, value = bin_and_value(x, m, salt)
        bins[b] = min(value, bins.get(b, value))
    out = []
    for i in range(m):
        attempt = 0 if i in bins else 1
        while attempt and probe(i, attempt, m, salt) not in bins:
            attempt += 1
        out.append(bins[i] if not attempt else bins[probe(i, attempt, m, salt)])
    return out


def bag_reference(rows: list[dict], params: Params) -> dict[int, list[int]]:
    elements: dict[int, list[int]] = {}
    for r in rows:
        q = max(1, round(r["weight"]))
        elements.setdefault(r["url_id"], []).extend(
            minhash.element_hash(r["term_hash"], j) for j in range(1, q + 1)
        )
    salt = family.oph_salt(params.seed)
    return {u: reference(xs, params.num_perm, salt) for u, xs in elements.items()}


def lists(rows) -> pa.Array:
    return pa.array(rows, pa.list_(pa.int64()))


def test_a_set_smaller_than_m_fills_its_empty_bins_from_its_own():
    # two terms into 8 bins: at most two bins hold an element; the other six copy one of those two values,
    # each the bin its own probe sequence reaches first
    apple, pear = (r["term_hash"] for r in with_hashes(BAGS[:2]))
    salt = 12345
    got = oph.oph(lists([[apple, pear]]), lists([None]), pa.array([8]), pa.array([salt])).to_pylist()[0]
    xs = [minhash.element_hash(apple, 1), minhash.element_hash(pear, 1)]
    minima: dict[int, int] = {}
    for b, value in (bin_and_value(x, 8, salt) for x in xs):
        minima[b] = min(value, minima.get(b, value))
    assert all(got[b] == value for b, value in minima.items())
    assert all(got[i] in minima.values() for i in range(8)) and len(set(got)) == len(minima)
    assert got == reference(xs, 8, salt)


def test_copies_are_elements_and_null_or_empty_bags_give_null():
    apple, pear = (r["term_hash"] for r in with_hashes(BAGS[:2]))
    got = oph.oph(
        lists([[apple, pear], [apple], [], None]),
        lists([[3, 0], None, None, None]),
        pa.array([16] * 4),
        pa.array([9] * 4),
    ).to_pylist()
    # apple of 3 copies is apple#1..#3, pear of weight 0 still counts once
    xs = [minhash.element_hash(apple, j) for j in (1, 2, 3)] + [minhash.element_hash(pear, 1)]
    assert got[0] == reference(xs, 16, 9)
    assert got[1] == reference(xs[:1], 16, 9) == [got[1][0]] * 16  # one element: every bin holds it
    assert got[2:] == [None, None]


def test_the_udf_refuses_bags_whose_copies_differ_in_length_and_a_bad_m():
    with pytest.raises(ValueError, match="differ in length"):
        oph.oph(lists([[1, 2]]), lists([[1]]), pa.array([4]), pa.array([1]))
    with pytest.raises(ValueError, match="m must be in 1..1024"):
        oph.oph(lists([[1, 2]]), lists([None]), pa.array([0]), pa.array([1]))


@pytest.mark.parametrize("signature_bytes", [4, 3])
def test_the_stage_matches_the_reference(tmp_path, signature_bytes):
    params = resolve(
        Params(num_perm=24, seed=7, k=2, l=4, sketch="oph", signature_bytes=signature_bytes), True
    )
    assert sql_file("signatures", params) == "30_signatures_oph.sql"
    bags = with_hashes(BAGS + [{"url_id": 3, "term": f"w{i}", "weight": 1.0} for i in range(60)])
    rows = run_stage(tmp_path, "signatures", params, {"bags": bags})
    modulus = 2**31 if signature_bytes == 4 else 2**24
    assert {r["url_id"]: [r[f"h{i}"] for i in range(24)] for r in rows} == {
        u: [h % modulus for h in hs] for u, hs in bag_reference(bags, params).items()
    }
    # the salt is recorded beside the run, and the compiled SQL says the shell cannot run it
    assert pq.read_table(tmp_path / "family" / "oph.parquet").to_pylist() == [
        {"bins": 24, "salt": family.oph_salt(7)}
    ]


def test_the_salt_is_a_function_of_the_seed_and_minhash_stays_the_default():
    assert family.oph_salt(1) == family.oph_salt(1) != family.oph_salt(2)
    assert 0 <= family.oph_salt(1) < 2**63
    assert Params().sketch == "minhash" and sql_file("signatures", Params()) == "30_signatures.sql"


def test_the_compiled_sql_says_the_sketch_needs_the_udf(tmp_path):
    params = resolve(Params(num_perm=8, k=2, l=4, sketch="oph"), True)
    run_stage(tmp_path, "signatures", params, {"bags": with_hashes(BAGS)})
    ran = compiled.Compiled(
        "30_signatures_oph.sql", {}, template_context(params), compiled.input_views(tmp_path, ("bags",))
    )
    text = compiled.text(tmp_path, "signatures", ran)
    assert "Needs the Python UDF(s) lsh_oph" in text and "lsh_oph(" in text
