-- stage:  term_counts
-- reads:  user_bags(url, term, weight)
-- writes: term_counts(url, term, tf)
-- order:  none: the user's rows as they are (a view over their table: no Parquet file is written)
-- param:  none
--
-- The same relation from a user's bags (url, term, optional weight; the runner supplies weight 1 when the
-- column is absent). It is a view, not a duplicate: repeated (url, term) rows stay repeated here and the bags
-- stage adds them up (exactly, as DECIMAL). Rows with a null url or term, or a weight that is not
-- positive or not finite (the runner's user_bags has NaN as infinity), cannot be part of a bag; the
-- runner counts them per reason.

with

final as (
    select
        user_bags.url,
        user_bags.term,
        user_bags.weight as tf
    from user_bags
    where
        user_bags.url is not null and user_bags.term is not null
        and user_bags.weight > 0 and user_bags.weight < cast('Infinity' as double)
)

select * from final
