-- stage:  bags
-- reads:  term_counts(url, term, tf), urls(url_id, url)
-- writes: bags(url_id, term, term_hash, tf, df, weight)
-- order:  url_id, term_hash (integers: sorting by the term text cost 1.5 s more at 17M rows; two terms
--         of one bag never share a 63-bit hash in practice)
-- param:  min_df BIGINT       drop terms found in fewer URLs than this
-- param:  max_df DOUBLE       drop terms found in more than this fraction of URLs
-- param:  weighting VARCHAR   tfidf: tf * ln(N / df); tf: tf; none: tf as given (1 per term unless weighted)
-- param:  scale DOUBLE        tfidf and tf bags are normalized so their weights sum to this
-- template: normalize = weighting is tfidf or tf (weighting none keeps the weights as they are)
--
-- TF-IDF weighted bags (Haveliwala et al. 2000, sec. 2). Both rare and very common terms are dropped, as in
-- the paper. Weights are rounded to whole copies when a bag is flattened for min-hashing (signatures), so
-- `scale` sets the resolution: a term of weight 0.4 still counts once, 1.4 counts once, 2.6 three times.
-- A URL whose terms are all dropped has no bag; the runner counts it.

with

document_count as (
    select count(*) as n_urls from urls
),

terms_with_df as (
    select
        term_counts.term,
        count(*) as df
    from term_counts
    group by term_counts.term
),

terms_kept as (
    select
        terms_with_df.term,
        terms_with_df.df,
        lsh_term_hash(terms_with_df.term) as term_hash
    from terms_with_df
    cross join document_count
    where
        terms_with_df.df >= $min_df
        and terms_with_df.df <= $max_df * document_count.n_urls
),

bags_weighted as (
    select
        urls.url_id,
        term_counts.term,
        terms_kept.term_hash,
        term_counts.tf,
        terms_kept.df,
        case $weighting
            when 'tfidf' then term_counts.tf * ln(document_count.n_urls / terms_kept.df)
            else term_counts.tf
        end as raw_weight
    from term_counts
    inner join terms_kept on term_counts.term = terms_kept.term
    inner join urls on term_counts.url = urls.url
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
        bags_nonzero.term,
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
