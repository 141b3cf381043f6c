"""Stable cluster ids and DIR/cluster_history.parquet: the new clusters take the ids of the earlier ones by
shared member URLs (sql/62_cluster_ids.sql), and each run that remade the clusters appends what changed.

The earlier clusters are the file about to be replaced (DIR/clusters.parquet, or a cut's file): read into
the table cluster_ids before the new file is written beside it and renamed into place. A file from before
cluster ids existed lends its center_id as the id, so its clusters keep a number they were known by.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from lshsql import manifest, schemas, sqlfiles
from lshsql.engines.base import Engine

MATCH_SQL = "62_cluster_ids.sql"
HISTORY = "cluster_history.parquet"
BASIS = Path("reuse") / "clusters.parquet"  # the clusters the last recorded run wrote (keep_basis)
# every URL with a bag, in its cluster: its CENTER or component center, or alone (sql/62_clusters.sql's
# nodes_assigned, by URL)
CLUSTER_MEMBERS = (
    "select urls.url, coalesce(assignments.center, urls.url_id) as center_id from urls "
    "inner join (select distinct url_id from bags) as with_bags on urls.url_id = with_bags.url_id "
    "left join assignments on urls.url_id = assignments.node"
)
HISTORY_COLUMNS = {
    name: "varchar" if name == "event" else "bigint" for name, _, _ in schemas.COLUMNS["cluster_history"]
}
# a run's rows: every change but those of a URL alone before and after (one appearing, leaving, or
# joining a cluster, whose growth is that cluster's row)
RECORDED = "event <> 'unchanged' and greatest(coalesce(size_before, 0), coalesce(size_after, 0)) >= 2"
HISTORY_SELECT = (
    "select * from previous_history where run < $run union all "
    "select cast($run as bigint) as run, cluster_id, event, size_before, size_after, n_gained, n_lost, "
    f"other_id from cluster_ids where {RECORDED} order by run, cluster_id"
)


def number(
    engine: Engine, previous: Path, history: Path | None = None, run: int = 2**62, given: int = 0
) -> int:
    """Make the table cluster_ids from the view `members(url, center_id)` and the earlier clusters in the
    file `previous` (none when it is missing or unreadable); fresh ids start above `given` (the largest id
    the folder's finished runs gave out, kept in the manifest: an id that ended unrecorded, a URL alone
    that joined a cluster, is never given again), every id in `previous` and in the history file's runs
    before `run` (a dead run's are given again, as it is). Returns the largest id given out now."""
    id_column = _id_column(previous)
    if id_column:
        engine.register({"previous_clusters_file": str(previous)})
        engine.view("previous_clusters", f"select url, {id_column} as cluster_id from previous_clusters_file")
    else:
        engine.view("previous_clusters", _no_rows({"url": "varchar", "cluster_id": "bigint"}))
    _register_history(engine, history)
    last_id = engine.scalar(
        "select greatest(cast($given as bigint), "
        "(select coalesce(max(cluster_id), 0) from previous_clusters), "
        "(select coalesce(max(cluster_id), 0) from previous_history where run < $run))",
        {"run": run, "given": int(given)},
    )
    engine.to_table(sqlfiles.load(MATCH_SQL), {"last_id": int(last_id)}, "cluster_ids")
    return int(
        engine.scalar(
            "select greatest($last, coalesce(max(cluster_id), 0)) from cluster_ids", {"last": int(last_id)}
        )
    )


def record_history(engine: Engine, work: Path, run: int) -> int:
    """Rewrite DIR/cluster_history.parquet as its rows of runs before `run` and this run's changes (from
    the table cluster_ids), under a temporary name then renamed: never half-written. A run that died before
    the manifest recorded it has its rows replaced (or removed) when it runs again; a run that changed
    nothing leaves the file as it is (and the rows of one that died after renaming its clusters into
    place). Returns this run's rows."""
    out = work / HISTORY
    rows = int(engine.scalar(f"select count(*) from cluster_ids where {RECORDED}"))
    # rows of this run number in the file are a dead run's, whose clusters never took the place of the old
    stale = int(engine.scalar("select count(*) from previous_history where run >= $run", {"run": run}))
    if out.exists() and not rows and not stale:
        return 0
    fresh = work / "tmp" / HISTORY
    fresh.parent.mkdir(parents=True, exist_ok=True)
    engine.materialize_query(HISTORY_SELECT, {"run": run}, fresh, table="cluster_history")
    schemas.validate(fresh, "cluster_history")
    os.replace(fresh, out)
    return rows


def earlier_clusters(work: Path, out: Path, recorded: str | None) -> Path:
    """The clusters file this run's ids are matched to: `out`, or the basis kept beside it when a run that
    died before the manifest recorded it had already renamed its clusters into place (`out` is then not
    the file the manifest names, `recorded`): its changes are recorded against the last recorded run."""
    basis = work / BASIS
    if recorded and manifest.file_identity(out) != recorded and manifest.file_identity(basis) == recorded:
        return basis
    return out


def keep_basis(work: Path, out: Path) -> None:
    """Before `out` is replaced: keep the file it is now as DIR/reuse/clusters.parquet (a hard link, a copy
    where links are refused), put in place by a rename, so the basis is always a whole file."""
    if not out.exists():
        return
    basis = work / BASIS
    staged = work / "tmp" / "clusters_basis.parquet"
    staged.parent.mkdir(parents=True, exist_ok=True)
    staged.unlink(missing_ok=True)
    try:
        os.link(out, staged)
    except OSError:
        shutil.copyfile(out, staged)
    basis.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staged, basis)


def next_run(stages: dict, history: Path) -> int:
    """This run's number: one more than the last the manifest recorded (or the history holds)."""
    recorded = stages.get("clusters", {}).get("run")
    if recorded is None and history.exists():
        runs = schemas.read(history, columns=["run"]).column("run")
        recorded = max(runs.to_pylist(), default=0)
    return int(recorded or 0) + 1


def _register_history(engine: Engine, history: Path | None) -> None:
    if history is not None and history.exists():
        engine.register({"previous_history_file": str(history)})
        engine.view("previous_history", f"select {', '.join(HISTORY_COLUMNS)} from previous_history_file")
    else:
        engine.view("previous_history", _no_rows(HISTORY_COLUMNS))


def _id_column(path: Path) -> str | None:
    """The column that holds an earlier clusters file's ids, or None when there is no usable file."""
    try:
        names = pq.read_schema(path).names
    except (OSError, ValueError):
        return None
    if "url" not in names:
        return None
    return next((c for c in ("cluster_id", "center_id") if c in names), None)


def _no_rows(columns: dict[str, str]) -> str:
    """A select of no rows with these columns (a view: the name is a view whether a file is there or not)."""
    return "select " + ", ".join(f"cast(null as {t}) as {c}" for c, t in columns.items()) + " where false"
