-- stage:  term_counts
-- reads:  fragments(url, kind, source_url, position, terms)
-- writes: term_counts(url, term, tf)
-- order:  none: an internal table whose row order no later result depends on (sorting its strings
--         would cost half the stage, bench/RESULTS.md); bags and everything after are totally ordered
-- param:  none
--
-- Collapses every fragment describing a URL (anchor windows, its title, optionally its content) into one
-- bag of words: tf is how often the term occurs in all of them (Haveliwala et al. 2000, sec. 2). This file
-- takes each fragment's URL as it is (--unit url, and no alias to apply: --no-aliases, or a crawl without
-- any); sql/10_term_counts_mapped.sql maps the URLs first.

with

terms_unnested as (
    select
        fragments.url,
        unnest(fragments.terms) as term
    from fragments
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
