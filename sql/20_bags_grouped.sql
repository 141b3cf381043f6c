-- stage:  bags
-- reads:  term_counts(url, term, tf), urls(url_id, url), terms(term_id, term_hash, term, n_urls)
-- writes: bags(url_id, term_hash, tf, df, weight)
-- order:  url_id, term_hash (not needed for the rows, but the signatures stage's aggregate over millions of
--         URLs stays in memory only when a URL's rows come together; unordered, it spills, bench/RESULTS.md)
-- param:  min_df BIGINT       drop terms found in fewer URLs than this
-- param:  max_df DOUBLE       drop terms found in more than this fraction of URLs
-- param:  weighting VARCHAR   tfidf: tf * ln(N / df); tf: tf; none: tf as given (1 per term unless weighted)
-- param:  scale DOUBLE        tfidf and tf bags are normalized so their weights sum to this
--
-- TF-IDF weighted bags (Haveliwala et al. 2000, sec. 2). Both rare and very common terms are dropped, as in
-- the paper. Weights are rounded to whole copies when a bag is flattened for min-hashing (signatures), so
-- `scale` sets the resolution: a term of weight 0.4 still counts once, 1.4 counts once, 2.6 three times.
-- A URL whose terms are all dropped has no bag; the runner counts it. With weighting none the weights
-- are kept as they are and `scale` is not used.
--
-- As sql/20_bags.sql, for a term_counts that may repeat a (url, term) (a user's table): repeated rows add
-- up here. The runner's counts of the rows dropped per reason (sql/20_bags_accounting_grouped.sql) mirror
-- this file's filters: keep them in step.

with

document_count as (
    select count(*) as n_urls from urls
),

-- One row per (url, term). The group key is one packed BIGINT, url_id * 2^32 + term_id (the runner checks
-- both fit), faster to group than the two strings or two integers. Summed as DECIMAL, exact, so repeated
-- rows add up the same whatever order threads add them in.
counts_packed as (
    select
        (urls.url_id << 32) | terms.term_id as url_term,
        cast(sum(cast(term_counts.tf as decimal(38, 12))) as double) as tf
    from term_counts
    inner join terms on term_counts.term = terms.term
    inner join urls on term_counts.url = urls.url
    group by url_term
),

counts as (
    select
        counts_packed.url_term >> 32 as url_id,
        counts_packed.url_term & 4294967295 as term_id,
        counts_packed.tf
    from counts_packed
),

terms_with_df as (
    select
        counts.term_id,
        count(*) as df
    from counts
    group by counts.term_id
),

terms_kept as (
    select
        terms.term_id,
        terms.term_hash,
        terms_with_df.df
    from terms_with_df
    inner join terms on terms_with_df.term_id = terms.term_id
    cross join document_count
    where
        terms_with_df.df >= $min_df
        and terms_with_df.df <= $max_df * document_count.n_urls
),

bags_weighted as (
    select
        counts.url_id,
        terms_kept.term_hash,
        counts.tf,
        terms_kept.df,
        case $weighting
            when 'tfidf' then counts.tf * ln(document_count.n_urls / terms_kept.df)
            else counts.tf
        end as raw_weight
    from counts
    inner join terms_kept on counts.term_id = terms_kept.term_id
    cross join document_count
),

-- A term in every URL has idf 0 and carries no information: it leaves the bag rather than weigh 0.
bags_nonzero as (
    select * from bags_weighted where raw_weight > 0
),


-- Summed as DECIMAL: exact, so the total does not depend on the order parallel threads add in.
bag_totals as (
    select
        bags_nonzero.url_id,
        cast(sum(cast(bags_nonzero.raw_weight as decimal(38, 12))) as double) as total_weight
    from bags_nonzero
    group by bags_nonzero.url_id
),

final as (
    select
        bags_nonzero.url_id,
        bags_nonzero.term_hash,
        bags_nonzero.tf,
        bags_nonzero.df,
        case $weighting
            when 'none' then bags_nonzero.raw_weight
            else bags_nonzero.raw_weight * $scale / bag_totals.total_weight
        end as weight
    from bags_nonzero
    inner join bag_totals on bags_nonzero.url_id = bag_totals.url_id
)

select * from final order by url_id, term_hash
