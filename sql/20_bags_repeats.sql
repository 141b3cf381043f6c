-- stage:  bags_repeats
-- reads:  term_counts(url, term, tf), urls(url), terms(term, term_hash, n_urls)
-- reads:  frozen_idf(term_hash, n_urls, corpus_urls)
-- writes: bags_repeats(repeated)
-- order:  none: one row, read by the runner (no Parquet file is written)
-- param:  max_df DOUBLE       as sql/20_bags.sql
-- param:  weighting VARCHAR   as sql/20_bags.sql
--
-- Whether term_counts repeats a (url, term) where the bags sql/20_bags.sql wrote cannot show it: in rows
-- the stage drops whatever their tf, every row of a term too common by n_urls (which counts a repeat
-- twice: above max_df, or idf <= 0 with tfidf; these mirror sql/20_bags.sql, keep them in step), and a row
-- whose tf rounds to 0 at 12 decimals while its repeat stays. The bags stage assumes one row per (url,
-- term) and runs again the grouped way when this, or a repeat in the bags written, says otherwise. It reads
-- term_counts only for those terms and (url, term)s: none in a table without them; a crawl's few
-- stopword-like terms above max_df.

with

document_count as (
    select coalesce((select max(frozen_idf.corpus_urls) from frozen_idf), count(*)) as n_urls
    from urls
),

-- judged by the df sql/20_bags.sql judges them by: the frozen one with --freeze-idf, else n_urls
common as (
    select terms.term
    from terms
    left join frozen_idf on terms.term_hash = frozen_idf.term_hash
    cross join document_count
    where
        not (coalesce(frozen_idf.n_urls, terms.n_urls) <= $max_df * document_count.n_urls)
        or ($weighting = 'tfidf' and coalesce(frozen_idf.n_urls, terms.n_urls) >= document_count.n_urls)
),

tiny as (
    select distinct
        term_counts.url,
        term_counts.term
    from term_counts
    where term_counts.tf < 1e-12
),

final as (
    select
        exists (
            select 1
            from term_counts
            semi join common on term_counts.term = common.term
            group by term_counts.url, term_counts.term
            having count(*) > 1
        )
        or exists (
            select 1
            from term_counts
            semi join tiny on term_counts.url = tiny.url and term_counts.term = tiny.term
            group by term_counts.url, term_counts.term
            having count(*) > 1
        ) as repeated
)

select * from final
