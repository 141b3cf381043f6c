"""DIR/compiled/<stage>.sql and `lshsql sql`: the SQL each stage ran, runnable in a plain DuckDB (the duckdb
shell) from the work folder, gives the rows the stage wrote."""

from __future__ import annotations

import duckdb
import pytest
from typer.testing import CliRunner

from lshsql.cli import app
from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.params import Params
from lshsql.pipeline import STAGE_NAMES, compiled_sql, output_path, run
from tests.e2e.test_run import make_bags

RESOURCES = db.Resources(memory_limit="1GB", threads=2)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A small run from a bags table, with verify: the pairs stage reads candidates, signatures, urls and
    bags."""
    folder = tmp_path_factory.mktemp("compiled")
    bags = make_bags(folder / "docs.parquet", n_docs=300)
    run(folder / "work", Params(threshold=0.5, weighting="tf"), bags=bags, resources=RESOURCES)
    return folder / "work"


def rows_of(text: str) -> list[tuple]:
    """The rows of the last statement of `text`, run on a fresh connection without lshsql's UDFs."""
    with duckdb.connect() as con:
        return con.execute(text).fetchall()


# the signatures stage compiled without its UDF computes every min-hash in SQL arithmetic: slow
@pytest.mark.parametrize(
    "stage",
    ["urls", "bags", pytest.param("signatures", marks=pytest.mark.slow), "buckets", "candidates", "pairs"],
)
def test_the_compiled_sql_gives_the_stage_output(work, stage, monkeypatch):
    text = compiled_sql(work, stage)
    assert text == (work / "compiled" / f"{stage}.sql").read_text()
    assert "Needs the Python UDF" not in text
    monkeypatch.chdir(work)  # the views read the work folder's files by relative paths
    got = rows_of(text)
    with duckdb.connect() as con:
        want = con.read_parquet(str(output_path(work, stage))).fetchall()
    assert got == want and got  # same rows, same order


def test_the_pairs_sql_binds_its_parameters_as_variables(work):
    text = compiled_sql(work, "pairs")
    assert "sql/50_pairs.sql" in text and "{%" not in text and "{{" not in text
    assert (
        "set variable min_agree = cast(" in text and "set variable threshold = cast('0.5' as double);" in text
    )
    assert "$threshold" in text  # the file's own text, its parameters read as the variables
    assert "create or replace view bags as select * from read_parquet('bags.parquet'" in text


def test_stages_that_need_a_udf_say_so(work):
    for stage in ("terms",):
        assert "-- Needs the Python UDF(s) lsh_" in compiled_sql(work, stage)
    assert {p.stem for p in (work / "compiled").glob("*.sql")} == set(STAGE_NAMES)


def test_a_stage_not_run_has_no_compiled_sql(tmp_path):
    with pytest.raises(InputError, match="no compiled SQL of the stage pairs"):
        compiled_sql(tmp_path, "pairs")
    with pytest.raises(InputError, match="unknown stage 'nope'"):
        compiled_sql(tmp_path, "nope")


def test_lshsql_sql_prints_it(work):
    result = CliRunner().invoke(app, ["sql", "candidates", "--work", str(work)])
    assert result.exit_code == 0, result.output
    assert result.output == compiled_sql(work, "candidates")
    assert result.output.rstrip().endswith("select * from final order by u_id, v_id;")
