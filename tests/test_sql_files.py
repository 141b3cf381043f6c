"""Every sql/*.sql: a parseable contract header, declared parameters equal to the ones used, no paths."""

from __future__ import annotations

import itertools
import re

import duckdb
import pytest

from lshsql import schemas, sqlfiles
from lshsql.params import Params
from lshsql.pipeline import template_context

FILES = sorted(p.name for p in sqlfiles.sql_dir().glob("*.sql"))


BLOCK = {"u_from": 0, "u_to": 5, "v_from": 5, "v_to": 10}  # pairs: one block of url_id ranges


def rendered(
    name: str,
    rows_unique: bool = False,
    hashed_keys: bool = False,
    block: dict | None = None,
    shared_by_sort: bool = False,
    **params,
) -> str:
    context = template_context(Params(num_perm=4, k=2, l=3, **params))
    context |= {
        "rows_unique": rows_unique,
        "hashed_keys": hashed_keys,
        "block": block,
        "shared_by_sort": shared_by_sort,
    }
    return sqlfiles.render(sqlfiles.load(name), context)


def test_stage_files_are_numbered_in_run_order():
    assert FILES and all(re.fullmatch(r"\d\d_[a-z_]+\.sql", name) for name in FILES)


@pytest.mark.parametrize("name", FILES)
def test_header_matches_statements(name):
    sql = sqlfiles.load(name)
    assert sql.stage == sql.writes and name[3:].startswith(sql.stage)
    used: set[str] = set()  # over every form the template renders to
    flags = (False, True)
    forms = itertools.product(flags, ("tfidf", "none"), flags, flags, (None, BLOCK), flags)
    for verify, weighting, rows_unique, hashed_keys, block, by_sort in forms:
        with duckdb.connect() as con:
            statements = con.extract_statements(
                rendered(name, rows_unique, hashed_keys, block, by_sort, verify=verify, weighting=weighting)
            )
        used |= set().union(*(s.named_parameters for s in statements))
        assert len(statements) == 1 and statements[0].type == duckdb.StatementType.SELECT
    assert used == set(sql.params)


@pytest.mark.parametrize("name", FILES)
def test_stage_files_name_no_paths_and_no_unstable_functions(name):
    text = rendered(name).lower()
    # DuckDB's hash() changes between releases, log() means log10 in DuckDB and ln in Spark, random is random
    for banned in (r"read_parquet", r"\bcopy\b", r"\bhash\(", r"\blog\(", r"\brandom\(", r"\bqualify\b"):
        assert not re.search(banned, text), banned


@pytest.mark.parametrize("name", FILES)
def test_hash_only_in_the_hashed_band_keys(name):
    """The DuckDB form of the LSH stages groups on hash() of a table's k min-hashes: a value that never
    leaves the query (sql/macros/band_keys.sql). Nothing else in it may use hash()."""
    lines = [
        line for line in rendered(name, hashed_keys=True).lower().splitlines() if re.search(r"\bhash\(", line)
    ]
    assert all(
        re.fullmatch(r"\s*hash\((signatures\.h\d+, )*signatures\.h\d+\) as key1", line) for line in lines
    )
    assert bool(lines) == ("macros/band_keys.sql" in sqlfiles.load(name).text)


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
