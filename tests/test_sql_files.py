"""Every sql/*.sql: a parseable contract header, declared parameters equal to the ones used, no paths."""

from __future__ import annotations

import duckdb
import pytest

from lshsql import schemas, sqlfiles

FILES = sorted(p.name for p in sqlfiles.sql_dir().glob("*.sql"))


def test_stage_files_are_numbered_in_run_order():
    assert FILES and all(name[:2].isdigit() and name[2] == "_" for name in FILES)
    assert sorted(FILES, key=lambda name: int(name[:2])) == FILES


@pytest.mark.parametrize("name", FILES)
def test_header_matches_statements(name):
    sql = sqlfiles.load(name)
    assert sql.stage == sql.writes == name[3:-4]
    with duckdb.connect() as con:
        statements = con.extract_statements(sql.text)
    used = set().union(*(s.named_parameters for s in statements))
    assert used == set(sql.params)
    assert statements[-1].type == duckdb.StatementType.SELECT


@pytest.mark.parametrize("name", FILES)
def test_stage_files_name_no_paths_and_no_unstable_functions(name):
    text = sqlfiles.load(name).text.lower()
    for banned in ("read_parquet", "copy ", "hash(", " log(", "random("):
        assert banned not in text, banned


@pytest.mark.parametrize("name", FILES)
def test_written_columns_are_documented(name):
    sql = sqlfiles.load(name)
    if sql.writes in schemas.COLUMNS:
        header_line = next(line for line in sql.text.splitlines() if line.startswith("-- writes:"))
        declared = header_line.split("(", 1)[1].rsplit(")", 1)[0].replace(" ", "").split(",")
        assert declared == [name for name, _, _ in schemas.COLUMNS[sql.writes]]
