-- stage:  term_counts
-- reads:  fragments(url, kind, source_url, position, terms), url_aliases(alias_url, target_url)
-- writes: term_counts(url, term, tf)
-- order:  none: an internal table whose row order no later result depends on (sorting 17M strings
--         cost 4 of 8 s at 100k documents); bags and everything after are totally ordered
-- param:  unit VARCHAR   what a bag describes: 'url', 'host' or 'domain' (lsh_url_unit)
-- template: map_urls = the URLs are mapped (aliases to apply, or a unit other than url); aliases = apply
--           url_aliases (off with --no-aliases, or when the crawl has none)
--
-- Collapses every fragment describing a URL (anchor windows, its title, optionally its content) into one
-- bag of words: tf is how often the term occurs in all of them (Haveliwala et al. 2000, sec. 2). The
-- fragments of an alias URL (a redirect, or a page declaring another rel=canonical) describe its target,
-- and with --unit host or domain all URLs of a host or registered domain make one bag (the web
-- environment of a site: Korelin & Blekanov's domains). The mapping is computed once per distinct URL.

with

{%- if map_urls %}

urls_described as (
    select distinct fragments.url
    from fragments
),

urls_mapped as (
    select
        urls_described.url,
        {%- if aliases %}
        lsh_url_unit(coalesce(url_aliases.target_url, urls_described.url), $unit) as unit_url
        {%- else %}
        lsh_url_unit(urls_described.url, $unit) as unit_url
        {%- endif %}
    from urls_described
    {%- if aliases %}
    left join url_aliases on urls_described.url = url_aliases.alias_url
    {%- endif %}
),

terms_unnested as (
    select
        urls_mapped.unit_url as url,
        unnest(fragments.terms) as term
    from fragments
    inner join urls_mapped on fragments.url = urls_mapped.url
),
{%- else %}

terms_unnested as (
    select
        fragments.url,
        unnest(fragments.terms) as term
    from fragments
),
{%- endif %}

final as (
    select
        terms_unnested.url,
        terms_unnested.term,
        cast(count(*) as double) as tf
    from terms_unnested
    group by terms_unnested.url, terms_unnested.term
)

select * from final
