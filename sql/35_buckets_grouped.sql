-- stage:  buckets
-- reads:  signatures(url_id, h0, ..., h{m-1})
-- writes: buckets(band, bucket, url_id, n_members)
-- order:  band, bucket, url_id
-- param:  none
-- template: bands = (table number, its k min-hash indices) of the l LSH tables; keys = 1..k
--
-- LSH buckets (Haveliwala et al. 2000, sec. 4): the URLs whose k min-hashes agree in one of the l tables
-- share that table's bucket. Only shared buckets are kept (1.5-2.6 % of the l * N band keys of the scale
-- bench), one row per member, so candidates and bucket_sizes read these rows instead of each grouping all
-- l * N band keys again. A bucket is named by its smallest url_id: the same on every engine and release,
-- whatever key grouped it (up to a 64-bit collision with hashed_keys, which merges two buckets).
--
-- The portable form, the one the Spark engine runs (whose hash function is not DuckDB's, and
-- where a window over one global order would run in one partition): the k min-hashes themselves are the
-- key (sql/macros/band_keys.sql), the shared keys are grouped and joined back. sql/35_buckets.sql, the
-- DuckDB form, gives the same rows.

with

{% include "macros/band_keys.sql" %},

buckets_shared as (
    select
        band_keys.band,
        {%- for key in keys %}
        band_keys.key{{ key }},
        {%- endfor %}
        min(band_keys.url_id) as bucket,
        count(*) as n_members
    from band_keys
    group by band_keys.band{% for key in keys %}, band_keys.key{{ key }}{% endfor %}
    having count(*) > 1
),

final as (
    select
        band_keys.band,
        buckets_shared.bucket,
        band_keys.url_id,
        buckets_shared.n_members
    from band_keys
    inner join buckets_shared
        on band_keys.band = buckets_shared.band
        {%- for key in keys %}
        and band_keys.key{{ key }} = buckets_shared.key{{ key }}
        {%- endfor %}
)

select * from final order by band, bucket, url_id
