-- stage:  pages
-- reads:  pages_raw(record_id, url, record_type, warc_date, status, content_type, encoding, n_bytes, title, n_out_links, source_file, source_offset, skip_reason, redirect_url, canonical_url)
-- writes: pages(record_id, url, record_type, warc_date, status, content_type, encoding, n_bytes, title, n_out_links, source_file, source_offset, skip_reason, redirect_url, canonical_url)
-- order:  record_id
-- param:  none
--
-- Every record read, once. Of several usable captures of one URL the latest wins (greatest WARC-Date,
-- then the one read last); the others get skip_reason 'duplicate_url', so the books still balance:
-- records read = pages used (skip_reason is null) + records skipped.
-- redirect_url and canonical_url, where the record says its content is, feed sql/04_url_aliases.sql.

with

usable_ranked as (
    select
        record_id,
        row_number() over (
            partition by url
            order by warc_date desc nulls last, record_id desc
        ) as capture_rank
    from pages_raw
    where skip_reason is null
),

final as (
    select
        pages_raw.record_id,
        pages_raw.url,
        pages_raw.record_type,
        pages_raw.warc_date,
        pages_raw.status,
        pages_raw.content_type,
        pages_raw.encoding,
        pages_raw.n_bytes,
        pages_raw.title,
        pages_raw.n_out_links,
        pages_raw.source_file,
        pages_raw.source_offset,
        case
            when usable_ranked.capture_rank > 1 then 'duplicate_url'
            else pages_raw.skip_reason
        end as skip_reason,
        pages_raw.redirect_url,
        pages_raw.canonical_url
    from pages_raw
    left join usable_ranked on pages_raw.record_id = usable_ranked.record_id
)

select * from final order by record_id
