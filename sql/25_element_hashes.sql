-- stage:  element_hashes
-- reads:  bags(url_id, term_hash, weight), copies(copy_number)
-- writes: element_hashes(term_hash, copy_number, x)
-- order:  term_hash, copy_number
-- param:  none
--
-- The base hash x of every element term#j the flattened bags contain (UDF lsh_element_hash), computed once
-- per distinct element instead of once per bag row: a term of weight q in some bag is flattened into
-- term#1 .. term#q, so each term needs its largest q. Read back from Parquet, x comes with statistics that
-- let DuckDB run the signatures stage's arithmetic 2x faster than on the UDF's output directly.

with

term_copies as (
    select
        bags.term_hash,
        max(greatest(1, cast(round(bags.weight) as integer))) as max_copies
    from bags
    group by bags.term_hash
),

final as (
    select
        term_copies.term_hash,
        copies.copy_number,
        lsh_element_hash(term_copies.term_hash, copies.copy_number) as x
    from term_copies
    inner join copies on term_copies.max_copies >= copies.copy_number
)

select * from final order by term_hash, copy_number
