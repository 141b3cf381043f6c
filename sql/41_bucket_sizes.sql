-- stage:  bucket_sizes
-- reads:  signatures(url_id, h0, ..., h{m-1})
-- writes: bucket_sizes(n_members, n_buckets, n_pairs, n_pairs_emitted)
-- order:  n_members
-- param:  max_bucket BIGINT   the candidates stage's cap on bucket size
-- template: bands, keys, hashed_keys as in candidates
--
-- How many LSH buckets of each size there were, over all tables, with the pairs they hold and the pairs
-- the candidates stage took from them (fewer only for buckets over max_bucket). Shared buckets only.

{%- set key_numbers = range(1, 2) if hashed_keys else keys %}
with

{% include "macros/band_keys.sql" %},

buckets_shared as (
    select
        count(*) as n_members
    from band_keys
    group by band_keys.band{% for key in key_numbers %}, band_keys.key{{ key }}{% endfor %}
    having count(*) > 1
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
