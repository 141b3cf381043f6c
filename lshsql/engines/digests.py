"""Bag digests, compiled (numba): the reuse of signatures and pairs (pipeline/reuse.py) tells a changed bag
from an unchanged one by a 64-bit sum, over its rows, of splitmix64's finalizer (Steele et al. 2014) of
term_hash XOR copies * 0x9E3779B97F4A7C15, where copies = round(weight), halves away from zero, at least
1: equal for equal bags whatever their row order. One pass over a batch of bag rows, instead of numpy's
several passes and temporaries."""

from __future__ import annotations

import numpy as np

from lshsql.engines.jit import njit
from lshsql.engines.minhash import GOLDEN, finalize64


@njit(cache=True, nogil=True)
def add_bag_digests(url_ids, term_hashes, weights, sums, counts):
    """For each bag row r: sums[url_ids[r]] += mix(term_hashes[r] ^ copies * GOLDEN) (wrapping in 64 bits)
    and counts[url_ids[r]] += 1."""
    for r in range(url_ids.shape[0]):
        weight = weights[r]
        whole = np.floor(weight)
        copies = max(np.int64(whole) + (1 if weight - whole >= 0.5 else 0), 1)
        sums[url_ids[r]] += finalize64(np.uint64(term_hashes[r]) ^ (np.uint64(copies) * GOLDEN))
        counts[url_ids[r]] += 1


_SECOND = np.uint64(0xD6E8FEB86659FD93)  # a second odd constant: the two sums mix each element apart


@njit(cache=True, nogil=True)
def _set_digests(hashes, counts, out):
    start = 0
    for d in range(counts.shape[0]):
        first = np.uint64(0)
        second = np.uint64(0)
        for r in range(start, start + counts[d]):
            h = np.uint64(hashes[r])
            first += finalize64(h ^ GOLDEN)
            second += finalize64((h * _SECOND) ^ _SECOND)
        out[d, 0] = first
        out[d, 1] = second
        start += counts[d]


def set_digests(hashes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """An (n, 2) int64 array: two independent 64-bit sums of mixed elements for each of n sets (set d is
    hashes[sum(counts[:d]) :][: counts[d]], distinct elements). Equal sets get equal digests in any order;
    two different sets of one size share both by chance with probability about 2^-128, so `lshsql dedup`
    takes (size, digests) as the set itself when it sets exact copies aside."""
    out = np.zeros((len(counts), 2), np.uint64)
    _set_digests(hashes.astype(np.int64, copy=False), counts.astype(np.int64, copy=False), out)
    return out.view(np.int64)
