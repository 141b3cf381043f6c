"""Bag digests, compiled (numba): the reuse of signatures and pairs (pipeline/reuse.py) tells a changed bag
from an unchanged one by a 64-bit sum, over its rows, of splitmix64's finalizer (Steele et al. 2014) of
term_hash XOR copies * 0x9E3779B97F4A7C15, where copies = round(weight), halves away from zero, at least
1: equal for equal bags whatever their row order. One pass over a batch of bag rows, instead of numpy's
several passes and temporaries."""

from __future__ import annotations

import numpy as np
from numba import njit

from lshsql.engines.minhash import GOLDEN

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


@njit(cache=True, nogil=True)
def add_bag_digests(url_ids, term_hashes, weights, sums, counts):
    """For each bag row r: sums[url_ids[r]] += mix(term_hashes[r] ^ copies * GOLDEN) (wrapping in 64 bits)
    and counts[url_ids[r]] += 1."""
    for r in range(url_ids.shape[0]):
        weight = weights[r]
        whole = np.floor(weight)
        copies = max(np.int64(whole) + (1 if weight - whole >= 0.5 else 0), 1)
        z = np.uint64(term_hashes[r]) ^ (np.uint64(copies) * GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        z = z ^ (z >> np.uint64(31))
        sums[url_ids[r]] += z
        counts[url_ids[r]] += 1
