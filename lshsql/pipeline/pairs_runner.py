"""The pairs stage's runner: the candidates verified against signatures and bags (sql/50_pairs.sql), in
blocks of url_id ranges when what it holds per URL and per near candidate would not fit in memory, and in
a rerun only those of changed URLs (reuse.pairs). A runner as in runners.py, (engine, stage, params, work,
bags) -> (rows written, what the manifest records besides)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pyarrow.parquet as pq

from lshsql import sqlfiles
from lshsql.engines.base import Engine, materialize_in_parts
from lshsql.lsh import scurve
from lshsql.lsh.plan import agreement_histogram, sample_signatures, signature_width
from lshsql.params import Params
from lshsql.pipeline import batching, reuse
from lshsql.pipeline.compiled import COMPILED, Compiled, input_views
from lshsql.pipeline.stages import Stage, input_paths, max_copies, output_path, sql_file, template_context


def min_hash_differences_fit_integer(path: Path) -> bool:
    """Whether h_u - h_v of any two min-hashes in this signatures file fits an INTEGER, by the Parquet
    statistics of its h columns (metadata only). The pipeline's min-hashes are in [0, 2^31), so theirs do;
    a table of one's own with values of both signs far apart, or without statistics, does not."""
    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, ValueError):
        return False
    # by name: a table of one's own may order its columns otherwise, or hold more
    hashes = [i for i in range(meta.num_columns) if re.fullmatch(r"h\d+", meta.schema.column(i).name)]
    low, high = 0, 0  # 0 in the range too: the test errs towards BIGINT, never towards an overflow
    for group in range(meta.num_row_groups):
        for column in hashes:
            stats = meta.row_group(group).column(column).statistics
            if stats is None or not stats.has_min_max:
                return False
            low, high = min(low, stats.min), max(high, stats.max)
    return high - low <= 2**31 - 1


def run_pairs(engine: Engine, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """Pairs from the candidates (reuse.pairs: those of the previous run between unchanged URLs kept, the
    candidates of changed URLs verified), in blocks of url_id ranges when what the stage holds per URL
    (batching.pair_range_bytes) would not fit in the memory limit (or the ids span over PAIR_BLOCK_URLS).
    Candidates have u_id < v_id, so each is in one block (u's range, v's at or after it): the same rows,
    ordered as in one piece (the Parquet file then marks its columns nullable, as the buckets stage's
    batches do)."""

    def compute(candidates: str, out: Path) -> tuple[int, dict]:
        return _pairs(engine, stage, params, work, candidates, out)

    rows, extra = reuse.pairs(engine, work, params, compute)
    engine.register({"candidates": input_paths(work, "candidates")})  # not the scratch file reuse verified
    if "pairs_kept" in extra.get("reuse", {}):
        extra[COMPILED].notes = (
            *extra[COMPILED].notes,
            "This run verified only the candidates involving a URL whose bag changed since the previous run "
            "and kept that run's pairs between unchanged URLs (lshsql/pipeline/reuse.py): the same rows.",
        )
    return rows, extra


def _pass_rate(engine: Engine, work: Path, params: Params) -> float:
    """The rate at which candidates pass the lanes' bound (scurve.lanes_pass_rate), from the planner's
    sample of the signatures (sample_signatures, as the buckets stage plans from). Near-duplicates too rare
    among the sample's random pairs to be seen in it are not counted: where most URLs have one, a block
    spills."""
    path, sample = output_path(work, "signatures"), None
    if (signature_width(path) or 0) >= params.num_perm:  # narrower: the stage's own error says so
        with engine.local_duckdb() as con:
            sample, _ = sample_signatures(con, path, params.num_perm)
    histogram = agreement_histogram(sample) if sample is not None and len(sample) > 1 else None
    return scurve.lanes_pass_rate(params.num_perm, params.k, params.l, params.min_agree, histogram)


def _ranges(
    engine: Engine, work: Path, params: Params, memory: int, span: int, n_urls: int
) -> tuple[int, int]:
    """The url_id ranges the stage is cut into: as many as the full rows the near URLs meet need
    (batching.pair_range_bytes, with the share of such URLs, batching.near_share), and as the candidates
    passing the lanes' bound need (batching.passing_ranges; returned too, 1 when they fit in one piece).
    The sample is read only when it decides."""
    most, fewest = (
        batching.pair_ranges(span, memory // batching.pair_range_bytes(params.num_perm, share))
        for share in (1.0, 0.0)
    )
    n_candidates = int(engine.scalar("select count(*) from candidates"))
    rate = None
    n_ranges = most
    if most > fewest:  # how many URLs meet their full rows decides how many ranges: estimate it
        rate = _pass_rate(engine, work, params)
        share = batching.near_share(2 * n_candidates / max(1, n_urls), rate)
        n_ranges = batching.pair_ranges(span, memory // batching.pair_range_bytes(params.num_perm, share))
    passing = 1
    if batching.passing_ranges(n_candidates, memory) > n_ranges:  # all passing, these ranges would not do
        rate = _pass_rate(engine, work, params) if rate is None else rate
        passing = batching.passing_ranges(n_candidates * rate, memory)
    return max(1, min(max(n_ranges, passing), span)), passing


def _cuts(engine: Engine, first: int, last: int, n_ranges: int, passing: int) -> list[int]:
    """The first url_id of each range, and last + 1: ranges of equal ids (what the URLs' rows need), and
    where the passing candidates decide, cut as well at the quantiles of the candidates' ids, so that a
    dense run of near-duplicates (neighbours in URL order, so in url_id) is spread over blocks too."""
    cuts = {first + (last - first + 1) * i // n_ranges for i in range(n_ranges + 1)}
    if passing > 1:
        shares = [i / passing for i in range(1, passing)]
        (quantiles,) = engine.row(
            "select quantile_disc(id, $shares) from (select u_id as id from candidates "
            "union all select v_id from candidates)",
            {"shares": shares},
        )
        cuts |= {int(q) for q in quantiles or [] if first < q <= last}
    return sorted(cuts)


def _pairs(
    engine: Engine, stage: Stage, params: Params, work: Path, candidates: str, out: Path
) -> tuple[int, dict]:
    """The pairs of the candidates in the Parquet file `candidates`, written to `out`."""
    inputs = {r: input_paths(work, r) for r in stage.reads} | {"candidates": candidates}
    narrow = min_hash_differences_fit_integer(output_path(work, "signatures"))
    engine.register(inputs)
    context = template_context(params) | {
        "narrow_differences": narrow,
        "one_copy_each": params.verify and max_copies(engine) <= 1,  # only a verify lists the bags
    }
    sql_params = {"min_agree": params.min_agree, "num_perm": params.num_perm, "threshold": params.threshold}
    memory = engine.rows_fitting(1)  # bytes; None on Spark, which spills and takes one piece
    n_ranges, passing, first, last = 1, 1, 0, 0
    if memory is not None:
        first, last, n_urls = engine.row(
            "select coalesce(min(url_id), 0), coalesce(max(url_id), 0), count(*) from signatures"
        )
        n_ranges, passing = _ranges(engine, work, params, memory, last - first + 1, n_urls)
    file = sql_file(stage, params)
    compiled = Compiled(file, sql_params, context, input_views(work, stage.reads))
    if n_ranges == 1:
        rows = engine.materialize(sqlfiles.load(file), sql_params, out, context, stage.compression)
        return rows, {"blocks": 1, COMPILED: compiled}
    cuts = _cuts(engine, first, last, n_ranges, passing)
    blocks = list(itertools.combinations_with_replacement(range(len(cuts) - 1), 2))
    engine.register({f"{r}_all": inputs[r] for r in BLOCKED})

    def register_block(number: int) -> None:
        """candidates, signatures and bags as the views of one block: its candidates, and the signatures and
        bags of its two url_id ranges only (integers lshsql computed, never user text)."""
        i, j = blocks[number]
        u_from, u_to, v_from, v_to = cuts[i], cuts[i + 1], cuts[j], cuts[j + 1]
        engine.view(
            "candidates",
            f"select * from candidates_all where u_id >= {u_from} and u_id < {u_to} "
            f"and v_id >= {v_from} and v_id < {v_to}",
        )
        ranges = f"url_id >= {u_from} and url_id < {u_to} or url_id >= {v_from} and url_id < {v_to}"
        for relation in ("signatures", "bags"):
            engine.view(relation, f"select * from {relation}_all where {ranges}")

    try:
        rows = materialize_in_parts(
            engine,
            sqlfiles.load(file),
            sql_params,
            [context] * len(blocks),
            work / "tmp" / "pairs_blocks",
            "u_id, v_id",
            out,
            stage.compression,
            stage.name,
            prepare=register_block,
        )
    finally:  # the views of all rows again: DuckDB's temp views would shadow the next stages' inputs
        for relation in BLOCKED:
            engine.view(relation, f"select * from {relation}_all")
    compiled.notes = (
        f"The run took the candidates in {len(blocks)} blocks of url_id ranges, with candidates, signatures "
        "and bags as views of one block's rows at a time, and wrote their union in this order: the same "
        "rows as this select of all candidates at once.",
    )
    return rows, {"blocks": len(blocks), COMPILED: compiled}


BLOCKED = ("candidates", "signatures", "bags")  # the pairs stage's inputs that a block restricts
