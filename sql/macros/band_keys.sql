{#- One row per (URL, LSH table): the table's k min-hash values are its bucket key. `bands` holds (table
    number, its min-hash indices) from the seeded lsh_tables (family.py), all tables or one batch of them:
    template values are numbers, never user text.
    hashed_keys (DuckDB): the k values as one 64-bit key1 = hash(h_a, ..., h_k), grouped and joined on 8
    bytes instead of 4k: the LSH stages take 35 % less time at 1M URLs (k = 5). Two URLs with different
    values share a bucket only if their keys collide, ~N^2 / 2^65 likely per table (5e-4 in all at 10M URLs,
    l = 191); such a pair is at worst one more candidate, which the pairs stage checks like any other.
    Otherwise (Spark: its hash() is another function) key1 .. keyk are the values themselves. #}
band_keys as (
    {%- for band, indices in bands %}
    select
        signatures.url_id,
        {{ band }} as band,
        {%- if hashed_keys %}
        hash({% for index in indices %}signatures.h{{ index }}{{ ", " if not loop.last }}{% endfor %}) as key1
        {%- else %}
        {%- for index in indices %}
        signatures.h{{ index }} as key{{ loop.index }}{{ "," if not loop.last }}
        {%- endfor %}
        {%- endif %}
    from signatures
    {%- if not loop.last %}
    union all
    {%- endif %}
    {%- endfor %}
)
