-- stage:  links
-- reads:  links_raw(record_id, source_url, position, href, target_url, is_internal, anchor_text, skip_reason, block), pages(record_id, skip_reason), template_blocks(block)
-- writes: links(source_url, position, href, target_url, is_internal, anchor_text, skip_reason, is_template)
-- order:  source_url, position
-- param:  none
--
-- Every <a href> of every used page (the winning capture of each URL). Links that lead nowhere a crawler
-- can follow keep their raw href and a skip_reason (javascript, mailto, tel, data, fragment_only, ...)
-- with target_url null, so in-degree is `count(*) ... where target_url is not null group by target_url`.
-- is_template: the link starts in a template block of its site (sql/02_template_blocks.sql).

with

templates as (
    select distinct template_blocks.block
    from template_blocks
),

final as (
    select
        links_raw.source_url,
        links_raw.position,
        links_raw.href,
        links_raw.target_url,
        links_raw.is_internal,
        links_raw.anchor_text,
        links_raw.skip_reason,
        templates.block is not null as is_template
    from links_raw
    inner join pages on links_raw.record_id = pages.record_id
    left join templates on links_raw.block = templates.block
    where pages.skip_reason is null
)

select * from final order by source_url, position
