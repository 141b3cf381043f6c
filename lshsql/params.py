"""Parameters of the SQL stages, checked once, and the LSH S-curve maths used to choose them.

The S-curve: a pair of similarity s becomes a candidate when all k min-hashes of at least one of l tables
agree, which happens with probability 1 - (1 - s^k)^l (Indyk & Motwani 1998; Haveliwala et al. 2000, sec. 4).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from lshsql.errors import ParamError

WEIGHTINGS = ("tfidf", "tf", "none")
UNITS = ("url", "host", "domain")
CLUSTERINGS = ("center", "components")
PRIME = 2**31 - 1  # element hashes x are < PRIME (31 bits)
# min-hash family h(x) = ((a*x + b) mod 2^40) >> 9: a odd in [2^31, 2^32) and b < 2^32 keep a*x + b < 2^63
FAMILY_WORD, FAMILY_SHIFT = 40, 9
MAX_K = 32
MAX_COPIES = (
    1_000_000  # a term of weight q is min-hashed as q copies; tfidf/tf bags sum to --scale, so it bounds it
)
PLAN_RECALL = 0.95
VERIFY_SIGMAS = 3.0
# Cost of one LSH table (N band keys and their share of the self-join) relative to the false-positive area
# of the S-curve; measured trade-off: near-threshold candidates are cheap to filter, tables are not.
TABLE_COST = 2e-3


@dataclass(frozen=True)
class Params:
    """Everything after extraction. Defaults follow Haveliwala et al. (2000): m = 80 min-hashes and pairs
    kept at 20% agreement. With k and l left None the planner chooses the cheapest (k, l) whose S-curve
    gives recall >= 0.95 at the threshold; k=3, l=125 are the paper's own choice."""

    unit: str = "url"  # what a bag describes: a URL, a host, or a registered domain (all its URLs' fragments)
    aliases: bool = True  # fragments of an alias URL (redirect, rel=canonical) describe its target
    weighting: str = "tfidf"
    min_df: int | None = None  # None: 2 for crawls, 1 for a user's bags (keep their sets whole)
    max_df: float | None = None  # None: 0.5 for crawls, 1.0 for a user's bags
    scale: float = 100.0
    num_perm: int = 80
    signature_bytes: int = 4
    k: int | None = None
    l: int | None = None  # noqa: E741 - the paper's name
    banding: bool = False
    seed: int = 1
    threshold: float = 0.2
    max_bucket: int = 1000
    verify: bool = True
    clustering: str = "center"

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
            (self.max_bucket >= 2, f"max bucket must be >= 2, got {self.max_bucket}"),
            (self.clustering in CLUSTERINGS, f"clustering must be one of {', '.join(CLUSTERINGS)}"),
            (0 <= self.seed < 2**32, f"seed must be in 0..2^32-1, got {self.seed}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ParamError(message)
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
                params.threshold, params.num_perm, similarities, n_urls, params.banding
            )
        else:
            k, l = choose_kl(params.threshold, params.num_perm, params.banding, fixed_k=k, fixed_l=l)  # noqa: E741
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
) -> tuple[int, int]:
    """The (k, l) with the S-curve >= `recall` at `threshold` and the fewest expected unwanted candidates.

    For each k >= 2 the smallest l reaching the recall is taken (more tables only add candidates and work);
    among those, the lowest false-positive area plus TABLE_COST per table wins. k = 1 is never chosen: one
    shared min-hash would make most pairs of a crawl candidates. With banding, b*r <= num_perm.
    Example: choose_kl(0.5, 80) == (3, 23); choose_kl(0.8, 80) == (9, 21).
    """
    best: tuple[float, int, int] | None = None
    for k in [fixed_k] if fixed_k else range(2, MAX_K + 1):
        l = fixed_l or _tables_needed(threshold, k, recall)  # noqa: E741
        if l is None or (banding and k * l > num_perm) or l > 10_000:
            continue
        if collision_probability(threshold, k, l) < recall - 1e-12:  # a fixed l may not reach it
            continue
        cost = false_positive_area(threshold, k, l) + TABLE_COST * l
        if best is None or cost < best[0]:
            best = (cost, k, l)
    if best is None:
        raise ParamError(
            f"no (k, l) reaches recall {recall} at threshold {threshold}"
            + (f" with b*r <= {num_perm}: raise --num-perm" if banding else "")
        )
    return best[1], best[2]


def _tables_needed(threshold: float, k: int, recall: float) -> int | None:
    p = threshold**k
    if p <= 0:
        return None
    if p >= 1:
        return 1
    return max(1, math.ceil(math.log1p(-recall) / math.log1p(-p)))


def expected_candidates(histogram: np.ndarray, n_urls: int, k: int, l: int) -> float:  # noqa: E741
    """Candidate pairs expected among n_urls when pairwise similarities are distributed like a sample's:
    histogram[a] = sampled pairs agreeing on a of the m = len(histogram) - 1 min-hashes."""
    total = histogram.sum()
    if not total:
        return 0.0
    similarity = np.arange(len(histogram)) / (len(histogram) - 1)
    rate = float(histogram @ (1.0 - (1.0 - similarity**k) ** l)) / total
    return n_urls * (n_urls - 1) / 2 * rate


def choose_kl_for_sample(
    threshold: float,
    num_perm: int,
    histogram: np.ndarray,
    n_urls: int,
    banding: bool = False,
    recall: float = PLAN_RECALL,
) -> tuple[int, int]:
    """(k, l) with recall >= `recall` at the threshold and the least work on this data: l*N band-key rows
    plus the expected candidate pairs, estimated from a histogram of the agreement of sampled URL pairs.
    Corpora with a frequent vocabulary have a high background similarity, which the closed form cannot see."""
    best: tuple[float, int, int] | None = None
    for k in range(2, MAX_K + 1):
        l = _tables_needed(threshold, k, recall)  # noqa: E741
        if l is None or l > 10_000 or (banding and k * l > num_perm):
            continue
        cost = l * n_urls + expected_candidates(histogram, n_urls, k, l)
        if best is None or cost < best[0]:
            best = (cost, k, l)
    if best is None:
        return choose_kl(threshold, num_perm, banding, recall)
    return best[1], best[2]
