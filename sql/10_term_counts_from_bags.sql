-- stage:  term_counts
-- reads:  user_bags(url, term, weight)
-- writes: term_counts(url, term, tf)
-- order:  none: an internal table whose row order no later result depends on (sorting 17M strings
--         cost 4 of 8 s at 100k documents); bags and everything after are totally ordered
-- param:  none
--
-- The same table from a user's bags (url, term, optional weight; the runner supplies weight 1 when the
-- column is absent): repeated (url, term) rows add up. Rows with a null url or term, or a weight that is
-- not positive, cannot be part of a bag; the runner counts them before this stage. Weights are summed as
-- DECIMAL, exactly, so the result does not depend on the order in which threads add.

with

final as (
    select
        user_bags.url,
        user_bags.term,
        cast(sum(cast(user_bags.weight as decimal(38, 12))) as double) as tf
    from user_bags
    where user_bags.url is not null and user_bags.term is not null and user_bags.weight > 0
    group by user_bags.url, user_bags.term
)

select * from final
