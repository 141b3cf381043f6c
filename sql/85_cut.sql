-- stage:  cut
-- reads:  cluster_tree(node_id, parent_id, is_leaf, similarity, parent_similarity, first_position, last_position), urls(url_id, url)
-- reads:  cluster_ids(center_id, cluster_id)
-- writes: cut(url, url_id, center, center_id, cluster_id, size, is_center)
-- order:  url_id
-- param:  threshold DOUBLE  similarity at which the single-link tree is cut
--
-- Flat single-link clusters at similarity $threshold, read off the cluster tree: the tops are the nodes
-- that hold together at the threshold (a leaf, or a merge with similarity >= $threshold) under a parent
-- that does not (a root, or parent_similarity < $threshold). Similarities never rise going up the tree, so
-- every leaf has exactly one top above it; the leaves under a node are the positions
-- first_position..last_position, so a leaf finds its top by a range join. The cluster is named by its
-- smallest url_id (center_id). Every URL of urls is in exactly one cluster: one that is not in the tree
-- (a leaf_ids that missed it) is a cluster of its own. cluster_id is its stable id (sql/62_cluster_ids.sql),
-- null where cluster_ids has none (the first pass of lshsql/lsh/tree.py's cut, which finds the members).

with

tops as (
    select
        cluster_tree.node_id as top_id,
        cluster_tree.first_position,
        cluster_tree.last_position
    from cluster_tree
    where
        (cluster_tree.is_leaf or cluster_tree.similarity >= $threshold)
        and (cluster_tree.parent_id is null or cluster_tree.parent_similarity < $threshold)
),

leaves_topped as (
    select
        leaves.node_id as url_id,
        tops.top_id
    from cluster_tree as leaves
    inner join tops
        on leaves.first_position between tops.first_position and tops.last_position
    where leaves.is_leaf
),

urls_topped as (
    select
        urls.url_id,
        leaves_topped.top_id,
        -- a URL not in the tree has no top: its own url_id stands for it, kept apart from top ids
        leaves_topped.top_id is null as is_untopped
    from urls
    left join leaves_topped on urls.url_id = leaves_topped.url_id
),

clusters_sized as (
    select
        urls_topped.url_id,
        min(urls_topped.url_id) over cluster as center_id,
        count(*) over cluster as size
    from urls_topped
    window cluster as (
        partition by urls_topped.is_untopped, coalesce(urls_topped.top_id, urls_topped.url_id)
    )
),

final as (
    select
        url_member.url,
        clusters_sized.url_id,
        url_center.url as center,
        clusters_sized.center_id,
        cluster_ids.cluster_id,
        clusters_sized.size,
        clusters_sized.url_id = clusters_sized.center_id as is_center
    from clusters_sized
    inner join urls as url_member on clusters_sized.url_id = url_member.url_id
    inner join urls as url_center on clusters_sized.center_id = url_center.url_id
    left join cluster_ids on clusters_sized.center_id = cluster_ids.center_id
)

select * from final order by url_id
