-- stage:  truth
-- reads:  bags(url_id, term_hash, df, weight)
-- writes: truth(u_id, v_id, jaccard)
-- order:  u_id, v_id
-- param:  threshold DOUBLE    keep the pairs whose exact weighted Jaccard is at least this (0 < t <= 1)
-- param:  batches BIGINT      only the pairs whose s (below) has url_id % batches = batch, so the runner
-- param:  batch BIGINT        can find the truth in batches whose union is the whole (the join of
--                             prefixes at 1M documents, T = 0.5, is ~6 billion rows); 1 and 0: all pairs
--
-- Ground truth for `lshsql eval`: every pair u_id < v_id whose exact weighted Jaccard
-- J = sum(min) / sum(max) of the bag weights is >= t, found by prefix filtering (Chaudhuri et al. 2006;
-- Bayardo et al. 2007; Wang et al. 2012 for several shared terms) instead of comparing all pairs. The
-- weights are those of the `bags` relation the runner gives: lshsql eval passes whole copies,
-- round(weight) but at least 1, the multiset the signatures estimate and --verify measures.
--
-- Terms are in one global order: increasing df, ties by term_hash (df and term_hash are
-- functions of the term, so every bag sees the same order). W_u is bag u's total weight and
-- S_u(x) the weight of u's terms at or after x: "x and the rest". M = sum(min) over the shared terms
-- c_1 < c_2 < ... of a pair; s is its bag with the smaller (W, url_id), l the other.
--
-- Prefix rule: x is in u's prefix iff S_u(x) >= t * W_u, inclusive: u keeps terms while the term and the
-- rest after it still weigh >= t * W_u. If J >= t then M >= t * sum(max) >= t * max(W_u, W_v), and
-- S_u(c_1) >= M because every shared term is at or after c_1: c_1 is in both prefixes. Size filter:
-- t * W_u <= M <= W_v and likewise with u, v swapped. J = t with c_1 the last prefix term attains the
-- bound, hence >= and not >. Used here in a sharper form, proved the same way:
--   a. M >= m = t / (1 + t) * (W_s + W_l), as sum(max) = W_s + W_l - M, and m >= 2t / (1 + t) * W_s: s
--      needs only the terms with S >= 2t/(1+t) * W_s (index prefix). If W_s >= r * W_l then also
--      m >= t(1 + r) / (1 + t) * W_l. Bags fall in size classes c = floor(ln W / ln g), g = (1/t)^(1/3.9)
--      (at least e^0.01): g^c <= W < g^(c+1), so t <= W_s / W_l < g^(1-d) gives d = c_l - c_s in 0..4,
--      and W_s / W_l > g^-(d+1) = r. l offers its prefix once per d, as long as that r needs, and the
--      join matches s's class with class_l - d.
--   b. Let delta = 0.06 * t * W_s (<= M) and c_k the first shared term where the min-weight of c_1..c_k
--      reaches delta. For i <= k, S_u(c_i) >= M - (min-weight of c_1..c_(i-1)) > M - delta >= m - delta
--      on both sides. So c_1..c_k are in both prefixes lowered by delta (each side's delta >= the pair's),
--      pass the row filter min(S_s, S_l) >= m - delta, and carry min-weight >= delta: a pair whose rows
--      carry less is no candidate. This drops most pairs that share one early term by chance.
-- Bounds use t * (1 - 1e-9), so float rounding never drops a pair; the candidates are verified exactly.
-- Prefix terms are matched by term_hash: two terms with one hash only add weight to a pair's rows.

with

settings as (
    select
        $threshold * (1 - 1e-9) as t,
        0.06 as lambda_share,
        greatest(ln(1 / ($threshold * (1 - 1e-9))) / 3.9, 0.01) as ln_class
),

-- S_u(x) and W_u summed as DECIMAL: exact, so the prefixes do not depend on the threads' adding order.
bag_terms as (
    select
        bags.url_id,
        bags.term_hash,
        bags.weight,
        sum(cast(bags.weight as decimal(38, 12))) over (
            partition by bags.url_id
            order by bags.df desc, bags.term_hash desc
            rows between unbounded preceding and current row
        ) as suffix_weight,
        sum(cast(bags.weight as decimal(38, 12))) over (partition by bags.url_id) as total_weight
    from bags
),

-- The widest prefix any pair needs (r = t in a.): S >= t * W - delta; the rest of a bag cannot match.
prefix_terms as (
    select
        bag_terms.url_id,
        bag_terms.term_hash,
        bag_terms.weight,
        cast(bag_terms.suffix_weight as double) as suffix_weight,
        cast(bag_terms.total_weight as double) as total_weight,
        settings.lambda_share * settings.t * cast(bag_terms.total_weight as double) as delta,
        cast(floor(ln(cast(bag_terms.total_weight as double)) / settings.ln_class) as bigint) as size_class
    from bag_terms
    cross join settings
    where
        cast(bag_terms.suffix_weight as double)
        >= (1 - settings.lambda_share) * settings.t * cast(bag_terms.total_weight as double)
),

-- s's side of a pair: S >= 2t/(1+t) * W - delta.
index_terms as (
    select prefix_terms.*
    from prefix_terms
    cross join settings
    where
        prefix_terms.suffix_weight
        >= (2 * settings.t / (1 + settings.t) - settings.lambda_share * settings.t)
        * prefix_terms.total_weight
        and prefix_terms.url_id % $batches = $batch
),

-- l's side: its prefix once per class difference d, for s in class size_class - d, with r = g^-(d+1) (at
-- least t). A union rather than a join with a list of d: the optimizer could move such a join after the
-- match on term_hash, which would pair every two prefixes sharing a term before the classes restrict it.
probe_terms as (
    select
        prefix_terms.*,
        prefix_terms.size_class - 0 as probe_class
    from prefix_terms
    cross join settings
    where
        prefix_terms.suffix_weight
        >= (
            settings.t / (1 + settings.t)
            * (1 + greatest(exp(-1 * settings.ln_class) * (1 - 1e-9), settings.t))
            - settings.lambda_share * settings.t
        )
        * prefix_terms.total_weight
    union all
    select
        prefix_terms.*,
        prefix_terms.size_class - 1 as probe_class
    from prefix_terms
    cross join settings
    where
        prefix_terms.suffix_weight
        >= (
            settings.t / (1 + settings.t)
            * (1 + greatest(exp(-2 * settings.ln_class) * (1 - 1e-9), settings.t))
            - settings.lambda_share * settings.t
        )
        * prefix_terms.total_weight
    union all
    select
        prefix_terms.*,
        prefix_terms.size_class - 2 as probe_class
    from prefix_terms
    cross join settings
    where
        prefix_terms.suffix_weight
        >= (
            settings.t / (1 + settings.t)
            * (1 + greatest(exp(-3 * settings.ln_class) * (1 - 1e-9), settings.t))
            - settings.lambda_share * settings.t
        )
        * prefix_terms.total_weight
    union all
    select
        prefix_terms.*,
        prefix_terms.size_class - 3 as probe_class
    from prefix_terms
    cross join settings
    where
        prefix_terms.suffix_weight
        >= (
            settings.t / (1 + settings.t)
            * (1 + greatest(exp(-4 * settings.ln_class) * (1 - 1e-9), settings.t))
            - settings.lambda_share * settings.t
        )
        * prefix_terms.total_weight
    union all
    select
        prefix_terms.*,
        prefix_terms.size_class - 4 as probe_class
    from prefix_terms
    cross join settings
    where
        prefix_terms.suffix_weight
        >= (
            settings.t / (1 + settings.t)
            * (1 + greatest(exp(-5 * settings.ln_class) * (1 - 1e-9), settings.t))
            - settings.lambda_share * settings.t
        )
        * prefix_terms.total_weight
),

shared_prefix_terms as (
    select
        index_terms.url_id as s_id,
        probe_terms.url_id as l_id,
        least(index_terms.weight, probe_terms.weight) as min_weight,
        index_terms.delta
    from index_terms
    inner join probe_terms
        on index_terms.term_hash = probe_terms.term_hash and index_terms.size_class = probe_terms.probe_class
    cross join settings
    where
        (
            index_terms.total_weight < probe_terms.total_weight
            or (
                index_terms.total_weight = probe_terms.total_weight
                and index_terms.url_id < probe_terms.url_id
            )
        )
        and index_terms.total_weight >= settings.t * probe_terms.total_weight
        and least(index_terms.suffix_weight, probe_terms.suffix_weight)
        >= settings.t / (1 + settings.t) * (index_terms.total_weight + probe_terms.total_weight)
        - index_terms.delta
),

candidates as (
    select
        least(shared_prefix_terms.s_id, shared_prefix_terms.l_id) as u_id,
        greatest(shared_prefix_terms.s_id, shared_prefix_terms.l_id) as v_id
    from shared_prefix_terms
    group by shared_prefix_terms.s_id, shared_prefix_terms.l_id
    having sum(shared_prefix_terms.min_weight) >= max(shared_prefix_terms.delta)
),

-- Exact verification: each side's terms gathered per pair, then matched on (pair, term_hash). A union and a
-- group by rather than a join of the two sides: as a join, the optimizer may reorder it into bags joined to
-- bags on term alone (quadratic) when it expects many candidates.
pair_terms as (
    select
        candidates.u_id,
        candidates.v_id,
        bags.term_hash,
        bags.weight
    from candidates
    inner join bags on candidates.u_id = bags.url_id
    union all
    select
        candidates.u_id,
        candidates.v_id,
        bags.term_hash,
        bags.weight
    from candidates
    inner join bags on candidates.v_id = bags.url_id
),

shared_terms as (
    select
        pair_terms.u_id,
        pair_terms.v_id,
        min(pair_terms.weight) as min_weight
    from pair_terms
    group by pair_terms.u_id, pair_terms.v_id, pair_terms.term_hash
    having count(*) = 2
),

shared_weights as (
    select
        shared_terms.u_id,
        shared_terms.v_id,
        cast(sum(cast(shared_terms.min_weight as decimal(38, 12))) as double) as min_weight
    from shared_terms
    group by shared_terms.u_id, shared_terms.v_id
),

bag_totals as (
    select
        bags.url_id,
        cast(sum(cast(bags.weight as decimal(38, 12))) as double) as total_weight
    from bags
    group by bags.url_id
),

-- sum(min) / sum(max) = shared / (total_u + total_v - shared), as in pairs
pairs_verified as (
    select
        shared_weights.u_id,
        shared_weights.v_id,
        shared_weights.min_weight
        / (total_u.total_weight + total_v.total_weight - shared_weights.min_weight) as jaccard
    from shared_weights
    inner join bag_totals as total_u on shared_weights.u_id = total_u.url_id
    inner join bag_totals as total_v on shared_weights.v_id = total_v.url_id
),

final as (
    select
        pairs_verified.u_id,
        pairs_verified.v_id,
        pairs_verified.jaccard
    from pairs_verified
    where pairs_verified.jaccard >= $threshold
)

select * from final order by u_id, v_id
