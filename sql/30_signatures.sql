-- stage:  signatures
-- reads:  bags(url_id, term_hash, weight)
-- writes: signatures(url_id, h0, ..., h{m-1})
-- order:  url_id
-- param:  none
-- template: coefficients = (a_i, b_i) of min-hash i = 0..m-1, integers drawn from the seed (family.py);
--           hashes = 0..m-1; modulus_op = mod 2^(8 * signature bytes); one_copy_each = no weight rounds
--           above 1 (the runner's check of max(weight)): no list of copies is made
--
-- Min-hash signatures of weighted bags (Broder 1997; Haveliwala et al. 2000, sec. 3). A bag is flattened
-- into the set {term#1 .. term#q}, q = round(weight) but at least 1, so that the probability of equal
-- min-hashes is the weighted (multiset) Jaccard sum(min)/sum(max) of the rounded weights. Each element gets a
-- stable base hash x < 2^31 (splitmix64 of term_hash and j) and h_i = min over elements of bits 9..39 of
-- a_i * x + b_i (multiply-add-shift hashing; family.py): a_i, b_i < 2^32 keep it below 2^63. The UDF
-- lsh_minhash (lshsql/engines/minhash.py, compiled) computes all m values of a bag in one pass over its
-- elements, hashing each once, from the bag's list of terms and their copies.

{% import "macros/copies_listed.sql" as copies with context %}
with

-- One row per URL: its terms and their copies, listed by one aggregation (so in the same order;
-- macros/copies_listed.sql), and its m min-hashes.
bags_signed as (
    select
        bags.url_id,
        lsh_minhash(
            list(bags.term_hash),
            {{ copies.copies_listed("greatest(1, cast(round(bags.weight) as bigint))") }},
            [{% for a, b in coefficients %}{{ a }}{{ ", " if not loop.last }}{% endfor %}],
            [{% for a, b in coefficients %}{{ b }}{{ ", " if not loop.last }}{% endfor %}]
        ) as signature
    from bags
    group by bags.url_id
),

{% include "macros/signature_columns.sql" %}

select * from final order by url_id
