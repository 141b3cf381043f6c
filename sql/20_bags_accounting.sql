-- stage:  bags_accounting
-- reads:  term_counts(url, term, tf), urls(url), terms(term, term_hash, n_urls)
-- reads:  frozen_idf(term_hash, n_urls, corpus_urls)
-- writes: bags_accounting(used, below_min_df, above_max_df, in_every_url, weight_rounds_to_zero)
-- order:  none: one row, the runner's counts (no Parquet file is written)
-- param:  min_df BIGINT       as sql/20_bags.sql
-- param:  max_df DOUBLE       as sql/20_bags.sql
-- param:  weighting VARCHAR   as sql/20_bags.sql
--
-- The rows of term_counts the bags stage (sql/20_bags.sql) used, and per reason those it dropped, so that
-- every row read is accounted for in the manifest (sql/20_bags_accounting_grouped.sql when the stage ran
-- sql/20_bags_grouped.sql). Its filters mirror that file's, in its order: keep the two in step. df
-- filters first, then a weight of 0 (idf 0, or a tf that rounds to 0 at 12 decimals). With one row per
-- (url, term), as sql/20_bags.sql assumes, terms.n_urls is the document frequency and counts the rows, so
-- only the rows whose tf rounds to 0 are grouped (none in a set table). The runner
-- (lshsql/pipeline/accounting.py) counts the rows of URLs missing from urls as unknown_url_or_term.

with

document_count as (
    select coalesce((select max(frozen_idf.corpus_urls) from frozen_idf), count(*)) as n_urls
    from urls
),

-- the df sql/20_bags.sql judges a term by: the frozen one with --freeze-idf, else the term's URLs
terms_df as (
    select
        terms.term,
        terms.n_urls,
        coalesce(frozen_idf.n_urls, terms.n_urls) as df
    from terms
    left join frozen_idf on terms.term_hash = frozen_idf.term_hash
),

-- One row per (url, term): per term, its rows, less those whose tf rounds to 0, which are judged apart.
zero_tf as (
    select
        term_counts.term,
        count(*) as n_rows
    from term_counts
    where cast(term_counts.tf as decimal(38, 12)) = 0
    group by term_counts.term
),

rows_judged as (
    select
        terms_df.df,
        terms_df.n_urls - coalesce(zero_tf.n_rows, 0) as n_rows,
        false as zero_tf
    from terms_df
    left join zero_tf on terms_df.term = zero_tf.term
    union all
    select
        terms_df.df,
        zero_tf.n_rows,
        true as zero_tf
    from zero_tf
    inner join terms_df on zero_tf.term = terms_df.term
),

judged as (
    select
        case
            when rows_judged.df < $min_df then 'below_min_df'
            when not (rows_judged.df <= $max_df * document_count.n_urls) then 'above_max_df'
            when $weighting = 'tfidf' and rows_judged.df >= document_count.n_urls then 'in_every_url'
            when rows_judged.zero_tf then 'weight_rounds_to_zero'
            else 'used'
        end as reason,
        rows_judged.n_rows
    from rows_judged
    cross join document_count
),

-- the columns after used in the order of accounting.DROP_REASONS; BIGINT on both engines (DuckDB's sum of
-- BIGINT is a HUGEINT)
final as (
    select
        cast(sum(case when judged.reason = 'used' then judged.n_rows else 0 end) as bigint) as used,
        cast(sum(case when judged.reason = 'below_min_df' then judged.n_rows else 0 end) as bigint)
            as below_min_df,
        cast(sum(case when judged.reason = 'above_max_df' then judged.n_rows else 0 end) as bigint)
            as above_max_df,
        cast(sum(case when judged.reason = 'in_every_url' then judged.n_rows else 0 end) as bigint)
            as in_every_url,
        cast(sum(
            case when judged.reason = 'weight_rounds_to_zero' then judged.n_rows else 0 end
        ) as bigint) as weight_rounds_to_zero
    from judged
)

select * from final
