-- stage:  bags_accounting
-- reads:  term_counts(url, term, tf), urls(url), terms(term, n_urls)
-- writes: bags_accounting(used, below_min_df, above_max_df, in_every_url, weight_rounds_to_zero)
-- order:  none: one row, the runner's counts (no Parquet file is written)
-- param:  min_df BIGINT       as sql/20_bags_grouped.sql
-- param:  max_df DOUBLE       as sql/20_bags_grouped.sql
-- param:  weighting VARCHAR   as sql/20_bags_grouped.sql
--
-- The rows of term_counts the bags stage (sql/20_bags_grouped.sql) used, and per reason those it dropped,
-- so that every row read is accounted for in the manifest. Its filters mirror that file's, in its order:
-- keep the two in step. df filters first, then a weight of 0 (idf 0, or a tf that rounds to 0 at 12
-- decimals). The runner (lshsql/pipeline/accounting.py) counts the rows of URLs missing from urls as
-- unknown_url_or_term.

with

document_count as (
    select count(*) as n_urls from urls
),

-- Repeated rows add up first: df counts a term's URLs, and the summed tf of a (url, term) is what rounds.
-- Only rows with a known url and term, as the stage's inner joins keep.
counts as (
    select
        term_counts.url,
        term_counts.term,
        count(*) as n_rows,
        sum(cast(term_counts.tf as decimal(38, 12))) as tf
    from term_counts
    semi join terms on term_counts.term = terms.term
    semi join urls on term_counts.url = urls.url
    group by term_counts.url, term_counts.term
),

df as (
    select
        counts.term,
        count(*) as df
    from counts
    group by counts.term
),

rows_judged as (
    select
        df.df,
        counts.n_rows,
        counts.tf = 0 as zero_tf
    from counts
    inner join df on counts.term = df.term
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
