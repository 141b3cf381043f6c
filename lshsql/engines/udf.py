"""Vectorized hash UDFs (Arrow in, Arrow out) that DuckDB calls from the SQL stages.

Stored values must never change with the DuckDB version, the platform or PYTHONHASHSEED, so they are
built from two fixed algorithms: xxh64 (seed 0) of a term's UTF-8 bytes, and splitmix64 (Steele et al.
2014) to derive the id of the j-th copy of a term, the element `term#j` of a flattened bag.

    lsh_term_hash(term)            = xxh64(utf8(term)) >> 1                     in [0, 2^63)
    lsh_minhash(terms, copies, a, b) = the m min-hashes of a bag (engines/minhash.py, compiled): of its
                                     elements x = splitmix64(t XOR (j * 0x9E3779B97F4A7C15)) mod (2^31 - 1)
    lsh_oph(terms, copies, m, salt) = a bag's densified one-permutation signature (engines/oph.py), of the
                                     same elements x
    lsh_url_unit(url, unit)        = url, its host, or its registered domain (not a hash: --unit)
    lsh_bag_pack(terms, copies)    = a bag as one BLOB, its terms sorted (engines/overlap.py)
    lsh_bag_overlap(u, v)          = sum of min(copies) over the terms of two packed bags

The element hash is < P = 2^31 - 1, so the family ((a*x + b) mod 2^40) >> 9 of the signatures stage, with
a, b < 2^32, never leaves signed BIGINT (a*x + b < 2^63).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash

from lshsql.engines.arrays import integer_array


def term_hash(terms: pa.Array) -> pa.Array:
    """xxh64 of each term's UTF-8 bytes, shifted right once so it is a non-negative BIGINT."""
    digest = xxhash.xxh64_intdigest
    texts = terms.to_pylist()
    values = np.fromiter(
        (0 if t is None else digest(t.encode("utf-8")) >> 1 for t in texts), dtype=np.int64, count=len(texts)
    )
    valid = (
        np.fromiter((t is not None for t in texts), dtype=bool, count=len(texts))
        if terms.null_count
        else None
    )
    return integer_array(values, valid)


def url_unit(url_values: pa.Array, units: pa.Array) -> pa.Array:
    """The unit a URL's fragments describe: the URL itself, its host, or its registered domain (public
    suffix list bundled with tldextract), so bags can describe whole sites."""
    from lshsql import urls

    out = []
    for url, unit in zip(url_values.to_pylist(), units.to_pylist(), strict=True):
        if url is None or unit == "url":
            out.append(url)
        else:
            try:
                out.append(urls.host_of(url) if unit == "host" else urls.registered_domain(url))
            except ValueError:  # not a parsable URL: it stays its own unit
                out.append(url)
    return pa.array(out, type=pa.string())


def bag_pack(terms: pa.Array, copies: pa.Array) -> pa.Array:
    """lsh_bag_pack: a bag (its terms, and their copies or NULL) as one BLOB with its terms sorted, what
    lsh_bag_overlap reads (engines/overlap.py, compiled; imported on first use, as numba takes long to
    import)."""
    from lshsql.engines import overlap

    return overlap.bag_pack(terms, copies)


def minhash(terms: pa.Array, copies: pa.Array, a: pa.Array, b: pa.Array) -> pa.Array:
    """lsh_minhash: the m min-hashes of each row's bag (engines/minhash.py)."""
    from lshsql.engines import minhash

    return minhash.minhash(terms, copies, a, b)


def oph(terms: pa.Array, copies: pa.Array, bins: pa.Array, salt: pa.Array) -> pa.Array:
    """lsh_oph: the densified one-permutation signature of each row's bag (engines/oph.py)."""
    from lshsql.engines import oph

    return oph.oph(terms, copies, bins, salt)


def bag_overlap(u: pa.Array, v: pa.Array) -> pa.Array:
    """lsh_bag_overlap: the shared copies of two packed bags (engines/overlap.py)."""
    from lshsql.engines import overlap

    return overlap.bag_overlap(u, v)


def register(con) -> None:
    """Register the UDFs on a DuckDB connection (pure functions, so DuckDB may cache and reorder them)."""
    import duckdb
    from duckdb.sqltypes import BIGINT, BLOB, INTEGER, VARCHAR

    con.create_function("lsh_term_hash", term_hash, [VARCHAR], BIGINT, type="arrow", side_effects=False)
    con.create_function(
        "lsh_url_unit", url_unit, [VARCHAR, VARCHAR], VARCHAR, type="arrow", side_effects=False
    )
    bag = duckdb.list_type(BIGINT)
    con.create_function(
        "lsh_bag_pack",
        bag_pack,
        [bag, bag],
        BLOB,
        type="arrow",
        null_handling="special",  # a NULL list of copies is a set, not an unknown
        side_effects=False,
    )
    con.create_function(
        "lsh_minhash",
        minhash,
        [bag, bag, bag, bag],
        duckdb.list_type(INTEGER),
        type="arrow",
        null_handling="special",  # a NULL list of copies is a set, not an unknown
        side_effects=False,
    )
    con.create_function(
        "lsh_oph",
        oph,
        [bag, bag, BIGINT, BIGINT],
        duckdb.list_type(INTEGER),
        type="arrow",
        null_handling="special",  # a NULL list of copies is a set, not an unknown
        side_effects=False,
    )
    con.create_function(
        "lsh_bag_overlap", bag_overlap, [BLOB, BLOB], BIGINT, type="arrow", side_effects=False
    )
