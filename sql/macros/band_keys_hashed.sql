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
{{ band_keys | default("band_keys") }} as (
    {%- for band, indices in bands %}
    select
        {{ source }}.url_id,
        {{ band }} as band,
        hash({% for index in indices %}{{ source }}.h{{ index }}{{ ", " if not loop.last }}{% endfor %}) as key1
    from {{ source }}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
)
