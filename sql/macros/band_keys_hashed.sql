{#- One row per (URL, LSH table), as macros/band_keys.sql, with the table's k min-hash values as one 64-bit
    key1 = hash(h_a, ..., h_k) (the buckets stage on DuckDB, sql/35_buckets.sql): grouped and joined on 8
    bytes instead of 4 * k (about 12 % of the time at 1M URLs, k = 5, measured when candidates and
    bucket_sizes each grouped the keys). Its values never leave the query (buckets are named by their
    smallest url_id), so DuckDB's hash() changing between releases changes no row unless two different keys
    of one table collide, about N^2 / 2^65 likely per table (5e-4 in all at 10M URLs, l = 191). A collision
    merges two buckets of that table: more candidates, which the pairs stage checks like any other, and
    bucket sizes counted together (over max_bucket, the cap then ranks the merged bucket). Spark's hash() is
    another function: its engine runs sql/35_buckets_grouped.sql. A rerun's form (sql/35_buckets_reused.sql)
    takes the keys of other rows too: band_source names the relation, band_keys the CTE (defaults:
    signatures, band_keys). #}
{%- set source = band_source | default("signatures") %}
{#- Up to 64 tables, a select of each, joined by union all. More tables are taken a chunk of them a select,
    their keys unnested together (DuckDB zips two lists unnested in one select), so that the query stays
    at 64 selects: each costs a scan of its own, and thousands of them (a low threshold, few URLs) took
    twenty times the time of the keys they made (bench/RESULTS.md). #}
{%- set per_select = ((bands | length) + 63) // 64 %}
{{ band_keys | default("band_keys") }} as (
    {%- for chunk in bands | batch(per_select) %}
    {%- if chunk | length == 1 %}
    {%- set band, indices = chunk[0] %}
    select
        {{ source }}.url_id,
        {{ band }} as band,
        hash({% for index in indices %}{{ source }}.h{{ index }}{{ ", " if not loop.last }}{% endfor %}) as key1
    from {{ source }}
    {%- else %}
    select
        {{ source }}.url_id,
        unnest([{% for band, indices in chunk %}{{ band }}{{ ", " if not loop.last }}{% endfor %}]) as band,
        unnest([
            {%- for band, indices in chunk %}
            hash({% for index in indices %}{{ source }}.h{{ index }}{{ ", " if not loop.last }}{% endfor %})
            {{- ", " if not loop.last }}
            {%- endfor %}
        ]) as key1
    from {{ source }}
    {%- endif %}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
)
