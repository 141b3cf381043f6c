-- stage:  term_counts
-- reads:  fragments(url, kind, source_url, position, terms), url_aliases(alias_url, target_url)
-- writes: term_counts(url, term, tf)
-- order:  none: an internal table whose row order no later result depends on (sorting its strings
--         would cost half the stage, bench/RESULTS.md); bags and everything after are totally ordered
-- param:  unit VARCHAR   what a bag describes: 'url', 'host' or 'domain' (lsh_url_unit)
--
-- As sql/10_term_counts.sql, with each fragment's URL mapped first. The fragments of an alias URL (a
-- redirect, or a page declaring another rel=canonical) describe its target, and with --unit host or domain
-- all URLs of a host or registered domain make one bag (the web environment of a site: Korelin & Blekanov's
-- domains). The mapping is computed once per distinct URL. The runner registers url_aliases empty when no
-- alias is to be applied (--no-aliases, or a crawl without any), so only the unit maps a URL then.

with

urls_described as (
    select distinct fragments.url
    from fragments
),

urls_mapped as (
    select
        urls_described.url,
        lsh_url_unit(coalesce(url_aliases.target_url, urls_described.url), $unit) as unit_url
    from urls_described
    left join url_aliases on urls_described.url = url_aliases.alias_url
),

terms_unnested as (
    select
        urls_mapped.unit_url as url,
        unnest(fragments.terms) as term
    from fragments
    inner join urls_mapped on fragments.url = urls_mapped.url
),

final as (
    select
        terms_unnested.url,
        terms_unnested.term,
        cast(count(*) as double) as tf
    from terms_unnested
    group by terms_unnested.url, terms_unnested.term
)

select * from final
