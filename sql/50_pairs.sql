-- stage:  pairs
-- reads:  candidates(u_id, v_id, n_bands), signatures(url_id, h0, ..., h{m-1}), urls(url_id, url), bags(url_id, term_hash, weight)
-- writes: pairs(u, v, similarity, n_agree, n_bands, u_id, v_id, jaccard)
-- order:  u_id, v_id
-- param:  min_agree BIGINT    agreeing positions a candidate needs: ceil(threshold * m); with verify 3
--                             standard deviations lower, since the exact Jaccard decides
-- param:  threshold DOUBLE    the exact weighted Jaccard a pair needs
-- template: hashes = 0..m-1; narrow_differences = h_u - h_v fits an INTEGER for every value in the
--           signatures (else it is taken as BIGINT)
--
-- Candidates agreeing somewhat below the threshold (the default, --verify) are checked against their bags,
-- and a pair is kept when its exact weighted Jaccard sum(min)/sum(max) of the flattened bags (the rounded
-- weights the signatures estimate) is at least the threshold; similarity is then that exact value. u < v
-- in byte order of the URLs. sql/50_pairs_estimated.sql (--no-verify) keeps the signatures' estimate.
--
-- When two copies of all signatures would not fit in memory, or the ids span over 5M, the runner takes the
-- candidates in blocks of url_id ranges (u's range, v's at or after it, which holds every candidate once as
-- u_id < v_id): it registers candidates, signatures and bags as views of the block's rows and ranges only,
-- runs this file once per block and orders their union.

with

{% include "macros/candidates_scored.sql" %},

pairs_kept as (
    select * from candidates_scored where n_agree >= $min_agree
),

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
