-- stage:  surface_forms
-- reads:  surface_forms_raw(term, word, n)
-- writes: surface_forms(term, word, n)
-- order:  term, n desc, word
-- param:  none
--
-- The words behind each term: how often each lowercased word was normalized into the term (before stemming,
-- so a stem such as 'configur' can be shown as 'configuration'). Extraction's workers count the pairs per
-- batch of pages; the counts of all batches add up here, so the table is the same whatever the number of
-- workers. Every page parsed counts, a capture of a URL that a later one replaced included. With
-- `ingest --shingle` a term is a shingle and its word the shingle of the surface words.

with

final as (
    select
        surface_forms_raw.term,
        surface_forms_raw.word,
        cast(sum(surface_forms_raw.n) as bigint) as n
    from surface_forms_raw
    group by surface_forms_raw.term, surface_forms_raw.word
)

select * from final order by term, n desc, word
