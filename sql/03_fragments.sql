-- stage:  fragments
-- reads:  fragments_raw(record_id, url, bucket, kind, source_url, position, terms), pages(record_id, skip_reason)
-- writes: fragments(url, bucket, kind, source_url, position, terms)
-- order:  url, kind, source_url, position
-- param:  none
--
-- The words that describe each URL (Haveliwala et al. 2000, sec. 2): one 'anchor' row per link to it
-- (anchor text plus the window around it), one 'title' row per fetched page, and optional 'content'
-- rows. Only used pages contribute. `bucket` is a stable hash of url modulo M, the paper's on-disk
-- buckets: every fragment of a URL is in one bucket, so a bucket can be bagged on its own.

with

final as (
    select
        fragments_raw.url,
        fragments_raw.bucket,
        fragments_raw.kind,
        fragments_raw.source_url,
        fragments_raw.position,
        fragments_raw.terms
    from fragments_raw
    inner join pages on fragments_raw.record_id = pages.record_id
    where pages.skip_reason is null
)

select * from final order by url, kind, source_url, position
