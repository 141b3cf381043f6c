-- stage:  clusters
-- reads:  assignments(node, center), urls(url_id, url), bags(url_id), pairs(u, v, similarity, u_id, v_id)
-- reads:  cluster_ids(center_id, cluster_id)
-- writes: clusters(url, url_id, center, center_id, cluster_id, size, is_center, min_pair_similarity, min_pair_u, min_pair_v, pair_share)
-- order:  url_id
-- param:  none
--
-- Flat clusters: every URL with a bag in exactly one cluster. assignments holds the nodes of the pairs
-- graph with their center (CENTER) or component label (components); a URL with no pair is a cluster of
-- its own. size is the number of URLs in the cluster. cluster_id is its stable id (sql/62_cluster_ids.sql).
--
-- Chaining diagnostics, repeated on each member row like size: the least similar pair of the pairs table
-- within the cluster (ties: the smallest u_id, v_id) and pair_share, the share of its size * (size - 1) / 2
-- member pairs that are pairs (at or above the threshold): 1.0 for a clique, low for a chain. A singleton
-- has no member pair, so all four are null. Only the pairs are read, joined to the assignments, never the
-- members to each other.

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

pairs_within as (
    select
        center_of_u.center as center_id,
        pairs.u,
        pairs.v,
        pairs.similarity,
        row_number() over cluster_pairs as pair_rank,
        count(*) over (partition by center_of_u.center) as n_pairs
    from pairs
    inner join assignments as center_of_u on pairs.u_id = center_of_u.node
    inner join assignments as center_of_v on pairs.v_id = center_of_v.node
    where center_of_u.center = center_of_v.center
    window cluster_pairs as (
        partition by center_of_u.center
        order by pairs.similarity, pairs.u_id, pairs.v_id
    )
),

least_pairs as (
    select
        pairs_within.center_id,
        pairs_within.similarity as min_pair_similarity,
        pairs_within.u as min_pair_u,
        pairs_within.v as min_pair_v,
        pairs_within.n_pairs
    from pairs_within
    where pairs_within.pair_rank = 1
),

final as (
    select
        url_member.url,
        clusters_sized.url_id,
        url_center.url as center,
        clusters_sized.center_id,
        cluster_ids.cluster_id,
        clusters_sized.size,
        clusters_sized.url_id = clusters_sized.center_id as is_center,
        least_pairs.min_pair_similarity,
        least_pairs.min_pair_u,
        least_pairs.min_pair_v,
        -- both operands whole numbers held exactly in a double: one rounding, the same on every engine
        case
            when clusters_sized.size > 1
                then
                    cast(2 * coalesce(least_pairs.n_pairs, 0) as double)
                    / cast(clusters_sized.size * (clusters_sized.size - 1) as double)
        end as pair_share
    from clusters_sized
    inner join urls as url_member on clusters_sized.url_id = url_member.url_id
    inner join urls as url_center on clusters_sized.center_id = url_center.url_id
    inner join cluster_ids on clusters_sized.center_id = cluster_ids.center_id
    left join least_pairs on clusters_sized.center_id = least_pairs.center_id
)

select * from final order by url_id
