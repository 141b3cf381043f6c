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
