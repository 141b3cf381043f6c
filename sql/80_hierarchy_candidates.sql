-- stage:  hierarchy_candidates
-- reads:  signatures(url_id, h0, ..., h{m-1}), memberships(url_id, cluster_id)
-- writes: hierarchy_candidates(u_id, v_id, n_bands)
-- order:  u_id, v_id
-- param:  max_bucket BIGINT   a bucket with more clusters pairs each only with its first max_bucket clusters
-- template: bands = (band number, its r contiguous min-hash indices) of this level's b = floor(m / r) bands;
--           keys = 1..r
--
-- One level of LSH single-link clustering (Koga, Ishibashi & Watanabe 2007; Korelin & Blekanov): each band
-- of r rows of the signatures is a bucket key. Within a bucket only members of different clusters matter,
-- so each cluster keeps one representative per bucket, its smallest url_id; representatives of two
-- clusters sharing a bucket are a candidate pair, to be checked against the similarity threshold (by the
-- pairs stage's file) before their clusters merge. Members of one cluster never pair, so a level costs
-- less as clusters grow. n_bands counts the bands in which the two representatives collided.

with

{% include "macros/band_keys.sql" %},

representatives as (
    select
        band_keys.band,
        {%- for key in keys %}
        band_keys.key{{ key }},
        {%- endfor %}
        memberships.cluster_id,
        min(band_keys.url_id) as url_id
    from band_keys
    inner join memberships on band_keys.url_id = memberships.url_id
    group by band_keys.band{% for key in keys %}, band_keys.key{{ key }}{% endfor %}, memberships.cluster_id
),

buckets_shared as (
    select
        representatives.band,
        {%- for key in keys %}
        representatives.key{{ key }},
        {%- endfor %}
        count(*) as n_clusters
    from representatives
    group by representatives.band{% for key in keys %}, representatives.key{{ key }}{% endfor %}
    having count(*) > 1
),

members as (
    select
        representatives.band,
        {%- for key in keys %}
        representatives.key{{ key }},
        {%- endfor %}
        representatives.url_id,
        buckets_shared.n_clusters,
        row_number() over (
            partition by representatives.band{% for key in keys %}, representatives.key{{ key }}{% endfor %}
            order by representatives.url_id
        ) as member_rank
    from representatives
    inner join buckets_shared
        on representatives.band = buckets_shared.band
        {%- for key in keys %}
        and representatives.key{{ key }} = buckets_shared.key{{ key }}
        {%- endfor %}
),

pairs_in_buckets as (
    select
        member_a.url_id as u_id,
        member_b.url_id as v_id
    from members as member_a
    inner join members as member_b
        on member_a.band = member_b.band
        {%- for key in keys %}
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
