"""Min-hash signatures of sets: the values sql/30_signatures.sql computes for bags of weight 1, without a
SQL stage. `lshsql dedup` computes each batch's signatures in the thread that shingled it, with the
compiled kernel of the UDF lsh_minhash (engines/minhash.py) and the same family (lsh/family.py), so a set
gets the same signature here as from the stage.
"""

from __future__ import annotations

import numpy as np

from lshsql.engines import minhash
from lshsql.lsh import family


def set_signatures(
    term_hashes: np.ndarray, counts: np.ndarray, seed: int, num_perm: int, signature_bytes: int = 4
) -> np.ndarray:
    """An (n, m) int32 array: the signature of each set. Set d is term_hashes[sum(counts[:d]) :][: counts[d]]
    (63-bit term hashes, as lsh_term_hash gives); every count must be at least 1."""
    a, b = family.coefficient_arrays(seed, num_perm)
    values = minhash.set_signatures(term_hashes, counts.astype(np.int64, copy=False), a, b)
    return values if signature_bytes == 4 else values % np.int32(2**24)


def bag_signatures(
    term_hashes: np.ndarray,
    copies: np.ndarray,
    counts: np.ndarray,
    seed: int,
    num_perm: int,
    signature_bytes: int = 4,
) -> np.ndarray:
    """An (n, m) int32 array: the signature of each weighted bag, as the signatures stage makes it. Bag d
    is the terms term_hashes[sum(counts[:d]) :][: counts[d]] with their copies (at least 1 each) in
    `copies`; every count must be at least 1."""
    a, b = family.coefficient_arrays(seed, num_perm)
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    n = len(counts)
    out = np.zeros(n * num_perm, np.int32)
    terms = term_hashes.astype(np.int64, copy=False)
    weighted, valid = np.ones(n, np.bool_), np.ones(n, np.bool_)
    a32, b32 = minhash.family32(a, b)
    minhash.signatures(
        offsets, terms, offsets, copies.astype(np.int64, copy=False), weighted, valid, a32, b32, out
    )
    values = out.reshape(n, num_perm)
    return values if signature_bytes == 4 else values % np.int32(2**24)
