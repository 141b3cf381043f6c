-- stage:  buckets
-- reads:  signatures(url_id, h0, ..., h{m-1})
-- writes: buckets(band, bucket, url_id, n_members)
-- order:  band, bucket, url_id
-- param:  none
-- template: bands = (table number, its k min-hash indices) of the l LSH tables, or of one batch of them
--           (on DuckDB the runner takes at most 8M band keys, or one table, per batch, fewer when they would
--           not fit in memory, and writes the batches in order); keys = 1..k; hashed_keys = one 64-bit key
--           per table instead of k (sql/macros/band_keys.sql: the runner sets it on DuckDB);
--           shared_by_sort = find the shared keys in one sort of the band keys instead of a group and a join
--           back (the runner sets it on DuckDB, where it is 10-24 % faster a batch at 100k to 10M URLs and
--           gives the same rows; on Spark a window over one global order would run in one partition)
--
-- LSH buckets (Haveliwala et al. 2000, sec. 4): the URLs whose k min-hashes agree in one of the l tables
-- share that table's bucket. Only shared buckets are kept (1.5-2.6 % of the l * N band keys of the scale
-- bench), one row per member, so candidates and bucket_sizes read these rows instead of each grouping all
-- l * N band keys again. A bucket is named by its smallest url_id: the same on every engine and release,
-- whatever key grouped it (up to a 64-bit collision with hashed_keys, which merges two buckets).

{%- set key_numbers = range(1, 2) if hashed_keys else keys %}
with

{% include "macros/band_keys.sql" %},

{%- if shared_by_sort %}

-- In (band, key, url_id) order the members of a bucket are one run of rows: a row is shared when the row
-- before or after it has its key. Only the shared rows (a few per cent) go on to the per-bucket window.
keys_ordered as (
    select
        band_keys.band,
        band_keys.url_id,
        {%- for key in key_numbers %}
        band_keys.key{{ key }},
        {%- endfor %}
        coalesce(
            (
                lag(band_keys.band) over in_key_order = band_keys.band
                {%- for key in key_numbers %}
                and lag(band_keys.key{{ key }}) over in_key_order = band_keys.key{{ key }}
                {%- endfor %}
            )
            or (
                lead(band_keys.band) over in_key_order = band_keys.band
                {%- for key in key_numbers %}
                and lead(band_keys.key{{ key }}) over in_key_order = band_keys.key{{ key }}
                {%- endfor %}
            ),
            false
        ) as is_shared
    from band_keys
    window in_key_order as (
        order by band_keys.band{% for key in key_numbers %}, band_keys.key{{ key }}{% endfor %}, band_keys.url_id
    )
),

final as (
    select
        keys_ordered.band,
        min(keys_ordered.url_id) over bucket_members as bucket,
        keys_ordered.url_id,
        count(*) over bucket_members as n_members
    from keys_ordered
    where keys_ordered.is_shared
    window bucket_members as (
        partition by keys_ordered.band{% for key in key_numbers %}, keys_ordered.key{{ key }}{% endfor %}
    )
)
{%- else %}

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
{%- endif %}

select * from final order by band, bucket, url_id
