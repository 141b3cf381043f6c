-- stage:  buckets
-- reads:  signatures(url_id, h0, ..., h{m-1})
-- writes: buckets(band, bucket, url_id, n_members)
-- order:  band, bucket, url_id
-- param:  none
-- template: bands = (table number, its k min-hash indices) of the l LSH tables, or of one batch of them
--           (on DuckDB the runner takes at most 8M band keys, or one table, per batch, fewer when they would
--           not fit in memory, and writes the batches in order); keys = 1..k; hashed_keys = one 64-bit key
--           per table instead of k (sql/macros/band_keys.sql: the runner sets it on DuckDB)
--
-- LSH buckets (Haveliwala et al. 2000, sec. 4): the URLs whose k min-hashes agree in one of the l tables
-- share that table's bucket. Only shared buckets are kept (1.5-2.6 % of the l * N band keys of the scale
-- bench), one row per member, so candidates and bucket_sizes read these rows instead of each grouping all
-- l * N band keys again. A bucket is named by its smallest url_id: the same on every engine and release,
-- whatever key grouped it (up to a 64-bit collision with hashed_keys, which merges two buckets).

{%- set key_numbers = range(1, 2) if hashed_keys else keys %}
with

{% include "macros/band_keys.sql" %},

buckets_shared as (
    select
        band_keys.band,
        {%- for key in key_numbers %}
        band_keys.key{{ key }},
        {%- endfor %}
        min(band_keys.url_id) as bucket,
        count(*) as n_members
    from band_keys
    group by band_keys.band{% for key in key_numbers %}, band_keys.key{{ key }}{% endfor %}
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
        {%- for key in key_numbers %}
        and band_keys.key{{ key }} = buckets_shared.key{{ key }}
        {%- endfor %}
)

select * from final order by band, bucket, url_id
