-- lsh_bag_pack(terms, copies): lshsql packs a bag (its list of term hashes, and the list of their copies or
-- NULL for one of each) into one BLOB for the compiled lsh_bag_overlap (lshsql/engines/overlap.py). In a
-- plain DuckDB (the duckdb shell running a stage's compiled SQL) the bag stays a struct of the two lists,
-- which the macro of sql/udf/lsh_bag_overlap.sql reads.
create or replace macro lsh_bag_pack(terms, copies) as { 'terms': terms, 'copies': copies };
