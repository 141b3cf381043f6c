-- stage:  candidates
-- reads:  buckets(band, bucket, url_id, n_members)
-- writes: candidates(u_id, v_id, n_bands)
-- order:  u_id, v_id
-- param:  max_bucket BIGINT   a bucket larger than this pairs each member only with its first max_bucket
-- param:  u_first BIGINT      the pairs of u_id from u_first to u_last only: the runner's range (all ids,
-- param:  u_last BIGINT       or one of several ranges when the pairs would not fit in memory at once)
--
-- LSH candidate pairs (Haveliwala et al. 2000, sec. 4): URLs that share a bucket in at least one of the l
-- tables, found by a self-join of the shared buckets' members instead of comparing all pairs. n_bands
-- counts the tables in which the pair collided. A bucket of thousands of URLs (boilerplate anchors) would
-- give a quadratic number of pairs, so over max_bucket members a member is paired only with the bucket's
-- first max_bucket members in URL order: at most max_bucket * size pairs. bucket_sizes counts what was cut.

with

-- Only members of oversized buckets need a rank; the first max_bucket of them pair with everyone.
members_ranked as (
    select
        buckets.*,
        row_number() over (partition by buckets.band, buckets.bucket order by buckets.url_id) as member_rank
    from buckets
    where buckets.n_members > $max_bucket
),

pairs_in_buckets as (
    select
        member_a.url_id as u_id,
        member_b.url_id as v_id
    from buckets as member_a
    inner join buckets as member_b
        on member_a.band = member_b.band
            and member_a.bucket = member_b.bucket
            and member_a.url_id < member_b.url_id
    where member_a.n_members <= $max_bucket and member_a.url_id between $u_first and $u_last

    union all

    select
        member_a.url_id as u_id,
        member_b.url_id as v_id
    from members_ranked as member_a
    inner join members_ranked as member_b
        on member_a.band = member_b.band
            and member_a.bucket = member_b.bucket
            and member_a.url_id < member_b.url_id
    where member_a.member_rank <= $max_bucket and member_a.url_id between $u_first and $u_last
),

final as (
    select
        pairs_in_buckets.u_id,
        pairs_in_buckets.v_id,
        count(*) as n_bands
    from pairs_in_buckets
    group by pairs_in_buckets.u_id, pairs_in_buckets.v_id
)

select * from final order by u_id, v_id
