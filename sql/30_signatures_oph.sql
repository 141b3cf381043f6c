-- stage:  signatures
-- reads:  bags(url_id, term_hash, weight)
-- writes: signatures(url_id, h0, ..., h{m-1})
-- order:  url_id
-- param:  none
-- template: num_bins = m; oph_salt = the integer drawn from the seed that salts the bins and the probes
--           (family.py); hashes = 0..m-1; modulus_op = mod 2^(8 * signature bytes); one_copy_each = no
--           weight rounds above 1 (the runner's check of max(weight)): no list of copies is made
--
-- One-permutation signatures of weighted bags (--sketch oph; Li, Owen & Zhang 2012, with the optimal
-- densification of Shrivastava 2017): the bag is flattened into {term#1 .. term#q} as in
-- sql/30_signatures.sql, each element hashed once into one of m bins, h_i = the least value in bin i, and an
-- empty bin copies the bin its seeded probe sequence finds first, so that P(h_i(u) = h_i(v)) is the
-- weighted Jaccard of u and v at every position, as with m min-hashes, at the cost of one hash per element.
-- The UDF lsh_oph (lshsql/engines/oph.py, compiled) has no SQL stand-in: the probes run until they find a
-- non-empty bin.

{% import "macros/copies_listed.sql" as copies with context %}
with

-- One row per URL: its terms and their copies, listed by one aggregation (so in the same order;
-- macros/copies_listed.sql), and its m values.
bags_signed as (
    select
        bags.url_id,
        lsh_oph(
            list(bags.term_hash),
            {{ copies.copies_listed("greatest(1, cast(round(bags.weight) as bigint))") }},
            {{ num_bins }},
            {{ oph_salt }}
        ) as signature
    from bags
    group by bags.url_id
),

{% include "macros/signature_columns.sql" %}

select * from final order by url_id
