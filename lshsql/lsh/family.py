"""The seeded min-hash family and LSH tables, generated in Python and stored as small Parquet tables.

Min-hash (Broder 1997) with multiply-add-shift hashing (after Dietzfelbinger 1996): h_i(x) = bits 9..39 of
a_i * x + b_i, i.e. ((a_i * x + b_i) mod 2^40) >> 9, for the 31-bit element hash x, with a_i odd in
[2^31, 2^32) and b_i in [0, 2^32) drawn from numpy's PCG64 generator seeded with `seed`. a*x + b < 2^63 never
leaves signed BIGINT, and a mask and a shift cost SQL far less than `mod P` (the signatures stage ran 2.2x
faster than with (a*x + b) mod (2^31 - 1)). The product wraps 2^40 many times, so the bits taken are well
mixed; agreement of 80 such min-hashes is unbiased with binomial variance (tests/properties).

LSH (Haveliwala et al. 2000, sec. 4): l tables, each the concatenation of k min-hashes at indices drawn at
random from 0..m-1 (with --banding: b bands of r contiguous rows). Both are functions of (seed, m, k, l,
banding) only, so a run can be repeated exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lshsql.engines.arrays import integer_array

if TYPE_CHECKING:
    from lshsql.params import Params

COEFFICIENT_STREAM = 0  # independent numpy streams: the tables do not change when m changes coefficients
TABLE_STREAM = 1
OPH_STREAM = 3  # stream 2 is the planner's (scurve.RECALL_STREAM)


def coefficient_arrays(seed: int, num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    """a and b (int64 arrays of m) of the m min-hashes."""
    rng = np.random.default_rng([seed, COEFFICIENT_STREAM])
    a = rng.integers(2**30, 2**31, size=num_perm, dtype=np.int64) * 2 + 1  # odd, in [2^31, 2^32)
    b = rng.integers(0, 2**32, size=num_perm, dtype=np.int64)
    return a, b


def oph_salt(seed: int) -> int:
    """The salt of the one-permutation sketch (--sketch oph: its bins and probes, engines/oph.py), < 2^63."""
    return int(np.random.default_rng([seed, OPH_STREAM]).integers(0, 2**63, dtype=np.int64))


def oph_family(seed: int, num_perm: int) -> pa.Table:
    """One row: the bins m and the salt of the one-permutation sketch (for the record and for users)."""
    return pa.Table.from_arrays(
        [integer_array([num_perm]), integer_array([oph_salt(seed)])], ["bins", "salt"]
    )


def coefficient_pairs(seed: int, num_perm: int) -> list[tuple[int, int]]:
    """(a_i, b_i) of each of the m min-hashes."""
    a, b = coefficient_arrays(seed, num_perm)
    return [(int(a_i), int(b_i)) for a_i, b_i in zip(a, b, strict=True)]


def coefficients(seed: int, num_perm: int) -> pa.Table:
    """One row: columns a0..a{m-1} and b0..b{m-1} of the hash family (for the record and for users)."""
    pairs = coefficient_pairs(seed, num_perm)
    columns = {f"a{i}": [a] for i, (a, _) in enumerate(pairs)}
    columns |= {f"b{i}": [b] for i, (_, b) in enumerate(pairs)}
    return pa.Table.from_arrays([integer_array(values) for values in columns.values()], list(columns))


def lsh_tables(params: Params) -> list[list[int]]:
    """For each of the l tables, the k min-hash indices it concatenates."""
    k, l, m = params.k, params.l, params.num_perm  # noqa: E741
    if params.banding:
        return [list(range(band * k, band * k + k)) for band in range(l)]
    return list(islice(random_tables(params.seed, m, k), l))


def random_tables(seed: int, num_perm: int, k: int) -> Iterator[list[int]]:
    """The random tables in the order they are drawn: k distinct indices each (a repeated index would add
    nothing to the key); tables may overlap. Table j is the same whatever l, so l tables are the first l."""
    rng = np.random.default_rng([seed, TABLE_STREAM])
    while True:
        yield sorted(int(i) for i in rng.choice(num_perm, size=min(k, num_perm), replace=False))


def lsh_tables_table(tables: list[list[int]]) -> pa.Table:
    """lsh_tables(band, slot, hash_index) as a table, for the record and for users."""
    rows = [(band, slot, index) for band, indices in enumerate(tables) for slot, index in enumerate(indices)]
    names = ("band", "slot", "hash_index")
    arrays = [integer_array([r[i] for r in rows], arrow_type=pa.int32()) for i in range(len(names))]
    return pa.Table.from_arrays(arrays, list(names))


def write(table: pa.Table, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")
    return path
