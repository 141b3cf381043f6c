-- stage:  center_round
-- reads:  active_edges(src, dst), active_nodes(node)
-- writes: center_round(node, center)
-- order:  node
-- param:  none
--
-- One round of CENTER (Haveliwala et al. 2000, sec. 5), run until every node is decided. The sequential
-- algorithm scans the pairs, both directions, sorted by u: an unassigned u becomes a center and takes every
-- unassigned v it is paired with. Unrolled, a node becomes a center exactly when none of its smaller
-- neighbours is one, and otherwise joins its smallest neighbouring center. Among undecided nodes
-- (active_nodes, and active_edges between them in both directions) a node with no undecided smaller
-- neighbour is therefore a center now, and its undecided neighbours join it now; everything else waits.
-- Each round decides at least the smallest undecided node, so the loop ends.

with

nodes_blocked as (
    select distinct active_edges.dst as node
    from active_edges
    where active_edges.src < active_edges.dst
),

centers_new as (
    select active_nodes.node
    from active_nodes
    left join nodes_blocked on active_nodes.node = nodes_blocked.node
    where nodes_blocked.node is null
),

members_new as (
    select
        active_edges.dst as node,
        min(active_edges.src) as center
    from active_edges
    inner join centers_new on active_edges.src = centers_new.node
    where active_edges.src < active_edges.dst
    group by active_edges.dst
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
