"""The stage runners: RUNNERS, one function per stage, (engine, stage, params, work, bags) -> (rows written,
what the manifest records besides). The engine (lshsql/engines/base.py) is opened once by the run; a runner
calls its methods for whatever differs between DuckDB and Spark. A stage with nothing of its own is run_sql:
its inputs registered, its file rendered and written to DIR/<name>.parquet. Each also returns, under the
key COMPILED (which the run loop takes out before the manifest), what it ran: compiled.Compiled, written
to DIR/compiled/<stage>.sql.
"""

from __future__ import annotations

import os
from pathlib import Path

from lshsql import manifest, sqlfiles
from lshsql.engines.base import Engine, materialize_in_parts
from lshsql.errors import InputError, ParamError, StageError
from lshsql.lsh import cluster_ids, family
from lshsql.lsh.scurve import tables_recall
from lshsql.params import Params, check_copies
from lshsql.pipeline import batching, frozen, labels, reuse
from lshsql.pipeline.accounting import hidden_repeats, ordered_keys, row_accounting
from lshsql.pipeline.compiled import COMPILED, Compiled, input_views, parquet_view, user_bags_view
from lshsql.pipeline.inputs import count_user_bags, register, register_user_bags, unit_tf
from lshsql.pipeline.pairs_runner import run_pairs
from lshsql.pipeline.rounds import (
    COPIES,
    add_copies,
    center,
    components,
    count_copies_pairs,
)
from lshsql.pipeline.stages import (
    BAGS_SOURCE_SQL,
    Stage,
    max_copies,
    output_path,
    sql_file,
    template_context,
)


def run_sql(
    engine: Engine,
    stage: Stage,
    params: Params,
    work: Path,
    bags,
    context: dict | None = None,
    sql_params: dict | None = None,
    file: str | None = None,
) -> tuple[int, dict]:
    """Register the stage's inputs, run its file (or `file`, one of its variants) into DIR/<name>.parquet."""
    register(engine, work, stage.reads)
    file = file or stage.sql
    out = output_path(work, stage.name)
    rows = engine.materialize(sqlfiles.load(file), sql_params or {}, out, context, stage.compression)
    compiled = Compiled(file, sql_params or {}, context, input_views(work, stage.reads))
    return rows, {COMPILED: compiled}


def scalar_of_output(engine: Engine, work: Path, relation: str, query: str, params: dict | None = None):
    """A value of a query over a stage's output file, `{out}` in `query` standing for it (the engine's
    file_source: DuckDB reads the file in the query, Spark a view of it)."""
    source, source_params = engine.file_source(f"lshsql_{relation}_out", output_path(work, relation))
    return engine.scalar(query.format(out=source), {**(params or {}), **source_params})


def row_of_output(engine: Engine, work: Path, relation: str, query: str, params: dict | None = None) -> tuple:
    """The first row of a query over a stage's output file (see scalar_of_output)."""
    source, source_params = engine.file_source(f"lshsql_{relation}_out", output_path(work, relation))
    return engine.row(query.format(out=source), {**(params or {}), **source_params})


def _run_term_counts(engine: Engine, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """From fragments: the grouped table. From a user's bags: a view of their table, not a copy (copying
    its strings cost a large share of a run); the bags stage adds up repeated (url, term) rows."""
    if bags is None:
        return _term_counts_of_fragments(engine, stage, params, work)
    if params.unit != "url":
        raise ParamError(f"--unit {params.unit} groups a crawl's fragments; a bags table is used as given")
    source = Path(bags).resolve()
    register_user_bags(engine, source)
    counts = count_user_bags(engine)
    if counts["rows"] == 0:
        unusable = ", ".join(f"{n:,} {reason}" for reason, n in counts.items() if reason != "rows" and n)
        raise InputError(
            f"{bags}: no usable row (a url, a term and a positive weight)"
            + (f": {unusable}" if unusable else ": the table is empty")
        )
    output_path(work, stage.name).unlink(missing_ok=True)  # a copy from an earlier run would shadow the view
    skipped = {k: v for k, v in counts.items() if k != "rows" and v}
    compiled = Compiled(
        BAGS_SOURCE_SQL,
        views={"user_bags": user_bags_view(work, source)},
        notes=("A view of the user's bags table, not a copy: no Parquet file is written.",),
    )
    return counts["rows"], {"source": str(source), "view": True, "rows_skipped": skipped, COMPILED: compiled}


def _term_counts_of_fragments(engine, stage: Stage, params: Params, work: Path) -> tuple[int, dict]:
    """term_counts from fragments, with alias URLs mapped to their targets and URLs to their unit."""
    register(engine, work, stage.reads)
    aliases = output_path(work, "url_aliases")
    no_aliases = "select cast(null as varchar) as alias_url, cast(null as varchar) as target_url where false"
    aliases_view = parquet_view(work, str(aliases))
    if aliases.exists():
        engine.register({"url_aliases": str(aliases)})
    else:  # a work folder extracted before url_aliases existed
        engine.view("url_aliases", no_aliases)
        aliases_view = no_aliases
    use_aliases = params.aliases and engine.scalar("select count(*) from url_aliases") > 0
    if not use_aliases:  # the mapped file then maps by the unit alone
        engine.view("url_aliases", no_aliases)
        aliases_view = no_aliases
    file = sql_file(stage, params, mapped=use_aliases or params.unit != "url")
    sql_params = {"unit": params.unit}
    rows = engine.materialize(sqlfiles.load(file), sql_params, output_path(work, stage.name))
    views = input_views(work, stage.reads)
    if file != stage.sql:
        views["url_aliases"] = aliases_view
    extra: dict = {COMPILED: Compiled(file, sql_params, None, views)}
    if use_aliases:
        extra["alias_urls_mapped"] = engine.scalar(
            "select count(*) from (select distinct url from fragments) as described "
            "semi join url_aliases on described.url = url_aliases.alias_url",
        )
    return rows, extra


def _run_terms(engine: Engine, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    rows, extra = run_sql(engine, stage, params, work, bags)
    distinct = scalar_of_output(engine, work, "terms", "select count(distinct term_hash) from {out}")
    if distinct != rows:  # bags know a term by its hash alone; ~2e-9 likely for 200k terms, so say it
        raise StageError(
            f"{rows - distinct} pair(s) of distinct terms share a 63-bit term_hash; please report"
        )
    return rows, extra


def _run_bags(engine: Engine, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    sql_params = {
        "min_df": params.min_df,
        "max_df": params.max_df,
        "weighting": params.weighting,
        "scale": params.scale,
    }
    register(engine, work, stage.reads)
    frozen_view = frozen.register(engine, work, params.freeze_idf)
    n_urls = engine.scalar("select count(*) from urls")
    n_terms = engine.scalar("select count(*) from terms")
    # the grouped form packs url_id and term_id into one BIGINT key, url_id * 2^32 + term_id: checked up
    # front, as either form may end up grouped
    if n_urls >= 2**31 or n_terms >= 2**32:
        raise InputError(f"{n_urls} URLs, {n_terms} terms: a work folder holds fewer than 2^31 and 2^32")
    # First as if term_counts had one row per (url, term), as it has when made from fragments; a user's
    # table that repeats one is found by the checks after and run again the grouped way.
    fast = "n_urls" in engine.columns("terms")
    if params.freeze_idf and not fast:
        raise ParamError(f"--freeze-idf: {output_path(work, 'terms')} has no n_urls; run again with --force")
    file = sql_file(stage, params, grouped=not fast)
    # columns the sort of sql/20_bags.sql need not move (macros/bags_sorted.sql)
    context = template_context(params) | {"unit_tf": unit_tf(work)}
    rows, extra = run_sql(engine, stage, params, work, bags, context, sql_params, file)
    extra[COMPILED].views["frozen_idf"] = frozen_view
    with_bag = None
    if fast:  # the pass that looks for a repeat also counts the URLs with a bag (bags are in url_id order)
        try:
            repeated, with_bag = ordered_keys(output_path(work, stage.name), ("url_id", "term_hash"))
        except StageError:
            output_path(work, stage.name).unlink()  # bags out of order: no stage may take them as its input
            raise
        repeated = repeated or hidden_repeats(engine, params)
    else:
        repeated = False
    if params.freeze_idf and (repeated or not fast):
        output_path(work, stage.name).unlink()  # bags of a refused run: no stage may take them as its input
        raise ParamError(
            "--freeze-idf needs one row per (url, term): the bags table repeats one; add its rows up first"
        )
    if repeated:
        file = sql_file(stage, params, grouped=True)
        rows, extra = run_sql(engine, stage, params, work, bags, None, sql_params, file)
    if repeated or with_bag is None:
        with_bag = scalar_of_output(engine, work, "bags", "select count(distinct url_id) from {out}")
    with_bag = int(with_bag)  # a numpy integer from the ordered pass: the manifest stores numbers
    return rows, {
        "urls": n_urls,
        "urls_with_bag": with_bag,
        "urls_empty_bag": n_urls - with_bag,
        "repeated_rows_added_up": repeated,
        **row_accounting(engine, params, rows, grouped=repeated or not fast),
        **extra,
    }


def _run_signatures(engine: Engine, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """The signatures, after checking that no weight flattens a term into more copies than MAX_COPIES."""
    register(engine, work, stage.reads)
    most = max_copies(engine)
    check_copies(most)
    file = sql_file(stage, params)
    if params.sketch == "oph":
        family.write(family.oph_family(params.seed, params.num_perm), work / "family" / "oph.parquet")
    else:
        family.write(
            family.coefficients(params.seed, params.num_perm), work / "family" / "coefficients.parquet"
        )
    context = template_context(params) | {"one_copy_each": most <= 1}

    def compute(out: Path) -> int:
        return engine.materialize(sqlfiles.load(file), {}, out, context, stage.compression)

    rows, extra = reuse.signatures(engine, work, params, compute)
    compiled = Compiled(file, {}, context, input_views(work, stage.reads))
    if params.sketch == "oph":
        compiled.notes = (
            "--sketch oph: lsh_oph has no SQL stand-in (its densification probes bins until one is not "
            "empty), so this file runs only where lsh_oph is registered, as lshsql does.",
        )
    return rows, {"max_copies": int(most), **extra, COMPILED: compiled}


def band_context(params: Params, work: Path) -> dict:
    """The buckets stage's template values (its LSH tables, also written to DIR/family/lsh_tables.parquet)."""
    context = template_context(params)
    tables = [indices for _, indices in context["bands"]]
    family.write(family.lsh_tables_table(tables), work / "family" / "lsh_tables.parquet")
    return context


def _run_buckets(engine: Engine, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """On DuckDB, the shared buckets of all l tables at once when l * N band keys are at most
    BATCH_BAND_KEYS and fit in the memory limit, else in batches of tables (at least one each) written one
    after the other, so that memory holds one batch, not all l tables. Spark takes all tables at once. A
    rerun looks up only the changed URLs' band keys (reuse.buckets), in the same batches."""
    context = band_context(params, work)
    register(engine, work, stage.reads)
    n_urls = engine.scalar("select count(*) from signatures")
    bands = context["bands"]
    per_batch = batching.tables_per_batch(
        n_urls, len(bands), engine.band_batch(n_urls, batching.BAND_KEY_BYTES)
    )
    file = sql_file(stage, params, hashed_band_keys=engine.hashes_band_keys)
    compiled = Compiled(file, {}, context, input_views(work, stage.reads))
    # what the tables promise, measured on them as drawn (the planner's or the user's -k and -l)
    recall = tables_recall(
        params.threshold, params.k, params.l, params.num_perm, params.seed, params.banding, params.sketch
    )
    n_batches = -(-len(bands) // per_batch)
    extra = {"recall_at_threshold": round(recall, 4), "batches": n_batches, COMPILED: compiled}
    notes = []
    if n_batches > 1:
        notes.append(
            f"The run took the {len(bands)} tables in batches of {per_batch} (the bands of one batch each "
            "time) and wrote their union in this order: the same rows as this select of all tables at once."
        )

    def write(name: str, target: Path) -> int:
        sql = sqlfiles.load(name)
        if n_batches == 1:
            return engine.materialize(sql, {}, target, context, stage.compression)
        batches = [
            context | {"bands": bands[first : first + per_batch]} for first in range(0, len(bands), per_batch)
        ]
        parts = work / "tmp" / f"{stage.name}_batches"
        return materialize_in_parts(
            engine,
            sql,
            {},
            batches,
            parts,
            batching.BUCKETS_ORDER,
            target,
            stage.compression,
            stage.name,
            parts_in_order=True,
        )

    def write_reused(target: Path) -> int:
        notes.append(
            "This run looked up only the band keys of the URLs whose bag changed since the previous run "
            "and kept that run's other buckets (sql/35_buckets_reused.sql, lshsql/pipeline/reuse.py): "
            "the same rows."
        )
        return write(sql_file(stage, params, reused=True), target)

    rows, reuse_extra = reuse.buckets(engine, work, params, lambda target: write(file, target), write_reused)
    compiled.notes = tuple(notes)
    return rows, {**extra, **reuse_extra}


# The pairs each bucket member emits as u in sql/40_candidates.sql: one with each member above it, but
# past the first $cap members of a bucket over the cap, none. The total, each member's share of its
# bucket's pairs as sql/41_bucket_sizes.sql counts them, needs no order; per bin of url_id, the rank.
EMITTED_PAIRS = (
    "select coalesce(min(url_id), 0), coalesce(max(url_id), 0), coalesce(sum(case "
    "when n_members <= $cap then (n_members - 1) / 2 "
    "else $cap * (2 * n_members - $cap - 1) / (2 * n_members) end), 0) from buckets"
)
EMITTED_PAIRS_BY_BIN = (
    "select cast(url_id - $first as bigint) // $width as bin, "
    "sum(case when n_members > $cap and member_rank > $cap then 0 else n_members - member_rank end) as pairs "
    "from (select url_id, n_members, row_number() over (partition by band, bucket order by url_id) "
    "as member_rank from buckets) group by bin order by bin"
)


def _run_candidates(engine: Engine, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """The candidate pairs, in ranges of u_id when the pairs the self-join emits would not fit in the memory
    limit at once (batching.candidate_ranges, cut where the pairs each bin of url_ids emits add up to what
    fits): each range is complete, as a pair's u_id is in one range."""
    register(engine, work, stage.reads)
    fitting = engine.rows_fitting(batching.CANDIDATE_ROW_BYTES)
    ranges = [batching.EVERY_ID]  # Spark: one piece, no estimate needed
    if fitting is not None:
        cap = params.max_bucket
        first, last, emitted = engine.row(EMITTED_PAIRS, {"cap": cap})
        first, last = int(first), int(last)
        ranges = [(first, last)]
        if float(emitted) > fitting:  # the counts per bin need a sort of the buckets: only when cut
            width = batching.candidate_bin_width(first, last)
            bins = engine.rows(EMITTED_PAIRS_BY_BIN, {"cap": cap, "first": first, "width": width})
            ranges = batching.candidate_ranges(first, last, width, bins, fitting)
    sql_params = {"max_bucket": params.max_bucket, "u_first": ranges[0][0], "u_last": ranges[-1][1]}
    if len(ranges) == 1:
        return run_sql(engine, stage, params, work, bags, sql_params=sql_params)
    rows = materialize_in_parts(
        engine,
        sqlfiles.load(stage.sql),
        sql_params,
        [None] * len(ranges),
        work / "tmp" / "candidates_parts",
        "u_id, v_id",
        output_path(work, stage.name),
        stage.compression,
        table=stage.name,
        part_params=[{"u_first": lo, "u_last": hi} for lo, hi in ranges],
        parts_in_order=True,  # increasing ranges of u_id, each ordered (u_id, v_id)
    )
    compiled = Compiled(stage.sql, sql_params, None, input_views(work, stage.reads))
    compiled.notes = (
        f"This file takes every u_id at once; the run took {len(ranges)} ranges of u_id (u_first, u_last): "
        f"{ranges}, and wrote their rows one range after another: the same rows in the same order.",
    )
    return rows, {"u_ranges": len(ranges), COMPILED: compiled}


def _run_bucket_sizes(engine: Engine, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    rows, extra = run_sql(engine, stage, params, work, bags, sql_params={"max_bucket": params.max_bucket})
    stats = row_of_output(
        engine,
        work,
        stage.name,
        "select sum(n_buckets), coalesce(max(n_members), 0), sum(n_pairs), sum(n_pairs_emitted), "
        "coalesce(sum(n_buckets) filter (where n_members > $cap), 0) from {out}",
        {"cap": params.max_bucket},
    )
    names = ("shared_buckets", "largest_bucket", "bucket_pairs", "bucket_pairs_emitted", "buckets_capped")
    return rows, {**{name: int(v or 0) for name, v in zip(names, stats, strict=True)}, **extra}


# the pairs the clusters' diagnostics count in a dedup's folder: each exact copy paired with the document it
# copies too, Jaccard 1 (sql/62_clusters.sql reads these columns only)
PAIRS_WITH_COPIES = (
    "select u, v, similarity, u_id, v_id from pairs_of_sets union all "
    "select originals.url, copied.url, cast(1 as double), copies.copy_of, copies.url_id from copies "
    "inner join urls as originals on copies.copy_of = originals.url_id "
    "inner join urls as copied on copies.url_id = copied.url_id"
)

COPIES_NOTE = (
    "A dedup's exact copies (copies.parquet) were added to assignments after the rounds, each with the "
    "center of the document it copies (rounds.add_copies), and pairs is that file's rows with each copy "
    f"paired with that document: {PAIRS_WITH_COPIES}"
)


def _run_clusters(engine: Engine, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """CENTER or components over the pairs, then stable ids matched to the clusters this run replaces
    (lshsql/lsh/cluster_ids.py): the history is written before the new file is renamed into place. In the
    folder of a dedup, its exact copies (DIR/copies.parquet) join the clusters of their originals."""
    register(engine, work, stage.reads)
    engine.table(
        "edges",
        "select u_id as src, v_id as dst from pairs union all select v_id as src, u_id as dst from pairs",
    )
    rounds = center(engine) if params.clustering == "center" else components(engine)
    folder = manifest.read(work)
    copies = work / COPIES
    with_copies = "dedup" in folder and copies.exists()  # a dedup's exact copies, left out of the pairs
    if with_copies:
        engine.register({"copies": str(copies), "pairs_of_sets": str(output_path(work, "pairs"))})
        add_copies(engine)
        engine.view("pairs", PAIRS_WITH_COPIES)
    out = output_path(work, stage.name)
    history = work / cluster_ids.HISTORY
    recorded = folder["stages"]
    run = cluster_ids.next_run(recorded, history)
    # a table: sql/62_cluster_ids.sql reads members twice, and a view would list the bags' URLs each time
    engine.table("lshsql_members", cluster_ids.CLUSTER_MEMBERS)
    engine.view("members", "select * from lshsql_members")
    given = recorded.get("clusters", {}).get("last_id", 0)
    earlier = cluster_ids.earlier_clusters(work, out, recorded.get("clusters", {}).get("file"))
    last_id = cluster_ids.number(engine, earlier, history, run, given)
    # memory back: on Spark a view holds its table's rows, so the view is made again over the empty table
    engine.empty_table("lshsql_members", {"url": "varchar", "center_id": "bigint"})
    engine.view("members", "select * from lshsql_members")
    fresh = work / "tmp" / out.name
    rows = engine.materialize(sqlfiles.load(stage.sql), {}, fresh)
    if with_copies:
        count_copies_pairs(engine, fresh)
    history_rows = cluster_ids.record_history(engine, work, run)
    if earlier == out:  # else the basis is still the recorded run's file; `out` a dead run's
        cluster_ids.keep_basis(work, out)
    os.replace(fresh, out)
    round_file = "60_center_round.sql" if params.clustering == "center" else "61_component_round.sql"
    compiled = Compiled(
        stage.sql,
        views=input_views(work, ("urls", "bags", "pairs")),
        notes=(
            f"assignments(node, center) is the result of {rounds} rounds of sql/{round_file} over the pairs, "
            "which Python drives (lshsql/pipeline/rounds.py): create it before this select runs.",
            f"cluster_ids(center_id, cluster_id) is sql/{cluster_ids.MATCH_SQL} over these clusters and the "
            "clusters.parquet this run replaced (lshsql/lsh/cluster_ids.py).",
            *([COPIES_NOTE] if with_copies else []),
        ),
    )
    stats = row_of_output(
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
        "run": run,
        "history_rows": history_rows,
        "last_id": last_id,  # the largest cluster id given out in this folder (cluster_ids.number)
        COMPILED: compiled,
    }


def _run_cluster_labels(engine: Engine, stage: Stage, params: Params, work: Path, bags) -> tuple[int, dict]:
    """Labels of the clusters (sql/63_cluster_labels.sql); an empty surface_forms when the folder has none."""
    register(engine, work, tuple(r for r in stage.reads if r != "surface_forms"))
    forms = work / labels.SURFACE_FORMS
    views = input_views(work, tuple(r for r in stage.reads if r != "surface_forms"))
    views["surface_forms"] = (
        parquet_view(work, str(forms))
        if forms.exists()
        else "select cast(null as varchar) as term, cast(null as varchar) as word, cast(null as bigint) as n "
        "where false"
    )
    compiled = Compiled(labels.SQL, {"n_terms": labels.LABEL_TERMS, "min_size": 2}, None, views)
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
    return rows, {"surface_forms": with_words, COMPILED: compiled}


RUNNERS = {
    "term_counts": _run_term_counts,
    "urls": run_sql,
    "terms": _run_terms,
    "bags": _run_bags,
    "signatures": _run_signatures,
    "buckets": _run_buckets,
    "candidates": _run_candidates,
    "bucket_sizes": _run_bucket_sizes,
    "pairs": run_pairs,
    "clusters": _run_clusters,
    "cluster_labels": _run_cluster_labels,
}
