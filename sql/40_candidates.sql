-- stage:  candidates
-- reads:  signatures(url_id, h0, ..., h{m-1})
-- writes: candidates(u_id, v_id, n_bands)
-- order:  u_id, v_id
-- param:  max_bucket BIGINT   a bucket larger than this pairs each member only with its first max_bucket members
-- template: bands = (table number, its k min-hash indices) of the l LSH tables, or of one batch of them
--           (on DuckDB the runner takes at most 8M band keys, or one table, per batch, fewer when they would
--           not fit in memory, and adds up the batches' rows); keys = 1..k; hashed_keys = one 64-bit key
--           per table instead of k (sql/macros/band_keys.sql: the runner sets it on DuckDB)
--
-- LSH candidate pairs (Haveliwala et al. 2000, sec. 4): URLs whose k min-hashes agree in at least one of
-- the l tables (up to a 64-bit collision with hashed_keys), found by a self-join on equal (band, key)
-- instead of comparing all pairs. n_bands counts the tables in which the pair collided. A bucket of
-- thousands of URLs (boilerplate anchors) would give a quadratic number of pairs, so over max_bucket
-- members a member is paired only with the bucket's first max_bucket members in URL order: at most
-- max_bucket * size pairs. bucket_sizes counts what was cut.

{%- set key_numbers = range(1, 2) if hashed_keys else keys %}
with

{% include "macros/band_keys.sql" %},

buckets_shared as (
    select
        band_keys.band,
        {%- for key in key_numbers %}
        band_keys.key{{ key }},
        {%- endfor %}
        count(*) as n_members
    from band_keys
    group by band_keys.band{% for key in key_numbers %}, band_keys.key{{ key }}{% endfor %}
    having count(*) > 1
),

members as (
    select
        band_keys.*,
        buckets_shared.n_members
    from band_keys
    inner join buckets_shared
        on band_keys.band = buckets_shared.band
        {%- for key in key_numbers %}
        and band_keys.key{{ key }} = buckets_shared.key{{ key }}
        {%- endfor %}
),

-- Only members of oversized buckets need a rank; the first max_bucket of them pair with everyone.
members_ranked as (
    select
        members.*,
        row_number() over (
            partition by members.band{% for key in key_numbers %}, members.key{{ key }}{% endfor %}
            order by members.url_id
        ) as member_rank
    from members
    where members.n_members > $max_bucket
),

pairs_in_buckets as (
    select
        member_a.url_id as u_id,
        member_b.url_id as v_id
    from members as member_a
    inner join members as member_b
        on member_a.band = member_b.band
        {%- for key in key_numbers %}
        and member_a.key{{ key }} = member_b.key{{ key }}
        {%- endfor %}
        and member_a.url_id < member_b.url_id
    where member_a.n_members <= $max_bucket

    union all

    select
        member_a.url_id as u_id,
        member_b.url_id as v_id
    from members_ranked as member_a
    inner join members_ranked as member_b
        on member_a.band = member_b.band
        {%- for key in key_numbers %}
        and member_a.key{{ key }} = member_b.key{{ key }}
        {%- endfor %}
        and member_a.url_id < member_b.url_id
    where member_a.member_rank <= $max_bucket
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
