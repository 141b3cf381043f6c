-- lsh_bag_overlap(u_terms, u_copies, v_terms, v_copies): the shared copies of two bags, sum over the terms
-- of both of min(copies in u, copies in v), a NULL list of copies meaning one of each term. lshsql runs the
-- compiled UDF of lshsql/engines/overlap.py; this macro gives the same values in a plain DuckDB (the duckdb
-- shell running a stage's compiled SQL), looking each term up by position: fine for reading a few pairs,
-- quadratic in a bag's length.
create or replace macro lsh_bag_overlap(u_terms, u_copies, v_terms, v_copies) as
case
    when u_terms is not null and v_terms is not null
        then coalesce(
                list_sum(
                    list_transform(
                        range(1, len(u_terms) + 1),
                        lambda i: coalesce(
                            least(
                                coalesce(u_copies[i], 1),
                                coalesce(v_copies[list_position(v_terms, u_terms[i])], 1)
                            ) * (list_position(v_terms, u_terms[i]) is not null)::bigint,
                            0
                        )
                    )
                ),
                0
            )::bigint
end;
