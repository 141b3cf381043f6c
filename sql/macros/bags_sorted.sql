{#- The columns of sql/20_bags.sql's sort, and those made after it. A sort costs by the columns it moves
    (bench/RESULTS.md), so a column its runner knows is made after the sort from what was sorted: tf when
    it is 1 on every row (unit_tf: a user's bags without a weight column, one row per url and term) and
    weight when it is tf (weights_are_tf: weighting none). #}
{%- macro sorted_columns(relation) -%}
{{ relation }}.df
{%- if not unit_tf %}, {{ relation }}.tf{% endif %}
{%- if not weights_are_tf %}, {{ relation }}.weight{% endif %}
{%- endmacro -%}

{%- macro tf(relation) -%}
{%- if unit_tf %}cast(1 as double){% else %}{{ relation }}.tf{% endif -%}
{%- endmacro -%}

{%- macro weight(relation) -%}
{%- if weights_are_tf %}{{ tf(relation) }}{% else %}{{ relation }}.weight{% endif -%}
{%- endmacro -%}
