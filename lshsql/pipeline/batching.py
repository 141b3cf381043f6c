"""How the stages that would not fit in memory in one piece are cut: the buckets stage into batches of LSH
tables, the pairs stage into blocks of url_id ranges. The sizes come from the engine's memory limit
(engine.band_batch, engine.rows_fitting; Spark spills and takes everything at once)."""

from __future__ import annotations

# Memory per band-key row the buckets stage's group and join need, measured with margin (with k INTEGER
# keys; DuckDB's form, one hashed key sorted, needs less)
BAND_KEY_BYTES = 100


# Band keys per batch on DuckDB (or one table, when N is larger), whatever the memory limit: batches of
# about this many keys ran fastest per key (bench/RESULTS.md). At 100k URLs and the planner's l = 66, one
# batch.
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
# and m INTEGERs), and the most url_ids a range may span: blocks that fit spill less than one piece does.
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
