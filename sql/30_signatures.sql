-- stage:  signatures
-- reads:  bags(url_id, term_hash, weight), coefficients(a0, b0, ...), copies(copy_number)
-- writes: signatures(url_id, h0, ..., h{m-1})
-- order:  url_id
-- param:  none
-- template: hashes = 0..m-1 (one column per min-hash); modulus = 2^(8 * signature bytes)
--
-- Min-hash signatures of weighted bags (Broder 1997; Haveliwala et al. 2000, sec. 3). A bag is flattened
-- into the set {term#1 .. term#q}, q = round(weight) but at least 1, so that the probability of equal
-- min-hashes is the weighted (multiset) Jaccard sum(min)/sum(max) of the rounded weights. Each element gets a
-- stable base hash x < P = 2^31 - 1 (UDF lsh_element_hash) and h_i = min over elements of
-- (a_i * x + b_i) mod P: a_i, b_i < P keeps every intermediate below 2^62. All m values in one pass.

with

elements as (
    select
        bags.url_id,
        lsh_element_hash(bags.term_hash, copies.copy_number) as x
    from bags
    inner join copies on copies.copy_number <= greatest(1, cast(round(bags.weight) as integer))
),

final as (
    select
        elements.url_id,
        {%- for i in hashes %}
        cast(min((elements.x * coefficients.a{{ i }} + coefficients.b{{ i }}) % 2147483647){{ modulus_op }} as integer) as h{{ i }}{{ "," if not loop.last }}
        {%- endfor %}
    from elements
    cross join coefficients
    group by elements.url_id
)

select * from final order by url_id
