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
_SHIFT, _LOW31 = np.uint64(9), np.uint64(2**31 - 1)  # bits 9..39 of a * x + b
_ABOVE = np.uint32(2**31)  # above every min-hash (31 bits): where a minimum starts


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


@njit(cache=True, nogil=True, inline="always")
def _x(x):
    """An element hash (< 2^31) as uint64 through uint32, so the compiler knows its high half is 0."""
    return np.uint64(np.uint32(x))


@njit(cache=True, nogil=True, inline="always")
def _fold(mins, x0, x1, x2, x3, a, b):
    """mins[i] = min(mins[i], h_i(x0), .., h_i(x3)) for every i: four elements a pass over mins, so mins,
    a and b are loaded once for four."""
    for i in range(a.shape[0]):
        ai, bi = np.uint64(a[i]), np.uint64(b[i])
        v0 = np.uint32(((x0 * ai + bi) >> _SHIFT) & _LOW31)
        v1 = np.uint32(((x1 * ai + bi) >> _SHIFT) & _LOW31)
        v2 = np.uint32(((x2 * ai + bi) >> _SHIFT) & _LOW31)
        v3 = np.uint32(((x3 * ai + bi) >> _SHIFT) & _LOW31)
        mins[i] = min(mins[i], min(min(v0, v1), min(v2, v3)))


@njit(cache=True, nogil=True, inline="always")
def _fold_weighted(mins, terms, copies, start, end, c_start, xs, a, b):
    """_fold over the elements term#1 .. term#q of the terms[start:end], q their copies (at least 1)."""
    waiting = 0
    for e in range(start, end):
        for j in range(1, max(copies[c_start + e - start], 1) + 1):
            xs[waiting] = _x(element_hash(terms[e], j))
            waiting += 1
            if waiting == 4:
                _fold(mins, xs[0], xs[1], xs[2], xs[3], a, b)
                waiting = 0
    for k in range(waiting):
        _fold(mins, xs[k], xs[k], xs[k], xs[k], a, b)


@njit(cache=True, nogil=True)
def signatures(offsets, terms, c_offsets, copies, weighted, valid, a, b, out):
    """out[r * m : (r + 1) * m] = the min-hashes (bits 9..39, before any modulus) of row r's bag: terms
    terms[offsets[r]:offsets[r + 1]], their copies at c_offsets[r] where weighted[r] (else one each, and
    fewer than 1 counts as 1). Rows not valid or without terms are left as they are. a and b are uint32
    (family32): x * a is then one 32 x 32 -> 64-bit multiply, and the minimum is kept of bits 9..39 alone
    (a shift keeps the order), so the compiler runs the loop over i in vector lanes."""
    m = a.shape[0]
    mins = np.empty(m, np.uint32)
    xs = np.zeros(4, np.uint64)  # elements waiting for a fold of four
    for r in range(offsets.shape[0] - 1):
        if not valid[r] or offsets[r] == offsets[r + 1]:
            continue
        mins[:] = _ABOVE
        if weighted[r]:
            _fold_weighted(mins, terms, copies, offsets[r], offsets[r + 1], c_offsets[r], xs, a, b)
        else:
            e, end = offsets[r], offsets[r + 1]
            while e + 4 <= end:
                x0, x1 = _x(element_hash(terms[e], 1)), _x(element_hash(terms[e + 1], 1))
                x2, x3 = _x(element_hash(terms[e + 2], 1)), _x(element_hash(terms[e + 3], 1))
                _fold(mins, x0, x1, x2, x3, a, b)
                e += 4
            while e < end:  # the last one to three: folded with themselves
                x = _x(element_hash(terms[e], 1))
                _fold(mins, x, x, x, x, a, b)
                e += 1
        for i in range(m):
            out[r * m + i] = np.int32(mins[i])


def family32(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The coefficients as the kernel takes them, uint32, after checking each is in [0, 2^32)
    (lsh/family.py draws them so: a * x + b then stays below 2^63 and bits 9..39 are the old ones)."""
    for name, values in (("a", a), ("b", b)):
        if len(values) and (values.min() < 0 or values.max() >= 2**32):
            raise ValueError(f"lsh_minhash: a coefficient {name} outside [0, 2^32)")
    return a.astype(np.uint32), b.astype(np.uint32)


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
    a32, b32 = family32(a_values, b_values)
    signatures(offsets, values, c_offsets, c_values, weighted, valid, a32, b32, out)
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
    a32, b32 = family32(a, b)
    signatures(offsets, terms, none, none, np.zeros(n, np.bool_), np.ones(n, np.bool_), a32, b32, out)
    return out.reshape(n, m)
