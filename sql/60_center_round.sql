-- stage:  center_round
-- reads:  active_edges(src, dst), active_nodes(node), centers(node)
-- writes: center_round(node, center)
-- order:  node
-- param:  none
--
-- One round of CENTER (Haveliwala et al. 2000, sec. 5), run until every node is decided. The sequential
-- algorithm scans the pairs, both directions, sorted by u: an unassigned u becomes a center and takes every
-- unassigned v it is paired with. Unrolled: a node is a center exactly when none of its smaller neighbours
-- is a center, and otherwise belongs to its smallest neighbouring center. A node can therefore be decided
-- once its smallest smaller neighbour that is not a member ("first_open") is known: none, and it is a
-- center; a center, and it joins it; undecided, and it waits. active_nodes are the undecided nodes,
-- active_edges (both directions) lead from undecided nodes and centers to undecided nodes (members have no
-- say), centers are the nodes decided as centers in earlier rounds. Each round decides at least the
-- smallest undecided node, so the loop ends.

with

first_open as (
    select
        active_edges.dst as node,
        min(active_edges.src) as first_open
    from active_edges
    where active_edges.src < active_edges.dst
    group by active_edges.dst
),

centers_new as (
    select active_nodes.node
    from active_nodes
    left join first_open on active_nodes.node = first_open.node
    where first_open.node is null
),

members_new as (
    select
        first_open.node,
        first_open.first_open as center
    from first_open
    left join centers on first_open.first_open = centers.node
    left join centers_new on first_open.first_open = centers_new.node
    where centers.node is not null or centers_new.node is not null
),

final as (
    select
        centers_new.node,
        centers_new.node as center
    from centers_new
    union all
    select
        members_new.node,
        members_new.center
    from members_new
)

select * from final order by node
