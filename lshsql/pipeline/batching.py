"""How the stages that would not fit in memory in one piece are cut: the buckets stage into batches of LSH
tables, the pairs stage into blocks of url_id ranges. The sizes come from the engine's memory limit
(engine.band_batch, engine.rows_fitting; Spark spills and takes everything at once)."""

from __future__ import annotations

# Memory per band-key row the buckets stage's group and join need, measured with margin (with k INTEGER
# keys; DuckDB's form, one hashed key sorted, needs less)
BAND_KEY_BYTES = 100


# Band keys per batch on DuckDB (or one table, when N is larger), whatever the memory limit. Measured when
# the stage grouped the keys, which ran faster per key over 10M keys than over 40M (1M URLs, k = 5,
# l = 95, 4GB: 5-10 tables per batch 11-12 s, 40 tables 19 s, all 95 at once 30 s). The sort that finds
# the shared keys now is nearly flat: 86-95 ms a table at 1M URLs from 4 to 32 tables a batch, 1.14 s a
# table at 10M from 1 to 4. At 100k URLs and the planner's l = 66, one batch.
BATCH_BAND_KEYS = 8_000_000


# The buckets of a batch are ordered (band, bucket, url_id) and batches take increasing bands
COMBINE_BUCKETS = "select * from parts order by band, bucket, url_id"


def tables_per_batch(n_urls: int, n_tables: int, fitting: int | None) -> int:
    """LSH tables per batch: at most BATCH_BAND_KEYS band keys and `fitting` tables (what the memory limit
    holds; None on Spark, which takes all tables at once), but at least one table."""
    if fitting is None:
        return n_tables
    return max(1, min(fitting, BATCH_BAND_KEYS // max(1, n_urls)))


# Memory a signature row takes in the pairs stage's two joins, as a multiple of its bytes (a BIGINT url_id
# and m INTEGERs), and the most url_ids a range may span. 10M URLs, m = 80, 8GB: in one piece the joins of two
# copies of all signatures spilled 10.6 GB and took 178 s (113 s at 16GB); in 3 blocks (P = 2), 94 s.
PAIR_ROW_FACTOR = 4


PAIR_BLOCK_URLS = 5_000_000


def pair_ranges(id_span: int, rows_per_range: int | None) -> int:
    """P, the ranges of url_id the pairs stage cuts an id span into, for P(P+1)/2 blocks (u's range, v's at
    or after it): each range spans at most PAIR_BLOCK_URLS ids and `rows_per_range`, the signature rows
    (times PAIR_ROW_FACTOR) the memory limit holds; None (Spark) takes all at once."""
    if rows_per_range is None:
        return 1
    per_range = max(1, min(PAIR_BLOCK_URLS, rows_per_range))
    return max(1, -(-id_span // per_range))
