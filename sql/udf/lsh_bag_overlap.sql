-- lsh_bag_overlap(u, v): the shared copies of two bags, sum over the terms of both of min(copies in u,
-- copies in v), NULL copies meaning one of each term. lshsql runs the compiled UDF of
-- lshsql/engines/overlap.py on bags packed by lsh_bag_pack; this macro gives the same values in a plain
-- DuckDB (the duckdb shell running a stage's compiled SQL) on the bags sql/udf/lsh_bag_pack.sql makes,
-- looking each term up by position: fine for reading a few pairs, quadratic in a bag's length.
create or replace macro lsh_bag_overlap(u, v) as
case
    when u is not null and v is not null
        then coalesce(
                list_sum(
                    list_transform(
                        range(1, len(u.terms) + 1),
                        lambda i: coalesce(
                            least(
                                coalesce(u.copies[i], 1),
                                coalesce(v.copies[list_position(v.terms, u.terms[i])], 1)
                            ) * (list_position(v.terms, u.terms[i]) is not null)::bigint,
                            0
                        )
                    )
                ),
                0
            )::bigint
end;
