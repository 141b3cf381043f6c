"""The README and the examples stay true: set-up commands, schemas, commands and example queries."""

from __future__ import annotations

import re

import duckdb
import pytest

from lshsql import db, schemas
from lshsql.cli import app
from lshsql.extract import ExtractParams, extract
from lshsql.params import Params
from lshsql.pipeline import run
from tests.conftest import EXAMPLE_CRAWL, REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
WALKTHROUGH = (REPO / "examples" / "README.md").read_text(encoding="utf-8")


def test_readme_has_the_two_setup_commands_and_the_makefile_has_them():
    assert "make demo" in README and "make test" in README
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (REPO / ".ci" / "run").read_text()


@pytest.mark.parametrize("table", sorted(schemas.COLUMNS))
def test_readme_documents_every_output_schema(table):
    assert schemas.markdown(table) in README


def test_readme_mentions_every_command():
    for command in app.registered_commands:
        assert f"lshsql {command.name or command.callback.__name__}" in README


def test_walkthrough_queries_run_on_the_example_crawl(tmp_path, monkeypatch):
    work = tmp_path / "work" / "example"
    resources = db.Resources(memory_limit="1GB", threads=2)
    extract([str(EXAMPLE_CRAWL)], work, ExtractParams(), resources)
    run(work, Params(), resources=resources)
    monkeypatch.chdir(tmp_path)
    queries = re.findall(r"```sql\n(.*?)```", WALKTHROUGH + README, re.S)
    assert len(queries) >= 7
    with duckdb.connect() as con:
        for query in queries:
            assert con.execute(query).fetchall(), query


def test_api_names_stay_functions_after_their_modules_are_imported():
    import importlib

    import lshsql

    for name in ("extract", "evaluate", "ingest", "hierarchy", "plan"):
        importlib.import_module(f"lshsql.{name}")
        for _ in range(2):  # as a notebook's first and second call
            assert callable(getattr(lshsql, name)) and getattr(lshsql, name).__name__ == name
