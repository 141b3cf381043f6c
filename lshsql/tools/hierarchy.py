"""`lshsql hierarchy`: single-link clustering by LSH with a shrinking band size, and its exact reference.

The LSH method (Koga, Ishibashi & Watanabe 2007; Korelin & Blekanov): every document starts as its own
cluster; for band sizes r = r_start, r_start - delta, ... down to r_min, the signatures are cut into
floor(m / r) bands of r rows, each band a bucket key (sql/80_hierarchy_candidates.sql: one representative
per cluster per bucket), candidate pairs of different clusters reaching the similarity threshold t are
kept (sql/50_pairs.sql, exact weighted Jaccard by default) and their clusters merge (sql/81_merges.sql,
then connected components over the merged clusters). Large r finds only the most similar pairs, smaller r
the rest, so merges come roughly in order of decreasing similarity. The exact method takes every pair
with exact weighted Jaccard >= t (sql/70_truth.sql) instead: exact single-link above t.

Both write DIR/merges.parquet and, by Kruskal's algorithm over those edges, DIR/cluster_tree.parquet, a
monotone dendrogram from which any flat cut at a similarity >= t is one query (`lshsql cut`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lshsql import manifest, pipeline, schemas, sqlfiles, workdir
from lshsql.engines import duckdb as db
from lshsql.engines.base import Engine, open_engine
from lshsql.errors import InputError, ParamError
from lshsql.lsh import tree
from lshsql.params import DEFAULT_NUM_PERM, MAX_K, Params
from lshsql.pipeline import labels

METHODS = ("lsh", "exact")
UP_TO_SIGNATURES = ("term_counts", "urls", "terms", "bags", "signatures")
MAX_EXACT_URLS = 50_000  # the exact reference is for checking the LSH method on small corpora


@dataclass(frozen=True)
class HierarchyParams:
    """Parameters of `lshsql hierarchy`: t, and the band sizes r_start, r_start - delta, ... >= r_min."""

    threshold: float = 0.3
    r_start: int = 20
    r_min: int = 2
    delta: int = 2
    method: str = "lsh"
    verify: bool = True
    max_bucket: int = 1000
    level_thresholds: bool = True

    def __post_init__(self) -> None:
        checks = [
            (0 < self.threshold <= 1, f"threshold must be in (0, 1], got {self.threshold}"),
            (self.r_min >= 1, f"r_min must be >= 1, got {self.r_min}"),
            (self.r_start >= self.r_min, f"r_start ({self.r_start}) must be >= r_min ({self.r_min})"),
            (
                self.r_min <= MAX_K,
                f"r_min must be at most {MAX_K} (a band of r rows is an LSH key of r min-hashes), "
                f"got {self.r_min}",
            ),
            (self.delta >= 1, f"delta must be >= 1, got {self.delta}"),
            (self.method in METHODS, f"method must be one of {', '.join(METHODS)}"),
            (self.max_bucket >= 2, f"max bucket must be >= 2, got {self.max_bucket}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ParamError(message)

    def levels(self, num_perm: int) -> list[int]:
        """The band sizes r of the rounds, largest first; r never exceeds m (one band of all rows) nor the
        MAX_K min-hashes a band key holds."""
        if self.method == "exact":
            return []
        return list(range(min(self.r_start, num_perm, MAX_K), self.r_min - 1, -self.delta))

    def level_threshold(self, r: int, num_perm: int) -> float:
        """The similarity a pair needs at band size r: t, or with level_thresholds the S-curve's midpoint
        (1/b)^(1/r) of the level's b bands when higher (Koga et al.'s radius growing phase by phase), so
        the most similar pairs merge first and the dendrogram's heights follow exact single link's (a pair
        merged early at a low similarity would hide the closer pair of its two clusters). The last level
        takes every pair >= t."""
        if not self.level_thresholds or r == self.levels(num_perm)[-1]:  # the last level takes all >= t
            return self.threshold
        return max(self.threshold, (1 / (num_perm // r)) ** (1 / r))

    def to_json(self) -> dict:
        return asdict(self)


def hierarchy_params_for(work: str | Path, **given: object) -> HierarchyParams:
    """`hierarchy`'s options: the ones given (None: not given), else those of the folder's last hierarchy,
    else HierarchyParams' defaults; so `hierarchy --method exact` after `hierarchy --threshold 0.2` keeps
    t = 0.2, and a later `cut` below 0.3 still finds its merges.

    Example: hierarchy_params_for("work", method="exact") -> the last tree's options with method exact.
    """
    names = {f.name for f in fields(HierarchyParams)}
    unknown = set(given) - names
    if unknown:
        raise TypeError(f"hierarchy_params_for() got unknown parameters: {', '.join(sorted(unknown))}")
    saved = manifest.read(work)["stages"].get("hierarchy", {}).get("params", {})
    options = {name: value for name, value in saved.items() if name in names}
    options |= {name: value for name, value in given.items() if value is not None}
    return HierarchyParams(**options)


@dataclass
class HierarchySummary:
    """What `hierarchy` did: per level, the candidates, pairs kept, merges and clusters left."""

    work: Path
    params: HierarchyParams
    levels: list[dict]
    merges: int
    clusters: int
    seconds: float

    def lines(self) -> list[str]:
        out = [f"{'r':>4}{'bands':>7}{'candidates':>12}{'pairs':>10}{'merges':>9}{'clusters':>10}  seconds"]
        for level in self.levels:
            out.append(
                f"{level['r']:>4}{level['bands']:>7}{level['candidates']:>12}{level['pairs']:>10}"
                f"{level['merges']:>9}{level['clusters']:>10}  {level['seconds']:.2f}"
            )
        out.append(
            f"{self.params.method}: {self.merges} merges, {self.clusters} clusters at "
            f"t={self.params.threshold} in {self.seconds:.2f} s  ->  {self.work}/cluster_tree.parquet"
        )
        return out


@workdir.writer
def hierarchy(
    work: str | Path,
    params: HierarchyParams = HierarchyParams(),
    pipeline_params: Params | None = None,
    resources: db.Resources | None = None,
    log: pipeline.Log | None = None,
    engine: str | Engine = "duckdb",
    spark_master: str = "local[*]",
    spark_conf: dict[str, str] | None = None,
) -> HierarchySummary:
    """Build the single-link cluster tree of the work folder's documents.

    Runs the stages up to signatures first when they are missing or out of date (with `pipeline_params`,
    by default the parameters of the folder's last run), then the levels of LSH single-link (or the exact
    reference) into DIR/merges.parquet and DIR/cluster_tree.parquet. The levels are the same Python loop
    on either engine (`engine="spark"`: one Spark job per statement, as `pipeline.run`); Kruskal's tree of
    the merges is built here, from DIR/merges.parquet.

    Example:
        >>> hierarchy("work/reuters", HierarchyParams(threshold=0.3))  # doctest: +SKIP
    """
    started = time.perf_counter()
    work = Path(work)
    resources = db.for_work(work, resources)
    if pipeline_params is None:
        pipeline_params = Params(**manifest.read(work).get("requested_params", {}))
    if pipeline_params.num_perm is None:  # its levels are bands, which take the paper's m, not the planner's
        pipeline_params = replace(pipeline_params, num_perm=DEFAULT_NUM_PERM)
    levels: list[dict] = []
    merges_path = work / "merges.parquet"
    with open_engine(engine, resources, spark_master, spark_conf) as eng:
        run = pipeline.run(
            work, pipeline_params, resources=resources, only=UP_TO_SIGNATURES, log=log, engine=eng
        )
        run_params = run.params
        eng.register({r: pipeline.input_paths(work, r) for r in ("signatures", "urls", "bags")})
        eng.table("memberships", "select url_id, url_id as cluster_id from signatures")
        eng.empty_table("all_merges", _merges_columns())
        if params.method == "exact":
            _exact_merges(eng, work, params)
        for r in params.levels(run_params.num_perm):
            if log:
                log(f"  level r={r} ...")
            levels.append(_level(eng, r, params, run_params))
        eng.materialize_query(
            "select * from all_merges order by level desc nulls last, cluster_u, cluster_v",
            {},
            merges_path,
            table="merges",
        )
    schemas.validate(merges_path, "merges")
    signatures = schemas.read(pipeline.input_paths(work, "signatures"), columns=["url_id"])
    leaves = np.sort(signatures["url_id"].to_numpy())
    table = schemas.read(merges_path)
    cluster_tree = tree.single_link_tree(
        leaves,
        table["u_id"].to_numpy(),
        table["v_id"].to_numpy(),
        table["similarity"].to_numpy(),
        table["level"].to_numpy() if table["level"].null_count == 0 else None,  # exact: no levels
    )
    tree_path = work / "cluster_tree.parquet"
    pq.write_table(cluster_tree, tree_path, compression="zstd")
    schemas.validate(tree_path, "cluster_tree")
    n_roots = sum(1 for p in cluster_tree["parent_id"].to_pylist() if p is None)
    summary = HierarchySummary(
        work, params, levels, table.num_rows, n_roots, round(time.perf_counter() - started, 3)
    )
    manifest.record_stage(
        work,
        "hierarchy",
        {
            "params": params.to_json(),
            "pipeline_params": run_params.to_json(),
            # cut checks the tree's url_ids still hold (a tree of an older lshsql has no such entry)
            "urls_fingerprint": _urls_fingerprint(work),
            "levels": levels,
            "merges": summary.merges,
            "clusters": n_roots,
            "rows": cluster_tree.num_rows,
            "seconds": summary.seconds,
        },
    )
    pipeline.write_catalog(work)
    return summary


def _urls_fingerprint(work: Path) -> str | None:
    """The urls stage's fingerprint: its url_ids are the tree's leaves, so a changed urls table (another
    --unit, --no-aliases, a new extraction) makes the tree meaningless until it is rebuilt."""
    return manifest.read(work)["stages"].get("urls", {}).get("fingerprint")


def _merges_columns() -> dict[str, str]:
    types = {pa.int32(): "integer", pa.int64(): "bigint", pa.float64(): "double"}
    return {name: types[dtype] for name, dtype, _ in schemas.COLUMNS["merges"]}


def _level(engine: Engine, r: int, params: HierarchyParams, run_params: Params) -> dict:
    """One round: candidates of this band size, pairs reaching t, their merges, the new memberships."""
    started = time.perf_counter()
    m = run_params.num_perm
    threshold = params.level_threshold(r, m)
    level_params = replace(run_params, k=r, l=m // r, banding=True, threshold=threshold, verify=params.verify)
    context = pipeline.template_context(level_params)
    candidates = engine.to_table(
        sqlfiles.load("80_hierarchy_candidates.sql"), {"max_bucket": params.max_bucket}, "candidates", context
    )
    pairs = merges = 0
    if candidates:
        pairs_params = {
            "min_agree": level_params.min_agree,
            "num_perm": m,
            "threshold": threshold,
        }
        pairs_sql = sqlfiles.load(pipeline.sql_file("pairs", level_params))
        pairs = engine.to_table(pairs_sql, pairs_params, "level_pairs", context)
    if pairs:
        merges = engine.to_table(
            sqlfiles.load("81_merges.sql"), {"level": r, "threshold": threshold}, "level_merges"
        )
        engine.append("all_merges", "select * from level_merges")
        _merge_clusters(engine)
    clusters = engine.scalar("select count(distinct cluster_id) from memberships")
    return {
        "r": r,
        "bands": m // r,
        "threshold": round(threshold, 4),
        "candidates": candidates,
        "pairs": pairs,
        "merges": merges,
        "clusters": clusters,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _merge_clusters(engine: Engine) -> None:
    """Clusters joined by this level's merges become one, named by the smallest cluster id (= url_id)."""
    engine.table(
        "edges",
        "select cluster_u as src, cluster_v as dst from level_merges "
        "union all select cluster_v as src, cluster_u as dst from level_merges",
    )
    pipeline.components(engine)  # the same component rounds as `--clustering components`
    engine.table(
        "memberships",
        "select memberships.url_id, coalesce(assignments.center, memberships.cluster_id) as cluster_id "
        "from memberships left join assignments on memberships.cluster_id = assignments.node",
    )


def _exact_merges(engine: Engine, work: Path, params: HierarchyParams) -> None:
    """Every pair with exact weighted Jaccard >= t of the flattened bags (what --verify measures): an edge."""
    from lshsql.tools.evaluate import TRUTH_ALL, TRUTH_SQL, register_flattened_bags

    n_urls = engine.scalar("select count(*) from signatures")
    if n_urls > MAX_EXACT_URLS:
        raise InputError(
            f"{n_urls} documents: the exact single-link reference is for at most {MAX_EXACT_URLS:,}"
        )
    register_flattened_bags(engine, Path(pipeline.input_paths(work, "bags")))
    engine.to_table(sqlfiles.load(TRUTH_SQL), {"threshold": params.threshold, **TRUTH_ALL}, "truth")
    engine.append(
        "all_merges",
        "select cast(null as integer), cast($t as double), u_id, v_id, u_id, v_id, jaccard from truth",
        {"t": params.threshold},
    )


@workdir.writer
def cut(
    work: str | Path, threshold: float, resources: db.Resources | None = None, out: str | Path | None = None
) -> tuple[Path, dict]:
    """Flat clusters of the cluster tree at a similarity threshold (sql/85_cut.sql) into DIR/cut.parquet:
    exactly the single-link clusters of the merges with similarity >= threshold. Returns the path and counts.
    """
    work = Path(work)
    entry = manifest.read(work)["stages"].get("hierarchy")
    if not entry or not (work / "cluster_tree.parquet").exists():
        raise InputError(f"{work}: no cluster tree; run `lshsql hierarchy --work {work}` first")
    if not 0 < threshold <= 1:
        raise ParamError(f"threshold must be in (0, 1], got {threshold}")
    if "urls_fingerprint" in entry and entry["urls_fingerprint"] != _urls_fingerprint(work):
        raise InputError(
            f"{work}: the cluster tree was built on other URLs (urls.parquet changed since); "
            f"rerun `lshsql hierarchy --work {work}`"
        )
    built_at = entry["params"]["threshold"]
    if threshold < built_at:
        raise ParamError(
            f"the tree holds merges of similarity >= {built_at} only; cut at {built_at} or above, or rebuild "
            f"it with `lshsql hierarchy --threshold {threshold}`"
        )
    out = Path(out) if out else work / "cut.parquet"
    # the largest id each cut file was given: an id that ended is never given again, even if the file is gone
    last_ids = manifest.read(work)["stages"].get("cut", {}).get("last_ids", {})
    resources = db.for_work(work, resources)
    with db.connect(resources) as con:
        sqlfiles.register_inputs(con, {r: str(work / f"{r}.parquet") for r in ("cluster_tree", "urls")})
        rows, last_id = tree.cut(con, threshold, out, last_ids.get(_cut_key(work, out), 0))
        clusters, largest, singletons = con.execute(
            "select count(*) filter (where is_center), max(size), count(*) filter (where size = 1) "
            "from read_parquet($p)",
            {"p": str(out)},
        ).fetchall()[0]
        # the cut's labels, as the cluster_labels stage makes them (DIR/cut_labels.parquet beside cut.parquet)
        label_rows = labels.write(con, work, out, out.with_name(f"{out.stem}_labels.parquet"), "cut_labels")
    counts = {"rows": rows, "clusters": clusters, "largest_cluster": largest or 0, "singletons": singletons}
    counts["label_rows"] = label_rows
    last_ids = last_ids | {_cut_key(work, out): last_id}
    manifest.record_stage(
        work, "cut", {"threshold": threshold, "path": str(out), **counts, "last_ids": last_ids}
    )
    pipeline.write_catalog(work)
    return out, counts


def _cut_key(work: Path, out: Path) -> str:
    """A cut file as its largest id is kept in the manifest, however its path is written: relative to the
    work folder when inside it, else absolute (both resolved)."""
    resolved = out.resolve()
    try:
        return resolved.relative_to(work.resolve()).as_posix()
    except ValueError:
        return str(resolved)
