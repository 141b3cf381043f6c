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
