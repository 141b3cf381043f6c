-- stage:  pairs
-- reads:  candidates(u_id, v_id, n_bands), signatures(url_id, h0, ..., h{m-1}), urls(url_id, url), bags(url_id, term_hash, weight)
-- writes: pairs(u, v, similarity, n_agree, n_bands, u_id, v_id, jaccard)
-- order:  u_id, v_id
-- param:  min_agree BIGINT    agreeing positions a candidate needs: ceil(threshold * m); with verify 3
--                             standard deviations lower, since the exact Jaccard decides
-- param:  num_perm BIGINT     m, the signature length
-- param:  threshold DOUBLE    with verify: the exact weighted Jaccard a pair needs
-- template: hashes = 0..m-1; narrow_differences = h_u - h_v fits an INTEGER for every value in the
--           signatures (else it is taken as BIGINT); verify = keep pairs by the exact weighted Jaccard of
--           their bags; block = none, or (u_from, u_to, v_from, v_to): only candidates with u_id in
--           [u_from, u_to) and v_id in [v_from, v_to), so the joins hold two ranges of signatures, not two
--           copies of all, and only those ranges' bags are read (the runner takes blocks with v's range
--           at or after u's, which holds every candidate once as u_id < v_id, when two copies of all
--           signatures would not fit in memory or the ids span over 5M, and orders their union)
--
-- Without verify (the paper, sec. 4): keeps candidates whose signatures agree on at least the threshold
-- fraction of the m positions; that fraction is an unbiased estimate of the weighted Jaccard similarity, so
-- this removes LSH's false positives, but with m = 80 it also keeps some pairs just below the threshold
-- and drops some just above. With verify (the default): candidates agreeing somewhat below the threshold
-- are checked against their bags, and a pair is kept when its exact weighted Jaccard sum(min)/sum(max)
-- of the flattened bags (the rounded weights the signatures estimate) is at least the threshold;
-- similarity is then that exact value. u < v in byte order of the URLs.

{%- macro difference(i) -%}
{%- if narrow_differences -%}
signature_u.h{{ i }} - signature_v.h{{ i }}
{%- else -%}
cast(signature_u.h{{ i }} as bigint) - signature_v.h{{ i }}
{%- endif -%}
{%- endmacro %}
with

-- n_agree = m minus the positions whose min-hashes differ, |sign(h_u - h_v)| = 1. The sign is a TINYINT,
-- the cheapest form on DuckDB 2.0: at 100k documents (2.3M candidates) this file took 0.94 s, 1.02 s with
-- a CASE or a cast of the comparison, and 1.25 s with 1 - least(|h_u - h_v|, 1). The difference is an
-- INTEGER when the runner finds, by the signatures' Parquet statistics, that it cannot overflow (the
-- pipeline's min-hashes are in [0, 2^31)); otherwise (a table of one's own may hold any int32, and
-- -2^31 - (2^31 - 1) overflows an INTEGER) a BIGINT, 2 % slower at 1M URLs and 10-14 % at 10M. xor() was
-- 10 % slower at 100k. TINYINTs add up to 127 at most: summed 100 at a time.
candidates_scored as (
    select
        candidates.u_id,
        candidates.v_id,
        candidates.n_bands,
        {{ hashes | length }}
        {%- for chunk in hashes | batch(100) %}
        - cast(
            {%- for i in chunk %}
            abs(sign({{ difference(i) }})){{ " +" if not loop.last }}
            {%- endfor %}
        as integer)
        {%- endfor %} as n_agree
    from candidates
    inner join signatures as signature_u on candidates.u_id = signature_u.url_id
    inner join signatures as signature_v on candidates.v_id = signature_v.url_id
    {%- if block %}
    where
        candidates.u_id >= {{ block.u_from }} and candidates.u_id < {{ block.u_to }}
        and candidates.v_id >= {{ block.v_from }} and candidates.v_id < {{ block.v_to }}
        and signature_u.url_id >= {{ block.u_from }} and signature_u.url_id < {{ block.u_to }}
        and signature_v.url_id >= {{ block.v_from }} and signature_v.url_id < {{ block.v_to }}
    {%- endif %}
),

pairs_kept as (
    select * from candidates_scored where n_agree >= $min_agree
),

{%- if verify %}

-- The bags of the URLs in a kept pair, as whole copies q = round(weight) but at least 1: the multiset the
-- signatures were computed from, so the exact value is what the agreement estimates, and sums of whole
-- numbers are exact in any order. The rest of bags (most of its 17M rows at 100k documents) is never
-- joined: probing all of it cost 2 s. Terms are told apart by term_hash (63 bits: a collision within one
-- pair is ~1e-14 likely).
bags_paired as materialized (
    select
        bags.url_id,
        bags.term_hash,
        greatest(1, cast(round(bags.weight) as bigint)) as copies
    from bags
    where
        {%- if block %}
        (
            bags.url_id >= {{ block.u_from }} and bags.url_id < {{ block.u_to }}
            or bags.url_id >= {{ block.v_from }} and bags.url_id < {{ block.v_to }}
        ) and
        {%- endif %}
        bags.url_id in (select pairs_kept.u_id from pairs_kept union select pairs_kept.v_id from pairs_kept)
),

-- u's terms of every pair, materialized first, then looked up among v's terms by (url_id, term_hash). The
-- materialization fixes the join order: left to itself the optimizer may join bags to bags on term alone
-- before the pairs restrict it (35 s instead of 0.4 s at 10k bags). A pair sharing no term has J = 0.
pair_terms_u as materialized (
    select
        pairs_kept.u_id,
        pairs_kept.v_id,
        bags_paired.term_hash,
        bags_paired.copies
    from pairs_kept
    inner join bags_paired on pairs_kept.u_id = bags_paired.url_id
),

pairs_shared as (
    select
        pair_terms_u.u_id,
        pair_terms_u.v_id,
        sum(least(pair_terms_u.copies, bags_paired.copies)) as shared
    from pair_terms_u
    inner join bags_paired
        on pair_terms_u.v_id = bags_paired.url_id and pair_terms_u.term_hash = bags_paired.term_hash
    group by pair_terms_u.u_id, pair_terms_u.v_id
),

-- sum(max) = |u| + |v| - sum(min), with |u| the copies in u's flattened bag
bag_sizes as (
    select
        bags_paired.url_id,
        sum(bags_paired.copies) as copies
    from bags_paired
    group by bags_paired.url_id
),

pairs_measured as (
    select
        pairs_shared.u_id,
        pairs_shared.v_id,
        cast(pairs_shared.shared as double) as shared,
        cast(size_u.copies + size_v.copies - pairs_shared.shared as double) as union_copies
    from pairs_shared
    inner join bag_sizes as size_u on pairs_shared.u_id = size_u.url_id
    inner join bag_sizes as size_v on pairs_shared.v_id = size_v.url_id
),

pairs_verified as (
    select
        pairs_kept.*,
        pairs_measured.shared / pairs_measured.union_copies as jaccard,
        pairs_measured.shared / pairs_measured.union_copies as similarity
    from pairs_kept
    inner join pairs_measured on pairs_kept.u_id = pairs_measured.u_id and pairs_kept.v_id = pairs_measured.v_id
    where pairs_measured.shared >= $threshold * pairs_measured.union_copies
),
{%- else %}

pairs_verified as (
    select
        pairs_kept.*,
        cast(null as double) as jaccard,
        cast(pairs_kept.n_agree as double) / $num_perm as similarity
    from pairs_kept
),
{%- endif %}

final as (
    select
        url_u.url as u,
        url_v.url as v,
        pairs_verified.similarity,
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
