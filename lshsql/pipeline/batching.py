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


# Memory a URL of a block takes in the pairs stage, as a multiple of its lanes row (a BIGINT url_id and a
# BIGINT per 12 min-hashes, sql/macros/candidates_scored.sql), which every candidate is joined to; the
# full rows (a BIGINT and m INTEGERs) only the URLs of candidates passing the lanes' bound meet. The most
# url_ids a range may span: blocks that fit spill less than one piece does.
PAIR_ROW_FACTOR = 4
PAIR_BLOCK_URLS = 5_000_000
LANE_HASHES = 12


def pair_range_bytes(num_perm: int, near_share: float) -> int:
    """Memory per url_id of a range in the pairs stage (a block holds two ranges, u's and v's): a URL of a
    block takes PAIR_ROW_FACTOR times its lanes row, and its full row twice (the two joins that build on
    them) when one of its candidates passes the lanes' bound, as `near_share` of the URLs do."""
    lanes = 8 * (1 + -(-num_perm // LANE_HASHES))
    per_block_url = PAIR_ROW_FACTOR * lanes + 2 * near_share * (8 + 4 * num_perm)
    return math.ceil(2 * per_block_url)


def near_share(candidates_per_url: float, pass_rate: float) -> float:
    """The share of URLs with at least one candidate passing the lanes' bound, when a candidate passes with
    probability `pass_rate` (scurve.lanes_pass_rate) and a URL is in `candidates_per_url` of them."""
    return 1.0 - math.exp(-candidates_per_url * pass_rate)


# Memory a candidate passing the lanes' bound takes in the pairs stage (its rows in the two materialized
# steps that follow it and in the final sort), with margin (bench/RESULTS.md, dedup on awkward corpora).
PASSING_CANDIDATE_BYTES = 200


def passing_ranges(passing: float, memory: int) -> int:
    """P, the fewest url_id ranges whose largest block holds the `passing` candidates' rows within `memory`
    bytes, candidates spread evenly over the pairs of ids: one piece holds all of them, and of P ranges the
    block of two ranges holds 2 / P^2 of them."""
    need = passing * PASSING_CANDIDATE_BYTES
    if need <= memory:
        return 1
    return max(2, math.ceil(math.sqrt(2 * need / max(1, memory))))


def pair_ranges(id_span: int, rows_per_range: int | None) -> int:
    """P, the ranges of url_id the pairs stage cuts an id span into, for P(P+1)/2 blocks (u's range, v's at
    or after it): each range spans at most PAIR_BLOCK_URLS ids and `rows_per_range`, the url_ids whose
    pair_range_bytes the memory limit holds; None (Spark) takes all at once."""
    if rows_per_range is None:
        return 1
    per_range = max(1, min(PAIR_BLOCK_URLS, rows_per_range))
    return max(1, -(-id_span // per_range))


# Memory a pair the candidates stage's self-join emits takes in its group and sort, with margin: ranges of
# u_id are taken one at a time when the pairs would not fit in the memory limit at once.
CANDIDATE_ROW_BYTES = 64
# The u_id range of a stage taken in one piece where no estimate is made (Spark): every url_id
EVERY_ID = (0, 2**62)
# Bins of url_id the emitted pairs are counted in to place the ranges' cuts (a cut falls between bins)
CANDIDATE_BINS = 65_536


def candidate_bin_width(first: int, last: int) -> int:
    """Url_ids per bin when first..last is counted in at most CANDIDATE_BINS bins."""
    return max(1, -(-(last - first + 1) // CANDIDATE_BINS))


def candidate_ranges(
    first: int, last: int, width: int, bins: list[tuple[int, float]], rows_fitting: int | None
) -> list[tuple[int, int]]:
    """Ranges (u_first, u_last) covering first..last, cut between bins of `width` url_ids (bin b starts at
    first + b * width; bins: (b, pairs) in increasing b, bins without pairs may be left out) into as few
    ranges as hold the pairs within `rows_fitting` rows, of about equal pairs where that takes no more
    ranges. A bin that alone holds more is a range of its own. None (Spark): one piece."""
    total = sum(pairs for _, pairs in bins)
    if rows_fitting is None or total <= rows_fitting:
        return [(first, last)]
    fitting = max(rows_fitting, 1)
    balanced, packed = (_cut_starts(first, width, bins, fitting, balance) for balance in (True, False))
    starts = balanced if len(balanced) <= len(packed) else packed
    return [(start, end - 1) for start, end in zip(starts, [*starts[1:], last + 1], strict=True)]


def _cut_starts(
    first: int, width: int, bins: list[tuple[int, float]], fitting: int, balance: bool
) -> list[int]:
    """The first id of each range: a range ends before a bin with pairs that would overflow it (packed, the
    fewest ranges), or also once it holds its share of the pairs left (balanced)."""
    remaining = sum(pairs for _, pairs in bins)
    share = remaining / math.ceil(remaining / fitting) if balance else math.inf
    starts, held = [first], 0.0
    for b, pairs in bins:
        if pairs > 0 and held > 0 and (held >= share or held + pairs > fitting):
            starts.append(first + b * width)
            remaining -= held
            held = 0.0
            if balance:
                share = remaining / math.ceil(remaining / fitting)
        held += pairs
    return starts
