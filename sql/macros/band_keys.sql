{#- One row per (URL, LSH table): the table's k min-hash values are its bucket key. Exact keys, no hashing
    of the key, so two URLs share a bucket only if all k values agree. `bands` comes from the seeded
    lsh_tables (family.py): template values are column numbers, never user text. #}
band_keys as (
    {%- for indices in bands %}
    select
        signatures.url_id,
        {{ loop.index0 }} as band,
        {%- for index in indices %}
        signatures.h{{ index }} as key{{ loop.index }}{{ "," if not loop.last }}
        {%- endfor %}
    from signatures
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
)
