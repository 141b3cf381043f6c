-- stage:  environment_domains
-- reads:  links(source_url, target_url, skip_reason)
-- writes: environment_domains(domain, direction, links_out, pages_out, links_in, citing_pages)
-- order:  domain
-- param:  site VARCHAR        the site: a host (docs.python.example) or a registered domain (python.example)
-- param:  site_unit VARCHAR   'host' or 'domain': what site names
--
-- The external web environment of a site (Korelin & Blekanov's webometric tables): the registered domains
-- other than the site's own that its pages link to (links_out, from pages_out of its pages) and those whose
-- crawled pages link to it (links_in, from citing_pages of theirs). A link is on the site when its source
-- page's host (or registered domain) is the site; a domain is external when it is not the site's own
-- registered domain, so links between hosts of one domain are internal. Only followable links count.

with

links_placed as (
    select
        links.source_url,
        lsh_url_unit(links.source_url, $site_unit) as source_unit,
        lsh_url_unit(links.source_url, 'domain') as source_domain,
        lsh_url_unit(links.target_url, $site_unit) as target_unit,
        lsh_url_unit(links.target_url, 'domain') as target_domain
    from links
    where links.target_url is not null and links.skip_reason is null
),

site_domain as (
    select lsh_url_unit('http://' || $site || '/', 'domain') as domain
),

outgoing as (
    select
        links_placed.target_domain as domain,
        count(*) as links_out,
        count(distinct links_placed.source_url) as pages_out
    from links_placed
    where links_placed.source_unit = $site
        and links_placed.target_domain <> (select site_domain.domain from site_domain)
    group by links_placed.target_domain
),

incoming as (
    select
        links_placed.source_domain as domain,
        count(*) as links_in,
        count(distinct links_placed.source_url) as citing_pages
    from links_placed
    where links_placed.target_unit = $site
        and links_placed.source_domain <> (select site_domain.domain from site_domain)
    group by links_placed.source_domain
),

final as (
    select
        coalesce(outgoing.domain, incoming.domain) as domain,
        case
            when outgoing.domain is not null and incoming.domain is not null then 'both'
            when outgoing.domain is not null then 'out'
            else 'in'
        end as direction,
        coalesce(outgoing.links_out, 0) as links_out,
        coalesce(outgoing.pages_out, 0) as pages_out,
        coalesce(incoming.links_in, 0) as links_in,
        coalesce(incoming.citing_pages, 0) as citing_pages
    from outgoing
    full join incoming on outgoing.domain = incoming.domain
)

select * from final order by domain
