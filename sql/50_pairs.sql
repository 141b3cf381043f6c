-- stage:  pairs
-- reads:  candidates(u_id, v_id, n_bands), signatures(url_id, h0, ..., h{m-1}), urls(url_id, url), bags(url_id, term, weight)
-- writes: pairs(u, v, similarity, n_agree, n_bands, u_id, v_id, jaccard)
-- order:  u_id, v_id
-- param:  min_agree BIGINT    agreeing positions a pair needs, ceil(threshold * m)
-- param:  num_perm BIGINT     m, the signature length
-- template: hashes = 0..m-1; verify = also compute the exact weighted Jaccard of the bags
--
-- Keeps candidates whose signatures agree on at least the threshold fraction of the m positions
-- (Haveliwala et al. 2000, sec. 4): the fraction agreeing is an unbiased estimate of the weighted Jaccard
-- similarity, so this removes LSH's false positives. u < v in byte order of the URLs. With verify, jaccard
-- is the exact sum(min)/sum(max) of the two bags' weights; otherwise it is null.

with

candidates_scored as (
    select
        candidates.u_id,
        candidates.v_id,
        candidates.n_bands,
        {%- for i in hashes %}
        (case when signature_u.h{{ i }} = signature_v.h{{ i }} then 1 else 0 end){{ " +" if not loop.last else " as n_agree" }}
        {%- endfor %}
    from candidates
    inner join signatures as signature_u on candidates.u_id = signature_u.url_id
    inner join signatures as signature_v on candidates.v_id = signature_v.url_id
),

pairs_kept as (
    select * from candidates_scored where n_agree >= $min_agree
),

{%- if verify %}

-- Sums are DECIMAL (exact), so jaccard has the same bits whatever order parallel threads add in.
bag_totals as (
    select
        bags.url_id,
        cast(sum(cast(bags.weight as decimal(38, 12))) as double) as total_weight
    from bags
    group by bags.url_id
),

-- Terms are gathered per pair on each side first: joining bags to bags on term alone would pair every
-- two URLs sharing a common term before the pairs restrict it.
terms_u as (
    select
        pairs_kept.u_id,
        pairs_kept.v_id,
        bags.term,
        bags.weight
    from pairs_kept
    inner join bags on pairs_kept.u_id = bags.url_id
),

terms_v as (
    select
        pairs_kept.u_id,
        pairs_kept.v_id,
        bags.term,
        bags.weight
    from pairs_kept
    inner join bags on pairs_kept.v_id = bags.url_id
),

shared_weights as (
    select
        terms_u.u_id,
        terms_u.v_id,
        cast(sum(cast(least(terms_u.weight, terms_v.weight) as decimal(38, 12))) as double) as min_weight
    from terms_u
    inner join terms_v
        on terms_u.u_id = terms_v.u_id and terms_u.v_id = terms_v.v_id and terms_u.term = terms_v.term
    group by terms_u.u_id, terms_u.v_id
),

-- sum(min) / sum(max) = shared / (total_u + total_v - shared), over the union of both bags' terms
pairs_verified as (
    select
        pairs_kept.*,
        coalesce(shared_weights.min_weight, 0)
        / (total_u.total_weight + total_v.total_weight - coalesce(shared_weights.min_weight, 0)) as jaccard
    from pairs_kept
    left join shared_weights on pairs_kept.u_id = shared_weights.u_id and pairs_kept.v_id = shared_weights.v_id
    inner join bag_totals as total_u on pairs_kept.u_id = total_u.url_id
    inner join bag_totals as total_v on pairs_kept.v_id = total_v.url_id
),
{%- else %}

pairs_verified as (
    select
        pairs_kept.*,
        cast(null as double) as jaccard
    from pairs_kept
),
{%- endif %}

final as (
    select
        url_u.url as u,
        url_v.url as v,
        cast(pairs_verified.n_agree as double) / $num_perm as similarity,
        cast(pairs_verified.n_agree as bigint) as n_agree,
        pairs_verified.n_bands,
        pairs_verified.u_id,
        pairs_verified.v_id,
        pairs_verified.jaccard
    from pairs_verified
    inner join urls as url_u on pairs_verified.u_id = url_u.url_id
    inner join urls as url_v on pairs_verified.v_id = url_v.url_id
)

select * from final order by u_id, v_id
