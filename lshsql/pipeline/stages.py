"""The stage registry: each SQL stage after extraction, in run order, with the relations it reads and the
parameters its output depends on; where a relation's Parquet file is; the values stage templates render with.

Each stage reads named relations (earlier stages' Parquet in the work folder), runs one file of `sql/` and
writes `DIR/<name>.parquet`. Its runner is in runners.py (RUNNERS), the loop that runs them in runner.py.
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
    """One SQL stage: its file, the relations it reads and the parameters its output depends on."""

    name: str
    sql: str
    reads: tuple[str, ...]
    fields: tuple[str, ...] = ()
    compression: str = "zstd"


STAGES: tuple[Stage, ...] = (
    Stage("term_counts", "10_term_counts.sql", ("fragments",), ("unit", "aliases")),
    Stage("urls", "15_urls.sql", ("term_counts",)),
    Stage("terms", "18_terms.sql", ("term_counts",)),
    Stage(
        "bags",
        "20_bags.sql",
        ("term_counts", "urls", "terms"),
        ("weighting", "min_df", "max_df", "scale"),
        compression="uncompressed",
    ),
    Stage("element_hashes", "25_element_hashes.sql", ("bags",)),
    Stage(
        "signatures",
        "30_signatures.sql",
        ("bags", "element_hashes"),
        ("num_perm", "signature_bytes", "seed"),
        # min-hashes barely compress and buckets reads some of them once a batch: uncompressed reads faster
        compression="uncompressed",
    ),
    Stage("buckets", "35_buckets.sql", ("signatures",), ("k", "l", "banding", "seed")),
    Stage("candidates", "40_candidates.sql", ("buckets",), ("max_bucket",)),
    Stage("bucket_sizes", "41_bucket_sizes.sql", ("buckets",), ("max_bucket",)),
    Stage("pairs", "50_pairs.sql", ("candidates", "signatures", "urls", "bags"), ("threshold", "verify")),
    Stage("clusters", "62_clusters.sql", ("pairs", "urls", "bags"), ("clustering",)),
    Stage("cluster_labels", "63_cluster_labels.sql", ("clusters", "bags", "terms", "urls", "surface_forms")),
)


STAGE_NAMES = tuple(stage.name for stage in STAGES)
BAGS_SOURCE_SQL = "10_term_counts_from_bags.sql"


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


def template_context(params: Params) -> dict:
    """Values the stage templates are rendered with: integers derived from the parameters and the seed."""
    tables = family.lsh_tables(params)
    return {
        "hashes": range(params.num_perm),
        "coefficients": family.coefficient_pairs(params.seed, params.num_perm),
        "modulus_op": "" if params.signature_bytes == 4 else " % 16777216",
        "bands": list(enumerate(tables)),
        "keys": range(1, len(tables[0]) + 1),
        "hashed_keys": False,
        "shared_by_sort": False,  # buckets: set by its runner on DuckDB
        "block": None,  # pairs: set by its runner to one block of url_id ranges
        "narrow_differences": False,  # pairs: set by its runner when the signatures' values allow
        "verify": params.verify,
        "normalize": params.weighting != "none",
        "rows_unique": False,  # bags: set by its runner, which checks the assumption
        "map_urls": params.unit != "url" or params.aliases,  # term_counts; the runner checks the data
        "aliases": params.aliases,
    }
