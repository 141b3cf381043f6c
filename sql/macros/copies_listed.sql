{#- copies_listed(copies): one aggregate's list of each row's copies (the expression `copies`, at least 1),
    in the order of the same aggregate's list of terms; NULL when every term of the group occurs once (a
    set: nothing to pass). Shared by the signatures files and sql/50_pairs.sql. one_copy_each (their
    runners', from max(weight) over all bags): no weight rounds above 1, so every group's list would be
    NULL and none is made, where DuckDB would compute both aggregates of the CASE for every group
    (bench/RESULTS.md). #}
{%- macro copies_listed(copies) -%}
{%- if one_copy_each -%}
cast(null as bigint [])
{%- else -%}
case when max({{ copies }}) > 1 then list({{ copies }}) end
{%- endif -%}
{%- endmacro -%}
