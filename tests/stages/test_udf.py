"""The hash UDFs: golden vectors (stored values must never change), ranges, and DuckDB registration."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

from lshsql import udf
from lshsql.params import PRIME

# Golden vectors: computed once from the definitions in lshsql/udf.py. If one of these changes, every
# stored signature changes with it; that is a breaking change, not a test to update.
GOLDEN_TERMS = {"": 8620854627038688460, "apple": 3189904099500505423, "привет": None}
GOLDEN_ELEMENTS = {("apple", 1): 1713460870, ("apple", 2): 781746720}


def test_term_hash_golden_vectors():
    got = udf.term_hash(pa.array(["", "apple", None])).to_pylist()
    assert got[:2] == [GOLDEN_TERMS[""], GOLDEN_TERMS["apple"]] and got[2] is None


def test_term_hash_is_xxh64_shifted():
    import xxhash

    assert udf.term_hash(pa.array(["привет"])).to_pylist() == [xxhash.xxh64_intdigest("привет".encode()) >> 1]


def test_element_hash_golden_vectors_and_range():
    apple = GOLDEN_TERMS["apple"]
    got = udf.element_hash(pa.array([apple, apple]), pa.array([1, 2], type=pa.int32())).to_pylist()
    assert got == [GOLDEN_ELEMENTS[("apple", 1)], GOLDEN_ELEMENTS[("apple", 2)]]
    rng = np.random.default_rng(0)
    values = udf.element_hash(pa.array(rng.integers(0, 2**63, 10_000)), pa.array(rng.integers(1, 50, 10_000)))
    array = values.to_numpy()
    assert array.min() >= 0 and array.max() < PRIME
    assert (
        len(np.unique(array)) > 9_980
    )  # distinct elements get distinct ids (birthday bound ~ 0.02 collisions)


def test_udfs_in_duckdb_equal_the_kernels():
    with duckdb.connect() as con:
        udf.register(con)
        got = con.execute(
            "select lsh_term_hash('apple'), lsh_element_hash(lsh_term_hash('apple'), 2)"
        ).fetchall()
    assert got == [(GOLDEN_TERMS["apple"], GOLDEN_ELEMENTS[("apple", 2)])]


def test_hashes_do_not_depend_on_pythonhashseed():
    import subprocess
    import sys

    code = (
        "from lshsql import udf; import pyarrow as pa; print(udf.term_hash(pa.array(['apple'])).to_pylist())"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("0", "1", "12345")
    }
    assert outputs == {f"[{GOLDEN_TERMS['apple']}]\n"}
