"""The shared weight of two bags, compiled (numba): what the pairs stage verifies candidates with.

lsh_bag_overlap(u_terms, u_copies, v_terms, v_copies) = sum over the terms t of both bags of
min(copies of t in u, copies of t in v): the size of the intersection of the two flattened bags (each term t
of weight w present as t#1 .. t#w), from which the exact weighted Jaccard is |u ∩ v| / (|u| + |v| - |u ∩ v|).
A bag is a list of distinct term hashes and a list of copies in the same order; a NULL list of copies means
one copy of every term (a set), which costs nothing to pass. The lists need no order: one bag's terms go into
a small hash table and the other's are looked up in it, so the result is the same on any engine.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def _overlaps(
    u_off, u_terms, u_coff, u_copies, u_weighted, v_off, v_terms, v_coff, v_copies, v_weighted, out
):
    """out[r] = the shared copies of row r's bags; the smaller bag goes into the table, the other probes it.
    Returns the first row whose terms and copies differ in length, or -1."""
    longest = 1
    for r in range(out.shape[0]):
        longest = max(longest, min(u_off[r + 1] - u_off[r], v_off[r + 1] - v_off[r]))
    capacity = 2
    while capacity < 2 * longest:
        capacity *= 2
    keys = np.empty(capacity, dtype=np.int64)
    copies = np.empty(capacity, dtype=np.int64)
    stamp = np.full(capacity, -1, dtype=np.int64)  # slot s holds a key of row stamp[s]: no clearing per row
    for r in range(out.shape[0]):
        for off, coff, weighted in ((u_off, u_coff, u_weighted), (v_off, v_coff, v_weighted)):
            if weighted[r] and coff[r + 1] - coff[r] != off[r + 1] - off[r]:
                return r
        small_is_u = u_off[r + 1] - u_off[r] <= v_off[r + 1] - v_off[r]
        a_off, a_terms, a_coff, a_copies, a_weighted = u_off, u_terms, u_coff, u_copies, u_weighted[r]
        b_off, b_terms, b_coff, b_copies, b_weighted = v_off, v_terms, v_coff, v_copies, v_weighted[r]
        if not small_is_u:
            a_off, a_terms, a_coff, a_copies, a_weighted = v_off, v_terms, v_coff, v_copies, v_weighted[r]
            b_off, b_terms, b_coff, b_copies, b_weighted = u_off, u_terms, u_coff, u_copies, u_weighted[r]
        n = a_off[r + 1] - a_off[r]
        size, bits = 2, 1
        while size < 2 * n:
            size *= 2
            bits += 1
        mask = size - 1
        shift = np.uint64(64 - bits)
        for e in range(a_off[r], a_off[r + 1]):
            key = a_terms[e]
            s = np.int64((np.uint64(key) * _GOLDEN) >> shift)
            while stamp[s] == r and keys[s] != key:
                s = (s + 1) & mask
            if stamp[s] != r:
                stamp[s] = r
                keys[s] = key
                copies[s] = 0
            copies[s] += a_copies[a_coff[r] + e - a_off[r]] if a_weighted else 1
        shared = 0
        for e in range(b_off[r], b_off[r + 1]):
            key = b_terms[e]
            s = np.int64((np.uint64(key) * _GOLDEN) >> shift)
            while stamp[s] == r:
                if keys[s] == key:
                    shared += min(copies[s], b_copies[b_coff[r] + e - b_off[r]] if b_weighted else 1)
                    break
                s = (s + 1) & mask
        out[r] = shared
    return -1


def _list_parts(lists: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, values, valid per row) of a list of integers, read from its buffers (offsets index into
    the values of the whole child, as Arrow's do)."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    n = len(lists)
    if pa.types.is_null(lists.type):  # a column of NULL lists only
        return np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(n, np.bool_)
    width = np.int64 if pa.types.is_large_list(lists.type) else np.int32
    offsets = np.frombuffer(lists.buffers()[1], dtype=width)[lists.offset : lists.offset + n + 1]
    child = lists.values if lists.values.type == pa.int64() else lists.values.cast(pa.int64())
    values = np.frombuffer(child.buffers()[1], dtype=np.int64)[child.offset : child.offset + len(child)]
    valid = np.ones(n, np.bool_) if not lists.null_count else np.asarray(lists.is_valid(), dtype=np.bool_)
    return offsets.astype(np.int64), values, valid


def bag_overlap(u_terms: pa.Array, u_copies: pa.Array, v_terms: pa.Array, v_copies: pa.Array) -> pa.Array:
    """The shared copies of each row's two bags (BIGINT); NULL where either bag's terms are NULL."""
    u_off, u_values, u_valid = _list_parts(u_terms)
    v_off, v_values, v_valid = _list_parts(v_terms)
    uc_off, uc_values, u_weighted = _list_parts(u_copies)
    vc_off, vc_values, v_weighted = _list_parts(v_copies)
    out = np.zeros(len(u_valid), dtype=np.int64)
    bad = _overlaps(
        u_off, u_values, uc_off, uc_values, u_weighted, v_off, v_values, vc_off, vc_values, v_weighted, out
    )
    if bad >= 0:
        raise ValueError(f"lsh_bag_overlap: row {bad}: a bag's terms and copies differ in length")
    valid = u_valid & v_valid
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.int64(), len(out), [bitmap, pa.py_buffer(out)])
