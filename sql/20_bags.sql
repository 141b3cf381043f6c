-- stage:  bags
-- reads:  term_counts(url, term, tf), urls(url_id, url), terms(term_id, term_hash, term, n_urls)
-- writes: bags(url_id, term_hash, tf, df, weight)
-- order:  url_id, term_hash (not needed for the rows, but the signatures stage's aggregate over millions of
--         URLs stays in memory only when a URL's rows come together: unordered, 1M URLs spilled 34 GB)
-- param:  min_df BIGINT       drop terms found in fewer URLs than this
-- param:  max_df DOUBLE       drop terms found in more than this fraction of URLs
-- param:  weighting VARCHAR   tfidf: tf * ln(N / df); tf: tf; none: tf as given (1 per term unless weighted)
-- param:  scale DOUBLE        tfidf and tf bags are normalized so their weights sum to this
-- template: normalize = weighting is tfidf or tf (weighting none keeps the weights as they are)
-- template: rows_unique = term_counts has one row per (url, term). The runner assumes so, then checks: a
--           repeated (url_id, term_hash) in the bags written, or one among the rows this file drops
--           whatever their tf (terms too common by n_urls, which may count a repeat: above max_df, or
--           idf <= 0 with tfidf) or a row whose tf rounds to 0. If it finds one it runs the file again
--           without the assumption, and repeated rows add up. The runner's counts of the rows
--           dropped per reason (sql/20_bags_accounting.sql) and its check for repeats among them
--           (sql/20_bags_repeats.sql) mirror this file's filters: keep them in step.
--
-- TF-IDF weighted bags (Haveliwala et al. 2000, sec. 2). Both rare and very common terms are dropped, as in
-- the paper. Weights are rounded to whole copies when a bag is flattened for min-hashing (signatures), so
-- `scale` sets the resolution: a term of weight 0.4 still counts once, 1.4 counts once, 2.6 three times.
-- A URL whose terms are all dropped has no bag; the runner counts it. Repeated (url, term) rows of a
-- user's table add up here.

with

document_count as (
    select count(*) as n_urls from urls
),
{%- if rows_unique %}

-- One row per (url, term) already: ids are looked up and terms.n_urls is the document frequency. Skipping
-- the two groups below takes 3.3 of 5.9 CPU-seconds off the stage at 100k documents. tf goes through the
-- same DECIMAL as the sum below, so both ways give the same values.
counts as (
    select
        urls.url_id,
        terms.term_id,
        cast(cast(term_counts.tf as decimal(38, 12)) as double) as tf
    from term_counts
    inner join terms on term_counts.term = terms.term
    inner join urls on term_counts.url = urls.url
),

terms_with_df as (
    select
        terms.term_id,
        terms.n_urls as df
    from terms
),
{%- else %}

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
{%- endif %}

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

{%- if normalize %}

-- Summed as DECIMAL: exact, so the total does not depend on the order parallel threads add in.
bag_totals as (
    select
        bags_nonzero.url_id,
        cast(sum(cast(bags_nonzero.raw_weight as decimal(38, 12))) as double) as total_weight
    from bags_nonzero
    group by bags_nonzero.url_id
),
{%- endif %}

final as (
    select
        bags_nonzero.url_id,
        bags_nonzero.term_hash,
        bags_nonzero.tf,
        bags_nonzero.df,
        {%- if normalize %}
        bags_nonzero.raw_weight * $scale / bag_totals.total_weight as weight
        {%- else %}
        bags_nonzero.raw_weight as weight
        {%- endif %}
    from bags_nonzero
    {%- if normalize %}
    inner join bag_totals on bags_nonzero.url_id = bag_totals.url_id
    {%- endif %}
)

select * from final order by url_id, term_hash
