"""The run loop: the stages of STAGES in order, each skipped when its fingerprint (its parameters, its
inputs' fingerprints, its SQL file, the lshsql version) is the one recorded and its output is there.

The run opens the engine that runs the SQL once (lshsql/engines/base.py: DuckDB, or Spark with
`run(..., engine="spark")`) and hands it to every runner. The engine is not part of a fingerprint: both
write the same rows.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from lshsql import __version__, manifest, progress, schemas, sqlfiles, workdir
from lshsql.engines import duckdb as db
from lshsql.engines.base import Engine, open_engine
from lshsql.errors import InputError, ParamError
from lshsql.lsh import scurve
from lshsql.lsh.plan import agreement_histogram, num_perm_for_bags, sample_signatures, signature_width
from lshsql.params import DEFAULT_NUM_PERM, Params
from lshsql.pipeline import compiled, frozen, labels, reuse
from lshsql.pipeline.catalog import write_catalog, write_info
from lshsql.pipeline.compiled import COMPILED
from lshsql.pipeline.inputs import bags_fingerprint, check_user_table, user_bags_source
from lshsql.pipeline.runners import RUNNERS
from lshsql.pipeline.stages import STAGE_NAMES, STAGES, Log, Stage, input_paths, output_path

DEFAULT_PARAMS = Params()


@dataclass
class RunSummary:
    """What a run did: per stage, rows written and seconds, or that it was up to date."""

    work: Path
    params: Params
    stages: dict[str, dict] = field(default_factory=dict)
    seconds: float = 0.0  # the whole call, checks and catalog included

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
        out.extend(line for name, entry in self.stages.items() if (line := reuse.summary_line(name, entry)))
        if empty := self.stages.get("bags", {}).get("urls_empty_bag"):
            out.append(
                f"bags: {empty:,} of {self.stages['bags']['urls']:,} URLs have an empty bag (every term "
                "dropped: --min-df, --max-df, or in every URL): in no pair and no cluster"
            )
        out.append(f"time: {self.seconds:.2f} s")
        return out


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
        engine: "duckdb" (default) or "spark": which engine runs the stage SELECTs (engines/base.py), or
            an open Engine to use (and leave open). The rows are the same, so the engine is not part of a
            stage's fingerprint.
        spark_master, spark_conf: the Spark master URL (default local[*]) and extra Spark settings, for
            engine="spark".

    Example:
        >>> summary = run("work/example", Params(threshold=0.5))  # doctest: +SKIP
    """
    started = time.perf_counter()
    with workdir.writing(work):
        summary = _run(
            Path(work), params, bags, resources, force, only, log, engine, spark_master, spark_conf
        )
    summary.seconds = time.perf_counter() - started
    return summary


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
        for stage_name in reuse.KEYED_STAGES:  # --force recomputes every URL, reusing nothing
            reuse.forget(work, stage_name)
    if "dedup" in manifest.read(work):  # with --bags too: its documents and copies are not a run's
        raise InputError(
            f"{work}: the work folder of `lshsql dedup`: run `lshsql dedup` again to change its options "
            "(`clusters`, `query` and `explain` read it as it is), or give `run` another folder"
        )
    if bags is None and not (work / "fragments").exists():
        bags = user_bags_source(work)  # a folder started from --bags goes on from the same table
    requested = {k: v for k, v in params.to_json().items() if v is not None}
    plan_tables = params.k is None and params.l is None
    previous = manifest.read(work)["stages"]
    params = scurve.resolve(params, whole_sets=bags is not None or shingled(previous))
    resources = db.for_work(work, resources)
    if bags is None:
        workdir.require_extraction(work)
    summary = RunSummary(work, params)
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
    m_planned: dict = {}
    note = None  # the planner's word on a large plan (scurve.large_plan_note), for the next stage that runs
    with open_engine(engine, resources, spark_master, spark_conf) as stage_engine:
        for stage in STAGES:
            turn = time.perf_counter()  # a stage's seconds count the planning done for it (m, k and l)
            if stage.name == "signatures" and params.num_perm is None:
                here = not (only and stage.name not in only)
                params, m_planned, kept, note = _plan_num_perm(stage_engine, work, params, here, previous)
                summary.params = params
                if kept:  # later runs keep it: their signatures stay valid
                    requested["num_perm"] = params.num_perm
                plan_tables = params.k is None  # planned with m from the same sample, or not yet
            if stage.name == "buckets" and plan_tables and output_path(work, "signatures").exists():
                params, note = _plan_tables(stage_engine, work, params)
                summary.params = params
            # no pairs of signatures sampled: the closed form's
            if stage.name == "buckets" and params.k is None:
                params = summary.params = scurve.with_tables(params)
            vocabulary = None
            if stage.name == "bags" and params.freeze_idf:
                if not (only and "bags" not in only):  # before the fingerprint, which takes its identity
                    frozen.ensure(work, frozen.described(params, bags is not None))
                vocabulary = frozen.identity(work)
            fingerprint = _fingerprint(stage, params, fingerprints, bags is not None, vocabulary)
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
                if stage.name == "bags" and params.freeze_idf:  # the bags are of the file just frozen
                    frozen.publish(work)
                summary.stages[stage.name] = {"rows": old.get("rows", 0), "skipped": True}
                progress.stage_finished(stage.name, 0.0, skipped=True)
                continue
            if log and note:  # said once a stage runs, not when every stage after planning is up to date
                log(note)
                note = None
            if log:
                log(f"  {stage.name} ...")
            progress.stage_started(stage.name)
            rows, extra = RUNNERS[stage.name](stage_engine, stage, params, work, bags)
            if stage.name == "signatures":
                extra.update(m_planned)
            if stage.name == "bags" and params.freeze_idf:
                frozen.publish(work)
            ran = extra.pop(COMPILED, None)
            if not extra.get("view"):
                schemas.validate(output_path(work, stage.name), stage.name)
            entry = {
                "fingerprint": fingerprint,
                "rows": rows,
                "seconds": round(time.perf_counter() - turn, 3),
                "params": {f: getattr(params, f) for f in stage.fields},
                **extra,
            }
            if not extra.get("view"):
                entry["file"] = manifest.file_identity(output_path(work, stage.name))
            manifest.record_stage(work, stage.name, entry)
            if ran:  # DIR/compiled/<stage>.sql: the SQL this run ran, for `lshsql sql`
                compiled.write(work, stage.name, ran)
            summary.stages[stage.name] = entry
            progress.stage_finished(stage.name, entry["seconds"])
    data = manifest.read(work)
    data["requested_params"] = requested  # what was asked: `lshsql run` keeps it for options not given again
    data["params"] = params.to_json()  # what was used, k and l included
    manifest.write(work, data)
    write_catalog(work)
    write_info(work)
    return summary


def run_stages(
    work: str | Path,
    params: Params,
    names: tuple[str, ...],
    resources: db.Resources,
    log: Log | None = None,
) -> RunSummary:
    """Run just these stages, in STAGES order, on tables another command wrote into the folder (`lshsql
    dedup` writes urls, bags and signatures itself); they always run, and each is recorded in the manifest
    with its parameters, as `run` records it. k and l left None are planned from the signatures."""
    work = Path(work)
    started = time.perf_counter()
    plan_tables = params.k is None and params.l is None
    if params.num_perm is None:  # the signatures the other command wrote
        params = replace(
            params, num_perm=signature_width(output_path(work, "signatures")) or DEFAULT_NUM_PERM
        )
    params = scurve.resolve(params, whole_sets=True)
    summary = RunSummary(work, params)
    with workdir.writing(work), open_engine("duckdb", resources) as engine:
        for stage in STAGES:
            if stage.name not in names:
                continue
            stage_started = time.perf_counter()  # the planning of k and l counts in buckets' seconds
            if stage.name == "buckets" and plan_tables:
                params, note = _plan_tables(engine, work, params)
                summary.params = params
                if log and note:
                    log(note)
            if log:
                log(f"  {stage.name} ...")
            progress.stage_started(stage.name)
            rows, extra = RUNNERS[stage.name](engine, stage, params, work, None)
            ran = extra.pop(COMPILED, None)
            schemas.validate(output_path(work, stage.name), stage.name)
            entry = {
                "fingerprint": _fingerprint(stage, params, {}, from_bags=True),
                "rows": rows,
                "seconds": round(time.perf_counter() - stage_started, 3),
                "params": {f: getattr(params, f) for f in stage.fields},
                **extra,
                "file": manifest.file_identity(output_path(work, stage.name)),
            }
            manifest.record_stage(work, stage.name, entry)
            if ran:
                compiled.write(work, stage.name, ran)
            summary.stages[stage.name] = entry
            progress.stage_finished(stage.name, entry["seconds"])
    data = manifest.read(work)
    data["params"] = params.to_json()
    manifest.write(work, data)
    write_catalog(work)
    write_info(work)
    summary.seconds = time.perf_counter() - started
    return summary


def shingled(stages: dict) -> bool:
    """Whether the folder's documents were ingested as shingles (`ingest --shingle`): their sets are kept
    whole, with no document-frequency cut-off unless asked for (Params.with_df_limits). Folders ingested
    before the entry said so have the option in its parameters."""
    entry = stages.get("extract", {})
    if entry.get("kind") != "documents":
        return False
    return bool(entry.get("shingled", entry.get("params", {}).get("shingle")))


def _output_exists(work: Path, relation: str, entry: dict) -> bool:
    """A stage's output is there: its Parquet file, or for a user's bags the table it is a view of."""
    if entry.get("view"):
        return Path(entry["source"]).exists()
    return output_path(work, relation).exists()


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


def _plan_tables(engine: Engine, work: Path, params: Params) -> tuple[Params, str | None]:
    """Choose (k, l) for this data, as `lshsql plan --work` does: from the agreement histogram of a fixed
    sample of URLs' signatures, the expected candidates of each admissible (k, l). The sample is read by
    DuckDB whatever the engine (engine.local_duckdb; it reads DIR/signatures.parquet, the same file either
    way)."""
    with engine.local_duckdb() as con:
        signatures, n_urls = sample_signatures(con, output_path(work, "signatures"), params.num_perm)
    if signatures is None or len(signatures) < 2:  # no pairs to sample: the closed form's (see _run)
        return params, None
    histogram = agreement_histogram(signatures)
    params = scurve.with_tables(replace(params, k=None, l=None), histogram, n_urls)
    candidates = scurve.expected_candidates(histogram, n_urls, params.k, params.l)
    return params, scurve.large_plan_note(params, n_urls, candidates)


def _plan_num_perm(
    engine: Engine, work: Path, params: Params, here: bool, previous: dict
) -> tuple[Params, dict, bool, str | None]:
    """m for a run that leaves it to the planner (Params.plans_num_perm). A folder whose signatures were
    made keeps their m (a rerun reuses them), so the choice is made once: before the signatures stage, from
    a sample of the bags (plan.num_perm_for_bags), read by DuckDB whatever the engine, as _plan_tables reads
    signatures. (k, l) come with m, from the same sample the buckets stage's planning would take from the
    signatures. Returns the params, what the manifest records of the choice, and whether later runs are to
    keep m (not when neither signatures nor bags were there to choose it by)."""
    made = previous.get("signatures", {}).get("params", {}).get("num_perm")
    if made:
        return replace(params, num_perm=made), {}, True, None
    if not here:  # signatures of the user's own, if any
        width = signature_width(output_path(work, "signatures"))
        return replace(params, num_perm=width or DEFAULT_NUM_PERM), {}, width is not None, None
    bags_path = Path(input_paths(work, "bags"))  # a StageError when the file is missing
    entry = manifest.read(work)["stages"].get("bags", {})
    with engine.local_duckdb() as con:
        if entry.get("file") == manifest.file_identity(bags_path) and "urls_with_bag" in entry:
            n_urls = int(entry["urls_with_bag"])
        else:  # bags of the user's own
            n_urls = db.scalar(
                con, "select count(distinct url_id) from read_parquet($p)", {"p": str(bags_path)}
            )
        m, tables, expected = num_perm_for_bags(con, bags_path, int(n_urls), params)
    k, l = tables or (None, None)  # noqa: E741
    work_by_m = {"num_perm_work": {str(key): round(value) for key, value in expected.items()}}
    params = replace(params, num_perm=m, k=k, l=l)
    note = None
    if tables:
        candidates = scurve.candidates_in_work(expected[m], l, int(n_urls), m)
        note = scurve.large_plan_note(params, int(n_urls), candidates)
    return params, work_by_m, True, note


def _source_fingerprint(work: Path, bags: str | Path | None, previous: dict) -> str:
    if bags is None:
        return previous.get("extract", {}).get("fingerprint") or json.dumps(
            previous.get("extract", {}).get("counts")
        )
    return bags_fingerprint(bags)


def _fingerprint(
    stage: Stage, params: Params, fingerprints: dict[str, str], from_bags: bool, frozen_idf: str | None = None
) -> str:
    data = {
        "stage": stage.name,
        "version": __version__,
        "params": {f: getattr(params, f) for f in stage.fields},
        "inputs": {r: fingerprints.get(r) for r in stage.reads},
        "from_bags": from_bags and stage.name == "term_counts",
        "sql": _sql_digest(stage.files),  # an edited stage file reruns its stage
    }
    if frozen_idf is not None:  # --freeze-idf: another frozen vocabulary reruns the bags
        data["frozen_idf"] = frozen_idf
    return manifest.fingerprint(data)


def _sql_digest(names: tuple[str, ...]) -> str:
    """The stage's files (one per algorithm) and the macros they may include."""
    folder = sqlfiles.sql_dir()
    files = [*(folder / name for name in names), *sorted((folder / "macros").glob("*.sql"))]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]


def _stamp(work: Path) -> str | None:
    """Size and time of DIR/surface_forms.parquet: cluster_labels reruns when extraction rewrote it."""
    path = work / labels.SURFACE_FORMS
    return f"{path.stat().st_size}:{path.stat().st_mtime_ns}" if path.exists() else None
