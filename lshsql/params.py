"""Parameters of the SQL stages, checked once (Params), and the constants their checks use.

The S-curve maths that chooses k and l, and the planner's constants, are in lshsql/lsh/scurve.py, which
imports this module (never the other way round): scurve.resolve(params, whole_sets) fills in every None.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from lshsql.errors import InputError, ParamError

WEIGHTINGS = ("tfidf", "tf", "none")
# minhash: m random linear functions (the paper's); oph: one-permutation hashing, densified (engines/oph.py)
SKETCHES = ("minhash", "oph")
UNITS = ("url", "host", "domain")
CLUSTERINGS = ("center", "components")
MAX_K = 32
# a term of weight q is min-hashed as q copies; tfidf/tf bags sum to --scale, so it bounds --scale too
MAX_COPIES = 1_000_000
PLAN_RECALL = 0.95  # the planner's default recall at the threshold (Params.recall)
DEFAULT_NUM_PERM = 80  # m where the planner does not choose it (the paper's)
VERIFY_SIGMAS = 3.0
# the widest spread of oph's agreements over the binomial's, on sets smaller than m (bench/RESULTS.md)
OPH_SPREAD = 1.5


def check_copies(most: float) -> None:
    """Refuse bags with a weight that flattens its term into more than MAX_COPIES copies (the signatures
    stage min-hashes term#1 .. term#q one by one). Only --weighting none can: tf and tfidf bags sum to
    --scale, which is at most MAX_COPIES."""
    if most > MAX_COPIES:
        raise InputError(
            f"bags: a weight of {most:,.0f} makes as many copies of its term (term#1 .. term#q, min-hashed "
            f"one by one), over the {MAX_COPIES:,} lshsql flattens a term into: with --weighting none a "
            "weight is the term's count or the bags table's own; use --weighting tf or tfidf, whose weights "
            "sum to --scale, or give smaller weights"
        )


def _option(default, help: str, *flags: str, first: bool = False):
    """A Params field with a default and what its command-line option shows (see Params)."""
    return field(default=default, metadata={"help": help, "flags": flags, "first": first})


@dataclass(frozen=True)
class Params:
    """Everything after extraction. Defaults follow Haveliwala et al. (2000): m = 80 min-hashes and pairs
    kept at 20% agreement. With k and l left None the planner chooses the cheapest (k, l) whose S-curve
    gives recall >= `recall` (0.95) at the threshold; k=3, l=125 are the paper's own choice. With m left
    None too it may choose m = 128, whose tables share fewer min-hashes, for millions of URLs."""

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
    # None: 2 and 0.5 for crawls and words; 1 and 1.0 (sets kept whole) for a user's bags and shingles
    min_df: int | None = _option(None, "Drop terms in fewer URLs [default: 2; 1 with --bags or shingles].")
    max_df: float | None = _option(None, "Drop terms in more than this fraction of URLs [0.5; 1.0].")
    scale: float = _option(100.0, "tfidf/tf bags are scaled to sum to this [{default}].")
    freeze_idf: bool = _option(  # DIR/frozen_idf.parquet: written once, kept by later --freeze-idf runs
        False,
        "Keep the document frequencies and URL count of the first run with this option (DIR/frozen_idf"
        ".parquet): a URL whose terms it all knows keeps its bag and signature when URLs are added.",
    )
    # None: the planner's choice, 80 or 128, when it also chooses k and l (lsh/scurve.py), else 80
    num_perm: int | None = _option(
        None, "m, min-hashes per URL [80, or 128 where the planner expects less work]."
    )
    sketch: str = _option(
        "minhash", "minhash (m hash functions) or oph (one hash into m bins, densified) [{default}]."
    )
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
            (
                self.num_perm is None or 1 <= self.num_perm <= 1024,
                f"num_perm must be in 1..1024, got {self.num_perm}",
            ),
            (self.sketch in SKETCHES, f"sketch must be one of {', '.join(SKETCHES)}"),
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
        if self.num_perm is None and not self.plans_num_perm:  # m = 80 unless the planner chooses it
            object.__setattr__(self, "num_perm", DEFAULT_NUM_PERM)
        # m is set here unless k, l and banding are all left open, so the checks below see a number
        if not self.banding and self.k is not None and self.k > self.num_perm:
            raise ParamError(f"k must be at most num_perm: a table takes k of the {self.num_perm} min-hashes")
        if self.banding and self.k is not None and self.l is not None and self.k * self.l > self.num_perm:
            raise ParamError(
                f"banding needs b*r <= num_perm: {self.l} bands x {self.k} rows > {self.num_perm}"
            )

    @property
    def plans_num_perm(self) -> bool:
        """Whether the planner chooses m (then None until it has): not given, with k and l left to it too,
        for random tables of the min-hash sketch (banding and the one-permutation sketch take m = 80)."""
        return (
            self.num_perm is None
            and self.k is None
            and self.l is None
            and not self.banding
            and self.sketch == "minhash"
        )

    @property
    def min_agree(self) -> int:
        """Agreeing positions a candidate needs to be kept (or, with verify, to be checked exactly).

        Without verify: the smallest n with n/m >= threshold (float noise forgiven). With verify, the cut is
        3 standard deviations of the estimate lower, sqrt(t(1-t)/m), so that pairs just above the threshold
        whose estimate fell below it are still verified: the exact Jaccard decides. A densified
        one-permutation sketch of a set with fewer elements than m bins fills most bins from the same few
        elements: its agreements spread wider than the binomial's, and the cut is OPH_SPREAD times lower."""
        t, m = self.threshold, self.num_perm
        if m is None:
            raise ParamError("num_perm is not chosen yet: the planner chooses it before the signatures stage")
        if self.verify:
            sigmas = VERIFY_SIGMAS * (OPH_SPREAD if self.sketch == "oph" else 1.0)
            return max(1, math.floor((t - sigmas * math.sqrt(t * (1 - t) / m)) * m))
        return max(1, math.ceil(t * m - 1e-9))

    def with_df_limits(self, whole_sets: bool) -> Params:
        """min_df and max_df filled in for the input kind: a crawl's or plain words' (2, 0.5), or (1, 1.0),
        no cut-off, when the sets must be kept whole: a user's bags, and documents ingested as shingles,
        whose shingles are mostly in one document each, so that min_df 2 would empty most bags and leave
        two unrelated documents that share one shingle identical. (k, l) are the planner's:
        lsh.scurve.resolve fills in both."""
        min_df = self.min_df if self.min_df is not None else (1 if whole_sets else 2)
        max_df = self.max_df if self.max_df is not None else (1.0 if whole_sets else 0.5)
        return replace(self, min_df=min_df, max_df=max_df)

    def to_json(self) -> dict:
        return asdict(self)
