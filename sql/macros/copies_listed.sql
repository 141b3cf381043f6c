{#- copies_listed(weight): one aggregate's list of each row's copies, round(weight) but at least 1, in the
    order of the same aggregate's list of terms; NULL when every term of the group occurs once (a set:
    nothing to pass). Shared by sql/30_signatures.sql and sql/30_signatures_oph.sql. one_copy_each (the
    runner's, from max(weight) over all bags): no weight rounds above 1, so every group's list would be NULL
    and none is made; listing the copies anyway cost 5 of 12 s at 1M URLs (bench/RESULTS.md). #}
{%- macro copies_listed(weight) -%}
{%- if one_copy_each -%}
cast(null as bigint [])
{%- else -%}
case
                when max(greatest(1, cast(round({{ weight }}) as bigint))) > 1
                    then list(greatest(1, cast(round({{ weight }}) as bigint)))
            end
{%- endif -%}
{%- endmacro -%}
