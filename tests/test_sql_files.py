"""Every sql/*.sql: a parseable contract header, declared parameters equal to the ones used, no paths."""

from __future__ import annotations

import re

import duckdb
import pytest

from lshsql import schemas, sqlfiles
from lshsql.params import Params
from lshsql.pipeline import template_context

FILES = sorted(p.name for p in sqlfiles.sql_dir().glob("*.sql"))


def rendered(name: str, narrow_differences: bool = False, **params) -> str:
    context = template_context(Params(num_perm=4, k=2, l=3, **params))
    return sqlfiles.render(sqlfiles.load(name), context | {"narrow_differences": narrow_differences})


def test_stage_files_are_numbered_in_run_order():
    assert FILES and all(re.fullmatch(r"\d\d_[a-z_]+\.sql", name) for name in FILES)


@pytest.mark.parametrize("name", FILES)
def test_header_matches_statements(name):
    sql = sqlfiles.load(name)
    assert sql.stage == sql.writes and name[3:].startswith(sql.stage)
    used: set[str] = set()  # over every form the template renders to
    for narrow in (False, True):
        with duckdb.connect() as con:
            statements = con.extract_statements(rendered(name, narrow))
        used |= set().union(*(s.named_parameters for s in statements))
        assert len(statements) == 1 and statements[0].type == duckdb.StatementType.SELECT
    assert used == set(sql.params)


@pytest.mark.parametrize("name", FILES)
def test_stage_files_name_no_paths_and_no_unstable_functions(name):
    text = rendered(name).lower()
    # DuckDB's hash() changes between releases (only the hashed band keys may use it: the next test), log()
    # means log10 in DuckDB and ln in Spark, random is random
    hashed = "macros/band_keys_hashed.sql" in sqlfiles.load(name).text
    for banned in (r"read_parquet", r"\bcopy\b", r"\bhash\(", r"\blog\(", r"\brandom\(", r"\bqualify\b"):
        assert hashed and banned == r"\bhash\(" or not re.search(banned, text), banned


@pytest.mark.parametrize("name", FILES)
def test_hash_only_in_the_hashed_band_keys(name):
    """The DuckDB form of the LSH stages groups on hash() of a table's k min-hashes: a value that never
    leaves the query (sql/macros/band_keys.sql). Nothing else in it may use hash()."""
    lines = [line for line in rendered(name).lower().splitlines() if re.search(r"\bhash\(", line)]
    assert all(
        re.fullmatch(r"\s*hash\(((changed_)?signatures\.h\d+, )*(changed_)?signatures\.h\d+\) as key1", line)
        for line in lines
    )
    assert bool(lines) == ("macros/band_keys_hashed.sql" in sqlfiles.load(name).text)


@pytest.mark.parametrize("name", FILES)
def test_written_columns_are_documented(name):
    sql = sqlfiles.load(name)
    if sql.writes in schemas.COLUMNS:
        header_line = next(line for line in sql.text.splitlines() if line.startswith("-- writes:"))
        declared = header_line.split("(", 1)[1].rsplit(")", 1)[0].replace(" ", "").split(",")
        documented = [name for name, _, _ in schemas.COLUMNS[sql.writes]]
        if "..." in declared:  # wide tables: the documented leading columns, then one per min-hash
            declared = declared[: declared.index("...")]
        assert declared == documented


# Template parts that stay: the unrolled forms (one column per min-hash, one branch per LSH table, one key
# per band row), the INTEGER or BIGINT difference of two min-hashes, within an expression, and columns
# whose values the runner knows (a NULL list of copies, a tf of 1 made after the sort rather than sorted).
# Which algorithm runs is a file of its own, chosen by pipeline.sql_file, never a flag inside a file.
TEMPLATED = {
    "20_bags.sql",
    "30_signatures.sql",
    "30_signatures_oph.sql",
    "35_buckets.sql",
    "35_buckets_grouped.sql",
    "35_buckets_reused.sql",
    "50_pairs.sql",
    "50_pairs_estimated.sql",
    "80_hierarchy_candidates.sql",
}


@pytest.mark.parametrize("name", FILES)
def test_only_the_unrolled_files_are_templates(name):
    text = sqlfiles.load(name).text
    assert ("{%" in text or "{{" in text) == (name in TEMPLATED)
    assert "{% if" not in text.replace("{%-", "{%")  # no algorithm behind a flag


def test_every_stage_file_is_chosen_by_its_parameters():
    from lshsql.pipeline import STAGES, sql_file

    for stage in STAGES:
        assert all((sqlfiles.sql_dir() / file).exists() for file in stage.files)
    params = Params()
    assert sql_file("term_counts", params) == "10_term_counts.sql"
    assert sql_file("term_counts", params, mapped=True) == "10_term_counts_mapped.sql"
    assert sql_file("bags", params) == "20_bags.sql"
    assert sql_file("bags", params, grouped=True) == "20_bags_grouped.sql"
    assert sql_file("buckets", params) == "35_buckets.sql"
    assert sql_file("buckets", params, hashed_band_keys=False) == "35_buckets_grouped.sql"
    assert sql_file("buckets", params, reused=True) == "35_buckets_reused.sql"
    assert sql_file("pairs", params) == "50_pairs.sql"
    assert sql_file("pairs", Params(verify=False)) == "50_pairs_estimated.sql"
    assert sql_file("candidates", params) == "40_candidates.sql"
