-- stage:  pairs
-- reads:  candidates(u_id, v_id, n_bands), signatures(url_id, h0, ..., h{m-1}), urls(url_id, url), bags(url_id, term_hash, weight)
-- writes: pairs(u, v, similarity, n_agree, n_bands, u_id, v_id, jaccard)
-- order:  u_id, v_id
-- param:  min_agree BIGINT    agreeing positions a candidate needs: ceil(threshold * m); with verify 3
--                             standard deviations lower, since the exact Jaccard decides
-- param:  threshold DOUBLE    the exact weighted Jaccard a pair needs
-- template: hashes = 0..m-1; narrow_differences = h_u - h_v fits an INTEGER for every value in the
--           signatures (else it is taken as BIGINT); one_copy_each = no weight rounds above 1 (the
--           runner's check of max(weight)): no list of copies is made
--
-- Candidates agreeing somewhat below the threshold (the default, --verify) are checked against their bags,
-- and a pair is kept when its exact weighted Jaccard sum(min)/sum(max) of the flattened bags (the rounded
-- weights the signatures estimate) is at least the threshold; similarity is then that exact value. u < v
-- in byte order of the URLs. sql/50_pairs_estimated.sql (--no-verify) keeps the signatures' estimate.
--
-- When the signatures' lanes (macros/candidates_scored.sql) and the full rows the near candidates meet
-- would not fit in memory, or the ids span over 5M, the runner takes the candidates in blocks of url_id
-- ranges (u's range, v's at or after it, which holds every candidate once as u_id < v_id): it registers
-- candidates, signatures and bags as views of the block's rows and ranges only, runs this file once per
-- block and orders their union.

{% import "macros/copies_listed.sql" as copies with context %}
with

{% include "macros/candidates_scored.sql" %},

pairs_kept as (
    select * from candidates_scored where n_agree >= $min_agree
),

-- The bags of the URLs in a kept pair, as whole copies q = round(weight) but at least 1: the multiset the
-- signatures were computed from, so the exact value is what the agreement estimates, and sums of whole
-- numbers are exact in any order. The rest of bags is never read further.
-- Terms are told apart by term_hash (63 bits: a collision within one pair is ~1e-14 likely).
bags_paired as (
    select
        bags.url_id,
        bags.term_hash,
        greatest(1, cast(round(bags.weight) as bigint)) as copies
    from bags
    where
        bags.url_id in (select pairs_kept.u_id from pairs_kept union select pairs_kept.v_id from pairs_kept)
),

-- Each of those bags as one row: its terms and their copies, listed by one aggregation (so in the same
-- order; macros/copies_listed.sql), packed into one BLOB with its terms sorted (lsh_bag_pack), the
-- cheapest form to hand to the UDF once per pair. |u| is the copies in u's flattened bag.
bags_listed as materialized (
    select
        bags_paired.url_id,
        lsh_bag_pack(
            list(bags_paired.term_hash),
            {{ copies.copies_listed("bags_paired.copies") }}
        ) as bag,
        cast(sum(bags_paired.copies) as bigint) as size
    from bags_paired
    group by bags_paired.url_id
),

-- Materialized: DuckDB would otherwise push `shared > 0` below into the join as a condition and call the
-- UDF twice a pair, once there and once for the column.
pairs_measured as materialized (
    select
        pairs_kept.*,
        lsh_bag_overlap(bag_u.bag, bag_v.bag) as shared,
        bag_u.size + bag_v.size as total
    from pairs_kept
    inner join bags_listed as bag_u on pairs_kept.u_id = bag_u.url_id
    inner join bags_listed as bag_v on pairs_kept.v_id = bag_v.url_id
),

pairs_verified as (
    select
        pairs_measured.u_id,
        pairs_measured.v_id,
        pairs_measured.n_agree,
        pairs_measured.n_bands,
        cast(pairs_measured.shared as double) / (pairs_measured.total - pairs_measured.shared) as jaccard
    from pairs_measured
    where
        pairs_measured.shared > 0
        and pairs_measured.shared >= $threshold * (pairs_measured.total - pairs_measured.shared)
),

final as (
    select
        url_u.url as u,
        url_v.url as v,
        pairs_verified.jaccard as similarity,
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
