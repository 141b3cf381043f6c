"""How the stages that would not fit in memory in one piece are cut: the buckets stage into batches of LSH
tables, the candidates stage into ranges of u_id, the pairs stage into blocks of url_id ranges. The sizes
come from the engine's memory limit (engine.band_batch, engine.rows_fitting; Spark spills and takes
everything at once)."""

from __future__ import annotations

import math

# Memory per band-key row the buckets stage's group and join need, measured with margin (with k INTEGER
# keys; DuckDB's form, one hashed key sorted, needs less)
BAND_KEY_BYTES = 100


# Band keys per batch on DuckDB (or one table, when N is larger), whatever the memory limit: batches of
# about this many keys ran fastest per key (bench/RESULTS.md). At 100k URLs and the planner's l = 66, one
# batch.
BATCH_BAND_KEYS = 8_000_000


# The buckets of a batch are ordered (band, bucket, url_id) and batches take increasing bands
BUCKETS_ORDER = "band, bucket, url_id"


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


# Memory a pair the candidates stage's self-join emits takes in its group and sort, with margin: ranges of
# u_id are taken one at a time when the pairs would not fit in the memory limit at once.
CANDIDATE_ROW_BYTES = 64
# The u_id range of a stage taken in one piece where no estimate is made (Spark): every url_id
EVERY_ID = (0, 2**62)


def candidate_ranges(
    first: int, last: int, emitted: float, rows_fitting: int | None
) -> list[tuple[int, int]]:
    """Ranges (u_first, u_last) of url_id cutting first..last into pieces of about equal pairs, so that each
    piece's `emitted` share fits `rows_fitting` rows (None: Spark, one piece). A URL pairs as u with the
    members above it, so the lower ids hold more pairs: the j-th of P cuts sits at 1 - sqrt(1 - j / P) of
    the span, where a uniform spread of ids puts j / P of the pairs below it."""
    span = last - first + 1
    if rows_fitting is None or span <= 1 or emitted <= rows_fitting:
        return [(first, last)]
    pieces = int(min(span, -(-int(emitted) // max(1, int(rows_fitting)))))
    cuts = sorted({first + int(span * (1 - math.sqrt(1 - j / pieces))) for j in range(1, pieces)})
    starts = [first, *(c for c in cuts if first < c <= last)]
    return [(start, end - 1) for start, end in zip(starts, [*starts[1:], last + 1], strict=True)]
