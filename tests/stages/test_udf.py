"""The hash UDFs: golden vectors (stored values must never change), ranges, and DuckDB registration."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa

from lshsql.engines import arrays, minhash, udf
from lshsql.engines.minhash import PRIME

# Golden vectors: computed once from the definitions in lshsql/engines/udf.py. If one of these changes, every
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
    got = [minhash.element_hash(apple, 1), minhash.element_hash(apple, 2)]
    assert got == [GOLDEN_ELEMENTS[("apple", 1)], GOLDEN_ELEMENTS[("apple", 2)]]
    rng = np.random.default_rng(0)
    pairs = zip(rng.integers(0, 2**63, 10_000), rng.integers(1, 50, 10_000), strict=True)
    array = np.array([minhash.element_hash(t, j) for t, j in pairs])
    assert array.min() >= 0 and array.max() < PRIME
    assert (
        len(np.unique(array)) > 9_980
    )  # distinct elements get distinct ids (birthday bound ~ 0.02 collisions)


def test_udfs_in_duckdb_equal_the_kernels():
    # with a = 1, b = 0 a min-hash is min(x) >> 9: apple#2 is the smaller of apple's two elements
    with duckdb.connect() as con:
        udf.register(con)
        got = con.execute(
            "select lsh_term_hash('apple'), lsh_minhash([lsh_term_hash('apple')], [2], [1], [0])"
        ).fetchall()
    assert got == [(GOLDEN_TERMS["apple"], [GOLDEN_ELEMENTS[("apple", 2)] >> 9])]


def test_hashes_do_not_depend_on_pythonhashseed():
    import subprocess
    import sys

    code = "from lshsql.engines import udf; import pyarrow as pa; print(udf.term_hash(pa.array(['apple'])).to_pylist())"
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


def test_integer_values_read_slices_nulls_and_chunks():
    array = pa.array([5, None, -3, 7, None, 9], type=pa.int32()).slice(1, 4)  # None, -3, 7, None
    values, valid = arrays.integer_values(array)
    assert values.dtype == np.int32 and valid.tolist() == [False, True, True, False]
    assert values[valid].tolist() == [-3, 7]
    values, valid = arrays.integer_values(pa.chunked_array([pa.array([1, 2]), pa.array([3])]))
    assert values.tolist() == [1, 2, 3] and valid is None
    values, _ = arrays.integer_values(pa.array([2**64 - 1], type=pa.uint64()))
    assert values.tolist() == [2**64 - 1]
    values, valid = arrays.integer_values(pa.array([1.0, None]))  # Spark's pandas path: float64 with NaN
    assert values[0] == 1.0 and valid.tolist() == [True, False]


def test_integer_array_round_trips_with_nulls():
    got = arrays.integer_array(np.array([4, 0, 6]), np.array([True, False, True]), pa.int32())
    assert got.type == pa.int32() and got.to_pylist() == [4, None, 6]
    assert arrays.integer_array([1, 2]).to_pylist() == [1, 2] and arrays.integer_array([]).to_pylist() == []


def test_minhash_of_a_null_or_empty_bag_is_null():
    apple = GOLDEN_TERMS["apple"]
    bags = pa.array([[apple], None, []], pa.list_(pa.int64()))
    coefficients = pa.array([[1]] * 3, pa.list_(pa.int64()))
    got = minhash.minhash(bags, pa.array([None] * 3, pa.list_(pa.int64())), coefficients, coefficients)
    assert got.to_pylist() == [[(GOLDEN_ELEMENTS[("apple", 1)] + 1) >> 9], None, None]


def test_a_bags_run_does_not_import_pandas(tmp_path):
    """pyarrow imports pandas, when installed, on its first to_numpy or pa.array (0.25 s of every run): the
    run path builds and reads Arrow integers from buffers instead."""
    import subprocess
    import sys

    import pyarrow.parquet as pq

    rows = {"url": [f"u{i % 7}" for i in range(60)], "term": [f"t{i % 11}" for i in range(60)]}
    pq.write_table(pa.table(rows), tmp_path / "bags.parquet")
    # SystemExit, not ImportError: pyarrow would take an ImportError as "no pandas" and go on
    code = f"""
import sys
class NoPandas:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas":
            raise SystemExit("pandas imported")
sys.meta_path.insert(0, NoPandas())
from lshsql import pipeline
from lshsql.params import Params
summary = pipeline.run({str(tmp_path / "w")!r}, Params(weighting="none", threshold=0.5), bags={str(tmp_path / "bags.parquet")!r})
print(summary.stages["pairs"]["rows"] >= 0)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "True"
