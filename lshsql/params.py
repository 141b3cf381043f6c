"""Parameters of the SQL stages, checked once, and the LSH S-curve maths used to choose them.

The S-curve: a pair of similarity s becomes a candidate when all k min-hashes of at least one of l tables
agree, which happens with probability 1 - (1 - s^k)^l (Indyk & Motwani 1998; Haveliwala et al. 2000, sec. 4)
when the tables share no min-hash: b bands of r disjoint rows. The paper's random tables reuse m min-hashes
(l*k may exceed m); tables sharing an index collide together, so their curve lies below the closed form
(Harris-FKG): at m = 80 and s = 0.5, the 47 tables of k = 4 reach 0.90, not 0.95. The planner therefore
measures the very tables a run draws (drawn_recall) and adds tables until they reach the recall.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from itertools import islice
from typing import TYPE_CHECKING

from lshsql.errors import ParamError

if TYPE_CHECKING:
    import numpy as np  # imported where used: `lshsql --help` reads Params without paying for numpy

WEIGHTINGS = ("tfidf", "tf", "none")
UNITS = ("url", "host", "domain")
CLUSTERINGS = ("center", "components")
PRIME = 2**31 - 1  # element hashes x are < PRIME (31 bits)
MAX_K = 32
# a term of weight q is min-hashed as q copies; tfidf/tf bags sum to --scale, so it bounds --scale too
MAX_COPIES = 1_000_000
MAX_TABLES = 10_000
# Draws of the agreement of m min-hashes with which the planner measures the tables it draws: the standard
# error of a recall of 0.95 is 0.0015.
RECALL_DRAWS = 20_000
RECALL_STREAM = 2  # numpy stream of those draws (family.py has streams 0 and 1)
PLAN_RECALL = 0.95
VERIFY_SIGMAS = 3.0
# Cost of one LSH table (N band keys and their share of the self-join) relative to the false-positive area
# of the S-curve; measured trade-off: near-threshold candidates are cheap to filter, tables are not.
TABLE_COST = 2e-3
# Band keys one candidate pair costs, for the planner that sees the data: any weight from 2 to 4.9 keeps the
# (k, l) the per-unit costs of the scale bench favour at 100k, 1M and 10M URLs (bench/RESULTS.md).
CANDIDATE_COST = 2.5


def _option(default, help: str, *flags: str, first: bool = False):
    """A Params field with a default and what its command-line option shows (see Params)."""
    return field(default=default, metadata={"help": help, "flags": flags, "first": first})


@dataclass(frozen=True)
class Params:
    """Everything after extraction. Defaults follow Haveliwala et al. (2000): m = 80 min-hashes and pairs
    kept at 20% agreement. With k and l left None the planner chooses the cheapest (k, l) whose S-curve
    gives recall >= `recall` (0.95) at the threshold; k=3, l=125 are the paper's own choice."""

    # Each field is also an option of `lshsql run` and `lshsql stage` (lshsql/cli/options.py): its metadata
    # holds the option's help ("{default}" is the field's default), flags when not --field-name, and
    # first=True for the options listed before the others.
    # what a bag describes: a URL, a host, or a registered domain (all its URLs' fragments)
    unit: str = _option(
        "url", "What a bag describes: url, host or domain (registered domain) [{default}].", first=True
    )
    aliases: bool = _option(  # fragments of an alias URL (redirect, rel=canonical) describe its target
        True, "Fragments of redirects and rel=canonical aliases describe the target.", first=True
    )
    weighting: str = _option("tfidf", "tfidf, tf or none (sets; or the bags' own weights).")
    min_df: int | None = _option(  # None: 2 for crawls, 1 for a user's bags (keep their sets whole)
        None, "Drop terms in fewer URLs [default: 2; 1 with --bags]."
    )
    max_df: float | None = _option(  # None: 0.5 for crawls, 1.0 for a user's bags
        None, "Drop terms in more than this fraction of URLs [0.5; 1.0]."
    )
    scale: float = _option(100.0, "tfidf/tf bags are scaled to sum to this [{default}].")
    num_perm: int = _option(80, "m, min-hashes per URL [{default}].")
    signature_bytes: int = _option(4, "Bytes kept per min-hash: 4 or 3 [{default}].")
    k: int | None = _option(None, "Min-hashes per LSH table [planner's choice].", "-k")
    l: int | None = _option(None, "LSH tables [planner's choice].", "-l")  # noqa: E741 - the paper's name
    banding: bool = _option(False, "b bands of r rows (k=r, l=b).", "--banding/--random-tables")
    seed: int = _option(1, "Seed of the hash family and LSH tables [{default}].")
    threshold: float = _option(0.2, "Keep pairs agreeing on this fraction of min-hashes.", first=True)
    recall: float = _option(  # the planner's: the chance of finding a pair right at the threshold
        PLAN_RECALL,
        "Chance the planner's tables find a pair right at the threshold (less: fewer) [{default}].",
        first=True,
    )
    max_bucket: int = _option(1000, "Bucket size above which pairs are capped [{default}].")
    verify: bool = _option(True, "Add exact weighted Jaccard to pairs.")
    clustering: str = _option("center", "center (the paper's CENTER) or components.")

    def __post_init__(self) -> None:
        checks = [
            (self.unit in UNITS, f"unit must be one of {', '.join(UNITS)}"),
            (self.weighting in WEIGHTINGS, f"weighting must be one of {', '.join(WEIGHTINGS)}"),
            (self.min_df is None or self.min_df >= 1, f"min_df must be >= 1, got {self.min_df}"),
            (
                self.max_df is None or 0 < self.max_df <= 1,
                f"max_df is a fraction of URLs in (0, 1], got {self.max_df}",
            ),
            (0 < self.scale <= MAX_COPIES, f"scale must be in (0, {MAX_COPIES:,}], got {self.scale}"),
            (1 <= self.num_perm <= 1024, f"num_perm must be in 1..1024, got {self.num_perm}"),
            (self.signature_bytes in (3, 4), "signature bytes must be 3 or 4"),
            (self.k is None or 1 <= self.k <= MAX_K, f"k must be in 1..{MAX_K}, got {self.k}"),
            (self.l is None or 1 <= self.l <= 10_000, f"l must be in 1..10000, got {self.l}"),
            (0 < self.threshold <= 1, f"threshold must be in (0, 1], got {self.threshold}"),
            (0 < self.recall < 1, f"recall is a probability in (0, 1), got {self.recall}"),
            (self.max_bucket >= 2, f"max bucket must be >= 2, got {self.max_bucket}"),
            (self.clustering in CLUSTERINGS, f"clustering must be one of {', '.join(CLUSTERINGS)}"),
            (0 <= self.seed < 2**32, f"seed must be in 0..2^32-1, got {self.seed}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ParamError(message)
        if not self.banding and self.k is not None and self.k > self.num_perm:
            raise ParamError(f"k must be at most num_perm: a table takes k of the {self.num_perm} min-hashes")
        if self.banding and self.k is not None and self.l is not None and self.k * self.l > self.num_perm:
            raise ParamError(
                f"banding needs b*r <= num_perm: {self.l} bands x {self.k} rows > {self.num_perm}"
            )

    @property
    def min_agree(self) -> int:
        """Agreeing positions a candidate needs to be kept (or, with verify, to be checked exactly).

        Without verify: the smallest n with n/m >= threshold (float noise forgiven). With verify, the cut is
        3 standard deviations of the estimate lower, sqrt(t(1-t)/m), so that pairs just above the threshold
        whose estimate fell below it are still verified: the exact Jaccard decides."""
        t, m = self.threshold, self.num_perm
        if self.verify:
            return max(1, math.floor((t - VERIFY_SIGMAS * math.sqrt(t * (1 - t) / m)) * m))
        return max(1, math.ceil(t * m - 1e-9))

    def resolved(self, from_bags: bool) -> Params:
        """Every None filled in: document-frequency limits for the input kind, (k, l) from the planner."""
        min_df = self.min_df if self.min_df is not None else (1 if from_bags else 2)
        max_df = self.max_df if self.max_df is not None else (1.0 if from_bags else 0.5)
        return self.with_tables(replace(self, min_df=min_df, max_df=max_df))

    @staticmethod
    def with_tables(params: Params, similarities: np.ndarray | None = None, n_urls: int = 0) -> Params:
        """(k, l) filled in when not given: from a histogram of sampled agreements (see
        choose_kl_for_sample) when there is one, else from the closed form."""
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
            )
        return replace(params, k=k, l=l)

    def to_json(self) -> dict:
        return asdict(self)


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
            and tables_recall(threshold, k, fixed_l, num_perm, seed, banding) >= recall - 1e-12
        ]
        best = min(fitting, key=lambda k: (cost(k, fixed_l), k), default=None)
        if best is not None:
            return best, fixed_l
    else:
        chosen = _cheapest_tables(threshold, num_perm, banding, recall, seed, ks, cost)
        if chosen is not None:
            return chosen
    raise ParamError(
        f"no (k, l) reaches recall {recall} at threshold {threshold}"
        + (f" with b*r <= {num_perm}" if banding else f" with m = {num_perm} min-hashes")
        + ": raise --num-perm, or give -k and -l"
    )


def _cheapest_tables(threshold, num_perm, banding, recall, seed, ks, cost) -> tuple[int, int] | None:
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
        l = tables_needed(threshold, k, recall, num_perm, seed, banding)  # noqa: E741
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
    threshold: float, k: int, recall: float, num_perm: int, seed: int = 1, banding: bool = False
) -> int | None:
    """The smallest l whose tables find a pair at `threshold` with probability >= `recall`, or None above
    MAX_TABLES: the closed form for bands, the random tables as drawn with `seed` otherwise."""
    least = _closed_form_tables(threshold, k, recall)
    if least is None or least > MAX_TABLES:
        return None
    if banding:
        return least
    for l, reached in enumerate(_drawn_recalls(threshold, k, num_perm, seed), start=1):  # noqa: E741
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
) -> float:
    """P(a pair of similarity s shares a bucket of at least one of l tables): the closed form for bands,
    the drawn tables' measured rate for random tables (_drawn_recalls)."""
    if banding:
        return collision_probability(s, k, l)
    return next(islice(_drawn_recalls(s, k, num_perm, seed), l - 1, None))


def _drawn_recalls(s: float, k: int, num_perm: int, seed: int) -> Iterator[float]:
    """For j = 1, 2, ...: P(a pair of similarity s shares a bucket of at least one of the first j tables
    `run` draws with this seed (family.random_tables)), measured on RECALL_DRAWS seeded draws in which each
    of the m positions agrees with probability s, the same draws for every j, k and l."""
    import numpy as np

    from lshsql.lsh import family  # family imports this module

    agree = _agreements(s, num_perm, seed)
    missed = np.arange(RECALL_DRAWS)  # draws no table has found yet: each table need only look at these
    for table in family.random_tables(seed, num_perm, k):
        missed = missed[~agree[np.ix_(missed, table)].all(axis=1)]
        yield 1.0 - len(missed) / RECALL_DRAWS


@functools.lru_cache(maxsize=16)
def _agreements(s: float, num_perm: int, seed: int) -> np.ndarray:
    """RECALL_DRAWS x m: whether each min-hash of a pair of similarity s agrees, drawn with `seed`."""
    import numpy as np

    agree = np.random.default_rng([seed, RECALL_STREAM]).random((RECALL_DRAWS, num_perm)) < s
    agree.flags.writeable = False
    return agree


def collision_by_agreement(num_perm: int, k: int, l: int) -> np.ndarray:  # noqa: E741
    """P(candidate) of a pair whose signatures agree on a of the m positions, for a = 0..m. The a agreeing
    positions are a random subset (min-hashes are exchangeable), so a table of k distinct indices (or a band
    of k rows) collides with probability C(a, k) / C(m, k), exactly, where (a/m)^k treats the estimate a/m
    as the similarity and overestimates for small a; l tables are taken as independent."""
    import numpy as np

    agreeing = np.arange(num_perm + 1, dtype=np.float64)
    per_table = np.ones(num_perm + 1)
    for j in range(k):
        per_table *= np.clip(agreeing - j, 0, None) / (num_perm - j)
    return 1.0 - (1.0 - per_table) ** l


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


def choose_kl_for_sample(
    threshold: float,
    num_perm: int,
    histogram: np.ndarray,
    n_urls: int,
    banding: bool = False,
    recall: float = PLAN_RECALL,
    seed: int = 1,
) -> tuple[int, int]:
    """(k, l) with recall >= `recall` at the threshold and the least work on this data: l*N band-key rows
    plus CANDIDATE_COST per expected candidate pair, estimated from a histogram of the agreement of sampled
    URL pairs. Corpora with a frequent vocabulary have a high background similarity, which the closed form
    cannot see."""

    def cost(k: int, l: int) -> float:  # noqa: E741
        return planned_work(l, n_urls, expected_candidates(histogram, n_urls, k, l))

    ks = range(2, min(MAX_K, num_perm) + 1)
    chosen = _cheapest_tables(threshold, num_perm, banding, recall, seed, ks, cost)
    return chosen if chosen is not None else choose_kl(threshold, num_perm, banding, recall, seed=seed)
