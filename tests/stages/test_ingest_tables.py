"""`ingest` of in-memory tables: a pyarrow.Table, a pandas DataFrame (without its index) or a polars
DataFrame is read like a Parquet file, with the same rows and the same record accounting."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.sources import documents
from lshsql.sources.ingest import IngestParams, ingest, ingest_if_changed

ONE = db.Resources(memory_limit="1GB", threads=1)
PARAMS = IngestParams(id_column="doc", text_column="body")
# five rows: two used with labels, one without text, one without id, one with a float id (bad_value)
COLUMNS = {
    "doc": [10, 11, None, 13, 14],
    "body": ["red apples and green pears", None, "no id", "ripe yellow bananas", "sweet red cherries"],
    "labels": [["fruit", "red"], ["fruit"], [], [], None],
    "extra": [1.5, 2.5, 3.5, 4.5, 5.5],  # a column ingest does not read
}
ACCOUNTED = {"missing_text": 1, "missing_id": 1}


def rows(query: str) -> list[tuple]:
    with duckdb.connect() as con:
        return con.execute(query).fetchall()


def pages(work: Path) -> list[tuple]:
    return rows(
        f"select url, record_type, source_file, source_offset, skip_reason from '{work}/pages.parquet'"
    )


def outputs(work: Path) -> dict[str, bytes]:
    """The files an ingest writes that do not name its inputs (pages.parquet has source_file)."""
    files = ["links.parquet", "labels.parquet", "surface_forms.parquet"]
    files += sorted(str(p.relative_to(work)) for p in (work / "fragments").glob("*/*.parquet"))
    return {name: (work / name).read_bytes() for name in files}


@pytest.fixture
def parquet_run(tmp_path):
    path = tmp_path / "docs.parquet"
    pq.write_table(pa.table(COLUMNS), path)
    ingest([str(path)], tmp_path / "file", PARAMS, ONE)
    return tmp_path / "file"


def test_an_arrow_table_is_read_like_its_parquet_file(tmp_path, parquet_run):
    summary = ingest(pa.table(COLUMNS), tmp_path / "w", PARAMS, ONE)
    assert (summary.records_read, summary.pages_used, summary.skipped) == (5, 3, ACCOUNTED)
    assert summary.files == ["<pyarrow.Table #1>"]
    assert outputs(tmp_path / "w") == outputs(parquet_run)
    assert pages(tmp_path / "w") == [
        (url, kind, "<pyarrow.Table #1>", offset, reason)
        for url, kind, _, offset, reason in pages(parquet_run)
    ]
    assert pages(tmp_path / "w")[:3] == [
        ("10", "document", "<pyarrow.Table #1>", 0, None),
        ("11", "document", "<pyarrow.Table #1>", 1, "missing_text"),
        (None, "document", "<pyarrow.Table #1>", 2, "missing_id"),
    ]


def test_record_batches_of_a_table_are_read_in_order(tmp_path, parquet_run, monkeypatch):
    monkeypatch.setattr(documents, "_PARQUET_BATCH", 2)
    chunked = pa.Table.from_batches(pa.table(COLUMNS).to_batches(max_chunksize=3))
    ingest([chunked], tmp_path / "w", PARAMS, ONE)
    assert outputs(tmp_path / "w") == outputs(parquet_run)


def test_a_pandas_frame_is_read_without_its_index(tmp_path, parquet_run):
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(COLUMNS, index=[7, 3, 9, 1, 5])
    frame["doc"] = frame["doc"].astype("Int64")  # a nullable integer column stays integer in Arrow
    summary = ingest(frame, tmp_path / "w", PARAMS, ONE)
    assert (summary.pages_used, summary.skipped) == (3, ACCOUNTED)
    assert outputs(tmp_path / "w") == outputs(parquet_run)
    assert [row[2:4] for row in pages(tmp_path / "w")] == [("<pandas.DataFrame #1>", i) for i in range(5)]


def test_a_polars_frame_is_read_by_its_arrow_table(tmp_path, parquet_run):
    polars = pytest.importorskip("polars")
    summary = ingest(polars.DataFrame(COLUMNS), tmp_path / "w", PARAMS, ONE)
    assert (summary.pages_used, summary.skipped) == (3, ACCOUNTED)
    assert outputs(tmp_path / "w") == outputs(parquet_run)


def test_tables_and_files_together_in_input_order(tmp_path):
    path = tmp_path / "more.jsonl"
    path.write_text(json.dumps({"doc": "j1", "body": "plain words"}) + "\n")
    summary = ingest([pa.table(COLUMNS), str(path), pa.table(COLUMNS)], tmp_path / "w", PARAMS, ONE)
    assert summary.files == ["<pyarrow.Table #1>", str(path), "<pyarrow.Table #2>"]
    assert summary.records_read == 11 and summary.skipped == {
        "missing_text": 2,
        "missing_id": 2,
        "duplicate_url": 3,
    }


def test_an_unchanged_table_is_up_to_date_and_a_changed_one_is_not(tmp_path):
    work = tmp_path / "w"
    assert ingest_if_changed(pa.table(COLUMNS), work, PARAMS, ONE) is not None
    entry = json.loads((work / "manifest.json").read_text())["stages"]["extract"]
    [source] = entry["inputs"]
    assert (source["path"], source["kind"], source["rows"], len(source["sha256"])) == (
        "<pyarrow.Table #1>",
        "arrow",
        5,
        64,
    )
    assert ingest_if_changed(pa.table(COLUMNS), work, PARAMS, ONE) is None  # a new table, the same rows
    # a column ingest does not read changes nothing; one it reads does
    assert ingest_if_changed(pa.table({**COLUMNS, "extra": [0.0] * 5}), work, PARAMS, ONE) is None
    changed = pa.table({**COLUMNS, "body": [*COLUMNS["body"][:4], "sour green cherries"]})
    assert ingest_if_changed(changed, work, PARAMS, ONE).pages_used == 3


def test_a_table_without_the_text_column_names_the_option(tmp_path):
    with pytest.raises(InputError) as error:
        ingest(pa.table({"doc": [1], "text": ["x"]}), tmp_path / "w", PARAMS, ONE)
    assert str(error.value) == (
        "<pyarrow.Table #1>: no column 'body' (columns: doc, text); name it with --text-column"
    )


def test_bad_tables_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match=r"^no documents: no records in <pyarrow.Table #1>$"):
        ingest(
            pa.table({"doc": pa.array([], pa.int64()), "body": pa.array([], pa.string())}),
            tmp_path / "a",
            PARAMS,
            ONE,
        )
    repeated = pa.Table.from_arrays(
        [pa.array(["a"]), pa.array(["x"]), pa.array(["y"])], ["doc", "body", "body"]
    )
    with pytest.raises(InputError, match=r"^<pyarrow.Table #1>: the column names 'body' are repeated$"):
        ingest(repeated, tmp_path / "b", PARAMS, ONE)
    pandas = pytest.importorskip("pandas")
    mixed = pandas.DataFrame({"doc": [1, "a"], "body": ["x", "y"]})
    with pytest.raises(InputError, match=r"^<pandas.DataFrame #1>: cannot be turned into an Arrow table: "):
        ingest(mixed, tmp_path / "c", PARAMS, ONE)
