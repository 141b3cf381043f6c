-- stage:  bags
-- reads:  term_counts(url, term, tf), urls(url_id, url), terms(term_hash, term, n_urls)
-- reads:  frozen_idf(term_hash, n_urls, corpus_urls)
-- writes: bags(url_id, term_hash, tf, df, weight)
-- order:  url_id, term_hash (not needed for the rows, but the signatures stage's aggregate over millions of
--         URLs stays in memory only when a URL's rows come together; unordered, it spills, bench/RESULTS.md)
-- param:  min_df BIGINT       drop terms found in fewer URLs than this
-- param:  max_df DOUBLE       drop terms found in more than this fraction of URLs
-- param:  weighting VARCHAR   tfidf: tf * ln(N / df); tf: tf; none: tf as given (1 per term unless weighted)
-- param:  scale DOUBLE        tfidf and tf bags are normalized so their weights sum to this
-- template: unit_tf = tf is 1 on every row (the runner's: a user's bags without weights); weights_are_tf =
--           weighting none (see macros/bags_sorted.sql)
--
-- TF-IDF weighted bags (Haveliwala et al. 2000, sec. 2). Both rare and very common terms are dropped, as in
-- the paper. Weights are rounded to whole copies when a bag is flattened for min-hashing (signatures), so
-- `scale` sets the resolution: a term of weight 0.4 still counts once, 1.4 counts once, 2.6 three times.
-- A URL whose terms are all dropped has no bag; the runner counts it. With weighting none the weights
-- are kept as they are and `scale` is not used.
--
-- With --freeze-idf, frozen_idf holds the document frequencies and URL count of the run that froze them
-- (empty otherwise): N is that count, and a term it knows keeps its frozen df, so a URL whose terms did
-- not change keeps its weights when URLs are added; a term it does not know is counted in this run's URLs.
--
-- This file assumes term_counts has one row per (url, term), as it has when made from fragments. The runner
-- assumes so, then checks: a repeated (url_id, term_hash) in the bags written, or one among the rows this
-- file drops whatever their tf (terms too common by n_urls, which may count a repeat: above max_df, or
-- idf <= 0 with tfidf) or a row whose tf rounds to 0. If it finds one it runs sql/20_bags_grouped.sql
-- instead, where repeated rows add up. The runner's counts of the rows dropped per reason
-- (sql/20_bags_accounting.sql) and its check for repeats among them (sql/20_bags_repeats.sql) mirror this
-- file's filters: keep them in step.

{% import "macros/bags_sorted.sql" as sorted with context %}
with

document_count as (
    select coalesce((select max(frozen_idf.corpus_urls) from frozen_idf), count(*)) as n_urls
    from urls
),

-- One row per (url, term) already: terms.n_urls is the document frequency, and each row finds its kept
-- term, hash and df in one join by the term's text (bags keep term_hash, so no term_id is looked up first).
-- Skipping the two groups of sql/20_bags_grouped.sql makes this the faster form (bench/RESULTS.md).
terms_df as (
    select
        terms.term,
        terms.term_hash,
        coalesce(frozen_idf.n_urls, terms.n_urls) as df
    from terms
    left join frozen_idf on terms.term_hash = frozen_idf.term_hash
),

terms_kept as (
    select terms_df.*
    from terms_df
    cross join document_count
    where
        terms_df.df >= $min_df
        and terms_df.df <= $max_df * document_count.n_urls
),

-- tf goes through the same DECIMAL as the sum of sql/20_bags_grouped.sql, so both ways give the same values.
counts as (
    select
        urls.url_id,
        terms_kept.term_hash,
        cast(cast(term_counts.tf as decimal(38, 12)) as double) as tf,
        terms_kept.df
    from term_counts
    inner join terms_kept on term_counts.term = terms_kept.term
    inner join urls on term_counts.url = urls.url
),

bags_weighted as (
    select
        counts.url_id,
        counts.term_hash,
        counts.tf,
        counts.df,
        case $weighting
            when 'tfidf' then counts.tf * ln(document_count.n_urls / counts.df)
            else counts.tf
        end as raw_weight
    from counts
    cross join document_count
),

-- A term in every URL has idf 0 and carries no information: it leaves the bag rather than weigh 0.
bags_nonzero as (
    select * from bags_weighted where raw_weight > 0
),

-- Summed as DECIMAL: exact, so the total does not depend on the order parallel threads add in. Bags of
-- weighting none keep their weights, so the filter leaves nothing to group and no total is joined.
bag_totals as (
    select
        bags_nonzero.url_id,
        cast(sum(cast(bags_nonzero.raw_weight as decimal(38, 12))) as double) as total_weight
    from bags_nonzero
    where $weighting != 'none'
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
    left join bag_totals on bags_nonzero.url_id = bag_totals.url_id
),

-- Sorted with only the columns that vary (macros/bags_sorted.sql); the select after it keeps the order:
-- DuckDB preserves a sorted subquery's order through a projection (the runner's pass over the bags written,
-- accounting.ordered_keys, stops the run if it does not), and Spark sorts by this file's `order:` header.
bags_sorted as (
    select
        final.url_id,
        final.term_hash,
        {{ sorted.sorted_columns("final") }}
    from final
    order by final.url_id, final.term_hash
)

select
    bags_sorted.url_id,
    bags_sorted.term_hash,
    {{ sorted.tf("bags_sorted") }} as tf,
    bags_sorted.df,
    {{ sorted.weight("bags_sorted") }} as weight
from bags_sorted
