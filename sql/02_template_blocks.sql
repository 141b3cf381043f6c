-- stage:  template_blocks
-- reads:  page_blocks_raw(record_id, host_key, block), links_raw(record_id, block, target_url), pages(record_id, skip_reason)
-- writes: template_blocks(block, pages, targets)
-- order:  block
-- param:  share DOUBLE        a block on at least this share of its host's pages is template
-- param:  min_pages BIGINT    and on at least this many of them
--
-- Site templates (after Bar-Yossef and Rajagopalan 2002, and Gibson et al. 2005): a text block (the words
-- between two edges of block-level elements, keyed by its words and its host) is template when it appears
-- on at least $share of its host's used pages, and on at least $min_pages of them, so a small site or a
-- block two pages share is not template. A host's pages are those with a block of text. targets is the
-- number of URLs the block's links point to over all its pages: 1 for a site-wide link ("Home", "Index"),
-- whose words name that one URL; more for "Next" or "Show source", whose words name none of them.

with

settings as (
    select
        cast($share as double) as share,
        cast($min_pages as bigint) as min_pages
),

used_blocks as (
    select
        page_blocks_raw.host_key,
        page_blocks_raw.block,
        page_blocks_raw.record_id
    from page_blocks_raw
    inner join pages on page_blocks_raw.record_id = pages.record_id
    where pages.skip_reason is null
),

host_pages as (
    select
        used_blocks.host_key,
        count(distinct used_blocks.record_id) as n_pages
    from used_blocks
    group by used_blocks.host_key
),

block_pages as (
    select
        used_blocks.host_key,
        used_blocks.block,
        count(*) as n_pages
    from used_blocks
    group by used_blocks.host_key, used_blocks.block
),

block_targets as (
    select
        links_raw.block,
        count(distinct links_raw.target_url) as n_targets
    from links_raw
    inner join pages on links_raw.record_id = pages.record_id
    where pages.skip_reason is null and links_raw.target_url is not null
    group by links_raw.block
),

final as (
    select
        block_pages.block,
        block_pages.n_pages as pages,
        coalesce(block_targets.n_targets, 0) as targets
    from block_pages
    inner join host_pages on block_pages.host_key = host_pages.host_key
    cross join settings
    left join block_targets on block_pages.block = block_targets.block
    where
        block_pages.n_pages >= settings.min_pages
        and block_pages.n_pages >= settings.share * host_pages.n_pages
)

select * from final order by block
