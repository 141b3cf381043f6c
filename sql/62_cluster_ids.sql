-- stage:  cluster_ids
-- reads:  members(url, center_id), previous_clusters(url, cluster_id)
-- writes: cluster_ids(center_id, cluster_id, event, size_before, size_after, n_gained, n_lost, other_id)
-- order:  cluster_id
-- param:  last_id BIGINT  the largest cluster id given out so far in the work folder (0 for none)
--
-- Stable cluster ids. The clusters just found (members: each URL with its cluster's center_id) take the
-- ids of the earlier clusters (previous_clusters) by shared member URLs, never by url_id, which shifts when
-- a URL is added. An earlier id's heir is the new cluster holding most of its members (ties: the smaller
-- center_id, that is the smaller center URL); a new cluster takes, of the earlier ids whose heir it is,
-- the one it shares most members with (ties: the smaller id). So each id goes to at most one cluster; in a
-- split the part holding most members keeps it, in a merge the cluster holding most of the new one's
-- members does. Every other new cluster gets a fresh id, $last_id + 1, 2, ... in order of center_id.
--
-- One row per new cluster, and one per earlier id no new cluster took (center_id null). event: unchanged,
-- grew, shrank, changed (gained and lost members) for a kept id; new (no member was in an earlier
-- cluster) or split (some were: other_id is the earlier id it took most of them from, ties the smaller)
-- for a fresh id; merged (other_id: the id of the cluster holding most of its members) or gone (none of
-- its members is in a cluster now) for an id that ended.

with

new_sizes as (
    select
        members.center_id,
        count(*) as size_after
    from members
    group by members.center_id
),

old_sizes as (
    select
        previous_clusters.cluster_id,
        count(*) as size_before
    from previous_clusters
    group by previous_clusters.cluster_id
),

shared_members as (
    select
        members.center_id,
        previous_clusters.cluster_id,
        count(*) as n_shared
    from members
    inner join previous_clusters on members.url = previous_clusters.url
    group by members.center_id, previous_clusters.cluster_id
),

ranked_overlaps as (
    select
        shared_members.center_id,
        shared_members.cluster_id,
        shared_members.n_shared,
        row_number() over (
            partition by shared_members.cluster_id
            order by shared_members.n_shared desc, shared_members.center_id
        ) as heir_rank,
        row_number() over (
            partition by shared_members.center_id
            order by shared_members.n_shared desc, shared_members.cluster_id
        ) as source_rank
    from shared_members
),

heirs_ranked as (
    select
        ranked_overlaps.center_id,
        ranked_overlaps.cluster_id,
        ranked_overlaps.n_shared,
        row_number() over (
            partition by ranked_overlaps.center_id
            order by ranked_overlaps.n_shared desc, ranked_overlaps.cluster_id
        ) as keep_rank
    from ranked_overlaps
    where ranked_overlaps.heir_rank = 1
),

kept as (
    select
        heirs_ranked.center_id,
        heirs_ranked.cluster_id,
        heirs_ranked.n_shared
    from heirs_ranked
    where heirs_ranked.keep_rank = 1
),

unmatched as (
    select new_sizes.center_id
    from new_sizes
    left join kept on new_sizes.center_id = kept.center_id
    where kept.center_id is null
),

fresh as (
    select
        unmatched.center_id,
        cast($last_id as bigint) + row_number() over (order by unmatched.center_id) as cluster_id
    from unmatched
),

sources as (
    select
        ranked_overlaps.center_id,
        ranked_overlaps.cluster_id
    from ranked_overlaps
    where ranked_overlaps.source_rank = 1
),

new_clusters as (
    select
        new_sizes.center_id,
        coalesce(kept.cluster_id, fresh.cluster_id) as cluster_id,
        case
            when kept.cluster_id is null and sources.cluster_id is null then 'new'
            when kept.cluster_id is null then 'split'
            when kept.n_shared = old_sizes.size_before and kept.n_shared = new_sizes.size_after
                then 'unchanged'
            when kept.n_shared = old_sizes.size_before then 'grew'
            when kept.n_shared = new_sizes.size_after then 'shrank'
            else 'changed'
        end as event,
        old_sizes.size_before,
        new_sizes.size_after,
        new_sizes.size_after - coalesce(kept.n_shared, 0) as n_gained,
        coalesce(old_sizes.size_before - kept.n_shared, 0) as n_lost,
        case when kept.cluster_id is null then sources.cluster_id end as other_id
    from new_sizes
    left join kept on new_sizes.center_id = kept.center_id
    left join fresh on new_sizes.center_id = fresh.center_id
    left join old_sizes on kept.cluster_id = old_sizes.cluster_id
    left join sources on new_sizes.center_id = sources.center_id
),

ended as (
    select
        cast(null as bigint) as center_id,
        old_sizes.cluster_id,
        case when heir.cluster_id is null then 'gone' else 'merged' end as event,
        old_sizes.size_before,
        cast(null as bigint) as size_after,
        cast(0 as bigint) as n_gained,
        old_sizes.size_before as n_lost,
        heir.cluster_id as other_id
    from old_sizes
    left join kept on old_sizes.cluster_id = kept.cluster_id
    left join ranked_overlaps
        on old_sizes.cluster_id = ranked_overlaps.cluster_id and ranked_overlaps.heir_rank = 1
    left join new_clusters as heir on ranked_overlaps.center_id = heir.center_id
    where kept.cluster_id is null
),

final as (
    select * from new_clusters
    union all
    select * from ended
)

select * from final order by cluster_id
