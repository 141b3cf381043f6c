-- stage:  url_aliases
-- reads:  pages(record_id, url, warc_date, skip_reason, redirect_url, canonical_url), links(target_url)
-- writes: url_aliases(alias_url, target_url, kind, hops, links_collapsed)
-- order:  alias_url
-- param:  none
--
-- URLs the crawl says are the same page as another URL, one row per alias. An alias points on once:
-- by a redirect (a 301/302/303/307/308 record with a Location, pages.redirect_url) when it is the latest
-- capture of the URL among its redirects and usable pages, as in sql/01 (a page captured after the
-- redirect is live again; one that redirects to itself is none) or else by the
-- <link rel="canonical"> of its used page (pages.canonical_url) when that names a URL of the same site
-- (registered domain, the UDF lsh_url_unit): a canonical link to another site says the content is
-- copied there (syndication, mirrors), which is for the clustering to find, not that the URLs are one.
-- A URL whose latest capture is a redirect is that redirect's alias, whatever canonical link an older
-- capture of its page declared; `kind` says which of the two the alias itself has.
-- Chains are followed (A -> B -> C gives A -> C with hops 2) up to 10 hops, so target_url is never
-- itself an alias. Two kinds of chains end nowhere: a URL more than 10 hops from the end of its chain
-- gives no row, and the URLs of a cycle (A -> B -> A, or a longer loop) give no row: they are no alias,
-- and a URL whose chain runs into a cycle points at the first URL of the cycle it reaches.
-- links_collapsed counts the links to the alias (links.target_url = alias_url): links to target_url.

with recursive

redirects_ranked as (
    select
        url as alias_url,
        redirect_url as target_url,
        row_number() over (
            partition by url
            order by warc_date desc nulls last, record_id desc
        ) as capture_rank
    from pages
    where
        url is not null
        and (redirect_url is not null or skip_reason is null or skip_reason = 'duplicate_url')
),

redirects as (
    select
        alias_url,
        target_url,
        'redirect' as kind
    from redirects_ranked
    where capture_rank = 1 and target_url is not null and target_url <> alias_url
),

canonicals as (
    select
        pages.url as alias_url,
        pages.canonical_url as target_url,
        'canonical' as kind
    from pages
    where
        pages.skip_reason is null
        and pages.canonical_url is not null
        and pages.canonical_url <> pages.url
        and lsh_url_unit(pages.canonical_url, 'domain') = lsh_url_unit(pages.url, 'domain')
        and not exists (select 1 from redirects where redirects.alias_url = pages.url)
),

edges as (
    select
        redirects.alias_url,
        redirects.target_url,
        redirects.kind
    from redirects
    union all
    select
        canonicals.alias_url,
        canonicals.target_url,
        canonicals.kind
    from canonicals
),

-- Every alias walks its chain one hop per step; path holds the URLs passed (the alias first), so a
-- step that comes back to one of them has closed a cycle and goes no further.
walk as (
    select
        alias_url,
        kind,
        target_url as url,
        1 as hops,
        [alias_url] as path
    from edges
    union all
    select
        walk.alias_url,
        walk.kind,
        edges.target_url as url,
        walk.hops + 1 as hops,
        list_append(walk.path, walk.url) as path
    from walk
    inner join edges on walk.url = edges.alias_url
    where walk.hops < 10 and not list_contains(walk.path, walk.url)
),

walk_ends as (
    select
        alias_url,
        kind,
        url,
        hops,
        path,
        row_number() over (partition by alias_url order by hops desc) as step_rank
    from walk
),

resolved as (
    select
        walk_ends.alias_url,
        walk_ends.url as target_url,
        walk_ends.kind,
        -- in a cycle: the hops to the first URL of it, 0 when the alias is itself in the cycle
        case
            when list_contains(walk_ends.path, walk_ends.url)
                then list_position(walk_ends.path, walk_ends.url) - 1
            else walk_ends.hops
        end as hops
    from walk_ends
    where
        walk_ends.step_rank = 1
        -- a chain still going after 10 hops ends nowhere
        and (
            list_contains(walk_ends.path, walk_ends.url)
            or not exists (select 1 from edges where edges.alias_url = walk_ends.url)
        )
),

link_counts as (
    select
        target_url,
        count(*) as n_links
    from links
    where target_url is not null
    group by target_url
),

final as (
    select
        resolved.alias_url,
        resolved.target_url,
        resolved.kind,
        cast(resolved.hops as integer) as hops,
        coalesce(link_counts.n_links, 0) as links_collapsed
    from resolved
    left join link_counts on resolved.alias_url = link_counts.target_url
    where resolved.hops > 0
)

select * from final order by alias_url
