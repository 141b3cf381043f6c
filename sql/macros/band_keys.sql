{#- One row per (URL, LSH table): the table's k min-hash values are its bucket key. Exact keys, no hashing
    of the key, so two URLs share a bucket only if all k values agree. `bands` holds (table number, its
    min-hash indices) from the seeded lsh_tables (family.py), all tables or one batch of them: template
    values are numbers, never user text. #}
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
