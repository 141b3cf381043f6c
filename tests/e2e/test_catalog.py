"""DIR/lshsql.duckdb as a user opens it: a moved copy of the work folder, plain DuckDB, and the oldest
DuckDB readers the docs name (docs/outputs.md), which `make test-all` installs into .old-duckdb/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from lshsql.pipeline import CATALOG, open_catalog, write_catalog
from tests.conftest import REPO, copy_work

OLD_DUCKDB = REPO / ".old-duckdb"
OLD_CLI = OLD_DUCKDB / "cli" / "bin" / "duckdb"  # duckdb-cli 1.4.4, the oldest CLI on PyPI
OLD_PYTHON_PACKAGE = OLD_DUCKDB / "py"  # duckdb 1.0.0
COUNTED = ("pages", "links", "fragments", "terms", "bags", "pairs", "clusters")


@pytest.fixture(scope="module")
def moved(example_run: Path, tmp_path_factory) -> Path:
    """A copy of the example run in another folder, the original left where it is: the views must read the
    copy's files (a copy whose catalog read the original's would pass a test that only moved the folder)."""
    work = copy_work(example_run, tmp_path_factory.mktemp("moved") / "elsewhere [copy]")
    keep = pq.read_table(work / "pairs.parquet").slice(0, 5)
    pq.write_table(keep, work / "pairs.parquet")  # the copy now differs from the original
    return work


def expected_counts(work: Path) -> dict[str, int]:
    counts = {name: pq.ParquetFile(work / f"{name}.parquet").metadata.num_rows for name in COUNTED[:2]}
    fragments = sorted((work / "fragments").glob("bucket=*/*.parquet"))
    counts["fragments"] = sum(pq.ParquetFile(f).metadata.num_rows for f in fragments)
    counts |= {name: pq.ParquetFile(work / f"{name}.parquet").metadata.num_rows for name in COUNTED[3:]}
    return counts


def test_a_moved_copy_opens_in_plain_duckdb_from_its_folder(moved, monkeypatch):
    monkeypatch.chdir(moved)
    with duckdb.connect(CATALOG, read_only=True) as con:
        counts = {name: con.execute(f"select count(*) from {name}").fetchall()[0][0] for name in COUNTED}
    assert counts == expected_counts(moved) and counts["pairs"] == 5


def test_open_catalog_reads_the_folders_own_files_from_inside_another(moved, example_run, monkeypatch):
    monkeypatch.chdir(example_run)  # a folder holding files of the same names, with other rows
    with open_catalog(moved) as con:
        assert con.execute("select count(*) from pairs").fetchall() == [(5,)]
        views = {
            v for (v,) in con.execute("select view_name from duckdb_views() where not internal").fetchall()
        }
    assert set(COUNTED) <= views


def test_plain_duckdb_elsewhere_finds_no_files(moved, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with duckdb.connect(str(moved / CATALOG), read_only=True) as con, pytest.raises(duckdb.IOException):
        con.execute("select count(*) from pairs").fetchall()  # relative paths: open it from its folder


def test_a_dead_writers_log_is_not_replayed_onto_the_new_catalog(example_run, tmp_path, monkeypatch):
    work = copy_work(example_run, tmp_path / "w")
    script = (
        "import duckdb, os; con = duckdb.connect('lshsql.duckdb'); "
        "con.execute('create or replace view pairs as select 42 as u'); os._exit(0)"  # no checkpoint
    )
    subprocess.run([sys.executable, "-c", script], cwd=work, check=True, timeout=120)
    assert (work / (CATALOG + ".wal")).exists()
    write_catalog(work)
    assert not (work / (CATALOG + ".wal")).exists()
    monkeypatch.chdir(work)
    with duckdb.connect(CATALOG, read_only=True) as con:
        assert con.execute("select count(*) from pairs").fetchall()[0][0] > 5


def test_the_catalog_is_rewritten_whole(example_run, tmp_path, monkeypatch):
    work = copy_work(example_run, tmp_path / "w")
    (work / CATALOG).write_bytes(b"not a database")  # e.g. written by a newer DuckDB, or damaged
    write_catalog(work)
    assert not (work / (CATALOG + ".new")).exists()
    monkeypatch.chdir(work)
    with duckdb.connect(CATALOG, read_only=True) as con:
        assert con.execute("select count(*) from clusters").fetchall()[0][0] > 0


def _require(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} missing: `make test-all` installs the old DuckDB readers")


def test_the_oldest_duckdb_cli_opens_a_moved_copy(moved):
    _require(OLD_CLI)
    query = "; ".join(f"select '{name}', count(*) from {name}" for name in COUNTED)
    result = subprocess.run(
        [str(OLD_CLI), "-readonly", "-csv", "-noheader", CATALOG, "-c", query],
        cwd=moved, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    counts = {name: int(n) for name, n in (line.split(",") for line in result.stdout.split())}
    assert counts == expected_counts(moved)


def test_duckdb_1_0_opens_a_moved_copy(moved):
    _require(OLD_PYTHON_PACKAGE)
    script = (
        "import duckdb, sys; assert duckdb.__version__ == '1.0.0', duckdb.__version__; "
        "con = duckdb.connect('lshsql.duckdb', read_only=True); "
        "print(con.execute('select count(*) from pairs').fetchall()[0][0])"
    )
    env = {**os.environ, "PYTHONPATH": str(OLD_PYTHON_PACKAGE)}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=moved, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "5"
