"""One-permutation hashing with optimal densification, compiled (numba): the UDF lsh_oph that
sql/30_signatures_oph.sql calls once per URL (--sketch oph).

Each element t#j of a flattened bag keeps the base hash x(t, j) of the min-hash sketch (engines/minhash.py),
so weighted bags work the same way. It is hashed once more, v = splitmix64(x XOR salt), and falls into bin
(v >> 32) * m >> 32 with the value v mod 2^31; signature position i is the least value in bin i (Li, Owen &
Zhang 2012). A bin no element fell into copies the value of the first non-empty bin met by probing
p(i, 1), p(i, 2), ..., a seeded hash of (i, attempt) that is the same for every bag (Shrivastava 2017,
optimal densification), so two bags agree at each position with probability their Jaccard similarity. The
kernel does one pass over the elements, not m: a longer signature costs little more.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lshsql.engines.jit import njit
from lshsql.engines.minhash import GOLDEN, bags_to_sign, element_hash, finalize64, int32_lists
from lshsql.engines.overlap import list_parts

VALUE_MASK = np.uint64(2**31 - 1)
EMPTY = np.int64(2**31)  # above every value: the bin holds no element
MAX_BINS = 1024


@njit(cache=True, nogil=True, inline="always")
def _mix(z):
    """splitmix64 of a uint64: the golden step, then its finalizer."""
    return finalize64(z + GOLDEN)


@njit(cache=True, nogil=True, inline="always")
def _bin_of(v, m):
    """The bin of a 64-bit hash: its high 32 bits scaled to 0..m-1 (multiply-shift)."""
    return np.int64(((v >> np.uint64(32)) * np.uint64(m)) >> np.uint64(32))


@njit(cache=True, nogil=True)
def probe(salt, i, attempt, m):
    """The bin an empty bin i looks at on its attempt-th probe: the same for every bag."""
    key = (np.uint64(i) << np.uint64(32)) | np.uint64(attempt)
    return _bin_of(_mix(key ^ _mix(np.uint64(salt) ^ GOLDEN)), m)


@njit(cache=True, nogil=True)
def signatures(offsets, terms, c_offsets, copies, weighted, valid, m, salt, out):
    """out[r * m : (r + 1) * m] = row r's densified one-permutation signature (values < 2^31): terms
    terms[offsets[r]:offsets[r + 1]], their copies at c_offsets[r] where weighted[r] (else one each, and
    fewer than 1 counts as 1). Rows not valid or without terms are left as they are."""
    mins = np.empty(m, np.int64)
    salt64 = np.uint64(salt)
    for r in range(offsets.shape[0] - 1):
        if not valid[r] or offsets[r] == offsets[r + 1]:
            continue
        mins[:] = EMPTY
        for e in range(offsets[r], offsets[r + 1]):
            q = max(copies[c_offsets[r] + e - offsets[r]], 1) if weighted[r] else 1
            for j in range(1, q + 1):
                v = _mix(np.uint64(element_hash(terms[e], j)) ^ salt64)
                b = _bin_of(v, m)
                value = np.int64(v & VALUE_MASK)
                if value < mins[b]:
                    mins[b] = value
        for i in range(m):
            if mins[i] != EMPTY:
                out[r * m + i] = np.int32(mins[i])
                continue
            attempt = 1
            while mins[probe(salt, i, attempt, m)] == EMPTY:  # ends: the bag has an element in some bin
                attempt += 1
            out[r * m + i] = np.int32(mins[probe(salt, i, attempt, m)])


def oph(terms: pa.Array, copies: pa.Array, bins: pa.Array, salt: pa.Array) -> pa.Array:
    """lsh_oph(terms, copies, m, salt): each row's densified one-permutation signature of m values as a list
    of INTEGER, for the bag of its terms with their copies (a list in the same order, or NULL for one of
    each). m and salt are the same in every row, so the first row's serve all. NULL or empty terms give
    NULL."""
    offsets, values, valid = list_parts(terms)
    c_offsets, c_values, weighted = list_parts(copies)
    n = len(valid)
    m, salt_value = _constant(bins, "m"), _constant(salt, "salt")
    if not 1 <= m <= MAX_BINS:
        raise ValueError(f"lsh_oph: m must be in 1..{MAX_BINS}, got {m}")
    valid = bags_to_sign("lsh_oph", offsets, valid, c_offsets, weighted)
    out = np.zeros(n * m, np.int32)
    signatures(offsets, values, c_offsets, c_values, weighted, valid, m, salt_value, out)
    return int32_lists(out, m, valid)


def _constant(values: pa.Array | pa.ChunkedArray, name: str) -> int:
    """The first row's value of an argument that is the same in every row (0 for no rows)."""
    if not len(values):
        return 0
    first = values[0].as_py()
    if first is None:
        raise ValueError(f"lsh_oph: NULL {name}")
    return int(first)


def set_signatures(term_hashes: np.ndarray, counts: np.ndarray, m: int, salt: int) -> np.ndarray:
    """An (n, m) int32 array of densified one-permutation signatures: set d is term_hashes[sum(counts[:d]):]
    [:counts[d]], one copy of each term; every count must be at least 1."""
    n = len(counts)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    none = np.zeros(n + 1, np.int64)
    out = np.zeros(n * m, np.int32)
    terms = term_hashes.astype(np.int64, copy=False)
    signatures(offsets, terms, none, none, np.zeros(n, np.bool_), np.ones(n, np.bool_), m, salt, out)
    return out.reshape(n, m)
