-- lsh_minhash(terms, copies, a, b): lshsql computes a bag's m min-hashes with the compiled UDF of
-- lshsql/engines/minhash.py. These macros give the same values in a plain DuckDB (the duckdb shell running
-- a stage's compiled SQL): splitmix64 in UHUGEINT arithmetic kept to 64 bits, x = splitmix64(t XOR j *
-- 0x9E3779B97F4A7C15) mod (2^31 - 1) for the element term#j, then h_i = min over the elements of
-- ((a_i * x + b_i) mod 2^40) >> 9. Fine for checking a run; far slower than the UDF.
create or replace macro lsh_mix64(z, shift, multiplier) as
(xor(z, z >> shift) * multiplier) & 18446744073709551615;

create or replace macro lsh_finish64(z) as
xor(z, z >> 31);

create or replace macro lsh_element_x(term_hash, copy_number) as
cast(
    lsh_finish64(
        lsh_mix64(
            lsh_mix64(
                (
                    xor(
                        cast(term_hash as uhugeint),
                        (cast(copy_number as uhugeint) * 11400714819323198485) & 18446744073709551615
                    )
                    + 11400714819323198485
                )
                & 18446744073709551615,
                30,
                13787848793156543929
            ),
            27,
            10723151780598845931
        )
    ) % 2147483647 as bigint
);

create or replace macro lsh_minhash_of_elements(xs, a, b) as
list_transform(
    range(1, len(a) + 1),
    lambda i: cast(list_min(list_transform(xs, lambda x: (x * a[i] + b[i]) & 1099511627775)) >> 9 as integer)
);

create or replace macro lsh_minhash(terms, copies, a, b) as
case
    when len(terms) > 0
        then lsh_minhash_of_elements(
                flatten(
                    list_transform(
                        range(1, len(terms) + 1),
                        lambda i: list_transform(
                            range(1, greatest(1, coalesce(copies[i], 1)) + 1),
                            lambda j: lsh_element_x(terms[i], j)
                        )
                    )
                ),
                a,
                b
            )
end;
