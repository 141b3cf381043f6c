-- stage:  cluster_labels
-- reads:  clusters(url_id, center_id, cluster_id), bags(url_id, term_hash, tf, df), terms(term_hash, term), urls(url_id), surface_forms(term, word, n)
-- writes: cluster_labels(center_id, cluster_id, rank, term, word, weight)
-- order:  center_id, rank
-- param:  n_terms BIGINT  terms kept per cluster
-- param:  min_size BIGINT clusters with fewer members get no labels (2 for the pipeline; 1 labels singletons)
--
-- What a cluster is about: the $n_terms terms of each cluster of at least $min_size URLs with the largest summed
-- TF-IDF weight tf * ln(N / df) over its members (N the URLs of urls), ties by term. The weight is this
-- TF-IDF whatever --weighting the run used, so labels compare across runs. A term found in every URL
-- weighs 0 and is no label. word is the most frequent surface form of the term (the lowercased word that
-- extraction stemmed into it, ties: the smaller word), or the term itself when surface_forms has none (a
-- user's bags). `clusters` may be any flat clustering with these columns: the runner also labels the cuts
-- of the cluster tree with this file. In the pipeline a singleton has no labels: its own bag says the
-- same; `environment` labels every cluster of domains, singletons too. cluster_id is the cluster's stable
-- id beside center_id, so a user's query can join the labels by either.

with

document_count as (
    select count(*) as n_urls from urls
),

members as (
    select
        clusters.url_id,
        clusters.center_id
    from clusters
    where
        clusters.center_id in (
            select clusters_counted.center_id
            from clusters as clusters_counted
            group by clusters_counted.center_id
            having count(*) >= $min_size
        )
),

cluster_keys as (
    select
        clusters.center_id,
        min(clusters.cluster_id) as cluster_id
    from clusters
    group by clusters.center_id
),

-- Summed as DECIMAL: exact, so weights and their ties do not depend on the order threads add them in.
cluster_terms as (
    select
        members.center_id,
        bags.term_hash,
        sum(cast(bags.tf * ln(cast(document_count.n_urls as double) / bags.df) as decimal(38, 12))) as weight
    from members
    inner join bags on members.url_id = bags.url_id
    cross join document_count
    group by members.center_id, bags.term_hash
),

-- Only a term weighing at least a cluster's $n_terms-th largest weight can be among its labels, whatever
-- the ties by text: those few rows are joined to terms for their text and ranked, not all of them. The
-- weights are of the terms that terms has (a table a user put in the folder may lack some), so a missing
-- one leaves its place to the next, as the join alone would.
nth_weights as (
    select
        cluster_terms.center_id,
        list_min(max(cluster_terms.weight, $n_terms)) as nth_weight
    from cluster_terms
    semi join terms on cluster_terms.term_hash = terms.term_hash
    where cluster_terms.weight > 0
    group by cluster_terms.center_id
),

cluster_terms_heaviest as (
    select
        cluster_terms.center_id,
        cluster_terms.term_hash,
        cluster_terms.weight
    from cluster_terms
    inner join nth_weights on cluster_terms.center_id = nth_weights.center_id
    where cluster_terms.weight >= nth_weights.nth_weight
),

cluster_terms_ranked as (
    select
        cluster_terms_heaviest.center_id,
        terms.term,
        cast(cluster_terms_heaviest.weight as double) as weight,
        row_number() over (
            partition by cluster_terms_heaviest.center_id
            order by cluster_terms_heaviest.weight desc, terms.term
        ) as rank
    from cluster_terms_heaviest
    inner join terms on cluster_terms_heaviest.term_hash = terms.term_hash
),

labels as (
    select
        cluster_terms_ranked.center_id,
        cluster_terms_ranked.rank,
        cluster_terms_ranked.term,
        cluster_terms_ranked.weight
    from cluster_terms_ranked
    where cluster_terms_ranked.rank <= $n_terms
),

words_ranked as (
    select
        surface_forms.term,
        surface_forms.word,
        row_number() over (
            partition by surface_forms.term
            order by surface_forms.n desc, surface_forms.word
        ) as word_rank
    from surface_forms
    where surface_forms.term in (select labels.term from labels)
),

final as (
    select
        labels.center_id,
        cluster_keys.cluster_id,
        cast(labels.rank as integer) as rank,
        labels.term,
        coalesce(words_ranked.word, labels.term) as word,
        labels.weight
    from labels
    left join words_ranked on labels.term = words_ranked.term and words_ranked.word_rank = 1
    inner join cluster_keys on labels.center_id = cluster_keys.center_id
)

select * from final order by center_id, rank
