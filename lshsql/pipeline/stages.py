"""The stage registry: each SQL stage after extraction, in run order, with the relations it reads and the
parameters its output depends on; which of its files of `sql/` a run takes (sql_file); where a relation's
Parquet file is; the values stage templates render with.

Each stage reads named relations (earlier stages' Parquet in the work folder), runs one file of `sql/` and
writes `DIR/<name>.parquet`. A stage with two algorithms has one file per algorithm (its `variants`), and
sql_file picks the one for the parameters and what the runner found in the data. Its runner is in
runners.py (RUNNERS), the loop that runs them in runner.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lshsql import workdir
from lshsql.errors import InputError, StageError
from lshsql.lsh import family
from lshsql.params import Params

Log = Callable[[str], None]


@dataclass(frozen=True)
class Stage:
    """One SQL stage: its file, the relations it reads and the parameters its output depends on; `variants`
    names its other files, one per algorithm, by what selects them (sql_file)."""

    name: str
    sql: str
    reads: tuple[str, ...]
    fields: tuple[str, ...] = ()
    compression: str = "zstd"
    variants: tuple[tuple[str, str], ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        """Every file of `sql/` the stage may run: its own, then its variants'."""
        return (self.sql, *(file for _, file in self.variants))


STAGES: tuple[Stage, ...] = (
    Stage(
        "term_counts",
        "10_term_counts.sql",
        ("fragments",),
        ("unit", "aliases"),
        variants=(("mapped", "10_term_counts_mapped.sql"),),
    ),
    Stage("urls", "15_urls.sql", ("term_counts",)),
    Stage("terms", "18_terms.sql", ("term_counts",)),
    Stage(
        "bags",
        "20_bags.sql",
        ("term_counts", "urls", "terms"),
        ("weighting", "min_df", "max_df", "scale", "freeze_idf"),
        compression="uncompressed",
        variants=(("grouped", "20_bags_grouped.sql"),),
    ),
    Stage(
        "signatures",
        "30_signatures.sql",
        ("bags",),
        ("num_perm", "sketch", "signature_bytes", "seed"),
        # min-hashes barely compress and buckets reads some of them once a batch: uncompressed reads faster
        compression="uncompressed",
        variants=(("oph", "30_signatures_oph.sql"),),
    ),
    Stage(
        "buckets",
        "35_buckets.sql",
        ("signatures",),
        ("k", "l", "banding", "seed"),
        variants=(("portable", "35_buckets_grouped.sql"), ("reused", "35_buckets_reused.sql")),
    ),
    Stage("candidates", "40_candidates.sql", ("buckets",), ("max_bucket",)),
    Stage("bucket_sizes", "41_bucket_sizes.sql", ("buckets",), ("max_bucket",)),
    Stage(
        "pairs",
        "50_pairs.sql",
        ("candidates", "signatures", "urls", "bags"),
        ("threshold", "verify"),
        variants=(("estimated", "50_pairs_estimated.sql"),),
    ),
    Stage("clusters", "62_clusters.sql", ("pairs", "urls", "bags"), ("clustering",)),
    Stage("cluster_labels", "63_cluster_labels.sql", ("clusters", "bags", "terms", "urls", "surface_forms")),
)


STAGE_NAMES = tuple(stage.name for stage in STAGES)
BAGS_SOURCE_SQL = "10_term_counts_from_bags.sql"


def sql_file(
    stage: Stage | str,
    params: Params,
    hashed_band_keys: bool = True,
    mapped: bool = False,
    grouped: bool = False,
    reused: bool = False,
) -> str:
    """The file of `sql/` a stage runs, one per algorithm: term_counts maps URLs (aliases to apply, or a
    unit other than url: `mapped`, which the runner decides from the data too); bags adds up repeated
    (url, term) rows (`grouped`: the runner found term_counts repeats one); buckets groups the min-hash
    values themselves on an engine that does not hash band keys (`portable`, Engine.hashes_band_keys: Spark)
    where DuckDB's form sorts one hashed key, and a rerun's (`reused`, reuse.buckets) looks up only the
    changed URLs' keys; signatures takes the one-permutation sketch (`oph`); pairs
    keeps the signatures' estimate with verify off."""
    if isinstance(stage, str):
        stage = next(s for s in STAGES if s.name == stage)
    variants = dict(stage.variants)
    chosen = {
        "mapped": mapped,
        "grouped": grouped,
        "portable": not hashed_band_keys,
        "reused": reused,
        "estimated": not params.verify,
        "oph": params.sketch == "oph",
    }
    return next((file for variant, file in variants.items() if chosen[variant]), stage.sql)


def output_path(work: Path, relation: str) -> Path:
    return work / f"{relation}.parquet"


def input_paths(work: Path, relation: str) -> str | list[str]:
    """Parquet file(s) of a relation in the work folder; fragments are bucketed into a folder."""
    if relation == "fragments":
        workdir.require_extraction(work)
        files = workdir.fragment_files(work)
        if not files:
            raise InputError(f"{work}: no fragments: run `lshsql extract` first, or give a crawl or --bags")
        return files
    path = output_path(work, relation)
    if not path.exists():
        raise StageError(f"{path}: missing; run the earlier stages first")
    return str(path)


def max_copies(engine) -> float:
    """The most copies a row of the registered bags flattens into: its weight rounded, at least 1 (the
    signatures and pairs stages list no copies when it is 1)."""
    return float(engine.scalar("select greatest(1, round(max(weight))) from bags") or 1)


def template_context(params: Params) -> dict:
    """Values the stage templates are rendered with: integers derived from the parameters and the seed (the
    unrolled forms: one column per min-hash, one branch per LSH table). Those of m and of the tables only
    once they are known: the planner may choose m after the bags stage (Params.plans_num_perm)."""
    context = {
        "oph_salt": family.oph_salt(params.seed),
        "modulus_op": "" if params.signature_bytes == 4 else " % 16777216",
        "narrow_differences": False,  # pairs: set by its runner when the signatures' values allow
        "one_copy_each": False,  # signatures, pairs: set by their runners when no weight rounds above 1
        "unit_tf": False,  # bags: set by its runner when term_counts is a user's bags table without weights
        "weights_are_tf": params.weighting == "none",  # bags: weight is made after its sort
    }
    if params.num_perm is None:
        return context
    context |= {
        "hashes": range(params.num_perm),
        "coefficients": family.coefficient_pairs(params.seed, params.num_perm),
        "num_bins": params.num_perm,
    }
    if params.k is None or params.l is None:
        return context
    tables = family.lsh_tables(params)
    return context | {"bands": list(enumerate(tables)), "keys": range(1, len(tables[0]) + 1)}
