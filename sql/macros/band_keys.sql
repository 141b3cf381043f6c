{#- One row per (URL, LSH table): the table's k min-hash values key1 .. keyk are its bucket key. `bands`
    holds (table number, its min-hash indices) from the seeded lsh_tables (family.py), all tables or one
    batch of them: template values are numbers, never user text. The Spark engine's buckets
    (sql/35_buckets_grouped.sql) and the hierarchy (sql/80_hierarchy_candidates.sql) use this form;
    DuckDB's buckets stage groups on one hashed key instead (macros/band_keys_hashed.sql). Min-hashes are
    never NULL (signatures are minimums over non-empty bags). #}
{#- Up to 64 tables, a select of each, joined by union all; more are taken a chunk a select, as structs of a
    list unnested (one generator a select, as Spark allows), so that the query stays at 64 selects: Spark
    refuses a union of a thousand selects as too complex to parse (macros/band_keys_hashed.sql says what
    they cost DuckDB). #}
{%- set per_select = ((bands | length) + 63) // 64 %}
band_keys as (
    {%- for chunk in bands | batch(per_select) %}
    {%- if chunk | length == 1 %}
    {%- set band, indices = chunk[0] %}
    select
        signatures.url_id,
        {{ band }} as band,
        {%- for index in indices %}
        signatures.h{{ index }} as key{{ loop.index }}{{ "," if not loop.last }}
        {%- endfor %}
    from signatures
    {%- else %}
    select
        chunk_keys.url_id,
        chunk_keys.band_key.band,
        {%- for index in chunk[0][1] %}
        chunk_keys.band_key.key{{ loop.index }}{{ "," if not loop.last }}
        {%- endfor %}
    from (
        select
            signatures.url_id,
            unnest([
                {%- for band, indices in chunk %}
                {'band': {{ band }}
                {%- for index in indices %}, 'key{{ loop.index }}': signatures.h{{ index }}{% endfor %}}
                {{- ", " if not loop.last }}
                {%- endfor %}
            ]) as band_key
        from signatures
    ) as chunk_keys
    {%- endif %}
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
)
