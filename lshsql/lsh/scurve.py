"""The LSH S-curve and the choice of (k, l): closed forms, the drawn tables' measured recall, the planner.

The S-curve: a pair of similarity s becomes a candidate when all k min-hashes of at least one of l tables
agree, which happens with probability 1 - (1 - s^k)^l (Indyk & Motwani 1998; Haveliwala et al. 2000, sec. 4)
when the tables share no min-hash: b bands of r disjoint rows. The paper's random tables reuse m min-hashes
(l*k may exceed m); tables sharing an index collide together, so their curve lies below the closed form
(Harris-FKG): at m = 80 and s = 0.5, the 47 tables of k = 4 reach 0.90, not 0.95. The planner therefore
measures the very tables a run draws (tables_recall, family.random_tables) and adds tables until they reach
the recall. With the one-permutation sketch (--sketch oph) it measures them on that sketch's signatures of
simulated pairs of sets, whose positions are not independent (_oph_agreements). resolve() fills in a
Params' None values, (k, l) by the planner.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from itertools import islice

import numpy as np

from lshsql.errors import ParamError
from lshsql.lsh import family
from lshsql.params import DEFAULT_NUM_PERM, MAX_K, PLAN_RECALL, Params

MAX_TABLES = 10_000
# Draws of the agreement of m min-hashes with which the planner measures the tables it draws: the standard
# error of a recall of 0.95 is 0.0015.
RECALL_DRAWS = 20_000
RECALL_STREAM = 2  # numpy stream of those draws (family.py has streams 0, 1 and 3)
# Union size of the simulated pairs the oph sketch is measured on: a small set, where bins fall empty and
# their agreement departs most from independent positions (its recall is a little lower than larger sets').
OPH_PLAN_UNION = 100
# Cost of one LSH table (N band keys and their share of the self-join) relative to the false-positive area
# of the S-curve; measured trade-off: near-threshold candidates are cheap to filter, tables are not.
TABLE_COST = 2e-3
# Band keys one candidate pair costs, for the planner that sees the data: any weight from 2 to 4.9 keeps the
# (k, l) the per-unit costs of the scale bench favour at 100k, 1M and 10M URLs (bench/RESULTS.md).
CANDIDATE_COST = 2.5
# The signature lengths the planner chooses among when m is not given: the paper's 80, and 128, whose l
# tables of k min-hashes share fewer of them, so that fewer tables reach the recall (for k = 6: 293 against
# 395), at the cost of longer signatures to compute and compare.
NUM_PERM_CHOICES = (DEFAULT_NUM_PERM, 128)
# Band keys that one min-hash of one URL costs the signatures and pairs stages together, and the share of
# the first choice's work a longer signature must stay under to be taken (the scale bench's per-unit costs
# at 100k, 1M and 10M URLs, bench/RESULTS.md).
POSITION_COST = 0.9
NUM_PERM_GAIN = 0.95
# A plan whose work is over both is told the user before its stages run (large_plan_note): some 7 times the
# work a URL of the PostgreSQL manual's crawl at the default threshold, and enough in all that small runs,
# quick whatever their plan, say nothing.
LARGE_WORK_PER_URL = 2_000
LARGE_WORK = 5e7


def resolve(params: Params, whole_sets: bool) -> Params:
    """Every None filled in that can be without data: document-frequency limits for the input kind
    (Params.with_df_limits: none when `whole_sets`, for a user's bags and shingled documents), m, and
    (k, l) from the planner. When the planner chooses m (Params.plans_num_perm), m, k and l stay None
    until the bags are known (choose_num_perm)."""
    params = params.with_df_limits(whole_sets)
    if not params.plans_num_perm:
        return with_tables(params)
    reachable_num_perm(params)  # the one-line error now, not after the bags stage, when no m reaches it
    return params


def reachable_num_perm(params: Params) -> int:
    """The first m of NUM_PERM_CHOICES whose closed-form (k, l) reach the recall at the threshold (the
    planner's m without a sample to choose by); the last one's ParamError when none does."""
    *shorter, longest = NUM_PERM_CHOICES
    for m in shorter:
        try:
            with_tables(replace(params, num_perm=m))
            return m
        except ParamError:
            pass
    with_tables(replace(params, num_perm=longest))
    return longest


def choose_num_perm(
    threshold: float,
    histogram_of: Callable[[int], np.ndarray],
    n_urls: int,
    recall: float = PLAN_RECALL,
    seed: int = 1,
) -> tuple[int, tuple[int, int], dict[int, float]]:
    """The m of NUM_PERM_CHOICES expected to cost the least, from the agreement histogram of the same
    sampled URLs' signatures at each m (`histogram_of(m)`): the work of its cheapest (k, l)
    (choose_kl_for_sample) plus POSITION_COST per min-hash of each URL. A longer signature is taken only
    when its work is at most NUM_PERM_GAIN of the first choice's, and not looked at when its min-hashes and
    one table alone would cost more. An m whose (k, l) cannot reach the recall is passed over; the
    ParamError is raised when none can. Returns m, its (k, l), and the expected work, in band keys, of each
    m looked at."""
    work, tables, unreachable = {}, {}, None
    first = NUM_PERM_CHOICES[0]
    for m in NUM_PERM_CHOICES:
        if first in work and (POSITION_COST * m + 1) * n_urls > NUM_PERM_GAIN * work[first]:
            continue
        histogram = histogram_of(m)
        try:
            k, l = choose_kl_for_sample(threshold, m, histogram, n_urls, recall=recall, seed=seed)  # noqa: E741
        except ParamError as error:  # no (k, l) of this m reaches the recall: a longer signature may
            unreachable = error
            continue
        candidates = expected_candidates(histogram, n_urls, k, l)
        work[m] = planned_work(l, n_urls, candidates) + POSITION_COST * m * n_urls
        tables[m] = (k, l)
    if not work:
        raise unreachable
    cheapest = min(work, key=lambda m: (work[m], m))
    chosen = first if first in work and work[cheapest] > NUM_PERM_GAIN * work[first] else cheapest
    return chosen, tables[chosen], work


def with_tables(params: Params, similarities: np.ndarray | None = None, n_urls: int = 0) -> Params:
    """(k, l) filled in when not given: from a histogram of sampled agreements (see choose_kl_for_sample)
    when there is one, else from the closed form."""
    k, l = params.k, params.l  # noqa: E741
    if k is not None and l is not None:
        return params
    if similarities is not None and k is None and l is None:
        k, l = choose_kl_for_sample(  # noqa: E741
            params.threshold,
            params.num_perm,
            similarities,
            n_urls,
            params.banding,
            params.recall,
            seed=params.seed,
            sketch=params.sketch,
        )
    else:
        k, l = choose_kl(  # noqa: E741
            params.threshold,
            params.num_perm,
            params.banding,
            params.recall,
            fixed_k=k,
            fixed_l=l,
            seed=params.seed,
            sketch=params.sketch,
        )
    return replace(params, k=k, l=l)


def collision_probability(s: float, k: int, l: int) -> float:  # noqa: E741
    """Probability that a pair of similarity s shares a bucket in at least one of l tables of k hashes."""
    return 1.0 - (1.0 - s**k) ** l


def false_positive_area(threshold: float, k: int, l: int, steps: int = 200) -> float:  # noqa: E741
    """Integral of the S-curve below the threshold: a proxy for candidates that are not wanted."""
    width = threshold / steps
    return sum(collision_probability((i + 0.5) * width, k, l) for i in range(steps)) * width


def choose_kl(
    threshold: float,
    num_perm: int,
    banding: bool = False,
    recall: float = PLAN_RECALL,
    fixed_k: int | None = None,
    fixed_l: int | None = None,
    seed: int = 1,
    sketch: str = "minhash",
) -> tuple[int, int]:
    """The (k, l) whose tables find a pair at `threshold` with probability >= `recall` and give the fewest
    expected unwanted candidates.

    For each k >= 2 the smallest l reaching the recall is taken (more tables only add candidates and work);
    among those, the lowest false-positive area plus TABLE_COST per table wins. k = 1 is never chosen: one
    shared min-hash would make most pairs of a crawl candidates. With banding, b*r <= num_perm; random
    tables take k <= m distinct indices, and are measured as drawn with `seed` (tables_needed).
    Example: choose_kl(0.5, 80) == (3, 27); choose_kl(0.8, 80) == (7, 17).
    """
    ks = [fixed_k] if fixed_k else range(2, min(MAX_K, num_perm) + 1)

    def cost(k: int, l: int) -> float:  # noqa: E741
        return false_positive_area(threshold, k, l) + TABLE_COST * l

    if fixed_l:
        fitting = [
            k
            for k in ks
            if not (banding and k * fixed_l > num_perm)
            and tables_recall(threshold, k, fixed_l, num_perm, seed, banding, sketch) >= recall - 1e-12
        ]
        best = min(fitting, key=lambda k: (cost(k, fixed_l), k), default=None)
        if best is not None:
            return best, fixed_l
    else:
        chosen = _cheapest_tables(threshold, num_perm, banding, recall, seed, ks, cost, sketch)
        if chosen is not None:
            return chosen
    raise ParamError(
        f"no (k, l) reaches recall {recall} at threshold {threshold}"
        + (f" with b*r <= {num_perm}" if banding else f" with m = {num_perm} min-hashes")
        + ": raise --num-perm, or give -k and -l"
    )


def _cheapest_tables(
    threshold, num_perm, banding, recall, seed, ks, cost, sketch="minhash"
) -> tuple[int, int] | None:
    """The (k, l) of least cost(k, l) among the k in `ks`, each with its smallest l reaching the recall. The
    closed form's l is a lower bound of the drawn tables' l and cost grows with l, so the k are measured in
    order of their bound and the search stops once a bound reaches the best cost found."""
    bounds = []
    for k in ks:
        least = _closed_form_tables(threshold, k, recall)
        if least is not None and least <= MAX_TABLES and not (banding and k * least > num_perm):
            bounds.append((cost(k, least), k))
    best: tuple[float, int, int] | None = None
    for bound, k in sorted(bounds):
        if best is not None and bound >= best[0]:
            break
        l = tables_needed(threshold, k, recall, num_perm, seed, banding, sketch)  # noqa: E741
        if l is None or (banding and k * l > num_perm):
            continue
        if best is None or (cost(k, l), k) < best[:2]:
            best = (cost(k, l), k, l)
    return None if best is None else (best[1], best[2])


def _closed_form_tables(threshold: float, k: int, recall: float) -> int | None:
    """The closed form's l: exact for bands, a lower bound for random tables."""
    p = threshold**k
    if p <= 0:
        return None
    if p >= 1:
        return 1
    return max(1, math.ceil(math.log1p(-recall) / math.log1p(-p)))


@functools.lru_cache(maxsize=4096)  # a pure function of its arguments; a run plans more than once
def tables_needed(
    threshold: float,
    k: int,
    recall: float,
    num_perm: int,
    seed: int = 1,
    banding: bool = False,
    sketch: str = "minhash",
) -> int | None:
    """The smallest l whose tables find a pair at `threshold` with probability >= `recall`, or None above
    MAX_TABLES: the closed form for bands, the random tables as drawn with `seed` otherwise."""
    least = _closed_form_tables(threshold, k, recall)
    if least is None or least > MAX_TABLES:
        return None
    if banding:
        return least
    # A draw with fewer than k agreeing positions is found by no table, so no l reaches more than this
    # (the same expression as _drawn_recalls', so the comparison is exact): stop before drawing tables.
    too_few = (_agreements(threshold, num_perm, seed, sketch).sum(axis=1) < k).sum()
    if 1.0 - too_few / RECALL_DRAWS < recall:
        return None
    for l, reached in enumerate(_drawn_recalls(threshold, k, num_perm, seed, sketch), start=1):  # noqa: E741
        if l > MAX_TABLES:
            return None
        if l >= least and reached >= recall:
            return l
    return None  # pragma: no cover - the draws are endless


@functools.lru_cache(maxsize=4096)
def tables_recall(
    s: float,
    k: int,
    l: int,  # noqa: E741
    num_perm: int,
    seed: int = 1,
    banding: bool = False,
    sketch: str = "minhash",
) -> float:
    """P(a pair of similarity s shares a bucket of at least one of l tables): the closed form for bands,
    the drawn tables' measured rate for random tables (_drawn_recalls)."""
    if banding:
        return collision_probability(s, k, l)
    return next(islice(_drawn_recalls(s, k, num_perm, seed, sketch), l - 1, None))


def _drawn_recalls(s: float, k: int, num_perm: int, seed: int, sketch: str = "minhash") -> Iterator[float]:
    """For j = 1, 2, ...: P(a pair of similarity s shares a bucket of at least one of the first j tables
    `run` draws with this seed (family.random_tables)), measured on RECALL_DRAWS seeded draws in which each
    of the m positions agrees with probability s, the same draws for every j, k and l."""
    missed = list(_agreement_words(s, num_perm, seed, sketch))  # the draws no table has found yet
    for table in family.random_tables(seed, num_perm, k):
        masks: dict[int, int] = {}
        for index in table:
            masks[index // 64] = masks.get(index // 64, 0) | 1 << (index % 64)
        found = None
        for word, bits in masks.items():
            mask = np.uint64(bits)
            has = (missed[word] & mask) == mask
            found = has if found is None else found & has
        if found.any():
            missed = [column[~found] for column in missed]
        yield 1.0 - len(missed[0]) / RECALL_DRAWS


@functools.lru_cache(maxsize=16)
def _agreement_words(s: float, num_perm: int, seed: int, sketch: str = "minhash") -> tuple[np.ndarray, ...]:
    """_agreements as bits, one array of the draws' words per 64 positions, position i the bit i % 64 of
    word i // 64: a table finds a draw when the draw has every bit of the table's positions, an AND of a
    word or two instead of k booleans looked up."""
    agree = _agreements(s, num_perm, seed, sketch)
    n_words = -(-num_perm // 64)
    packed = np.zeros((RECALL_DRAWS, 8 * n_words), dtype=np.uint8)
    packed[:, : -(-num_perm // 8)] = np.packbits(agree, axis=1, bitorder="little")
    words = packed.view("<u8").astype(np.uint64)
    columns = tuple(np.ascontiguousarray(words[:, word]) for word in range(n_words))
    for column in columns:
        column.flags.writeable = False
    return columns


@functools.lru_cache(maxsize=16)
def _agreements(s: float, num_perm: int, seed: int, sketch: str = "minhash") -> np.ndarray:
    """RECALL_DRAWS x m: whether each position of a pair of similarity s agrees, drawn with `seed`: min-hashes
    independently with probability s, the oph sketch as it hashes simulated pairs (_oph_agreements)."""
    if sketch == "oph":
        agree = _oph_agreements(s, num_perm, seed)
    else:
        agree = np.random.default_rng([seed, RECALL_STREAM]).random((RECALL_DRAWS, num_perm)) < s
    agree.flags.writeable = False
    return agree


def _oph_agreements(s: float, num_perm: int, seed: int) -> np.ndarray:
    """Agreement of the oph signatures (engines/oph.py, with the run's salt) of RECALL_DRAWS pairs of sets
    of random terms, each of union OPH_PLAN_UNION sharing round(s * OPH_PLAN_UNION) of them."""
    from lshsql.engines import oph  # numba: imported only when this sketch is planned

    shared = round(s * OPH_PLAN_UNION)
    only = (OPH_PLAN_UNION - shared) // 2
    terms = np.random.default_rng([seed, RECALL_STREAM]).integers(0, 2**62, (RECALL_DRAWS, OPH_PLAN_UNION))
    first = terms[:, : shared + only]
    second = np.concatenate([terms[:, :shared], terms[:, shared + only :]], axis=1)
    counts = np.tile([first.shape[1], second.shape[1]], RECALL_DRAWS)
    flat = np.concatenate([first, second], axis=1).ravel()
    signatures = oph.set_signatures(flat, counts, num_perm, family.oph_salt(seed))
    return signatures[0::2] == signatures[1::2]


def collision_by_agreement(num_perm: int, k: int, l: int) -> np.ndarray:  # noqa: E741
    """P(candidate) of a pair whose signatures agree on a of the m positions, for a = 0..m. The a agreeing
    positions are a random subset (min-hashes are exchangeable), so a table of k distinct indices (or a band
    of k rows) collides with probability C(a, k) / C(m, k), exactly, where (a/m)^k treats the estimate a/m
    as the similarity and overestimates for small a; l tables are taken as independent."""
    agreeing = np.arange(num_perm + 1, dtype=np.float64)
    per_table = np.ones(num_perm + 1)
    for j in range(k):
        per_table *= np.clip(agreeing - j, 0, None) / (num_perm - j)
    return 1.0 - (1.0 - per_table) ** l


# Two different min-hashes' low 4 bits agree by chance (the pairs stage's lanes, macros/candidates_scored.sql)
LOW_BITS_AGREE = 1 / 16


def lanes_pass_rate(
    num_perm: int,
    k: int,
    l: int,  # noqa: E741
    min_agree: int,
    histogram: np.ndarray | None = None,
) -> float:
    """The share of candidate pairs whose lanes, the low 4 bits of each min-hash, agree on min_agree
    positions: a candidate agreeing on a of the m min-hashes also agrees on the low bits of about 1/16 of
    the others. Candidates are taken as the planner expects them, a sample's pairwise agreement histogram
    times the tables' collision probability; without one, as sharing one table's k min-hashes and no more."""

    def passing(agreeing: int) -> float:
        others, need = num_perm - agreeing, max(0, min_agree - agreeing)
        p = LOW_BITS_AGREE
        return sum(math.comb(others, i) * p**i * (1 - p) ** (others - i) for i in range(need, others + 1))

    if histogram is not None:
        weights = histogram * collision_by_agreement(num_perm, k, l)
        if weights.sum() > 0:
            passed = sum(w * passing(a) for a, w in enumerate(weights) if w)
            return min(1.0, float(passed / weights.sum()))
    return min(1.0, passing(min(k, num_perm)))


def expected_candidates(histogram: np.ndarray, n_urls: int, k: int, l: int) -> float:  # noqa: E741
    """Candidate pairs expected among n_urls when pairwise agreements are distributed like a sample's:
    histogram[a] = sampled pairs agreeing on a of the m = len(histogram) - 1 min-hashes."""
    total = histogram.sum()
    if not total:
        return 0.0
    rate = float(histogram @ collision_by_agreement(len(histogram) - 1, k, l)) / total
    return n_urls * (n_urls - 1) / 2 * rate


def planned_work(l: int, n_urls: int, candidates: float) -> float:  # noqa: E741
    """The planner's cost of l tables on N URLs: l * N band keys plus CANDIDATE_COST per candidate pair."""
    return l * n_urls + CANDIDATE_COST * candidates


def large_plan_note(params: Params, n_urls: int, candidates: float) -> str | None:
    """A line telling that the chosen (k, l) make a large run of N URLs (its work, planned_work and the
    min-hashes, over LARGE_WORK_PER_URL a URL and LARGE_WORK in all), said before the stages that take
    long; else None."""
    work = planned_work(params.l, n_urls, candidates) + POSITION_COST * params.num_perm * n_urls
    if work < LARGE_WORK or work < LARGE_WORK_PER_URL * n_urls:
        return None
    return (
        f"note: a large plan: {params.l:,} tables of k = {params.k} on {n_urls:,} URLs, about "
        f"{candidates:,.0f} candidate pairs expected ({candidates / n_urls:,.0f} a URL); this run may take "
        f"long and spill to disk. A higher --threshold (now {params.threshold:g}) needs fewer: "
        "`lshsql plan --threshold T --work DIR` lists the options once the signatures are made."
    )


def candidates_in_work(work: float, l: int, n_urls: int, num_perm: int) -> float:  # noqa: E741
    """The expected candidate pairs counted in a work of choose_num_perm for (l, m)."""
    return max(0.0, (work - POSITION_COST * num_perm * n_urls - l * n_urls) / CANDIDATE_COST)


def choose_kl_for_sample(
    threshold: float,
    num_perm: int,
    histogram: np.ndarray,
    n_urls: int,
    banding: bool = False,
    recall: float = PLAN_RECALL,
    seed: int = 1,
    sketch: str = "minhash",
) -> tuple[int, int]:
    """(k, l) with recall >= `recall` at the threshold and the least work on this data: l*N band-key rows
    plus CANDIDATE_COST per expected candidate pair, estimated from a histogram of the agreement of sampled
    URL pairs. Corpora with a frequent vocabulary have a high background similarity, which the closed form
    cannot see."""

    def cost(k: int, l: int) -> float:  # noqa: E741
        return planned_work(l, n_urls, expected_candidates(histogram, n_urls, k, l))

    ks = range(2, min(MAX_K, num_perm) + 1)
    chosen = _cheapest_tables(threshold, num_perm, banding, recall, seed, ks, cost, sketch)
    if chosen is not None:
        return chosen
    return choose_kl(threshold, num_perm, banding, recall, seed=seed, sketch=sketch)
