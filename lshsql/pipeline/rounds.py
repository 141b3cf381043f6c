"""The clusters stage's loops: CENTER and connected components, as rounds of one SQL file each over the
table `edges` (both directions of every pair) until nothing changes. Each leaves `assignments(node,
center)` for sql/62_clusters.sql; `lshsql hierarchy` runs the component rounds too."""

from __future__ import annotations

from lshsql import progress, sqlfiles
from lshsql.engines.base import Engine
from lshsql.errors import StageError

MAX_ROUNDS = 100_000
COPIES = "copies.parquet"  # `lshsql dedup`'s exact copies: url_id, copy_of (a run's folder has none)


def center(engine: Engine) -> int:
    """CENTER as rounds of sql/60_center_round.sql until every node of the pairs graph is decided."""
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
        progress.step("round", rounds)
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


def components(engine: Engine) -> int:
    """Connected components as rounds of sql/61_component_round.sql until no label changes."""
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
        progress.step("round", rounds)
        if not changed or rounds > MAX_ROUNDS:
            break
    engine.table("assignments", "select node, label as center from labels")
    return rounds


def add_copies(engine: Engine) -> None:
    """Put each exact copy of the view `copies(url_id, copy_of)` in the cluster of the document it copies,
    which stood for it in the pairs: whatever a copy would meet, the document before it meets first, so
    CENTER decides a copy as it decides that document, and components alike. A copied document without
    pairs is first made a cluster of its own."""
    engine.append(
        "assignments",
        "select distinct copies.copy_of, copies.copy_of from copies "
        "anti join assignments on copies.copy_of = assignments.node",
    )
    engine.append(
        "assignments",
        "select copies.url_id, assignments.center from copies "
        "inner join assignments on copies.copy_of = assignments.node",
    )
