-- stage:  pairs
-- reads:  candidates(u_id, v_id, n_bands), signatures(url_id, h0, ..., h{m-1}), urls(url_id, url)
-- writes: pairs(u, v, similarity, n_agree, n_bands, u_id, v_id, jaccard)
-- order:  u_id, v_id
-- param:  min_agree BIGINT    agreeing positions a candidate needs: ceil(threshold * m)
-- param:  num_perm BIGINT     m, the signature length
-- template: hashes = 0..m-1; narrow_differences = h_u - h_v fits an INTEGER for every value in the
--           signatures (else it is taken as BIGINT)
--
-- Without verify (--no-verify; the paper, sec. 4): keeps candidates whose signatures agree on at least the
-- threshold fraction of the m positions; that fraction is an unbiased estimate of the weighted Jaccard
-- similarity, so this removes LSH's false positives, but with m = 80 it also keeps some pairs just below
-- the threshold and drops some just above. jaccard is NULL. u < v in byte order of the URLs.
-- sql/50_pairs.sql (the default) checks the pairs against their bags.
--
-- When the signatures' lanes (macros/candidates_scored.sql) and the full rows the near candidates meet
-- would not fit in memory, or the ids span over 5M, the runner takes the candidates in blocks of url_id
-- ranges (u's range, v's at or after it, which holds every candidate once as u_id < v_id): it registers
-- candidates, signatures and bags as views of the block's rows and ranges only, runs this file once per
-- block and orders their union.

with

{% include "macros/candidates_scored.sql" %},

pairs_kept as (
    select * from candidates_scored where n_agree >= $min_agree
),

pairs_verified as (
    select
        pairs_kept.*,
        cast(null as double) as jaccard,
        cast(pairs_kept.n_agree as double) / $num_perm as similarity
    from pairs_kept
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
