{#- candidates_scored: the candidates whose min-hashes' low bits agree on at least $min_agree positions, each
    with n_agree, the positions where u's and v's min-hashes agree, one term per min-hash (hashes = 0..m-1:
    the signatures' columns h0 .. h{m-1}), shared by sql/50_pairs.sql and sql/50_pairs_estimated.sql, which
    keep those with n_agree >= $min_agree. narrow_differences (the runner's, from the signatures' Parquet
    statistics): h_u - h_v fits an INTEGER for every value, else it is taken as BIGINT. #}
{%- macro difference(i) -%}
{%- if narrow_differences -%}
signature_u.h{{ i }} - signature_v.h{{ i }}
{%- else -%}
cast(signature_u.h{{ i }} as bigint) - signature_v.h{{ i }}
{%- endif -%}
{%- endmacro -%}
-- A candidate's signatures are first compared by the low 4 bits of each min-hash, 12 to a BIGINT in lanes
-- of 5 bits (signatures_lanes: one row per URL, made once). Equal min-hashes have equal low bits, so the
-- positions agreeing there bound n_agree from above and a candidate that fails the bound fails the exact
-- count too: the filter drops no pair. Most candidates fail it, so the join of two copies of the m
-- columns below is made only for the few that pass. A lane of the xor that is not 0 sets its top bit once
-- 15 is added to every lane (557865244164603375); 595056260442243600 keeps the 12 top bits. 12 lanes of
-- 5 bits stay below 2^60: nothing overflows a BIGINT or carries into the next lane.
signatures_lanes as materialized (
    select
        signatures.url_id,
        {%- for word in hashes | batch(12) %}
        {%- for i in word %}
        {{ "(" if loop.first else "| " }}((cast(signatures.h{{ i }} as bigint) & 15) << {{ 5 * loop.index0 }})
        {%- endfor %}) as lanes{{ loop.index0 }}{{ "," if not loop.last }}
        {%- endfor %}
    from signatures
),

candidates_near as materialized (
    select candidates.*
    from candidates
    inner join signatures_lanes as lanes_u on candidates.u_id = lanes_u.url_id
    inner join signatures_lanes as lanes_v on candidates.v_id = lanes_v.url_id
    where
        {{ hashes | length }}
        {%- for word in hashes | batch(12) %}
        - bit_count((xor(lanes_u.lanes{{ loop.index0 }}, lanes_v.lanes{{ loop.index0 }}) + 557865244164603375) & 595056260442243600)
        {%- endfor %}
        >= $min_agree
),

-- The full signatures of only the URLs in those candidates: the join below builds on them, not on all.
-- Not materialized: materialized, it made n_agree a nullable column of pairs.parquet (DuckDB's statistics
-- of the columns stop at a materialized CTE).
signatures_near as not materialized (
    select signatures.*
    from signatures
    where
        signatures.url_id in (
            select candidates_near.u_id from candidates_near
            union
            select candidates_near.v_id from candidates_near
        )
),

-- n_agree = m minus the positions whose min-hashes differ, |sign(h_u - h_v)| = 1: a TINYINT sign is the
-- cheapest form measured on DuckDB 2.0 (bench/RESULTS.md). The difference is an INTEGER when the runner
-- finds, by the signatures' Parquet statistics, that it cannot overflow (the pipeline's min-hashes are in
-- [0, 2^31)); otherwise (a table of one's own may hold any int32, and -2^31 - (2^31 - 1) overflows an
-- INTEGER) a BIGINT. TINYINTs add up to 127 at most: summed 100 at a time.
candidates_scored as (
    select
        candidates.u_id,
        candidates.v_id,
        candidates.n_bands,
        {{ hashes | length }}
        {%- for chunk in hashes | batch(100) %}
        - cast(
            {%- for i in chunk %}
            abs(sign({{ difference(i) }})){{ " +" if not loop.last }}
            {%- endfor %}
        as integer)
        {%- endfor %} as n_agree
    from candidates_near as candidates
    inner join signatures_near as signature_u on candidates.u_id = signature_u.url_id
    inner join signatures_near as signature_v on candidates.v_id = signature_v.url_id
)
