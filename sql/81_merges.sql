-- stage:  merges
-- reads:  level_pairs(u_id, v_id, similarity), memberships(url_id, cluster_id)
-- writes: merges(level, threshold, u_id, v_id, cluster_u, cluster_v, similarity)
-- order:  cluster_u, cluster_v
-- param:  level INTEGER      r, the band size of this level
-- param:  threshold DOUBLE   t, the similarity a candidate pair needed (recorded with each merge)
--
-- The merges of one level of LSH single-link clustering: the candidate pairs that reached the threshold
-- (level_pairs, the pairs stage's file run on this level's candidates), as edges between the clusters of
-- their two documents. Two clusters joined by several pairs keep one edge, the most similar (ties: the
-- smallest u_id, v_id), since single link merges two clusters at the similarity of their closest pair.
-- Pairs within one cluster cannot occur (one representative per cluster per bucket).

with

pairs_between as (
    select
        level_pairs.u_id,
        level_pairs.v_id,
        cluster_of_u.cluster_id as cluster_u,
        cluster_of_v.cluster_id as cluster_v,
        level_pairs.similarity,
        row_number() over (
            partition by
                least(cluster_of_u.cluster_id, cluster_of_v.cluster_id),
                greatest(cluster_of_u.cluster_id, cluster_of_v.cluster_id)
            order by level_pairs.similarity desc, level_pairs.u_id, level_pairs.v_id
        ) as pair_rank
    from level_pairs
    inner join memberships as cluster_of_u on level_pairs.u_id = cluster_of_u.url_id
    inner join memberships as cluster_of_v on level_pairs.v_id = cluster_of_v.url_id
    where cluster_of_u.cluster_id <> cluster_of_v.cluster_id
),

final as (
    select
        cast($level as integer) as level,
        cast($threshold as double) as threshold,
        pairs_between.u_id,
        pairs_between.v_id,
        pairs_between.cluster_u,
        pairs_between.cluster_v,
        pairs_between.similarity
    from pairs_between
    where pairs_between.pair_rank = 1
)

select * from final order by cluster_u, cluster_v
