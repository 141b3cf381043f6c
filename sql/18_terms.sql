-- stage:  terms
-- reads:  term_counts(url, term, tf)
-- writes: terms(term_id, term_hash, term, n_urls)
-- order:  term_id
-- param:  none
--
-- Every distinct term once, with the 63-bit hash later stages know it by (UDF lsh_term_hash: xxh64 of its
-- UTF-8 bytes) and a dense number in hash order. bags keeps only term_hash, so the text of 17M bag rows is
-- not written again (1.4 s of the bags stage at 100k documents): a term's text is a join away. n_urls counts
-- the term's rows of term_counts: its document frequency when, as the bags stage checks, no (url, term)
-- repeats.

with

terms_hashed as (
    select
        term_counts.term,
        lsh_term_hash(term_counts.term) as term_hash,
        count(*) as n_urls
    from term_counts
    group by term_counts.term
),

final as (
    select
        row_number() over (order by terms_hashed.term_hash, terms_hashed.term) as term_id,
        terms_hashed.term_hash,
        terms_hashed.term,
        terms_hashed.n_urls
    from terms_hashed
)

select * from final order by term_id
