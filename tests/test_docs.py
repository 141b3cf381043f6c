"""The README, docs/ and the examples stay true: set-up commands, generated pages, links, commands, queries."""

from __future__ import annotations

import importlib.util
import re

import duckdb
import pytest

from lshsql import schemas
from lshsql.cli import app
from tests.conftest import REPO, copy_work

DOCS = REPO / "docs"
README = (REPO / "README.md").read_text(encoding="utf-8")
WALKTHROUGH = (REPO / "examples" / "README.md").read_text(encoding="utf-8")
PAGES = sorted(DOCS.glob("*.md"))
GENERATED = {"cli.md", "outputs.md"}


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_has_the_setup_commands_and_the_makefile_has_them():
    for command in ("make demo", "make test", "make test-all"):
        assert command in README, command
    makefile = (REPO / "Makefile").read_text()
    for target in ("demo", "test", "test-all", "docs"):
        assert re.search(rf"^{target}:", makefile, re.M), target
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_readme_stays_a_first_page():
    assert len(README.splitlines()) <= 160
    assert "(examples/README.md)" in README.split("## ")[0], "link the walkthrough before the first section"


@pytest.mark.parametrize("page", sorted(GENERATED))
def test_generated_pages_are_up_to_date(page, monkeypatch):
    monkeypatch.setenv("COLUMNS", "37")  # the terminal's width must not matter
    expected = {path.name: text for path, text in _generator().pages().items()}[page]
    committed = (DOCS / page).read_text(encoding="utf-8")
    assert committed == expected, f"docs/{page} is out of date: run `python docs/generate.py` (make docs)"


@pytest.mark.parametrize("table", sorted(schemas.COLUMNS))
def test_outputs_page_documents_every_output_schema(table):
    text = (DOCS / "outputs.md").read_text(encoding="utf-8")
    assert f"<!-- schema: {table} -->\n{schemas.markdown(table)}\n<!-- /schema -->" in text


def test_every_command_has_its_help_and_prose():
    cli = (DOCS / "cli.md").read_text(encoding="utf-8")
    prose = README + "".join(p.read_text(encoding="utf-8") for p in PAGES if p.name != "cli.md")
    for command in app.registered_commands:
        name = command.name or command.callback.__name__
        assert f"\n## lshsql {name}\n" in cli, name
        assert f"lshsql {name}" in prose, name


def _anchors(text: str) -> set[str]:
    """GitHub's ids of a page's headings: lowercase, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    ids = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        ids.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return ids


@pytest.mark.parametrize("page", [REPO / "README.md", *PAGES], ids=lambda p: p.name)
def test_relative_links_and_anchors_resolve(page):
    text = page.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", re.sub(r"```.*?```", "", text, flags=re.S))
    for link in links:
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link} points at no file"
        if anchor:
            assert target.suffix == ".md", f"{page.name}: {link}"
            assert anchor in _anchors(target.read_text(encoding="utf-8")), (
                f"{page.name}: no #{anchor} in {link}"
            )


def test_example_queries_run_on_the_example_crawl(example_run, tmp_path, monkeypatch):
    copy_work(example_run, tmp_path / "work" / "example")  # the walkthrough's `make demo` folder
    monkeypatch.chdir(tmp_path)
    texts = [WALKTHROUGH, README, *(p.read_text(encoding="utf-8") for p in PAGES)]
    queries = re.findall(r"```sql\n(.*?)```", "".join(texts), re.S)
    assert len(queries) >= 9
    with duckdb.connect() as con:
        for query in queries:
            assert con.execute(query).fetchall(), query


def test_api_names_stay_functions_after_their_modules_are_imported():
    import importlib

    import lshsql

    modules = {
        "extract": "sources.extract",
        "evaluate": "tools.evaluate",
        "ingest": "sources.ingest",
        "hierarchy": "tools.hierarchy",
        "plan": "lsh.plan",
    }
    for name, module in modules.items():
        importlib.import_module(f"lshsql.{module}")
        for _ in range(2):  # as a notebook's first and second call
            assert callable(getattr(lshsql, name)) and getattr(lshsql, name).__name__ == name
