"""Min-hash signatures of bags, compiled (numba): the UDF lsh_minhash that sql/30_signatures.sql calls once
per URL, and the kernel `lshsql dedup` calls on its batches of sets.

A bag of terms t with copies q (a set: q = 1) is flattened into the elements t#1 .. t#q (Haveliwala et al.
2000, sec. 3), each with the base hash

    x(t, j) = splitmix64(t XOR (j * 0x9E3779B97F4A7C15)) mod (2^31 - 1)      (Steele et al. 2014)

and min-hash i of the bag is min over its elements of ((a_i * x + b_i) mod 2^40) >> 9 (Broder 1997, with
multiply-add-shift hashing: lsh/family.py draws a_i, b_i < 2^32 from the seed, so a*x + b < 2^63). The
kernel hashes each element once and folds it into all m running minimums: no table of elements is built.
Compiled code is cached on disk (numba cache=True), so only a fresh install pays the compilation.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lshsql.engines.jit import njit
from lshsql.engines.overlap import list_parts

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
PRIME = 2**31 - 1  # element hashes x are < PRIME (31 bits), so a*x + b stays below 2^63
_PRIME = np.uint64(PRIME)
MASK40 = np.int64(2**40 - 1)


@njit(cache=True, nogil=True, inline="always")
def finalize64(z):
    """splitmix64's finalizer (Steele et al. 2014) of a uint64, wrapping: every input bit affects every
    output bit. The one mix of the compiled kernels (min-hash and one-permutation elements, bag digests,
    shingles)."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True, inline="always")
def element_hash(term_hash: int, copy: int) -> int:
    """x of the element term#copy: splitmix64 of the term hash mixed with the copy number, mod 2^31 - 1."""
    return np.int64(finalize64((np.uint64(term_hash) ^ (np.uint64(copy) * GOLDEN)) + GOLDEN) % _PRIME)


@njit(cache=True, nogil=True)
def signatures(offsets, terms, c_offsets, copies, weighted, valid, a, b, out):
    """out[r * m : (r + 1) * m] = the min-hashes (bits 9..39, before any modulus) of row r's bag: terms
    terms[offsets[r]:offsets[r + 1]], their copies at c_offsets[r] where weighted[r] (else one each, and
    fewer than 1 counts as 1). Rows not valid or without terms are left as they are."""
    m = a.shape[0]
    mins = np.empty(m, np.int64)
    for r in range(offsets.shape[0] - 1):
        if not valid[r] or offsets[r] == offsets[r + 1]:
            continue
        mins[:] = MASK40 + 1
        for e in range(offsets[r], offsets[r + 1]):
            q = max(copies[c_offsets[r] + e - offsets[r]], 1) if weighted[r] else 1
            for j in range(1, q + 1):
                x = element_hash(terms[e], j)
                for i in range(m):
                    v = (x * a[i] + b[i]) & MASK40
                    if v < mins[i]:
                        mins[i] = v
        for i in range(m):
            out[r * m + i] = np.int32(mins[i] >> 9)


def minhash(terms: pa.Array, copies: pa.Array, a: pa.Array, b: pa.Array) -> pa.Array:
    """lsh_minhash(terms, copies, a, b): each row's m min-hashes as a list of INTEGER, for the bag of its
    terms (list of term hashes) with their copies (a list in the same order, or NULL for one of each). The
    hash family's coefficients a, b (lists of m) are the same in every row, so the first row's serve all.
    NULL or empty terms give NULL."""
    offsets, values, valid = list_parts(terms)
    c_offsets, c_values, weighted = list_parts(copies)
    a_values, b_values = _coefficients(a), _coefficients(b)
    m, n = len(a_values), len(valid)
    if len(b_values) != m:
        raise ValueError("lsh_minhash: a and b differ in length")
    valid = bags_to_sign("lsh_minhash", offsets, valid, c_offsets, weighted)
    out = np.zeros(n * m, np.int32)
    signatures(offsets, values, c_offsets, c_values, weighted, valid, a_values, b_values, out)
    return int32_lists(out, m, valid)


def bags_to_sign(
    udf: str, offsets: np.ndarray, valid: np.ndarray, c_offsets: np.ndarray, weighted: np.ndarray
) -> np.ndarray:
    """The rows a signature UDF signs (valid, with terms), after checking each weighted row has as many
    copies as terms."""
    lengths = np.diff(offsets)
    if (weighted & (np.diff(c_offsets) != lengths)).any():
        raise ValueError(f"{udf}: a bag's terms and copies differ in length")
    return valid & (lengths > 0)


def int32_lists(out: np.ndarray, m: int, valid: np.ndarray) -> pa.Array:
    """Rows of m int32 values each (out, row by row) as an Arrow list array; rows not valid are NULL."""
    n = len(valid)
    child = pa.Array.from_buffers(pa.int32(), n * m, [None, pa.py_buffer(out)])
    list_offsets = pa.py_buffer(np.arange(0, n * m + 1, m, dtype=np.int32))
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.list_(pa.int32()), n, [bitmap, list_offsets], children=[child])


def _coefficients(lists: pa.Array) -> np.ndarray:
    offsets, values, valid = list_parts(lists)
    if not len(valid):
        return np.zeros(0, np.int64)
    if not valid[0]:
        raise ValueError("lsh_minhash: NULL coefficients")
    return values[offsets[0] : offsets[1]]


def set_signatures(term_hashes: np.ndarray, counts: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """An (n, m) int32 array of min-hashes (before any modulus): set d is term_hashes[sum(counts[:d]):]
    [:counts[d]], one copy of each term; every count must be at least 1."""
    n, m = len(counts), len(a)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    none = np.zeros(n + 1, np.int64)
    out = np.zeros(n * m, np.int32)
    terms = term_hashes.astype(np.int64, copy=False)
    signatures(offsets, terms, none, none, np.zeros(n, np.bool_), np.ones(n, np.bool_), a, b, out)
    return out.reshape(n, m)
