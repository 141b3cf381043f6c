{#- One row per (URL, LSH table): the table's k min-hash values key1 .. keyk are its bucket key. `bands`
    holds (table number, its min-hash indices) from the seeded lsh_tables (family.py), all tables or one
    batch of them: template values are numbers, never user text. The Spark engine's buckets
    (sql/35_buckets_grouped.sql) and the hierarchy (sql/80_hierarchy_candidates.sql) use this form;
    DuckDB's buckets stage groups on one hashed key instead (macros/band_keys_hashed.sql). Min-hashes are
    never NULL (signatures are minimums over non-empty bags). #}
band_keys as (
    {%- for band, indices in bands %}
    select
        signatures.url_id,
        {{ band }} as band,
        {%- for index in indices %}
        signatures.h{{ index }} as key{{ loop.index }}{{ "," if not loop.last }}
        {%- endfor %}
    from signatures
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
)
