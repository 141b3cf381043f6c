"""The SQL stages after extraction, in run order, and the runner that executes them.

STAGES is the one list of stages: each reads named relations (earlier stages' Parquet in the work folder),
runs one file of `sql/` and writes `DIR/<name>.parquet`. A stage reruns only when its fingerprint (its
parameters, its inputs' fingerprints, the lshsql version) changed or its output is missing.

The runners reach the engine that runs the SQL through lshsql/engine.py (DuckDB, or Spark with
`run(..., engine="spark")`); a runner also takes a DuckDB connection, which it uses as DuckDBEngine. The
engine is not part of a fingerprint: both write the same rows.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lshsql import __version__, db, family, labels, manifest, schemas, sqlfiles, udf, workdir
from lshsql.engine import Engine, as_engine, materialize_in_parts, open_engine
from lshsql.errors import InputError, ParamError, StageError
from lshsql.params import MAX_COPIES, Params, tables_recall

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
        # min-hashes barely compress (zstd: 1.45 GB against 1.75 GB at 10M URLs) and buckets reads some of
        # them once a batch: uncompressed, a table at 10M took 1.03 s against 1.15 s
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
CATALOG = "lshsql.duckdb"
DEFAULT_PARAMS = Params()
MAX_ROUNDS = 100_000


@dataclass
class RunSummary:
    """What a run did: per stage, rows written and seconds, or that it was up to date."""

    work: Path
    params: Params
    stages: dict[str, dict] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [f"{'stage':<14}{'rows':>12}  seconds"]
        for name, entry in self.stages.items():
            state = "up to date" if entry.get("skipped") else f"{entry['seconds']:.2f}"
            out.append(f"{name:<14}{entry['rows']:>12}  {state}")
        for name, entry in self.stages.items():  # rows read but not used, per reason (manifest.json too)
            for key, verb in (("rows_skipped", "skipped"), ("rows_dropped", "dropped")):
                if counts := entry.get(key):
                    reasons = ", ".join(f"{reason} {n:,}" for reason, n in counts.items())
                    out.append(f"{name}: {sum(counts.values()):,} rows {verb} ({reasons})")
        return out


def output_path(work: Path, relation: str) -> Path:
    return work / f"{relation}.parquet"


def _output_exists(work: Path, relation: str, entry: dict) -> bool:
    """A stage's output is there: its Parquet file, or for a user's bags the table it is a view of."""
    if entry.get("view"):
        return Path(entry["source"]).exists()
    return output_path(work, relation).exists()


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


def run(
    work: str | Path,
    params: Params = DEFAULT_PARAMS,
    bags: str | Path | None = None,
    resources: db.Resources | None = None,
    force: bool = False,
    only: tuple[str, ...] | None = None,
    log: Log | None = None,
    engine: str | Engine = "duckdb",
    spark_master: str = "local[*]",
    spark_conf: dict[str, str] | None = None,
) -> RunSummary:
    """Run the SQL stages on an extracted work folder, or on a user's bags table.

    Args:
        work: the work folder (holds fragments from `extract`, receives every stage's Parquet).
        params: stage parameters; k and l left None are chosen by the planner for params.threshold.
        bags: a Parquet file (url, term, optional weight) to start from instead of fragments.
        force: rerun stages that are up to date; only: run just these stages (their inputs must exist).
        engine: "duckdb" (default) or "spark": which engine runs the stage SELECTs (lshsql/engine.py), or
            an open Engine to use (and leave open). The rows are the same, so the engine is not part of a
            stage's fingerprint.
        spark_master, spark_conf: the Spark master URL (default local[*]) and extra Spark settings, for
            engine="spark".

    Example:
        >>> summary = run("work/example", Params(threshold=0.5))  # doctest: +SKIP
    """
    with workdir.writing(work):
        return _run(Path(work), params, bags, resources, force, only, log, engine, spark_master, spark_conf)


def _run(
    work: Path,
    params: Params,
    bags: str | Path | None,
    resources: db.Resources | None,
    force: bool,
    only: tuple[str, ...] | None,
    log: Log | None,
    engine: str | Engine,
    spark_master: str,
    spark_conf: dict[str, str] | None,
) -> RunSummary:
    if bags is not None and not Path(bags).exists():
        raise InputError(f"{bags}: no such file (--bags takes a Parquet file of url, term, optional weight)")
    if force:
        manifest.set_aside_if_damaged(work)
    if bags is None and not (work / "fragments").exists():
        bags = _user_bags_source(work)  # a folder started from --bags goes on from the same table
    requested = {k: v for k, v in params.to_json().items() if v is not None}
    plan_tables = params.k is None and params.l is None
    params = params.resolved(from_bags=bags is not None)
    resources = db.for_work(work, resources)
    if bags is None:
        workdir.require_extraction(work)
    summary = RunSummary(work, params)
    previous = manifest.read(work)["stages"]
    fingerprints = {"fragments": _source_fingerprint(work, bags, previous), "surface_forms": _stamp(work)}
    replaced = _replaced_tables(work, previous)
    if only:  # checked before any stage runs: a bad table of the user's own stops the call, nothing written
        reads = dict.fromkeys(r for stage in STAGES if stage.name in only for r in stage.reads)
        for relation in reads:
            if (
                relation in STAGE_NAMES
                and relation not in only
                and (relation not in previous or relation in replaced)
            ):
                check_user_table(work, relation, resources)
    with open_engine(engine, resources, spark_master, spark_conf) as stage_engine:
        for stage in STAGES:
            if stage.name == "buckets" and plan_tables and output_path(work, "signatures").exists():
                params = _plan_tables(stage_engine, work, params, resources)
                summary.params = params
            fingerprint = _fingerprint(stage, params, fingerprints, bags is not None)
            fingerprints[stage.name] = fingerprint
            if only and stage.name not in only:
                if stage.name not in previous or stage.name in replaced:  # a table of the user's own
                    fingerprints[stage.name] = _user_table_fingerprint(work, stage.name) or fingerprint
                continue
            if only:
                _check_inputs_current(work, stage, previous, fingerprints, only, replaced)
            old = previous.get(stage.name, {})
            if (
                not force
                and old.get("fingerprint") == fingerprint
                and _output_exists(work, stage.name, old)
                and stage.name not in replaced
            ):
                summary.stages[stage.name] = {"rows": old.get("rows", 0), "skipped": True}
                continue
            if log:
                log(f"  {stage.name} ...")
            started = time.perf_counter()
            rows, extra = RUNNERS.get(stage.name, _run_sql)(stage_engine, stage, params, work, bags)
            if not extra.get("view"):
                schemas.validate(output_path(work, stage.name), stage.name)
            entry = {
                "fingerprint": fingerprint,
                "rows": rows,
                "seconds": round(time.perf_counter() - started, 3),
                "params": {f: getattr(params, f) for f in stage.fields},
                **extra,
            }
            if not extra.get("view"):
                entry["file"] = manifest.file_identity(output_path(work, stage.name))
            manifest.record_stage(work, stage.name, entry)
            summary.stages[stage.name] = entry
    data = manifest.read(work)
    data["requested_params"] = requested  # what was asked: `lshsql run` keeps it for options not given again
    data["params"] = params.to_json()  # what was used, k and l included
    manifest.write(work, data)
    write_catalog(work)
    write_info(work)
    return summary


def _check_inputs_current(
    work: Path,
    stage: Stage,
    previous: dict,
    fingerprints: dict[str, str],
    only: tuple[str, ...],
    replaced: set[str],
) -> None:
    """A stage run on its own (`only`) refuses an input an earlier stage wrote with other parameters or
    inputs than these (`lshsql stage candidates -k 6` on buckets of k = 5), rather than mixing the two.
    A table with no manifest entry, or put in place of the one a stage wrote (the user's own), is taken as
    it is."""
    for relation in stage.reads:
        recorded = previous.get(relation, {}).get("fingerprint")
        if (
            relation in STAGE_NAMES
            and relation not in only
            and relation not in replaced
            and recorded
            and recorded != fingerprints[relation]
        ):
            raise ParamError(
                f"{output_path(work, relation)} was made with other parameters or inputs than these (or by "
                f"another lshsql version): run `lshsql stage {relation}` first, or `lshsql run`"
            )


def _replaced_tables(work: Path, previous: dict) -> set[str]:
    """Stage outputs that are no longer the file their stage wrote (by manifest.file_identity): a table the
    user put in its place, or a damaged file. Their stage reruns when it is run; a stage run on its own
    (`only`) takes them as a table of the user's own, and the stages after them rerun."""
    return {
        name
        for name, entry in previous.items()
        if name in STAGE_NAMES
        and entry.get("file")
        and output_path(work, name).exists()
        and manifest.file_identity(output_path(work, name)) != entry["file"]
    }


def _user_table_fingerprint(work: Path, relation: str) -> str | None:
    """A table of the user's own stands for itself: the stages reading it rerun when it changes."""
    identity = manifest.file_identity(output_path(work, relation))
    return f"table:{identity}" if identity else None


def check_user_table(work: Path, relation: str, resources: db.Resources) -> None:
    """A table the user put in the folder for a stage to read (no manifest entry): it has the documented key
    columns (schemas.KEYS) and one row per key, or an InputError says what is wrong. Grouping the keys reads
    the whole table once; tables lshsql wrote are not checked (their stages guarantee it)."""
    path = output_path(work, relation)
    if relation not in schemas.KEYS or not path.exists():
        return  # a missing input gets the stage's own error
    try:
        names = set(pq.read_schema(path).names)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not a readable Parquet file ({' '.join(str(e).split())})") from None
    documented = ", ".join(name for name, _, _ in schemas.COLUMNS[relation])
    with db.connect(resources) as con:
        for key in schemas.KEYS[relation]:
            if missing := [column for column in key if column not in names]:
                absent = ", ".join(missing)
                raise InputError(f"{path}: no column {absent}; a {relation} table has {documented}")
            columns = ", ".join(key)  # names from schemas.KEYS, never from the user
            repeated = db.scalar(
                con,
                f"select count(*) from (select 1 from read_parquet($path) group by {columns} "
                "having count(*) > 1)",
                {"path": str(path)},
            )
            if repeated:
                raise InputError(
                    f"{path}: {repeated:,} value(s) of ({columns}) are in more than one row; a {relation} "
                    f"table has one row per ({columns})"
                )


def write_info(work: Path) -> Path:
    """DIR/info.json: rows and seconds per stage (the paper's Table 1), from the manifest."""
    stages = manifest.read(work)["stages"]
    rows = [
        {
            "stage": name,
            "rows": entry.get("rows", entry.get("counts", {}).get("pages_used")),
            "seconds": entry.get("seconds"),
        }
        for name in ("extract", *STAGE_NAMES)
        if (entry := stages.get(name))
    ]
    path = work / "info.json"
    path.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return path


def _plan_tables(con, work: Path, params: Params, resources: db.Resources | None = None) -> Params:
    """Choose (k, l) for this data, as `lshsql plan --work` does: from the agreement histogram of a fixed
    sample of URLs' signatures, the expected candidates of each admissible (k, l). The sample is read by
    DuckDB whatever the engine (it reads DIR/signatures.parquet, the same file either way)."""
    from lshsql.plan import agreement_histogram, sample_signatures

    engine = as_engine(con)
    if engine.name != "duckdb":
        with db.connect(resources or db.Resources()) as duck:
            return _plan_tables(duck, work, params)
    con = engine.con
    signatures, n_urls = sample_signatures(con, output_path(work, "signatures"), params.num_perm)
    if signatures is None or len(signatures) < 2:
        return params
    return Params.with_tables(replace(params, k=None, l=None), agreement_histogram(signatures), n_urls)


def _source_fingerprint(work: Path, bags: str | Path | None, previous: dict) -> str:
    if bags is None:
        return previous.get("extract", {}).get("fingerprint") or json.dumps(
            previous.get("extract", {}).get("counts")
        )
    stat = Path(bags).stat()
    return f"bags:{Path(bags).resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


def _fingerprint(stage: Stage, params: Params, fingerprints: dict[str, str], from_bags: bool) -> str:
    data = {
        "stage": stage.name,
        "version": __version__,
        "params": {f: getattr(params, f) for f in stage.fields},
        "inputs": {r: fingerprints.get(r) for r in stage.reads},
        "from_bags": from_bags and stage.name == "term_counts",
        "sql": _sql_digest(stage.sql),  # an edited stage file reruns its stage
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _sql_digest(name: str) -> str:
    """The stage file and the macros it may include."""
    files = [sqlfiles.sql_dir() / name, *sorted((sqlfiles.sql_dir() / "macros").glob("*.sql"))]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]


def _register(con, work: Path, relations: tuple[str, ...]) -> None:
    engine = as_engine(con)
    user_bags = _user_bags_source(work) if "term_counts" in relations else None
    if user_bags:
        _register_user_bags(engine, user_bags)
        relations = tuple(r for r in relations if r != "term_counts")
    engine.register({r: input_paths(work, r) for r in relations})


def register_outputs(con: duckdb.DuckDBPyConnection, work: Path) -> dict[str, Exception]:
    """A view for every output the work folder has (an output not made yet, or a --bags table that is gone,
    simply has none). Returns the outputs that cannot be read, with the error: a file DuckDB could not open
    (a truncated file), or the tables of an extraction that is not whole (an InputError saying so)."""
    unopened: dict[str, Exception] = {}
    try:
        workdir.require_extraction(work)
    except InputError as e:
        unopened = dict.fromkeys(("pages", "links", "fragments", "url_aliases", "surface_forms", "labels"), e)
    for relation in CATALOG_RELATIONS:
        if relation in unopened:
            continue
        try:
            _register(con, work, (relation,))
        except (InputError, StageError):
            continue
        except duckdb.Error as e:
            unopened[relation] = e
    return unopened


def _user_bags_source(work: Path) -> Path | None:
    """The user's bags table when term_counts is a view of it (runs started with --bags)."""
    entry = manifest.read(work)["stages"].get("term_counts", {})
    return Path(entry["source"]) if entry.get("view") else None


def _run_sql(
    con,
    stage: Stage,
    params: Params,
    work: Path,
    bags,
    context: dict | None = None,
    sql_params: dict | None = None,
) -> tuple[int, dict]:
    engine = as_engine(con)
    _register(engine, work, stage.reads)
    sql = sqlfiles.load(stage.sql)
    out = output_path(work, stage.name)
    rows = engine.materialize(sql, sql_params or {}, out, context, stage.compression)
    return rows, {}


def _run_term_counts(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """From fragments: the grouped table. From a user's bags: a view of their table, not a copy (a copy of
    17M string rows cost 6.7 of 23 s at 100k documents); the bags stage adds up repeated (url, term) rows."""
    engine = as_engine(con)
    if bags is None:
        return _term_counts_of_fragments(engine, stage, params, work)
    if params.unit != "url":
        raise ParamError(f"--unit {params.unit} groups a crawl's fragments; a bags table is used as given")
    source = Path(bags).resolve()
    _register_user_bags(engine, source)
    counts = _count_user_bags(engine)
    if counts["rows"] == 0:
        unusable = ", ".join(f"{n:,} {reason}" for reason, n in counts.items() if reason != "rows" and n)
        raise InputError(
            f"{bags}: no usable row (a url, a term and a positive weight)"
            + (f": {unusable}" if unusable else ": the table is empty")
        )
    output_path(work, stage.name).unlink(missing_ok=True)  # a copy from an earlier run would shadow the view
    skipped = {k: v for k, v in counts.items() if k != "rows" and v}
    return counts["rows"], {"source": str(source), "view": True, "rows_skipped": skipped}


def _term_counts_of_fragments(engine, stage: Stage, params: Params, work: Path) -> tuple[int, dict]:
    """term_counts from fragments, with alias URLs mapped to their targets and URLs to their unit."""
    _register(engine, work, stage.reads)
    aliases = output_path(work, "url_aliases")
    if aliases.exists():
        engine.register({"url_aliases": str(aliases)})
    else:  # a work folder extracted before url_aliases existed
        engine.view(
            "url_aliases",
            "select cast(null as varchar) as alias_url, cast(null as varchar) as target_url where false",
        )
    use_aliases = params.aliases and engine.scalar("select count(*) from url_aliases") > 0
    context = {"map_urls": use_aliases or params.unit != "url", "aliases": use_aliases}
    sql = sqlfiles.load(stage.sql)
    rows = engine.materialize(sql, {"unit": params.unit}, output_path(work, stage.name), context)
    extra: dict = {}
    if use_aliases:
        extra["alias_urls_mapped"] = engine.scalar(
            "select count(*) from (select distinct url from fragments) as described "
            "semi join url_aliases on described.url = url_aliases.alias_url",
        )
    return rows, extra


def _register_user_bags(con, path: Path) -> None:
    """The user's table as the view term_counts(url, term, tf) of its usable rows
    (sql/10_term_counts_from_bags.sql), after user_bags(url, term, weight) of all its rows."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    _check_user_bags_types(path)
    engine = as_engine(con)
    if engine.name != "duckdb":
        engine.register({"user_bags_file": str(path)})
        missing = {"url", "term"} - set(engine.columns("user_bags_file"))
        if missing:
            raise InputError(
                f"{path}: bags need columns url and term (missing: {', '.join(sorted(missing))})"
            )
        engine.view(
            "user_bags", f"select {_user_bags_columns(engine.columns('user_bags_file'))} from user_bags_file"
        )
        engine.view("term_counts", sqlfiles.render(sqlfiles.load(BAGS_SOURCE_SQL)))
        return
    con = engine.con
    try:
        relation = con.read_parquet(str(path))
    except duckdb.Error as e:
        raise InputError(f"{path}: not a readable Parquet file: {' '.join(str(e).split())[:200]}") from None
    missing = {"url", "term"} - set(relation.columns)
    if missing:
        raise InputError(f"{path}: bags need columns url and term (missing: {', '.join(sorted(missing))})")
    relation.project(_user_bags_columns(relation.columns)).create_view("user_bags", replace=True)
    _create_term_counts_view(con)


# What each column of a user's bags may hold: url and term are ids (text or integers, taken as text), a
# weight is a number. Anything else (a list of terms, a float url, a text or boolean weight) would be cast
# into something the user did not mean, so it is refused.
_BAGS_COLUMN_TYPES = {
    "url": ("text or an integer", lambda t: pa.types.is_integer(t) or _is_text(t)),
    "term": ("text or an integer", lambda t: pa.types.is_integer(t) or _is_text(t)),
    "weight": (
        "a number",
        lambda t: pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t),
    ),
}


def _is_text(arrow_type: pa.DataType) -> bool:
    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(arrow_type))
    )


def _check_user_bags_types(path: Path) -> None:
    """The columns of a user's bags have types lshsql can take as they are (see _BAGS_COLUMN_TYPES); a file
    pyarrow cannot read is left to the engine's own error."""
    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError, pa.ArrowException):
        return
    for name, (wanted, accepts) in _BAGS_COLUMN_TYPES.items():
        if name not in schema.names:
            continue
        arrow_type = schema.field(name).type
        if pa.types.is_dictionary(arrow_type):
            arrow_type = arrow_type.value_type
        if not accepts(arrow_type):
            raise InputError(f"{path}: column {name} is {arrow_type}; a bags table's {name} is {wanted}")


def _user_bags_columns(columns) -> str:
    """user_bags(url, term, weight) from the user's columns; weight 1 when their table has none. A NaN
    weight becomes infinity: Parquet writers leave NaN out of a column's min and max, and DuckDB, trusting
    them, can decide `weight < infinity` for a whole row group, NaN rows included, without looking at them.
    Both are counted as weight_not_finite."""
    weight = (
        f"case when isnan(cast(weight as double)) then {_INFINITY} else cast(weight as double) end"
        if "weight" in columns
        else "1.0"
    )
    return f"cast(url as varchar) as url, cast(term as varchar) as term, {weight} as weight"


def _create_term_counts_view(con: duckdb.DuckDBPyConnection) -> None:
    query, _ = sqlfiles.final_select(con, sqlfiles.load(BAGS_SOURCE_SQL), {})
    con.execute(f"create or replace view term_counts as {query}").fetchall()


def _count_user_bags(con) -> dict[str, int]:
    """The usable rows of user_bags and, per reason, the rows that cannot be used. A table whose Parquet
    statistics rule out every unusable row is counted from its metadata (instantly, where the scan of 17M
    rows took 0.5 s); otherwise one scan counts by reason."""
    engine = as_engine(con)
    names = ("rows", "null_url", "null_term", "weight_not_positive", "weight_not_finite")
    finite = f"weight < {_INFINITY}"  # user_bags has NaN as infinity
    unusable = f"url is null or term is null or not coalesce(weight > 0 and {finite}, false)"
    if not engine.scalar(f"select count(*) from user_bags where {unusable}"):
        counts = dict.fromkeys(names, 0) | {"rows": int(engine.scalar("select count(*) from user_bags"))}
    else:
        named = "url is not null and term is not null"
        values = engine.row(
            f"select count(*) filter (where {named} and weight > 0 and {finite}), "
            "count(*) filter (where url is null), "
            "count(*) filter (where url is not null and term is null), "
            f"count(*) filter (where {named} and not coalesce(weight > 0, false)), "
            f"count(*) filter (where {named} and weight > 0 and not {finite}) "
            "from user_bags"
        )
        counts = {k: int(v) for k, v in zip(names, values, strict=True)}
    too_heavy = engine.scalar(f"select count(*) from user_bags where weight > {MAX_WEIGHT:.0e} and {finite}")
    if too_heavy:
        raise InputError(
            f"{too_heavy:,} row(s) of the bags table have a weight above {MAX_WEIGHT:.0e}, beyond what "
            "lshsql adds up exactly: scale the weights down"
        )
    return counts


_INFINITY = "cast('Infinity' as double)"
MAX_WEIGHT = 1e15  # sums of weights are exact as DECIMAL(38, 12): up to 1e26, so 1e11 rows of this weight


def _run_bags(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    sql_params = {
        "min_df": params.min_df,
        "max_df": params.max_df,
        "weighting": params.weighting,
        "scale": params.scale,
    }
    engine = as_engine(con)
    _register(engine, work, stage.reads)
    n_urls = engine.scalar("select count(*) from urls")
    n_terms = engine.scalar("select count(*) from terms")
    # the grouped form packs url_id and term_id into one BIGINT key, url_id * 2^32 + term_id: checked up
    # front, as either form may end up grouped
    if n_urls >= 2**31 or n_terms >= 2**32:
        raise InputError(f"{n_urls} URLs, {n_terms} terms: a work folder holds fewer than 2^31 and 2^32")
    # First as if term_counts had one row per (url, term), as it has when made from fragments; a user's
    # table that repeats one is found by the checks after and run again the grouped way.
    fast = "n_urls" in engine.columns("terms")
    context = template_context(params) | {"rows_unique": fast}
    rows, _ = _run_sql(engine, stage, params, work, bags, context, sql_params)
    repeated = fast and (
        has_repeated_rows(output_path(work, stage.name), ("url_id", "term_hash"))
        or bool(engine.scalar(_HIDDEN_REPEATS, {"max_df": params.max_df, "weighting": params.weighting}))
    )
    if repeated:
        rows, _ = _run_sql(engine, stage, params, work, bags, context | {"rows_unique": False}, sql_params)
    with_bag = _scalar_of_output(engine, work, "bags", "select count(distinct url_id) from {out}")
    return rows, {
        "urls": n_urls,
        "urls_with_bag": with_bag,
        "urls_empty_bag": n_urls - with_bag,
        "repeated_rows_added_up": repeated,
        **_row_accounting(engine, params, rows, grouped=repeated or not fast),
    }


def _row_accounting(engine, params: Params, bag_rows: int, grouped: bool) -> dict:
    """rows_read, rows_used and rows_dropped per reason: every row of term_counts is one of them. Made the
    fast way, a bag row is one row used; the grouped way, rows used add up into fewer bag rows. A row whose
    url or term is missing from the urls or terms table (only with tables of a user's own) is dropped as
    unknown_url_or_term."""
    read = int(engine.scalar("select count(*) from term_counts"))
    used, dropped = _rows_used_and_dropped(engine, params, rows_unique=not grouped)
    if not grouped:
        used = bag_rows  # the query counts by term alone, so it also counts the rows of URLs urls lacks
    unknown = read - used - sum(dropped.values())
    if unknown < 0:
        raise StageError(
            f"bags: term_counts has {read} rows, fewer than the {read - unknown} counted used or dropped: "
            "a terms table whose n_urls does not count its term's rows of term_counts"
        )
    if unknown:
        dropped["unknown_url_or_term"] = unknown
    return {"rows_read": read, "rows_used": used, "rows_dropped": dropped}


DROP_REASONS = ("below_min_df", "above_max_df", "in_every_url", "weight_rounds_to_zero")


def _rows_used_and_dropped(engine, params: Params, rows_unique: bool) -> tuple[int, dict[str, int]]:
    """The rows of term_counts that went into a bag, and per reason those the bags stage dropped (the
    filters of sql/20_bags.sql, in its order). With one row per (url, term), terms.n_urls is the document
    frequency and counts the rows, so only the rows whose tf rounds to 0 are grouped (none in a set table)."""
    query = _DROPPED_ROWS.replace("{rows_judged}", _ROWS_UNIQUE if rows_unique else _ROWS_GROUPED)
    sql_params = {"min_df": params.min_df, "max_df": params.max_df, "weighting": params.weighting}
    used, *dropped = (int(n or 0) for n in engine.row(query, sql_params))
    return used, {reason: n for reason, n in zip(DROP_REASONS, dropped, strict=True) if n}


# Per reason, rows of term_counts: df filters first, then a weight of 0 (idf 0, or a tf that rounds to 0 at
# 12 decimals), as sql/20_bags.sql applies them. {rows_judged} gives (df, n_rows, zero_tf) per group of rows.
_DROPPED_ROWS = """
with
n as (select count(*) as n_urls from urls),
{rows_judged},
judged as (
    select
        case
            when rows_judged.df < $min_df then 'below_min_df'
            when not (rows_judged.df <= $max_df * n.n_urls) then 'above_max_df'
            when $weighting = 'tfidf' and rows_judged.df >= n.n_urls then 'in_every_url'
            when rows_judged.zero_tf then 'weight_rounds_to_zero'
            else 'used'
        end as reason,
        rows_judged.n_rows
    from rows_judged
    cross join n
)
select
    {sums}
from judged
""".replace(
    "{sums}",
    ",\n    ".join(
        f"sum(case when judged.reason = '{reason}' then judged.n_rows else 0 end) as {reason}"
        for reason in ("used", *DROP_REASONS)
    ),
)

# One row per (url, term): per term, its rows, less those whose tf rounds to 0, which are judged apart.
_ROWS_UNIQUE = """
zero_tf as (
    select term_counts.term, count(*) as n_rows
    from term_counts
    where cast(term_counts.tf as decimal(38, 12)) = 0
    group by term_counts.term
),
rows_judged as (
    select terms.n_urls as df, terms.n_urls - coalesce(zero_tf.n_rows, 0) as n_rows, false as zero_tf
    from terms
    left join zero_tf on terms.term = zero_tf.term
    union all
    select terms.n_urls as df, zero_tf.n_rows, true as zero_tf
    from zero_tf
    inner join terms on zero_tf.term = terms.term
)"""

# Repeated rows add up first: df counts a term's URLs, and the summed tf of a (url, term) is what rounds.
# Only rows with a known url and term, as the stage's inner joins keep.
_ROWS_GROUPED = """
counts as (
    select
        term_counts.url,
        term_counts.term,
        count(*) as n_rows,
        sum(cast(term_counts.tf as decimal(38, 12))) as tf
    from term_counts
    semi join terms on term_counts.term = terms.term
    semi join urls on term_counts.url = urls.url
    group by term_counts.url, term_counts.term
),
df as (
    select counts.term, count(*) as df from counts group by counts.term
),
rows_judged as (
    select df.df, counts.n_rows, counts.tf = 0 as zero_tf
    from counts
    inner join df on counts.term = df.term
)"""


# Repeats the bags written cannot show, in rows the bags stage drops: every row of a term too common by
# n_urls (which counts a repeat twice; max_df, or idf <= 0 with tfidf: these mirror sql/20_bags.sql), and a
# row whose tf rounds to 0 at 12 decimals while its repeat stays. It reads term_counts only for those terms
# and (url, term)s: none in the harness's sets; a crawl's few stopword-like terms above max_df.
_HIDDEN_REPEATS = """
with
n as (select count(*) as n_urls from urls),
common as (
    select terms.term from terms cross join n
    where not (terms.n_urls <= $max_df * n.n_urls) or ($weighting = 'tfidf' and terms.n_urls >= n.n_urls)
),
tiny as (
    select distinct term_counts.url, term_counts.term from term_counts where term_counts.tf < 1e-12
)
select
    exists (
        select 1 from term_counts semi join common on term_counts.term = common.term
        group by term_counts.url, term_counts.term having count(*) > 1
    )
    or exists (
        select 1 from term_counts
        semi join tiny on term_counts.url = tiny.url and term_counts.term = tiny.term
        group by term_counts.url, term_counts.term having count(*) > 1
    )
"""


def has_repeated_rows(path: Path, key: tuple[str, ...], batch_rows: int = 1 << 20) -> bool:
    """Whether two consecutive rows of a Parquet file ordered by `key` have equal keys: a row group at a
    time, in batches of at most `batch_rows`, so memory stays bounded by the writer's row groups (DuckDB's
    hold 122,880 rows). Read on one thread, by row group: for bags' 17M rows at 100k documents, just
    written, 0.2 s, where ParquetFile.iter_batches took 0.65 s in a fresh process."""
    previous = None
    file = pq.ParquetFile(path)
    for group in range(file.num_row_groups):
        table = file.read_row_group(group, columns=list(key), use_threads=False)
        for batch in table.to_batches(max_chunksize=batch_rows):
            if not batch.num_rows:
                continue
            columns = [_key_values(column) for column in batch.columns]
            same = np.ones(batch.num_rows - 1, dtype=bool)
            for column in columns:
                same &= column[1:] == column[:-1]
            first = tuple(column[0] for column in columns)
            if same.any() or previous == first:
                return True
            previous = tuple(column[-1] for column in columns)
    return False


def _key_values(column: pa.Array) -> np.ndarray:
    """A key column as numpy; integers without nulls read from their buffers (see udf.integer_values)."""
    if pa.types.is_integer(column.type) and not column.null_count:
        return udf.integer_values(column)[0]
    return column.to_numpy(zero_copy_only=False)


def _run_terms(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    engine = as_engine(con)
    rows, _ = _run_sql(engine, stage, params, work, bags)
    distinct = _scalar_of_output(engine, work, "terms", "select count(distinct term_hash) from {out}")
    if distinct != rows:  # bags know a term by its hash alone; ~2e-9 likely for 200k terms, so say it
        raise StageError(
            f"{rows - distinct} pair(s) of distinct terms share a 63-bit term_hash; please report"
        )
    return rows, {}


def _scalar_of_output(engine, work: Path, relation: str, query: str, params: dict | None = None):
    """A value of a query over a stage's output file, `{out}` in `query` standing for it: DuckDB reads
    the file (read_parquet), Spark a view of it."""
    path = str(output_path(work, relation))
    if engine.name == "duckdb":
        return engine.scalar(query.format(out="read_parquet($p)"), {**(params or {}), "p": path})
    engine.register({f"lshsql_{relation}_out": path})
    return engine.scalar(query.format(out=f"lshsql_{relation}_out"), params)


def _row_of_output(engine, work: Path, relation: str, query: str, params: dict | None = None) -> tuple:
    """The first row of a query over a stage's output file (see _scalar_of_output)."""
    path = str(output_path(work, relation))
    if engine.name == "duckdb":
        return engine.row(query.format(out="read_parquet($p)"), {**(params or {}), "p": path})
    engine.register({f"lshsql_{relation}_out": path})
    return engine.row(query.format(out=f"lshsql_{relation}_out"), params)


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


def _run_element_hashes(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    engine = as_engine(con)
    _register(engine, work, stage.reads)
    most = engine.scalar("select greatest(1, round(max(weight))) from bags") or 1
    if most > MAX_COPIES:
        raise InputError(
            f"bags: a weight of {most:,.0f} makes as many copies of its term (term#1 .. term#q, min-hashed "
            f"one by one), over the {MAX_COPIES:,} lshsql flattens a term into: give smaller weights with "
            "--weighting none, or use --weighting tf"
        )
    max_copies = int(most)
    copies = family.write(family.copies(max_copies), work / "family" / "copies.parquet")
    engine.register({"copies": str(copies)})
    rows, _ = _run_sql(engine, stage, params, work, bags)
    return rows, {"max_copies": max_copies}


def _run_signatures(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    engine = as_engine(con)
    _register(engine, work, stage.reads)
    family.write(family.coefficients(params.seed, params.num_perm), work / "family" / "coefficients.parquet")
    rows = engine.materialize(
        sqlfiles.load(stage.sql),
        {},
        output_path(work, stage.name),
        template_context(params),
        stage.compression,
    )
    return rows, {}


def _band_context(params: Params, work: Path, engine_name: str) -> dict:
    """The buckets stage's template values; on DuckDB with one 64-bit band key per table
    (sql/macros/band_keys.sql) and shared keys found by a sort, on Spark, whose hash() is another function,
    with the k values, grouped (a window over one global order would run in one Spark partition)."""
    on_duckdb = engine_name == "duckdb"
    context = template_context(params) | {"hashed_keys": on_duckdb, "shared_by_sort": on_duckdb}
    tables = [indices for _, indices in context["bands"]]
    family.write(family.lsh_tables_table(tables), work / "family" / "lsh_tables.parquet")
    return context


# Memory per band-key row the buckets stage's group and join need, measured with margin (with k INTEGER
# keys; DuckDB's form, one hashed key sorted, needs less)
BAND_KEY_BYTES = 100
# Band keys per batch on DuckDB (or one table, when N is larger), whatever the memory limit. Measured when
# the stage grouped the keys, which ran faster per key over 10M keys than over 40M (1M URLs, k = 5,
# l = 95, 4GB: 5-10 tables per batch 11-12 s, 40 tables 19 s, all 95 at once 30 s). The sort that finds
# the shared keys now is nearly flat: 86-95 ms a table at 1M URLs from 4 to 32 tables a batch, 1.14 s a
# table at 10M from 1 to 4. At 100k URLs and the planner's l = 66, one batch.
BATCH_BAND_KEYS = 8_000_000
# The buckets of a batch are ordered (band, bucket, url_id) and batches take increasing bands
COMBINE_BUCKETS = "select * from parts order by band, bucket, url_id"


def tables_per_batch(n_urls: int, n_tables: int, fitting: int | None) -> int:
    """LSH tables per batch: at most BATCH_BAND_KEYS band keys and `fitting` tables (what the memory limit
    holds; None on Spark, which takes all tables at once), but at least one table."""
    if fitting is None:
        return n_tables
    return max(1, min(fitting, BATCH_BAND_KEYS // max(1, n_urls)))


def _run_buckets(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """On DuckDB, the shared buckets of all l tables at once when l * N band keys are at most
    BATCH_BAND_KEYS and fit in the memory limit, else in batches of tables (at least one each) written one
    after the other (10M URLs x 95 tables ran out of 8 GB in one go). Spark takes all tables at once."""
    engine = as_engine(con)
    context = _band_context(params, work, engine.name)
    _register(engine, work, stage.reads)
    n_urls = engine.scalar("select count(*) from signatures")
    bands = context["bands"]
    per_batch = tables_per_batch(n_urls, len(bands), engine.band_batch(n_urls, BAND_KEY_BYTES))
    sql = sqlfiles.load(stage.sql)
    out = output_path(work, stage.name)
    # what the tables promise, measured on them as drawn (the planner's or the user's -k and -l)
    recall = tables_recall(params.threshold, params.k, params.l, params.num_perm, params.seed, params.banding)
    extra = {"recall_at_threshold": round(recall, 4)}
    if per_batch >= len(bands):
        return engine.materialize(sql, {}, out, context, stage.compression), {"batches": 1, **extra}
    batches = [
        context | {"bands": bands[first : first + per_batch]} for first in range(0, len(bands), per_batch)
    ]
    parts = work / "tmp" / f"{stage.name}_batches"
    rows = materialize_in_parts(
        engine, sql, {}, batches, parts, COMBINE_BUCKETS, out, stage.compression, stage.name
    )
    return rows, {"batches": len(batches), **extra}


def _run_candidates(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    return _run_sql(con, stage, params, work, bags, sql_params={"max_bucket": params.max_bucket})


def _run_bucket_sizes(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    engine = as_engine(con)
    rows, _ = _run_sql(engine, stage, params, work, bags, sql_params={"max_bucket": params.max_bucket})
    stats = _row_of_output(
        engine,
        work,
        stage.name,
        "select sum(n_buckets), coalesce(max(n_members), 0), sum(n_pairs), sum(n_pairs_emitted), "
        "coalesce(sum(n_buckets) filter (where n_members > $cap), 0) from {out}",
        {"cap": params.max_bucket},
    )
    names = ("shared_buckets", "largest_bucket", "bucket_pairs", "bucket_pairs_emitted", "buckets_capped")
    return rows, {name: int(v or 0) for name, v in zip(names, stats, strict=True)}


# Memory a signature row takes in the pairs stage's two joins, as a multiple of its bytes (a BIGINT url_id
# and m INTEGERs), and the most url_ids a range may span. 10M URLs, m = 80, 8GB: in one piece the joins of two
# copies of all signatures spilled 10.6 GB and took 178 s (113 s at 16GB); in 3 blocks (P = 2), 94 s.
PAIR_ROW_FACTOR = 4
PAIR_BLOCK_URLS = 5_000_000


def pair_ranges(id_span: int, rows_per_range: int | None) -> int:
    """P, the ranges of url_id the pairs stage cuts an id span into, for P(P+1)/2 blocks (u's range, v's at
    or after it): each range spans at most PAIR_BLOCK_URLS ids and `rows_per_range`, the signature rows
    (times PAIR_ROW_FACTOR) the memory limit holds; None (Spark) takes all at once."""
    if rows_per_range is None:
        return 1
    per_range = max(1, min(PAIR_BLOCK_URLS, rows_per_range))
    return max(1, -(-id_span // per_range))


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


def _run_pairs(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """Pairs from the candidates, in blocks of url_id ranges when two copies of the signatures would not fit
    in the memory limit (or the ids span over PAIR_BLOCK_URLS). Candidates have u_id < v_id, so each is in
    one block (u's range, v's at or after it): the same rows, ordered as in one piece (the Parquet file
    then marks its columns nullable, as the buckets stage's batches do)."""
    engine = as_engine(con)
    narrow = min_hash_differences_fit_integer(output_path(work, "signatures"))
    context = template_context(params) | {"narrow_differences": narrow}
    sql_params = {"min_agree": params.min_agree, "num_perm": params.num_perm, "threshold": params.threshold}
    rows_per_range = engine.rows_fitting(PAIR_ROW_FACTOR * (8 + 4 * params.num_perm))
    n_ranges, first, last = 1, 0, 0
    if rows_per_range is not None:
        _register(engine, work, stage.reads)
        first, last = engine.row("select coalesce(min(url_id), 0), coalesce(max(url_id), 0) from signatures")
        n_ranges = pair_ranges(last - first + 1, rows_per_range)
    if n_ranges == 1:
        rows, _ = _run_sql(engine, stage, params, work, bags, context, sql_params)
        return rows, {"blocks": 1}
    cuts = [first + (last - first + 1) * i // n_ranges for i in range(n_ranges + 1)]
    blocks = [
        context | {"block": {"u_from": cuts[i], "u_to": cuts[i + 1], "v_from": cuts[j], "v_to": cuts[j + 1]}}
        for i, j in itertools.combinations_with_replacement(range(n_ranges), 2)
    ]
    rows = materialize_in_parts(
        engine,
        sqlfiles.load(stage.sql),
        sql_params,
        blocks,
        work / "tmp" / "pairs_blocks",
        "select * from parts order by u_id, v_id",
        output_path(work, stage.name),
        stage.compression,
        stage.name,
    )
    return rows, {"blocks": len(blocks)}


def _run_clusters(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    engine = as_engine(con)
    _register(engine, work, stage.reads)
    engine.table(
        "edges",
        "select u_id as src, v_id as dst from pairs union all select v_id as src, u_id as dst from pairs",
    )
    rounds = _center(engine) if params.clustering == "center" else _components(engine)
    rows = engine.materialize(sqlfiles.load(stage.sql), {}, output_path(work, stage.name))
    stats = _row_of_output(
        engine,
        work,
        stage.name,
        "select count(*) filter (where is_center), max(size), count(*) filter (where size = 1) from {out}",
    )
    return rows, {
        "rounds": rounds,
        "clusters": stats[0],
        "largest_cluster": stats[1] or 0,
        "singletons": stats[2],
    }


def _run_cluster_labels(con, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """Labels of the clusters (sql/63_cluster_labels.sql); an empty surface_forms when the folder has none."""
    engine = as_engine(con)
    _register(engine, work, tuple(r for r in stage.reads if r != "surface_forms"))
    if engine.name == "duckdb":
        with_words = labels.register_surface_forms(engine.con, work)
        rows = labels.materialize(engine.con, output_path(work, stage.name))
        return rows, {"surface_forms": with_words}
    forms = work / labels.SURFACE_FORMS
    with_words = forms.exists()
    if with_words:
        engine.register({"surface_forms": str(forms)})
    else:
        engine.view(
            "surface_forms",
            "select cast(null as varchar) as term, cast(null as varchar) as word, cast(null as bigint) as n "
            "where false",
        )
    params = {"n_terms": labels.LABEL_TERMS, "min_size": 2}
    rows = engine.materialize(sqlfiles.load(labels.SQL), params, output_path(work, stage.name))
    return rows, {"surface_forms": with_words}


def _stamp(work: Path) -> str | None:
    """Size and time of DIR/surface_forms.parquet: cluster_labels reruns when extraction rewrote it."""
    path = work / labels.SURFACE_FORMS
    return f"{path.stat().st_size}:{path.stat().st_mtime_ns}" if path.exists() else None


def _center(con) -> int:
    """CENTER as rounds of sql/60_center_round.sql until every node of the pairs graph is decided."""
    engine = as_engine(con)
    sql = sqlfiles.load("60_center_round.sql")
    engine.empty_table("assignments", {"node": "bigint", "center": "bigint"})
    engine.empty_table("centers", {"node": "bigint"})
    engine.table("active_edges", "select * from edges")
    engine.table("active_nodes", "select distinct src as node from edges")
    rounds = 0
    while engine.scalar("select count(*) from active_nodes"):
        rounds += 1
        if rounds > MAX_ROUNDS or not engine.to_table(sql, {}, "center_round"):
            raise StageError("CENTER made no progress; this is a bug")
        engine.append("assignments", "select node, center from center_round")
        engine.append("centers", "select node from center_round where node = center")
        engine.table("active_nodes", "select node from active_nodes anti join center_round using (node)")
        # drop edges into decided nodes and edges out of new members; edges out of centers stay
        engine.table(
            "active_edges",
            "select active_edges.* from active_edges "
            "anti join center_round on active_edges.dst = center_round.node "
            "anti join (select node from center_round where node <> center) as members "
            "on active_edges.src = members.node",
        )
    return rounds


def _components(con) -> int:
    """Connected components as rounds of sql/61_component_round.sql until no label changes."""
    engine = as_engine(con)
    sql = sqlfiles.load("61_component_round.sql")
    engine.table("labels", "select distinct src as node, src as label from edges")
    rounds = 0
    while True:
        rounds += 1
        engine.to_table(sql, {}, "component_round")
        changed = engine.scalar(
            "select count(*) from component_round inner join labels using (node) "
            "where component_round.label <> labels.label"
        )
        engine.table("labels", "select * from component_round")
        if not changed or rounds > MAX_ROUNDS:
            break
    engine.table("assignments", "select node, label as center from labels")
    return rounds


RUNNERS = {
    "term_counts": _run_term_counts,
    "terms": _run_terms,
    "bags": _run_bags,
    "element_hashes": _run_element_hashes,
    "signatures": _run_signatures,
    "buckets": _run_buckets,
    "candidates": _run_candidates,
    "bucket_sizes": _run_bucket_sizes,
    "pairs": _run_pairs,
    "clusters": _run_clusters,
    "cluster_labels": _run_cluster_labels,
}

# labels from ingest; merges, cluster_tree and cut from `lshsql hierarchy` and `lshsql cut`; mirrors from
# `lshsql mirrors`
CATALOG_RELATIONS = (
    "pages", "links", "fragments", "url_aliases", "surface_forms", *STAGE_NAMES, "labels", "merges",
    "cluster_tree", "cut", "cut_labels", "mirrors",
)  # fmt: skip


def write_catalog(work: Path) -> Path:
    """DIR/lshsql.duckdb: a view per output table, so `duckdb DIR/lshsql.duckdb` answers ad-hoc SQL.
    The views read the Parquet files by absolute path and need no UDF."""
    path = work / CATALOG
    with db.database_file(path) as database, duckdb.connect(database) as con:
        for relation in ("user_bags", *CATALOG_RELATIONS):
            con.execute(f"drop view if exists {relation}").fetchall()
        user_bags = _user_bags_source(work)
        if user_bags and user_bags.exists():
            _catalog_user_bags(con, user_bags)
        for relation in CATALOG_RELATIONS:
            if relation == "term_counts" and user_bags:
                continue
            source = _view_source(work, relation)
            if source:
                # DDL takes no parameters: the path is written as a SQL string literal, quotes doubled.
                con.execute(f"create view {relation} as select * from {source}").fetchall()
    return path


def _catalog_user_bags(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """term_counts in the catalog as the view of the user's table it is in a run."""
    source = f"read_parquet({_literal(str(path))})"  # DDL takes no parameters: a literal, quotes doubled
    columns = {name for name, *_ in con.execute(f"describe select * from {source}").fetchall()}
    con.execute(f"create view user_bags as select {_user_bags_columns(columns)} from {source}").fetchall()
    _create_term_counts_view(con)


def _view_source(work: Path, relation: str) -> str | None:
    if relation == "fragments":
        if not (work / "fragments").exists():
            return None
        files = ", ".join(_literal(str(Path(f).resolve())) for f in workdir.fragment_files(work))
        return f"read_parquet([{files}], hive_partitioning = true)" if files else None
    path = output_path(work, relation)
    return f"read_parquet({_literal(str(path.resolve()))})" if path.exists() else None


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
