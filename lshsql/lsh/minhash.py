"""Min-hash signatures of sets, compiled (numba): the values sql/30_signatures.sql computes for bags of
weight 1, without building the table of elements first. `lshsql dedup` computes each batch's signatures
in the thread that shingled it.

Element x of term t is lsh_element_hash(t, 1) (engines/udf.py: splitmix64(t XOR golden) mod 2^31 - 1) and
min-hash i is min over x of ((a_i * x + b_i) mod 2^40) >> 9, mod 2^24 with 3-byte signatures: the same
family (lsh/family.py), so a set gets the same signature here as from the SQL stage.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from lshsql.lsh import family

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_PRIME = np.uint64(2**31 - 1)
_MASK40 = np.int64(2**40 - 1)


@njit(cache=True, nogil=True)
def _signature_kernel(term_hashes, counts, a, b, modulus):
    m = a.shape[0]
    n_sets = counts.shape[0]
    out = np.empty((n_sets, m), dtype=np.int32)
    mins = np.empty(m, dtype=np.int64)
    start = 0
    for d in range(n_sets):
        for i in range(m):
            mins[i] = _MASK40 + 1
        for e in range(start, start + counts[d]):
            z = np.uint64(term_hashes[e]) ^ _GOLDEN
            z = z + _GOLDEN
            z = (z ^ (z >> np.uint64(30))) * _M1
            z = (z ^ (z >> np.uint64(27))) * _M2
            z = z ^ (z >> np.uint64(31))
            x = np.int64(z % _PRIME)
            for i in range(m):
                v = (x * a[i] + b[i]) & _MASK40
                if v < mins[i]:
                    mins[i] = v
        for i in range(m):
            out[d, i] = np.int32((mins[i] >> 9) % modulus)
        start += counts[d]
    return out


def set_signatures(
    term_hashes: np.ndarray, counts: np.ndarray, seed: int, num_perm: int, signature_bytes: int = 4
) -> np.ndarray:
    """An (n, m) int32 array: the signature of each set. Set d is term_hashes[sum(counts[:d]) :][: counts[d]]
    (63-bit term hashes, as lsh_term_hash gives); every count must be at least 1."""
    pairs = family.coefficient_pairs(seed, num_perm)
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    modulus = np.int64(2**31 if signature_bytes == 4 else 2**24)
    return _signature_kernel(
        term_hashes.astype(np.int64, copy=False), counts.astype(np.int64, copy=False), a, b, modulus
    )
