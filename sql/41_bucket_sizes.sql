-- stage:  bucket_sizes
-- reads:  buckets(band, bucket, url_id, n_members)
-- writes: bucket_sizes(n_members, n_buckets, n_pairs, n_pairs_emitted)
-- order:  n_members
-- param:  max_bucket BIGINT   the candidates stage's cap on bucket size
--
-- How many LSH buckets of each size there were, over all tables, with the pairs they hold and the pairs
-- the candidates stage took from them (fewer only for buckets over max_bucket). Shared buckets only.

with

-- One row per bucket: the member that names it (its smallest url_id).
buckets_shared as (
    select buckets.n_members
    from buckets
    where buckets.url_id = buckets.bucket
),

final as (
    select
        buckets_shared.n_members,
        count(*) as n_buckets,
        sum(buckets_shared.n_members * (buckets_shared.n_members - 1) / 2) as n_pairs,
        sum(
            case
                when buckets_shared.n_members <= $max_bucket
                    then buckets_shared.n_members * (buckets_shared.n_members - 1) / 2
                -- pairs with at least one member among the first max_bucket
                else $max_bucket * (2 * buckets_shared.n_members - $max_bucket - 1) / 2
            end
        ) as n_pairs_emitted
    from buckets_shared
    group by buckets_shared.n_members
)

select * from final order by n_members
