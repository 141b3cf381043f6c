-- stage:  component_round
-- reads:  edges(src, dst), labels(node, label)
-- writes: component_round(node, label)
-- order:  node
-- param:  none
--
-- One round of connected components by minimum-label propagation: each node takes the smallest label
-- among itself and its neighbours. Repeated until no label changes; then the label of a node is the
-- smallest url_id of its component (single-link clusters at the pairs' threshold).

with

labels_offered as (
    select
        labels.node,
        labels.label
    from labels
    union all
    select
        edges.dst as node,
        labels.label
    from edges
    inner join labels on edges.src = labels.node
),

final as (
    select
        labels_offered.node,
        min(labels_offered.label) as label
    from labels_offered
    group by labels_offered.node
)

select * from final order by node
