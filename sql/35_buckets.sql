-- stage:  buckets
-- reads:  signatures(url_id, h0, ..., h{m-1})
-- writes: buckets(band, bucket, url_id, n_members)
-- order:  band, bucket, url_id
-- param:  none
-- template: bands = (table number, its k min-hash indices) of the l LSH tables, or of one batch of them
--           (the runner takes at most 8M band keys, or one table, per batch, fewer when they would not fit
--           in memory, and writes the batches in order)
--
-- LSH buckets (Haveliwala et al. 2000, sec. 4): the URLs whose k min-hashes agree in one of the l tables
-- share that table's bucket. Only shared buckets are kept (1.5-2.6 % of the l * N band keys of the scale
-- bench), one row per member, so candidates and bucket_sizes read these rows instead of each grouping all
-- l * N band keys again. A bucket is named by its smallest url_id: the same on every engine and release,
-- whatever key grouped it (up to a 64-bit collision with hashed_keys, which merges two buckets).
--
-- The DuckDB form (sql/35_buckets_grouped.sql is the one for Spark): a table's k min-hashes are grouped as
-- one 64-bit key (sql/macros/band_keys_hashed.sql), and the shared keys are found in one sort of the band
-- keys instead of a group and a join back (10-24 % faster a batch at 100k to 10M URLs, the same rows; on
-- Spark a window over one global order would run in one partition).

with

{% include "macros/band_keys_hashed.sql" %},

-- In (band, key, url_id) order the members of a bucket are one run of rows: a row is shared when the row
-- before or after it has its key. Only the shared rows (a few per cent) go on to the per-bucket window.
keys_ordered as (
    select
        band_keys.band,
        band_keys.url_id,
        band_keys.key1,
        coalesce(
            (
                lag(band_keys.band) over in_key_order = band_keys.band
                and lag(band_keys.key1) over in_key_order = band_keys.key1
            )
            or (
                lead(band_keys.band) over in_key_order = band_keys.band
                and lead(band_keys.key1) over in_key_order = band_keys.key1
            ),
            false
        ) as is_shared
    from band_keys
    window in_key_order as (
        order by band_keys.band, band_keys.key1, band_keys.url_id
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
        partition by keys_ordered.band, keys_ordered.key1
    )
)

select * from final order by band, bucket, url_id
