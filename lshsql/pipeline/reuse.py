"""Reuse of the previous run's signatures, buckets and pairs in the same work folder, for the URLs whose bag
did not change: a grown crawl or bags table recomputes only what the new and changed URLs can alter.

A URL's signature depends only on its bag as the signatures stage reads it, the multiset of (term_hash,
copies = round(weight), at least 1), and a pair's candidacy, n_bands, n_agree and exact similarity only on
the two URLs' signatures and bags. So the signatures of URLs whose bag digest is unchanged are the previous
rows (url_id remapped by URL), and the pairs between two such URLs are the previous pairs between them,
as long as the parameters, the SQL files and the versions are the same (a key) and neither URL is in an
LSH bucket capped by --max-bucket, in this run or the previous one (a capped bucket pairs a member with its
first members, so with other URLs): those URLs count as changed for the pairs. An unchanged URL also keeps
its band keys, so the buckets without a changed member are the previous buckets, less the URLs that left.
The digests are taken after the bags stage, which always runs in full: document frequencies and the
TF-IDF weights are recomputed, and a bag that did not change after rounding to copies is reused whatever
the weighting, so the result is the one of a run from scratch.

DIR/reuse/ holds, per stage, its last output (a hard link: a stage's next write makes a new file), the
digests of the bags it was made from, and a JSON state naming both by manifest.file_identity; a state
that does not match its files (a killed run, a replaced table) is not used, and the stage runs in full.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lshsql import __version__, manifest, schemas, sqlfiles
from lshsql.engines.arrays import integer_values
from lshsql.engines.base import Engine
from lshsql.errors import InputError
from lshsql.params import Params
from lshsql.pipeline.stages import STAGES, output_path

FOLDER = "reuse"
DIGESTS = "digests.parquet"  # the bags of the current signatures, written by the signatures stage
KEYED_STAGES = {
    "signatures": ("signatures",),
    "buckets": ("signatures", "buckets"),
    "pairs": ("signatures", "buckets", "candidates", "pairs"),
}
BATCH_ROWS = 1 << 20
COLUMNS = ("url_id", "term_hash", "weight")  # of the bags, what their digests are made of
DIGEST_FORM = 2  # the digests' formula (bag_digests): another one makes every bag look changed


@dataclass(frozen=True)
class Basis:
    """A previous output kept for reuse, with the digests of the bags it was made from."""

    table: Path
    digests: Path


def key(name: str, params: Params) -> str:
    """What a stage's output depends on besides the bags: the parameters and SQL files of the stages from
    signatures to it, and the versions of lshsql and the engines' libraries."""
    stages = [stage for stage in STAGES if stage.name in KEYED_STAGES[name]]
    folder = sqlfiles.sql_dir()
    files = [folder / f for stage in stages for f in stage.files] + sorted((folder / "macros").glob("*.sql"))
    return manifest.fingerprint(
        {
            "version": __version__,
            "digest": DIGEST_FORM,
            "versions": manifest.versions(),
            "params": {f: getattr(params, f) for stage in stages for f in stage.fields},
            "min_agree": params.min_agree,  # derived in code (params.py), not only from the fields
            "sql": hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest(),
        }
    )


def bag_digests(engine: Engine, work: Path, out: Path) -> int:
    """Write (url_id, url, digest) for each URL with a bag, the digest a 64-bit sum of a mix of each
    (term_hash, copies) (engines/digests.py): equal for equal bags whatever their row order. The sums are
    taken in batches of bags (memory holds one batch and two numbers per URL); DuckDB joins the URLs to
    them."""
    from lshsql.engines.digests import add_bag_digests  # numba: imported when a run signs bags

    n_urls = pq.ParquetFile(output_path(work, "urls")).metadata.num_rows  # url_id 1..N (sql/15_urls.sql)
    sums = np.zeros(n_urls + 1, dtype=np.uint64)
    counts = np.zeros(n_urls + 1, dtype=np.int64)
    # on one thread, which measured faster for this loop
    bags = schemas.streamed(output_path(work, "bags"))
    for batch in bags.iter_batches(BATCH_ROWS, columns=list(COLUMNS), use_threads=False):
        ids, terms, weights = (_values(batch.column(name), name, work) for name in COLUMNS)
        if len(ids) and (ids.min() < 1 or ids.max() > n_urls):  # the kernel indexes sums unchecked
            outside = int(ids.min() if ids.min() < 1 else ids.max())
            raise InputError(
                f"{output_path(work, 'bags')}: url_id {outside} is not one of urls.parquet's 1..{n_urls}"
            )
        add_bag_digests(ids, terms, weights, sums, counts)
    with_bag = np.flatnonzero(counts)
    by_id = out.with_name("digests_by_id.parquet")
    by_id.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"url_id": _int64s(with_bag), "digest": _int64s(sums[with_bag])}), by_id)
    return engine.materialize_query(
        "select digests.url_id, urls.url, digests.digest from read_parquet($digests) as digests "
        "inner join read_parquet($urls) as urls on digests.url_id = urls.url_id order by digests.url_id",
        {"digests": str(by_id), "urls": str(output_path(work, "urls"))},
        out,
    )


def _values(column: pa.Array, name: str, work: Path) -> np.ndarray:
    """A bags column without nulls as numpy, read from its buffers: pyarrow's to_numpy imports pandas where
    it is installed, a cost every signing run would pay."""
    if column.null_count:
        raise InputError(f"{output_path(work, 'bags')}: its column {name} holds nulls")
    if pa.types.is_integer(column.type):
        return integer_values(column)[0]
    if pa.types.is_float64(column.type):
        start = column.offset
        return np.frombuffer(column.buffers()[1], dtype=np.float64)[start : start + len(column)]
    return column.to_numpy(zero_copy_only=False)


def _int64s(values: np.ndarray) -> pa.Array:
    """A BIGINT Arrow array on the numpy buffer: pa.array(numpy) would import pandas, which nothing needs."""
    data = np.ascontiguousarray(values).view(np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def basis(work: Path, name: str, stage_key: str) -> tuple[Basis | None, str]:
    """The kept output of stage `name` and its digests when made with this key and still whole, else
    None and why not (for the summary)."""
    folder = work / FOLDER
    try:
        state = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, ""  # a first run: nothing to say
    kept = Basis(folder / f"{name}.parquet", folder / f"{name}_{DIGESTS}")
    if state.get("key") != stage_key:
        return None, "the previous run had other parameters or versions"
    identities = (manifest.file_identity(kept.table), manifest.file_identity(kept.digests))
    if identities != (state.get("table"), state.get("digests")):
        return None, "the previous run's files changed"
    return kept, ""


def keep(work: Path, name: str, stage_key: str, table: Path, digests: Path) -> None:
    """Keep `table` (just written) and the digests of its bags as the next run's basis for stage `name`.
    The state goes first and comes back last, so a run killed in between leaves no basis, never a wrong
    one."""
    folder = work / FOLDER
    folder.mkdir(exist_ok=True)
    state_path = folder / f"{name}.json"
    state_path.unlink(missing_ok=True)
    kept = Basis(folder / f"{name}.parquet", folder / f"{name}_{DIGESTS}")
    _link(table, kept.table)
    _link(digests, kept.digests)
    state = {
        "key": stage_key,
        "table": manifest.file_identity(kept.table),
        "digests": manifest.file_identity(kept.digests),
    }
    tmp = state_path.with_name(f"{state_path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, state_path)


def _written_here(work: Path, names: tuple[str, ...]) -> bool:
    """These tables are the files their stages wrote (manifest.json), not tables of the user's own put in
    their place: reuse trusts what the stages guarantee (one row per URL, candidates from the buckets)."""
    stages = manifest.read(work)["stages"]
    return all(
        stages.get(name, {}).get("file") is not None
        and stages[name]["file"] == manifest.file_identity(output_path(work, name))
        for name in names
    )


def _signed_here(engine: Engine, work: Path, params: Params, names: tuple[str, ...]) -> bool:
    """Whether a later stage may reuse: on DuckDB, the current signatures are the signatures stage's kept
    basis (their digests are the current ones), and the tables `names` are the files their stages wrote."""
    signed, _ = basis(work, "signatures", key("signatures", params))
    return (
        engine.name == "duckdb"
        and signed is not None
        and manifest.file_identity(output_path(work, "signatures")) == manifest.file_identity(signed.table)
        and _written_here(work, names)
    )


def forget(work: Path, name: str) -> None:
    """No basis for stage `name`: its output was made without digests to reuse it by."""
    (work / FOLDER / f"{name}.json").unlink(missing_ok=True)


def _link(source: Path, target: Path) -> None:
    """A hard link (no copy of the data; every stage write makes a new file), or a copy where the file
    system has none."""
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def current_digests(work: Path) -> Path:
    """The digests of the bags the current signatures were made from (the signatures stage's basis)."""
    return work / FOLDER / f"signatures_{DIGESTS}"


def unchanged(engine: Engine, table: str, digests: Path, previous: Path) -> tuple[int, int]:
    """Temp table `table`(url_id, url, old_id): the URLs of `digests` whose bag has the same digest in
    `previous`, with their url_id there; returns (those URLs, all URLs of `digests`)."""
    engine.table(
        table,
        "select now.url_id, now.url, before.url_id as old_id from read_parquet($now) as now "
        "inner join read_parquet($before) as before on now.url = before.url and now.digest = before.digest",
        {"now": str(digests), "before": str(previous)},
    )
    total = engine.scalar("select count(*) from read_parquet($now)", {"now": str(digests)})
    return engine.scalar(f"select count(*) from {table}"), total


def merge_signatures(engine: Engine, kept: Basis, fresh: Path, out: Path) -> int:
    """signatures.parquet: the previous rows of the unchanged URLs (table lshsql_unchanged), renumbered,
    and the fresh rows of the others, in url_id order as the stage writes them."""
    names = pq.read_schema(kept.table).names
    columns = {name: f"previous.{name}" for name in names} | {"url_id": "unchanged.url_id"}
    source = (
        "read_parquet($previous) as previous "
        "inner join lshsql_unchanged as unchanged on previous.url_id = unchanged.old_id"
    )
    return _merge(engine, kept.table, columns, source, fresh, "url_id", out, "uncompressed")


def merge_pairs(engine: Engine, kept: Basis, fresh: Path, out: Path, compression: str) -> int:
    """pairs.parquet: the previous pairs between two unchanged URLs (table lshsql_unchanged), with their
    new url_ids, and the fresh pairs of the candidates involving a changed URL, in (u_id, v_id) order."""
    names = pq.read_schema(kept.table).names
    columns = {name: f"previous.{name}" for name in names} | {
        "u_id": "url_u.url_id",
        "v_id": "url_v.url_id",
    }
    source = (
        "read_parquet($previous) as previous "
        "inner join lshsql_unchanged as url_u on previous.u = url_u.url "
        "inner join lshsql_unchanged as url_v on previous.v = url_v.url"
    )
    return _merge(engine, kept.table, columns, source, fresh, "u_id, v_id", out, compression)


def _merge(
    engine: Engine,
    previous: Path,
    columns: dict[str, str],
    source: str,
    fresh: Path,
    order: str,
    out: Path,
    compression: str,
) -> int:
    """The kept rows (`columns` from `source`) and the fresh file's, in `order`, written as the stage
    writes them, byte for byte: DuckDB marks a column written from Parquet as required when the file's
    statistics show no NULL, so a column the stage writes as nullable (as the fresh file, which the stage's
    own select wrote, says; the previous output when it is empty) is passed through a CASE that may give
    NULL, and an empty fresh file (no statistics) is left out."""
    has_fresh = pq.ParquetFile(fresh).metadata.num_rows > 0
    nullable = {field.name for field in pq.read_schema(fresh if has_fresh else previous) if field.nullable}
    select = ", ".join(
        f"case when {expr} is not null then {expr} end as {name}" if name in nullable else f"{expr} as {name}"
        for name, expr in columns.items()
    )
    query = f"select {select} from {source}"
    params = {"previous": str(previous)}
    if has_fresh:
        query += " union all select * from read_parquet($fresh)"
        params["fresh"] = str(fresh)
    return engine.materialize_query(f"{query} order by {order}", params, out, compression)


def signatures(
    engine: Engine, work: Path, params: Params, compute: Callable[[Path], int]
) -> tuple[int, dict]:
    """DIR/signatures.parquet: `compute(out)` (the stage's select over the view `bags`) for every URL, or,
    with a basis, for the URLs whose bag changed only, the others' rows taken from the basis. Returns the
    rows and what the manifest records of the reuse."""
    try:
        return _signatures(engine, work, params, compute)
    finally:  # DIR/tmp/reuse holds the fresh rows and digests, linked into DIR/reuse when kept
        shutil.rmtree(work / "tmp" / "reuse", ignore_errors=True)


def _signatures(
    engine: Engine, work: Path, params: Params, compute: Callable[[Path], int]
) -> tuple[int, dict]:
    out = output_path(work, "signatures")
    stage_key = key("signatures", params)
    digests = work / "tmp" / "reuse" / DIGESTS
    if engine.name != "duckdb" or not _written_here(work, ("urls",)):
        forget(work, "signatures")
        return compute(out), {}
    bag_digests(engine, work, digests)
    kept, reason = basis(work, "signatures", stage_key)
    if kept is None:
        rows = compute(out)
        keep(work, "signatures", stage_key, out, digests)
        return rows, {"reuse": {"refused": reason}} if reason else {}
    reused, total = unchanged(engine, "lshsql_unchanged", digests, kept.digests)
    if reused == 0:
        rows = compute(out)
        keep(work, "signatures", stage_key, out, digests)
        return rows, {"reuse": {"urls": total, "computed": total, "reused": 0}}
    fresh = work / "tmp" / "reuse" / "signatures_changed.parquet"
    engine.register({"lshsql_bags_all": str(output_path(work, "bags"))})
    # the changed URLs, a small table to semi-join (measured faster than `not in` the unchanged ones)
    engine.table(
        "lshsql_changed",
        "select url_id from read_parquet($now) anti join lshsql_unchanged using (url_id)",
        {"now": str(digests)},
    )
    engine.view("bags", "select * from lshsql_bags_all where url_id in (select url_id from lshsql_changed)")
    try:
        compute(fresh)
    finally:  # a temp view would shadow the next stage's view of bags
        engine.view("bags", "select * from lshsql_bags_all")
    rows = merge_signatures(engine, kept, fresh, out)
    keep(work, "signatures", stage_key, out, digests)
    return rows, {"reuse": {"urls": total, "computed": total - reused, "reused": reused}}


def buckets(
    engine: Engine,
    work: Path,
    params: Params,
    compute: Callable[[Path], int],
    compute_reused: Callable[[Path], int],
) -> tuple[int, dict]:
    """DIR/buckets.parquet: `compute(out)` (sql/35_buckets.sql over all band keys), or, with a basis,
    `compute_reused(out)` (sql/35_buckets_reused.sql over the views it reads: the previous buckets, the
    unchanged URLs, the changed URLs' signatures), which writes the same rows."""
    out = output_path(work, "buckets")
    stage_key = key("buckets", params)
    if not _signed_here(engine, work, params, ("signatures",)):
        forget(work, "buckets")
        return compute(out), {}
    digests = current_digests(work)
    kept, reason = basis(work, "buckets", stage_key)
    # an empty previous file has no statistics, so its columns would come out nullable: not a basis
    if kept is None or not pq.ParquetFile(kept.table).metadata.num_rows:
        rows = compute(out)
        keep(work, "buckets", stage_key, out, digests)
        return rows, {"reuse": {"refused": reason}} if reason else {}
    reused, total = unchanged(engine, "lshsql_unchanged", digests, kept.digests)
    if not reused:
        rows = compute(out)
        keep(work, "buckets", stage_key, out, digests)
        return rows, {"reuse": {"urls": total, "computed": total, "reused": 0}}
    # a table, read once per LSH table of a batch; emptied after, so as not to hold memory in later stages
    engine.table(
        "lshsql_changed_signatures", "select * from signatures anti join lshsql_unchanged using (url_id)"
    )
    engine.register({"previous_buckets": str(kept.table)})
    engine.view("unchanged", "select url_id, old_id from lshsql_unchanged")
    engine.view("changed_signatures", "select * from lshsql_changed_signatures")
    try:
        rows = compute_reused(out)
    finally:
        engine.table("lshsql_changed_signatures", "select url_id from signatures where false")
    keep(work, "buckets", stage_key, out, digests)
    return rows, {"reuse": {"urls": total, "computed": total - reused, "reused": reused}}


def pairs(
    engine: Engine,
    work: Path,
    params: Params,
    compute: Callable[[str, Path], tuple[int, dict]],
) -> tuple[int, dict]:
    """DIR/pairs.parquet: `compute(candidates, out)` for all candidates, or, with a basis, for the
    candidates involving a URL whose bag changed since the basis or that is in a bucket capped by
    --max-bucket now or was then, the pairs between the other URLs taken from it. No basis when the current
    signatures have no digests (made on another engine, or before this run could keep them)."""
    try:
        return _pairs(engine, work, params, compute)
    finally:
        shutil.rmtree(work / "tmp" / "reuse", ignore_errors=True)


def _pairs(
    engine: Engine,
    work: Path,
    params: Params,
    compute: Callable[[str, Path], tuple[int, dict]],
) -> tuple[int, dict]:
    out = output_path(work, "pairs")
    candidates = str(output_path(work, "candidates"))
    stage_key = key("pairs", params)
    kept, reason = basis(work, "pairs", stage_key)
    if not _signed_here(engine, work, params, ("signatures", "buckets", "candidates")):
        forget(work, "pairs")
        return compute(candidates, out)
    digests = _uncapped_digests(engine, work, params.max_bucket)
    if kept is None or not pq.ParquetFile(kept.table).metadata.num_rows:
        rows, extra = compute(candidates, out)
        keep(work, "pairs", stage_key, out, digests)
        return rows, extra | ({"reuse": {"refused": reason}} if reason else {})
    unchanged(engine, "lshsql_unchanged", digests, kept.digests)
    changed = work / "tmp" / "reuse" / "candidates_changed.parquet"
    verified = engine.materialize_query(
        "select * from read_parquet($candidates) as candidates "
        "where u_id not in (select url_id from lshsql_unchanged) "
        "or v_id not in (select url_id from lshsql_unchanged) order by u_id, v_id",
        {"candidates": candidates},
        changed,
    )
    fresh = work / "tmp" / "reuse" / "pairs_changed.parquet"
    _, extra = compute(str(changed), fresh)
    rows = merge_pairs(engine, kept, fresh, out, next(s for s in STAGES if s.name == "pairs").compression)
    fresh_rows = engine.scalar("select count(*) from read_parquet($p)", {"p": str(fresh)})
    keep(work, "pairs", stage_key, out, digests)
    return rows, extra | {"reuse": {"candidates_verified": verified, "pairs_kept": rows - fresh_rows}}


def _uncapped_digests(engine: Engine, work: Path, max_bucket: int) -> Path:
    """The current digests, with no digest (NULL, equal to nothing) for the members of a bucket over
    max_bucket: their pairs are verified again in this run and in the next, whatever their bags."""
    buckets = {"buckets": str(output_path(work, "buckets")), "cap": max_bucket}
    capped = "select url_id from read_parquet($buckets) where n_members > $cap"
    if not engine.scalar(f"select count(*) > 0 from ({capped})", buckets):
        return current_digests(work)
    out = work / "tmp" / "reuse" / f"pairs_{DIGESTS}"
    out.parent.mkdir(parents=True, exist_ok=True)
    engine.materialize_query(
        "select url_id, url, case when url_id in (" + capped + ") then null else digest end as digest "
        "from read_parquet($digests) order by url_id",
        buckets | {"digests": str(current_digests(work))},
        out,
    )
    return out


def summary_line(name: str, entry: dict) -> str | None:
    """One line of the run's summary: how much of a stage was reused, or why nothing was."""
    reuse = entry.get("reuse")
    if not reuse:
        return None
    if "refused" in reuse:
        return f"{name}: all recomputed ({reuse['refused']})"
    if name == "signatures":
        return (
            f"signatures: {reuse['computed']:,} of {reuse['urls']:,} URLs computed, "
            f"{reuse['reused']:,} reused from the previous run"
        )
    if name == "buckets":
        return (
            f"buckets: the band keys of {reuse['computed']:,} changed URLs looked up, the previous buckets "
            f"of the {reuse['reused']:,} others kept"
        )
    return (
        f"pairs: {reuse['candidates_verified']:,} candidates of changed URLs verified, "
        f"{reuse['pairs_kept']:,} pairs of unchanged URLs kept from the previous run"
    )
