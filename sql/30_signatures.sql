-- stage:  signatures
-- reads:  bags(url_id, term_hash, weight), element_hashes(term_hash, copy_number, x)
-- writes: signatures(url_id, h0, ..., h{m-1})
-- order:  url_id
-- param:  none
-- template: coefficients = (a_i, b_i) of min-hash i = 0..m-1 (one column each), integers drawn from the seed
--           (family.py); modulus = 2^(8 * signature bytes)
--
-- Min-hash signatures of weighted bags (Broder 1997; Haveliwala et al. 2000, sec. 3). A bag is flattened
-- into the set {term#1 .. term#q}, q = round(weight) but at least 1, so that the probability of equal
-- min-hashes is the weighted (multiset) Jaccard sum(min)/sum(max) of the rounded weights. Each element gets a
-- stable base hash x < 2^31 (element_hashes) and h_i = min over elements of bits 9..39 of
-- a_i * x + b_i (multiply-add-shift hashing; family.py): a_i, b_i < 2^32 keep it below 2^63, and a mask
-- and a shift cost far less than a modulo (2.2x faster than mod 2^31 - 1). All m values in one pass. The
-- coefficients are written in as numbers: a join to a one-row table of them cost 15% of the stage.

with

elements as (
    select
        bags.url_id,
        element_hashes.x
    from bags
    inner join element_hashes
        on bags.term_hash = element_hashes.term_hash
        and element_hashes.copy_number <= greatest(1, cast(round(bags.weight) as integer))
),

-- The shift by 9 is taken after the min, once per URL instead of once per element: shifting keeps the order
-- of non-negative values, so the min of the shifted values is the shifted min.
final as (
    select
        elements.url_id,
        {%- for a, b in coefficients %}
        cast((min((elements.x * {{ a }} + {{ b }}) & 1099511627775) >> 9){{ modulus_op }} as integer) as h{{ loop.index0 }}{{ "," if not loop.last }}
        {%- endfor %}
    from elements
    group by elements.url_id
)

select * from final order by url_id
