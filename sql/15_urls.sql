-- stage:  urls
-- reads:  term_counts(url, term, tf)
-- writes: urls(url_id, url, n_terms)
-- order:  url_id
-- param:  none
--
-- Every URL described by at least one word gets an integer id in byte order of the URL, so that
-- url_id_a < url_id_b exactly when url_a < url_b and later stages can join and sort on integers.
-- n_terms counts the URL's rows of term_counts: its distinct terms, since term_counts from fragments has
-- one row per (url, term); a user's bags table may repeat a term, and each repetition counts.

with

urls_counted as (
    select
        term_counts.url,
        count(*) as n_terms
    from term_counts
    group by term_counts.url
),

final as (
    select
        row_number() over (order by urls_counted.url) as url_id,
        urls_counted.url,
        urls_counted.n_terms
    from urls_counted
)

select * from final order by url_id
