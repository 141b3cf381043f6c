{#- candidates_scored: each candidate with n_agree, the positions where u's and v's min-hashes agree, one term
    per min-hash (hashes = 0..m-1: the signatures' columns h0 .. h{m-1}), shared by sql/50_pairs.sql and
    sql/50_pairs_estimated.sql. narrow_differences (the runner's, from the signatures' Parquet statistics):
    h_u - h_v fits an INTEGER for every value, else it is taken as BIGINT. #}
{%- macro difference(i) -%}
{%- if narrow_differences -%}
signature_u.h{{ i }} - signature_v.h{{ i }}
{%- else -%}
cast(signature_u.h{{ i }} as bigint) - signature_v.h{{ i }}
{%- endif -%}
{%- endmacro -%}
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
    from candidates
    inner join signatures as signature_u on candidates.u_id = signature_u.url_id
    inner join signatures as signature_v on candidates.v_id = signature_v.url_id
)
