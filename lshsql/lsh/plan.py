"""`lshsql plan`: choose (k, l) for a threshold and show why, with predictions from the data if there is any.

Without data the S-curve alone decides (scurve.choose_kl). With a work folder holding signatures, a fixed
sample of URLs gives the histogram of pairwise agreements, from which the expected number of candidate pairs
of every (k, l) follows, and the bucket sizes of the sample, scaled up, predict the biggest LSH buckets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.lsh import family
from lshsql.lsh.scurve import (
    CANDIDATE_COST,
    OPH_PLAN_UNION,
    RECALL_DRAWS,
    choose_kl,
    choose_kl_for_sample,
    choose_num_perm,
    expected_candidates,
    reachable_num_perm,
    tables_needed,
    tables_recall,
)
from lshsql.params import DEFAULT_NUM_PERM, MAX_K, PLAN_RECALL, Params, check_copies

PLAN_SAMPLE = 1000  # 500k pairs: background collision rates down to ~1e-5 are seen
# Most bag rows the choice of m holds in memory for its sample (16 bytes each, outside DuckDB's limit): more
# (documents of many thousand shingles) and it keeps m = 80
SAMPLE_ROWS = 20_000_000


@dataclass(frozen=True)
class Option:
    """One admissible (k, l): the smallest l reaching the recall for this k."""

    k: int
    l: int  # noqa: E741
    recall_at_threshold: float
    candidates: float | None


@dataclass(frozen=True)
class Plan:
    """The chosen (k, l), the options it was chosen among, and predictions from a sample if any."""

    threshold: float
    recall: float
    num_perm: int
    banding: bool
    k: int
    l: int  # noqa: E741
    options: list[Option] = field(default_factory=list)
    seed: int = 1
    n_urls: int = 0
    sample_size: int = 0
    biggest_buckets: list[int] = field(default_factory=list)
    sketch: str = "minhash"

    def lines(self) -> list[str]:
        """The choice and its reasoning, as `lshsql plan` prints it."""
        scheme = "bands of contiguous rows" if self.banding else "tables of random min-hash indices"
        out = [
            f"threshold {self.threshold}, recall wanted at the threshold {self.recall}, "
            f"m = {self.num_perm}, {scheme}",
            f"chosen: k = {self.k}, l = {self.l}  ({self.l} tables of {self.k} min-hashes; "
            + (
                "S-curve 1-(1-s^k)^l)"
                if self.banding
                else f"the tables seed {self.seed} draws, measured: they share min-hashes)"
            ),
            *(
                [
                    f"sketch oph: P(candidate) measured on its signatures of {RECALL_DRAWS:,} simulated "
                    f"pairs of sets of union {OPH_PLAN_UNION}"
                    + (" (bands: the S-curve)" if self.banding else "")
                ]
                if self.sketch == "oph"
                else []
            ),
            "",
            "  s     P(candidate)",
        ]
        for s in sorted(
            {round(self.threshold * f, 3) for f in (0.25, 0.5, 0.75, 1.0)} | {min(1.0, self.threshold + 0.1)}
        ):
            p = tables_recall(s, self.k, self.l, self.num_perm, self.seed, self.banding, self.sketch)
            out.append(f"  {s:<5} {p:.4f}")
        out += [
            "",
            "options (smallest l for each k that reaches the recall):",
            "  k    l      P(t)    expected candidates",
        ]
        for o in self.options:
            mark = "  <- chosen" if (o.k, o.l) == (self.k, self.l) else ""
            expected = "-" if o.candidates is None else f"{o.candidates:,.0f}"
            out.append(f"  {o.k:<4} {o.l:<6} {o.recall_at_threshold:.3f}   {expected}{mark}")
        if self.n_urls:
            out += [
                "",
                f"from the agreements of a sample of {self.sample_size} of {self.n_urls:,} URLs' signatures:",
                f"the cost of an option is l * N band keys plus {CANDIDATE_COST:g} per expected candidate",
                "pair; the cheapest was chosen.",
            ]
            if self.biggest_buckets:
                sizes = ", ".join(f"{b:,}" for b in self.biggest_buckets)
                out.append(f"predicted biggest buckets of the chosen tables: {sizes} URLs")
        else:
            out += [
                "",
                "no signatures given (--work): chosen by the S-curve alone; with a work folder the",
                "expected candidates on the data decide among the options.",
            ]
        return out


def sample_signatures(con, signatures_path: str | Path, num_perm: int, size: int = PLAN_SAMPLE):
    """Every n-th url_id's signature (a fixed sample, so the same data always gives the same plan)."""
    n_urls = db.scalar(con, "select count(*) from read_parquet($p)", {"p": str(signatures_path)})
    stride = max(1, n_urls // size)
    sample = con.execute(
        "select * exclude (url_id) from read_parquet($p) where url_id % $stride = 0 order by url_id limit $n",
        {"p": str(signatures_path), "stride": stride, "n": size},
    ).fetchnumpy()
    if not sample or not len(sample["h0"]):
        return None, n_urls
    return np.column_stack([sample[f"h{i}"] for i in range(num_perm)]), n_urls


def signature_width(path: Path) -> int | None:
    """m of a signatures file (its columns h0 .. h{m-1}), None when there is no such file."""
    if not path.exists():
        return None
    names = _parquet(path, pq.read_schema).names
    return sum(1 for name in names if name[:1] == "h" and name[1:].isdigit()) or None


def _parquet(path: Path, read):
    """read(path) of a Parquet file's schema or metadata, a file that is not one an InputError."""
    try:
        return read(path)
    except (pa.ArrowException, OSError) as error:
        raise InputError(f"{path}: not a readable Parquet file ({error})") from None


def sample_bags(con, bags_path: str | Path, n_urls: int, size: int = PLAN_SAMPLE):
    """The bags of the URLs sample_signatures takes from their signatures (every n-th url_id of the `n_urls`
    with a bag, the first `size` of them): their term hashes, copies (as the signatures stage rounds
    weights) and terms per bag, in url_id order; None when they hold more than SAMPLE_ROWS rows. The ids
    are listed where they are few, not found by their remainder, so that DuckDB reads only the row groups
    holding them."""
    stride = max(1, n_urls // size)
    first, last = _url_id_range(con, bags_path)
    first = -(-first // stride) * stride  # the first multiple of the stride
    if (last - first) // stride < 4 * size:
        where, values = "url_id in (select unnest($ids))", {"ids": list(range(first, last + 1, stride))}
    else:  # ids far apart (a table of the user's own): each row's remainder
        where, values = "url_id % $stride = 0", {"stride": stride}
    # copies as DOUBLE: a weight beyond BIGINT is refused by check_copies, not by a failed cast
    sampled = (
        f"select url_id, term_hash, greatest(1, round(weight)) as copies from read_parquet($p) where {where}"
    )
    chosen = (
        f"select * from ({sampled}) where url_id in "
        f"(select distinct url_id from ({sampled}) order by url_id limit $n)"
    )
    values |= {"p": str(bags_path), "n": size}
    if db.scalar(con, f"select count(*) from ({chosen})", values) > SAMPLE_ROWS:
        return None
    rows = con.execute(f"{chosen} order by url_id, term_hash", values).fetchnumpy()
    ids = rows["url_id"]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.zeros(0, np.int64)
    counts = np.diff(np.r_[starts, len(ids)]).astype(np.int64)
    check_copies(float(rows["copies"].max()) if len(ids) else 1.0)  # before they are signed one by one
    return rows["term_hash"].astype(np.int64), rows["copies"].astype(np.int64), counts


def _url_id_range(con, bags_path: str | Path) -> tuple[int, int]:
    """The smallest and largest url_id of a bags file, from its row groups' statistics where they hold
    them."""
    metadata = _parquet(Path(bags_path), lambda path: pq.ParquetFile(path).metadata)
    if "url_id" in metadata.schema.names:
        column = metadata.schema.names.index("url_id")
        stats = [metadata.row_group(g).column(column).statistics for g in range(metadata.num_row_groups)]
        if stats and all(s is not None and s.has_min_max for s in stats):
            return int(min(s.min for s in stats)), int(max(s.max for s in stats))
    low, high = con.execute(
        "select coalesce(min(url_id), 0), coalesce(max(url_id), 0) from read_parquet($p)",
        {"p": str(bags_path)},
    ).fetchone()
    return int(low), int(high)


def num_perm_for_bags(
    con, bags_path: str | Path, n_urls: int, params: Params
) -> tuple[int, tuple[int, int] | None, dict[int, float]]:
    """m for these bags, its (k, l) and each choice's expected work (scurve.choose_num_perm), from the
    sampled URLs' signatures at each of NUM_PERM_CHOICES: the values the signatures stage gives them, so
    (k, l) are those sample_signatures' sample gives after the stage. Without two bags, or when the sampled
    bags are too big to hold (sample_bags): the first m the closed form reaches, and no (k, l)."""
    from lshsql.lsh.minhash import bag_signatures  # numba: imported when a run signs bags

    sample = sample_bags(con, bags_path, n_urls)
    if sample is None or len(sample[2]) < 2:
        return reachable_num_perm(params), None, {}
    terms, copies, counts = sample

    def histogram_of(m: int) -> np.ndarray:
        return agreement_histogram(
            bag_signatures(terms, copies, counts, params.seed, m, params.signature_bytes)
        )

    return choose_num_perm(params.threshold, histogram_of, n_urls, params.recall, params.seed)


def agreement_histogram(signatures: np.ndarray, block: int = 128) -> np.ndarray:
    """How many pairs (i < j) of rows of a signature matrix agree on 0, 1, ..., m positions: a histogram,
    since with m min-hashes there are only m + 1 possible estimates. Blocks bound the memory."""
    n, m = signatures.shape
    counts = np.zeros(m + 1, dtype=np.int64)
    for start in range(0, n, block):
        rows = signatures[start : start + block]
        agree = (rows[:, None, :] == signatures[None, start:, :]).sum(axis=2)
        upper = np.arange(len(rows))[:, None] < np.arange(n - start)[None, :]
        counts += np.bincount(agree[upper], minlength=m + 1)
    return counts


def biggest_buckets(signatures: np.ndarray, tables: list[list[int]], n_urls: int, top: int = 5) -> list[int]:
    """The largest buckets of the sample over all tables, scaled from the sample to all URLs."""
    sizes: list[int] = []
    for indices in tables:
        _, counts = np.unique(signatures[:, indices], axis=0, return_counts=True)
        sizes.extend(int(c) for c in counts if c > 1)
    scale = n_urls / len(signatures)
    return [round(s * scale) for s in sorted(sizes, reverse=True)[:top]]


def plan(
    threshold: float,
    num_perm: int | None = None,
    recall: float = PLAN_RECALL,
    banding: bool = False,
    work: str | Path | None = None,
    resources: db.Resources | None = None,
    seed: int = 1,
    sketch: str = "minhash",
) -> Plan:
    """Choose (k, l) for `threshold`; with `work`, from its signatures' sample (the choice `run` makes).
    m left None is that of the work folder's signatures, else 80.

    Example:
        >>> plan(0.5).k, plan(0.5).l
        (3, 27)
    """
    if num_perm is None:
        width = signature_width(Path(work) / "signatures.parquet") if work is not None else None
        num_perm = width or DEFAULT_NUM_PERM
    params = Params(
        threshold=threshold, num_perm=num_perm, banding=banding, seed=seed, sketch=sketch
    )  # checks
    if not 0 < recall < 1:
        raise ParamError(f"recall is a probability in (0, 1), got {recall}")
    signatures, n_urls = None, 0
    if work is not None:
        path = Path(work) / "signatures.parquet"
        if not path.exists():
            raise InputError(f"{work}: no signatures.parquet; run `lshsql run` (or `stage signatures`) first")
        if (signature_width(path) or 0) >= num_perm:  # m min-hashes of longer signatures are a sample too
            resources = db.for_work(work, resources)
            with db.connect(resources) as con:
                signatures, n_urls = sample_signatures(con, path, num_perm)
    histogram = agreement_histogram(signatures) if signatures is not None and len(signatures) > 1 else None
    if histogram is not None:
        k, l = choose_kl_for_sample(threshold, num_perm, histogram, n_urls, banding, recall, seed, sketch)  # noqa: E741
    else:
        k, l = choose_kl(threshold, num_perm, banding, recall, seed=seed, sketch=sketch)  # noqa: E741
    options = []
    for option_k in range(2, min(MAX_K, num_perm) + 1):
        option_l = tables_needed(threshold, option_k, recall, num_perm, seed, banding, sketch)
        if option_l is None or (banding and option_k * option_l > num_perm):
            continue
        expected = None if histogram is None else expected_candidates(histogram, n_urls, option_k, option_l)
        reached = tables_recall(threshold, option_k, option_l, num_perm, seed, banding, sketch)
        options.append(Option(option_k, option_l, reached, expected))
        if option_k >= k + 2:  # beyond, each k needs some 2.5 times the tables of the one before
            break
    buckets: list[int] = []
    if signatures is not None and len(signatures) > 1:
        chosen = Params(threshold=threshold, num_perm=num_perm, banding=banding, k=k, l=l, seed=params.seed)
        buckets = biggest_buckets(signatures, family.lsh_tables(chosen), n_urls)
    sample_size = 0 if signatures is None else len(signatures)
    return Plan(
        threshold, recall, num_perm, banding, k, l, options, seed, n_urls, sample_size, buckets, sketch
    )
