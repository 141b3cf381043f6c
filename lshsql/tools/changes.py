"""What a run changed in the clusters: the rows of DIR/cluster_history.parquet for one run (`lshsql diff`),
with the clusters' centers and top terms as they are in the folder now."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from lshsql import manifest
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.lsh.cluster_ids import HISTORY
from lshsql.tools.explore import cluster_labels, fetch_arrow, open_work

EVENTS = ("new", "split", "grew", "shrank", "changed", "merged", "gone")

CHANGES = """
    select
        history.event,
        history.cluster_id,
        history.size_before,
        history.size_after,
        history.n_gained,
        history.n_lost,
        history.other_id,
        centers.center,
        centers.center_id
    from cluster_history as history
    left join (select cluster_id, center, center_id from clusters where is_center) as centers
        on history.cluster_id = centers.cluster_id
    where history.run = $run and list_contains($events, history.event)
    order by
        list_position($order, history.event),
        coalesce(history.size_after, history.size_before) desc,
        history.cluster_id
    limit $limit
"""


def latest_run(work: str | Path) -> int:
    """The last run of the clusters stage in the work folder (the manifest's, else the history's)."""
    work = Path(work)
    if not work.is_dir():
        raise InputError(f"{work}: no such work folder")
    if not (work / HISTORY).exists():
        raise InputError(f"{work}: no {HISTORY} yet; run `lshsql run --work {work}` first")
    recorded = manifest.read(work)["stages"].get("clusters", {}).get("run")
    if recorded is None:
        with db.connect(db.for_work(work)) as con:
            recorded = con.execute("select max(run) from read_parquet($p)", {"p": str(work / HISTORY)})
            recorded = recorded.fetchall()[0][0]
    return int(recorded or 0)


def cluster_changes(
    work: str | Path,
    run: int | None = None,
    events: tuple[str, ...] = EVENTS,
    limit: int | None = None,
    terms: int = 5,
    resources: db.Resources | None = None,
) -> pa.Table:
    """The clusters one run of the clusters stage changed (default: the latest run), new first, then split,
    grew, shrank, changed, merged and gone, larger first: event, cluster_id, size_before, size_after,
    n_gained, n_lost, other_id (split from / merged into), and the cluster's center and top terms as the
    folder holds it now (none for an id that ended). docs/outputs.md#cluster_history defines the events.

    Example:
        >>> cluster_changes("work/example", events=("split", "merged")).to_pandas()  # doctest: +SKIP
    """
    work = Path(work)
    last = latest_run(work)
    run = last if run is None else run
    if not 1 <= run <= last:
        raise ParamError(f"--run must be a run of this folder, 1 .. {last}, got {run}")
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise ParamError(f"--event must be among {', '.join(EVENTS)}, got {', '.join(unknown)}")
    with open_work(work, resources) as con:
        found = fetch_arrow(
            con,
            CHANGES,
            {"run": run, "events": list(events), "order": list(EVENTS), "limit": limit or 2**62},
        )
    center_ids = [i for i in found.column("center_id").to_pylist() if i is not None]
    words = cluster_labels(work, center_ids, n=terms, resources=resources) if center_ids else {}
    top_terms = pa.array(
        [words.get(i, []) for i in found.column("center_id").to_pylist()], pa.list_(pa.string())
    )
    return found.drop_columns(["center_id"]).append_column("top_terms", top_terms)


def change_counts(work: str | Path, run: int | None = None) -> dict[str, int]:
    """How many clusters each event touched in one run (default: the latest), every event a key."""
    work = Path(work)
    run = latest_run(work) if run is None else run
    with db.connect(db.for_work(work)) as con:
        rows = con.execute(
            "select event, count(*) from read_parquet($p) where run = $run group by event",
            {"p": str(work / HISTORY), "run": run},
        ).fetchall()
    return {event: 0 for event in EVENTS} | dict(rows)


def ended(con: duckdb.DuckDBPyConnection, cluster_id: int) -> tuple[str, int | None, int] | None:
    """How a cluster id that names no cluster now ended: (event, other_id, run) of its last 'merged' or
    'gone' row in the history; None when it has none (or the folder no history)."""
    if not _has_history(con):
        return None
    row = con.execute(
        "select event, other_id, run from cluster_history where cluster_id = $id "
        "and event in ('merged', 'gone') order by run desc limit 1",
        {"id": cluster_id},
    ).fetchall()
    return row[0] if row else None


def successor(con: duckdb.DuckDBPyConnection, cluster_id: int) -> int | None:
    """The cluster holding most of an ended id's members now: its merges followed (12 merged into 7, later 7
    into 3: 3); None when the id, or one it merged into, is gone."""
    seen = {cluster_id}
    current = cluster_id
    while (end := ended(con, current)) is not None and end[0] == "merged" and end[1] not in seen:
        current = end[1]
        seen.add(current)
        live = con.execute("select 1 from clusters where cluster_id = $id limit 1", {"id": current})
        if live.fetchall():
            return current
    return None


def ended_text(con: duckdb.DuckDBPyConnection, cluster_id: int) -> str | None:
    """'merged into cluster M in run R' (and where its members are now, when that moved on) or 'gone in
    run R'; None when the id did not end."""
    end = ended(con, cluster_id)
    if end is None:
        return None
    event, other, run = end
    if event != "merged":
        return f"gone in run {run}"
    now = successor(con, cluster_id)
    later = ", which ended since" if now is None else f", now cluster {now}" if now != other else ""
    return f"merged into cluster {other} in run {run}{later}"


def _has_history(con: duckdb.DuckDBPyConnection) -> bool:
    query = "select count(*) from duckdb_views() where view_name = 'cluster_history' and not internal"
    return bool(db.scalar(con, query))
