"""The clusters stage's loops: CENTER and connected components, as rounds of one SQL file each over the
table `edges` (both directions of every pair) until nothing changes. Each leaves `assignments(node,
center)` for sql/62_clusters.sql; `lshsql hierarchy` runs the component rounds too."""

from __future__ import annotations

import os
from pathlib import Path

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


# pair_share in a dedup's folder, where the pairs hold each set once: a cluster's document pairs are, for
# each pair of its sets, m(u) * m(v) (m: a set's documents, the first and its copies), and m (m - 1) / 2
# within each set (copies are Jaccard 1). sql/62_clusters.sql counted a copy's one pair with its first.
COPIES_PAIR_SHARE = """
with
copied_sets as (
    select copies.copy_of as url_id, count(*) + 1 as m from copies group by copies.copy_of
),
set_pairs as (
    select center_of_u.center as center_id, sum(coalesce(of_u.m, 1) * coalesce(of_v.m, 1)) as n
    from pairs_of_sets as pairs
    inner join assignments as center_of_u on pairs.u_id = center_of_u.node
    inner join assignments as center_of_v on pairs.v_id = center_of_v.node
    left join copied_sets as of_u on pairs.u_id = of_u.url_id
    left join copied_sets as of_v on pairs.v_id = of_v.url_id
    where center_of_u.center = center_of_v.center
    group by center_of_u.center
),
within_sets as (
    select assignments.center as center_id, sum(copied_sets.m * (copied_sets.m - 1) // 2) as n
    from copied_sets inner join assignments on copied_sets.url_id = assignments.node
    group by assignments.center
)
select clusters.* replace (
    case when clusters.size > 1 then
        cast(2 * (coalesce(set_pairs.n, 0) + coalesce(within_sets.n, 0)) as double)
        / cast(clusters.size * (clusters.size - 1) as double)
    end as pair_share
)
from read_parquet($clusters) as clusters
left join set_pairs on clusters.center_id = set_pairs.center_id
left join within_sets on clusters.center_id = within_sets.center_id
order by clusters.url_id
"""


def count_copies_pairs(engine: Engine, clusters: Path) -> None:
    """Rewrite the clusters file's pair_share with every document pair a dedup's copies stand for
    (COPIES_PAIR_SHARE), over the views copies and pairs_of_sets and the table assignments."""
    counted = clusters.with_name(f"counted-{clusters.name}")
    engine.materialize_query(COPIES_PAIR_SHARE, {"clusters": str(clusters)}, counted)
    os.replace(counted, clusters)
