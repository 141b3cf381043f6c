"""The CLI's printed results: --format is checked, info shows the skip accounting, query's JSON is valid."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from lshsql.cli import app
from lshsql.tools.explore import unique_names
from tests.conftest import shared, write_table


def lshsql(*args: str) -> subprocess.CompletedProcess:
    """Run the real entry point in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "lshsql", *args], capture_output=True, text=True, timeout=300
    )


def strict_json(line: str):
    """json.loads that refuses NaN and Infinity, which Python's json accepts but JSON does not."""

    def refuse(token: str):
        raise ValueError(f"not JSON: {token}")

    return json.loads(line, parse_constant=refuse)


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("lshsql: error: ")
    return result.stderr.strip()


@pytest.fixture(scope="module")
def bags_work(tmp_path_factory) -> Path:
    """A run from a bags table with a weight of 0 and a null term (rows_skipped) and terms in every URL
    (rows_dropped)."""
    folder = tmp_path_factory.mktemp("bags")
    rows = [
        {"url": "https://a.example/", "term": "x", "weight": 1.0},
        {"url": "https://a.example/", "term": "y", "weight": 0.0},
        {"url": "https://b.example/", "term": "x", "weight": 1.0},
        {"url": "https://b.example/", "term": None, "weight": 1.0},
        {"url": "https://b.example/", "term": "y", "weight": 2.0},
    ]
    table = write_table(folder / "t.parquet", rows)
    result = lshsql("run", "--bags", str(table), "--work", str(folder / "w"), "-q")
    assert result.returncode == 0, result.stderr
    return folder / "w"


def details(work: Path) -> dict[str, dict[str, str]]:
    """info --format json: {stage: {key: value}} of each stage's details."""
    result = lshsql("info", "--work", str(work), "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = [strict_json(line) for line in result.stdout.splitlines()]
    return {
        row["stage"]: dict(item.partition("=")[::2] for item in row["details"].split(", ")) for row in rows
    }


# the commands with an output --format, with the arguments that make them succeed on bags_work
FORMAT_COMMANDS = {
    "related": ["https://a.example/"],
    "clusters": [],
    "diff": [],
    "query": ["select 1"],
    "info": [],
    "mirrors": [],
    "show": ["https://a.example/"],
}


def test_the_format_commands_are_all_listed():
    with_format = {
        command.name or command.callback.__name__
        for command in app.registered_commands
        if "format" in inspect.signature(command.callback).parameters
    }
    assert with_format - {"ingest"} == set(FORMAT_COMMANDS)  # ingest's --format is its input's


@pytest.mark.parametrize("command", sorted(FORMAT_COMMANDS))
def test_an_unknown_format_is_refused_in_one_line(bags_work, command, lshsql_command):
    result = lshsql_command(command, *FORMAT_COMMANDS[command], "--work", str(bags_work), "--format", "xml")
    assert one_line_error(result) == "lshsql: error: --format must be table, csv or json, got 'xml'"
    assert result.stdout == ""


def test_info_shows_the_skipped_rows_of_term_counts_and_the_dropped_rows_of_bags(bags_work):
    found = details(bags_work)
    assert found["term_counts"]["rows_skipped.weight_not_positive"] == "1"
    assert found["term_counts"]["rows_skipped.null_term"] == "1"
    bags = found["bags"]
    dropped = sum(int(v) for k, v in bags.items() if k.startswith("rows_dropped."))
    assert dropped > 0 and int(bags["rows_read"]) == int(bags["rows_used"]) + dropped


@pytest.fixture(scope="module")
def noisy_work(tmp_path_factory) -> Path:
    """An extract of the noisy fixture crawl, whose records are skipped for several reasons."""
    work = tmp_path_factory.mktemp("noisy") / "w"
    crawl = shared("crawls", "fixture-small.noisy.warc.gz")
    result = lshsql("extract", str(crawl), "--work", str(work), "-q")
    assert result.returncode == 0, result.stderr
    return work


def test_info_accounts_for_every_record_extract_read(noisy_work):
    extract = details(noisy_work)["extract"]
    assert "records_read" in extract and "pages_used" in extract, extract
    skipped = {k: int(v) for k, v in extract.items() if k.startswith("skipped.")}
    assert len(skipped) >= 3
    assert int(extract["records_read"]) == int(extract["pages_used"]) + sum(skipped.values())
    counts = json.loads((noisy_work / "manifest.json").read_text())["stages"]["extract"]["counts"]
    assert skipped == {f"skipped.{reason}": n for reason, n in counts["skipped"].items()}


def test_info_table_and_csv_show_all_the_details(noisy_work):
    """The table wraps the details instead of cutting them at 100 characters."""
    items = [f"{k}={v}" for k, v in details(noisy_work)["extract"].items()]
    table = lshsql("info", "--work", str(noisy_work)).stdout
    assert all(item in table.split() or item + "," in table.split() for item in items)
    csv_out = lshsql("info", "--work", str(noisy_work), "--format", "csv").stdout
    assert all(item in csv_out for item in items)


def test_query_json_keeps_repeated_column_names_apart(tmp_path, lshsql_command):
    sql = "select 1 as a, 2 as a, 3 as A"
    result = lshsql_command("query", sql, "--work", str(tmp_path), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert strict_json(result.stdout) == {"a": 1, "a_1": 2, "A_2": 3}
    csv_out = lshsql_command("query", sql, "--work", str(tmp_path), "--format", "csv").stdout
    assert csv_out.splitlines() == ["a,a_1,A_2", "1,2,3"]


@pytest.mark.parametrize(
    "columns",
    [["a", "a"], ["a", "A", "a"], ["a", "a", "a_1"], ["a_1", "a", "a"], ["x", "y", "X", "x_1", "x", "y"]],
)
def test_repeated_column_names_are_made_unique_as_duckdb_names_a_subquery(columns):
    sql = "select * from (select " + ", ".join(f'{i} as "{c}"' for i, c in enumerate(columns)) + ")"
    with duckdb.connect() as con:
        named = [d[0] for d in con.execute(sql).description]
    assert unique_names(columns) == named


def test_query_json_writes_nan_and_infinity_as_null(tmp_path, lshsql_command):
    sql = (
        "select 'nan'::double as n, 'inf'::double as i, ['-inf'::double, 1.5] as l, "
        "{'x': 'nan'::double} as s, 2.5::double as f"
    )
    result = lshsql_command("query", sql, "--work", str(tmp_path), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert strict_json(result.stdout) == {"n": None, "i": None, "l": [None, 1.5], "s": {"x": None}, "f": 2.5}


@pytest.mark.parametrize("sql", ["", ";", "   ", "/* nothing */ ;"])
def test_query_without_a_statement_is_one_line(tmp_path, sql, lshsql_command):
    result = lshsql_command("query", sql, "--work", str(tmp_path))
    assert one_line_error(result) == "lshsql: error: no SQL statement given"


def test_a_query_of_term_counts_after_its_bags_table_moved_names_the_file(tmp_path, lshsql_command):
    rows = [{"url": f"https://{host}.example/", "term": term} for host in "ab" for term in "xyz"]
    rows += [{"url": "https://c.example/", "term": term} for term in "vw"]  # so that x, y, z have idf > 0
    table = write_table(tmp_path / "t.parquet", rows)
    work = tmp_path / "w"
    assert lshsql_command("run", "--bags", str(table), "--work", str(work), "-q").returncode == 0
    table.rename(tmp_path / "moved.parquet")
    result = lshsql_command("query", "select count(*) from term_counts", "--work", str(work))
    expected = f"{table}: no such file; term_counts of {work} is a view of this --bags table"
    assert one_line_error(result) == f"lshsql: error: {expected}"
    result = lshsql_command("query", "select count(*) from pairs", "--work", str(work), "--format", "csv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["count_star()", "1"]


def test_a_query_of_an_output_not_made_yet_says_what_makes_it(tmp_path, lshsql_command):
    """A folder whose extraction or ingest was killed, or that has not been run: DuckDB's Catalog Error
    would name a missing table and suggest one of its own."""
    work = tmp_path / "w"
    work.mkdir()
    cases = {
        "pages": f"{work}: no pages yet; run `lshsql extract` or `lshsql ingest` for {work} first",
        "pairs": f"{work}: no pairs yet; run `lshsql run --work {work}` first",
        "duplicates": f"{work}: no duplicates yet; run `lshsql dedup` for {work} first",
    }
    for relation, message in cases.items():
        result = lshsql_command("query", f"select count(*) from {relation}", "--work", str(work))
        assert one_line_error(result) == f"lshsql: error: {message}"
    result = lshsql_command("query", "select count(*) from no_such_table", "--work", str(work))
    assert "Catalog Error: Table with name no_such_table does not exist" in one_line_error(result)


def test_query_of_a_statement_without_rows_prints_duckdbs_count(tmp_path, lshsql_command):
    sql = "create temp table x as select 1"
    result = lshsql_command("query", sql, "--work", str(tmp_path), "--format", "csv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["Count", "1"]


def test_a_table_shows_lists_on_lines_rounds_floats_and_marks_what_it_cuts(capsys):
    import pyarrow as pa

    from lshsql.cli.output import print_table

    long = "x" * 150
    table = pa.table(
        {
            "similarity": [0.25360230547550433, 1.0],
            "words": [["alpha", "beta"], []],
            "members": [["http://a.example/1", "http://b.example/2"], ["http://c.example/3"]],
            "note": [long, None],
        }
    )
    print_table(table)
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["0.254", "alpha", "beta", "http://a.example/1", "x" * 99 + "…"]
    assert lines[3].split() == ["http://b.example/2"]  # the second member, on its own line under the first
    assert lines[3].index("http://b") == lines[2].index("http://a")
    assert lines[4].split() == ["1.0", "http://c.example/3"]
    print_table(table, "json")
    first = strict_json(capsys.readouterr().out.splitlines()[0])
    assert first["words"] == ["alpha", "beta"] and first["similarity"] == 0.25360230547550433
    print_table(table, "csv")
    assert capsys.readouterr().out.splitlines()[1].startswith("0.25360230547550433,alpha beta,http://a")


def test_clusters_json_gives_members_and_terms_as_lists(example_run, lshsql_command):
    result = lshsql_command("clusters", "--work", str(example_run), "--limit", "2", "--format", "json")
    rows = [strict_json(line) for line in result.stdout.splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert isinstance(row["members"], list) and len(row["members"]) == min(5, row["size"])
        assert (
            isinstance(row["top_terms"], list) and row["top_terms"] and " " not in "".join(row["top_terms"])
        )
        assert row["center"] in row["members"] or row["size"] > 5


def test_related_without_a_pair_names_the_nearest_candidate(example_run, lshsql_command):
    lonely = duckdb.sql(
        "select url from read_parquet($urls) where url_id not in "
        "(select u_id from read_parquet($pairs) union all select v_id from read_parquet($pairs)) "
        "and url_id in (select u_id from read_parquet($candidates)) order by url limit 1",
        params={
            "urls": str(example_run / "urls.parquet"),
            "pairs": str(example_run / "pairs.parquet"),
            "candidates": str(example_run / "candidates.parquet"),
        },
    ).fetchall()[0][0]
    result = lshsql_command("related", lonely, "--work", str(example_run))
    assert result.returncode == 0
    assert result.stdout.splitlines()[2:] == []  # the header only
    hint = result.stderr.strip()
    assert hint.startswith(f"no URL is paired with {lonely}; the nearest URL LSH found for it: http")
    assert " positions; `lshsql explain` the two" in hint
