-- stage:  buckets
-- reads:  signatures(url_id, h0, ..., h{m-1}), changed_signatures(url_id, h0, ..., h{m-1})
-- reads:  previous_buckets(band, bucket, url_id, n_members), unchanged(url_id, old_id)
-- writes: buckets(band, bucket, url_id, n_members)
-- order:  band, bucket, url_id
-- param:  none
-- template: bands = (table number, its k min-hash indices) of the l LSH tables, or of one batch of them
--
-- A rerun's buckets (lshsql/pipeline/reuse.py): the rows sql/35_buckets.sql writes, found without sorting
-- every band key. unchanged maps each URL whose signature is the previous run's to its url_id there;
-- changed_signatures holds the others (new or changed bags). An unchanged URL has the band keys it had,
-- so a bucket without a changed member is the previous run's bucket, less the members that left (changed
-- or gone); a bucket with a changed member is grouped again from every URL with its key, old or new. So
-- only the band keys of the changed URLs are looked up among all the band keys, by a hash join, and the
-- previous rows are renumbered. The keys are sql/35_buckets.sql's (sql/macros/band_keys_hashed.sql), and
-- a bucket is named by its smallest url_id, so the rows are the same. Template values are integers.

with

{% include "macros/band_keys_hashed.sql" %},

{% with band_source = "changed_signatures", band_keys = "changed_keys" %}
{% include "macros/band_keys_hashed.sql" %},
{% endwith %}

-- Every URL whose key in a table is the key of a changed URL there: the members of the buckets that
-- changed URLs are in, and only those.
affected_members as (
    select
        band_keys.band,
        band_keys.key1,
        band_keys.url_id
    from band_keys
    semi join changed_keys
        on band_keys.band = changed_keys.band and band_keys.key1 = changed_keys.key1
),

affected_buckets as (
    select
        affected_members.band,
        min(affected_members.url_id) over bucket_members as bucket,
        affected_members.url_id,
        count(*) over bucket_members as n_members
    from affected_members
    window bucket_members as (
        partition by affected_members.band, affected_members.key1
    )
),

-- The previous run's rows of this batch's tables for the unchanged URLs, renumbered; a previous bucket is
-- named by (band, old bucket).
previous_rows as (
    select
        previous_buckets.band,
        previous_buckets.bucket as old_bucket,
        unchanged.url_id
    from previous_buckets
    inner join unchanged on previous_buckets.url_id = unchanged.old_id
    where previous_buckets.band in ({% for band, indices in bands %}{{ band }}{{ ", " if not loop.last }}{% endfor %})
),

-- A previous bucket one of whose unchanged members is among the affected ones holds a changed URL now:
-- affected_buckets has it, with all its members.
previous_affected as (
    select distinct
        previous_rows.band,
        previous_rows.old_bucket
    from previous_rows
    semi join affected_members
        on previous_rows.band = affected_members.band and previous_rows.url_id = affected_members.url_id
),

previous_kept as (
    select
        previous_rows.band,
        min(previous_rows.url_id) over bucket_members as bucket,
        previous_rows.url_id,
        count(*) over bucket_members as n_members
    from previous_rows
    anti join previous_affected
        on previous_rows.band = previous_affected.band and previous_rows.old_bucket = previous_affected.old_bucket
    window bucket_members as (
        partition by previous_rows.band, previous_rows.old_bucket
    )
),

final as (
    select * from affected_buckets where n_members > 1
    union all
    select * from previous_kept where n_members > 1
)

select * from final order by band, bucket, url_id
