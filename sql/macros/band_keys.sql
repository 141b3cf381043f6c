{#- One row per (URL, LSH table): the table's k min-hash values are its bucket key. `bands` holds (table
    number, its min-hash indices) from the seeded lsh_tables (family.py), all tables or one batch of them:
    template values are numbers, never user text.
    hashed_keys (the runner's, on DuckDB): the k values as one 64-bit key1 = hash(h_a, ..., h_k), grouped
    and joined on 8 bytes instead of 4 * k (about 12 % of the time at 1M URLs, k = 5, measured when
    candidates and bucket_sizes each grouped the keys). Its values never leave the query (buckets are named
    by their smallest url_id), so DuckDB's hash() changing between releases changes no row unless two
    different keys of one table collide, about N^2 / 2^65 likely per table (5e-4 in all at 10M URLs,
    l = 191). A collision merges two buckets of that table: more candidates, which the pairs stage
    checks like any other, and bucket sizes counted together (over max_bucket, the cap then ranks the
    merged bucket). Min-hashes are never NULL (signatures are minimums over non-empty bags).
    Otherwise (the Spark engine, whose hash() is another function, and the hierarchy): key1 .. keyk are the
    values themselves. Stage files name their key columns by `key_numbers`: 1 with hashed_keys, else keys. #}
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
