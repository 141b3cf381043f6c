"""The shared weight of two bags, compiled (numba): what the pairs stage verifies candidates with.

lsh_bag_overlap(u, v) = sum over the terms t of both bags of
min(copies of t in u, copies of t in v): the size of the intersection of the two flattened bags (each term t
of weight w present as t#1 .. t#w), from which the exact weighted Jaccard is |u ∩ v| / (|u| + |v| - |u ∩ v|).
A bag is packed once by lsh_bag_pack(terms, copies), from its list of distinct term hashes and the list of
their copies in the same order (NULL: one of each, a set), into one BLOB with its terms sorted; the lists
need no order of their own, so any engine's list aggregate serves. lsh_bag_overlap then merges two sorted
bags.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lshsql.engines.arrays import valid_rows
from lshsql.engines.jit import njit


@njit(cache=True, nogil=True)
def _pack(offsets, terms, c_offsets, copies, weighted, valid, out_offsets, out):
    """Row r's bag into out[out_offsets[r]:]: n, its terms sorted, then (weighted rows) their copies in
    that order; nothing for a NULL row. Returns the first row whose terms and copies differ in length, or
    -1."""
    for r in range(offsets.shape[0] - 1):
        if not valid[r]:
            continue
        start, n = offsets[r], offsets[r + 1] - offsets[r]
        if weighted[r] and c_offsets[r + 1] - c_offsets[r] != n:
            return r
        at = out_offsets[r]
        out[at] = n
        order = np.argsort(terms[start : start + n], kind="mergesort")
        for i in range(n):
            out[at + 1 + i] = terms[start + order[i]]
            if weighted[r]:
                out[at + 1 + n + i] = copies[c_offsets[r] + order[i]]
    return -1


@njit(cache=True, nogil=True)
def _overlaps(u_off, u_bags, v_off, v_bags, out):
    """out[r] = the shared copies of row r's two packed bags: a merge of their sorted terms."""
    for r in range(out.shape[0]):
        a, b = u_off[r], v_off[r]
        if a == u_off[r + 1] or b == v_off[r + 1]:  # a NULL bag (its BLOB is empty): NULL, not read
            continue
        na, nb = u_bags[a], v_bags[b]
        a_weighted = u_off[r + 1] - a == 1 + 2 * na and na > 0
        b_weighted = v_off[r + 1] - b == 1 + 2 * nb and nb > 0
        i, j, shared = 0, 0, 0
        while i < na and j < nb:
            x, y = u_bags[a + 1 + i], v_bags[b + 1 + j]
            if x == y:
                cu = u_bags[a + 1 + na + i] if a_weighted else 1
                cv = v_bags[b + 1 + nb + j] if b_weighted else 1
                shared += min(cu, cv)
            i += x <= y
            j += y <= x
        out[r] = shared


def _offsets_and_valid(array: pa.Array, large: bool) -> tuple[np.ndarray, np.ndarray]:
    """The int64 offsets (n + 1) of a list or binary array, read from its buffers, and its valid rows."""
    n = len(array)
    width = np.int64 if large else np.int32
    offsets = np.frombuffer(array.buffers()[1], dtype=width)[array.offset : array.offset + n + 1]
    valid = np.ones(n, np.bool_) if not array.null_count else valid_rows(array)
    return offsets.astype(np.int64), valid


def _bitmap(valid: np.ndarray) -> pa.Buffer | None:
    return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def list_parts(lists: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, values, valid per row) of a list of integers, read from its buffers (offsets index into
    the values of the whole child, as Arrow's do)."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    n = len(lists)
    if pa.types.is_null(lists.type) or lists.null_count == n:  # NULL lists only
        return np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(n, np.bool_)
    offsets, valid = _offsets_and_valid(lists, pa.types.is_large_list(lists.type))
    child = lists.values if lists.values.type == pa.int64() else lists.values.cast(pa.int64())
    values = np.frombuffer(child.buffers()[1], dtype=np.int64)[child.offset : child.offset + len(child)]
    return offsets, values, valid


def bag_pack(terms: pa.Array, copies: pa.Array) -> pa.Array:
    """lsh_bag_pack(terms, copies): a bag as one BLOB of 8-byte values: its number of terms n, its terms
    sorted, then their copies unless `copies` is NULL (one of each: a set). A bag is packed once and passed
    to lsh_bag_overlap for every candidate pair it is in: a BLOB crosses from DuckDB to Arrow as one copy of
    bytes, a list element by element. The bytes are in the machine's order and never stored. NULL terms
    give NULL."""
    offsets, values, valid = list_parts(terms)
    c_offsets, c_values, weighted = list_parts(copies)
    lengths = np.diff(offsets)
    sizes = np.where(valid, 1 + lengths * (1 + weighted), 0)
    out_offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=out_offsets[1:])
    out = np.zeros(int(out_offsets[-1]), np.int64)
    bad = _pack(offsets, values, c_offsets, c_values, weighted, valid, out_offsets, out)
    if bad >= 0:
        raise ValueError(f"lsh_bag_pack: row {bad}: a bag's terms and copies differ in length")
    byte_offsets = out_offsets * 8
    kind, dtype = (pa.binary(), np.int32) if out.nbytes < 2**31 else (pa.large_binary(), np.int64)
    buffers = [_bitmap(valid), pa.py_buffer(byte_offsets.astype(dtype)), pa.py_buffer(out)]
    return pa.Array.from_buffers(kind, len(valid), buffers)


def _blob_parts(blobs: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets, values, valid per row) of a column of bag_pack's BLOBs, offsets in values (8 bytes each)."""
    if isinstance(blobs, pa.ChunkedArray):
        blobs = blobs.combine_chunks()
    offsets, valid = _offsets_and_valid(blobs, pa.types.is_large_binary(blobs.type))
    data = blobs.buffers()[2]
    raw = (
        np.frombuffer(data, dtype=np.uint8)[: int(offsets[-1])] if data is not None else np.zeros(0, np.uint8)
    )
    if (offsets % 8).any():
        raise ValueError("lsh_bag_overlap: a bag is not a BLOB of lsh_bag_pack")
    values = raw.view(np.int64) if raw.ctypes.data % 8 == 0 else raw.copy().view(np.int64)
    sizes = np.diff(offsets) // 8
    counts = values[offsets[:-1][valid] // 8] if valid.any() else np.zeros(0, np.int64)
    if ((sizes[valid] != 1 + counts) & (sizes[valid] != 1 + 2 * counts)).any():
        raise ValueError("lsh_bag_overlap: a bag is not a BLOB of lsh_bag_pack")
    return offsets // 8, values, valid


def bag_overlap(u: pa.Array, v: pa.Array) -> pa.Array:
    """The shared copies of each row's two bags of lsh_bag_pack (BIGINT); NULL where either is NULL."""
    u_off, u_values, u_valid = _blob_parts(u)
    v_off, v_values, v_valid = _blob_parts(v)
    valid = u_valid & v_valid
    out = np.zeros(len(valid), dtype=np.int64)
    _overlaps(u_off, u_values, v_off, v_values, out)
    return pa.Array.from_buffers(pa.int64(), len(out), [_bitmap(valid), pa.py_buffer(out)])
