-- stage:  clusters
-- reads:  assignments(node, center), urls(url_id, url), bags(url_id)
-- writes: clusters(url, url_id, center, center_id, size, is_center)
-- order:  url_id
-- param:  none
--
-- Flat clusters: every URL with a bag in exactly one cluster. assignments holds the nodes of the pairs
-- graph with their center (CENTER) or component label (components); a URL with no pair is a cluster of
-- its own. size is the number of URLs in the cluster.

with

nodes_with_bags as (
    select distinct bags.url_id
    from bags
),

nodes_assigned as (
    select
        nodes_with_bags.url_id,
        coalesce(assignments.center, nodes_with_bags.url_id) as center_id
    from nodes_with_bags
    left join assignments on nodes_with_bags.url_id = assignments.node
),

clusters_sized as (
    select
        nodes_assigned.url_id,
        nodes_assigned.center_id,
        count(*) over (partition by nodes_assigned.center_id) as size
    from nodes_assigned
),

final as (
    select
        url_member.url,
        clusters_sized.url_id,
        url_center.url as center,
        clusters_sized.center_id,
        clusters_sized.size,
        clusters_sized.url_id = clusters_sized.center_id as is_center
    from clusters_sized
    inner join urls as url_member on clusters_sized.url_id = url_member.url_id
    inner join urls as url_center on clusters_sized.center_id = url_center.url_id
)

select * from final order by url_id
