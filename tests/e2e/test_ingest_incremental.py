"""Incremental ingest: inputs read before are not read again (their raw tables, labels too, are kept in
DIR/parsed), and the final tables are the bytes an ingest from scratch of the same inputs writes, whether
an input is added, changed, removed or moved, --limit is given, or the ingest is killed part-way."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from lshsql import manifest, workdir
from lshsql.cli import app
from lshsql.engines import duckdb as db
from lshsql.params import Params
from lshsql.pipeline import run as run_stages
from lshsql.sources import parsed
from lshsql.sources.ingest import IngestParams, ingest, ingest_if_changed
from tests.conftest import write_table
from tests.e2e.test_work_folder import kill_9_while_workers_run

PARAMS = IngestParams(buckets=4)
FRUIT = ["apple", "pear", "plum", "fig", "lime", "kiwi", "date", "sloe"]


def documents(prefix: str, words: list[str], n: int = 6) -> list[dict]:
    """n documents of 8 words each, the i-th a rotation of `words`, labelled by its parity; and one
    document 'shared' (an id every input holds: the one read last is used)."""
    rows = [
        {
            "id": f"{prefix}{i}",
            "text": " ".join(words[i:] + words[:i]) + f" {prefix}word{i}",
            "title": f"{prefix} {i}",
            "labels": ["even" if i % 2 == 0 else "odd"],
        }
        for i in range(n)
    ]
    shared = {"id": "shared", "text": f"shared by {prefix}", "title": None, "labels": [prefix, "both"]}
    return [*rows, shared]


def write_jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    """a (JSON Lines) and b (Parquet, b's documents near-duplicates of a's), c (JSON Lines, other words)."""
    return {
        "a": write_jsonl(tmp_path / "a.jsonl", documents("a", FRUIT)),
        "b": str(write_table(tmp_path / "b.parquet", documents("b", FRUIT))),
        "c": write_jsonl(tmp_path / "c.jsonl", documents("c", ["oak", "elm", "ash", "yew", "fir", "pine"])),
    }


def ingest_into(paths: list, work: Path, params: IngestParams = PARAMS, force: bool = False):
    resources = db.Resources(memory_limit="1GB", threads=1, temp_directory=str(work / "tmp"))
    return ingest(paths, work, params, resources, force=force)


def tables(work: Path) -> dict[str, str]:
    """The sha256 of each final table of the ingest (fragments by bucket)."""
    names = [*workdir.INGEST_TABLES, *(Path(p).relative_to(work) for p in workdir.fragment_files(work))]
    return {str(name): hashlib.sha256((work / name).read_bytes()).hexdigest() for name in names}


def from_scratch(paths: list, tmp_path: Path, params: IngestParams = PARAMS) -> dict[str, str]:
    work = tmp_path / f"scratch-{len(list(tmp_path.glob('scratch-*')))}"
    ingest_into(paths, work, params)
    return tables(work)


def entries(work: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """Each kept entry's files with their inode and mtime (ns): a rewritten file changes both."""
    return {
        entry.name: {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(entry.iterdir())}
        for entry in sorted((work / parsed.PARSED).glob("*"))
    }


def read_counts(summary) -> tuple[int, int]:
    return summary.files_read, summary.files_reused


def test_an_added_input_is_the_only_one_read(inputs, tmp_path):
    work = tmp_path / "w"
    first = ingest_into([inputs["a"]], work)
    assert read_counts(first) == (1, 0) and first.lines()[0] == "files read:      1"
    kept = entries(work)
    assert len(kept) == 1 and set(next(iter(kept.values()))) >= {"labels.parquet", "pages.parquet"}
    both = ingest_into([inputs["a"], inputs["b"]], work)
    assert read_counts(both) == (1, 1)
    assert both.lines()[0] == "files read:      2 (1 read, 1 reused)"
    counts = manifest.read(work)["stages"]["extract"]["counts"]
    assert (counts["files_read"], counts["files_reused"]) == (1, 1)
    after = entries(work)
    assert len(after) == 2 and {k: after[k] for k in kept} == kept  # a's entry untouched
    assert tables(work) == from_scratch([inputs["a"], inputs["b"]], tmp_path)
    labels = pq.read_table(work / "labels.parquet").to_pylist()
    assert [row["label"] for row in labels if row["url"] == "shared"] == ["b", "both"]  # b's, read last
    assert {row["url"] for row in labels} >= {"a0", "b5"}
    pages = pq.read_table(work / "pages.parquet").to_pylist()
    read_now = sum(p["n_bytes"] for p in pages if p["skip_reason"] is None and p["record_id"] >> 32 == 1)
    assert first.text_bytes_read is None and 0 < both.text_bytes_read == read_now < both.text_bytes
    assert f"MB of text ({read_now / 1e6:.1f} MB read now), " in both.lines()[-2]


def test_a_changed_input_is_read_again(inputs, tmp_path):
    work = tmp_path / "w"
    ingest_into([inputs["a"], inputs["b"]], work)
    before = entries(work)
    write_table(Path(inputs["b"]), documents("b", FRUIT, n=7))  # same name, one document more
    again = ingest_into([inputs["a"], inputs["b"]], work)
    assert read_counts(again) == (1, 1)
    after = entries(work)
    assert len(after) == 2 and len(set(after) & set(before)) == 1  # b's old entry dropped
    assert tables(work) == from_scratch([inputs["a"], inputs["b"]], tmp_path)
    assert "b6" in {p["url"] for p in pq.read_table(work / "pages.parquet").to_pylist()}


def test_a_file_rewritten_with_the_same_size_and_time_is_read_again(inputs, tmp_path):
    """The content fingerprint: other bytes put back with the file's old size and mtime, seen by the
    entries and by the folder's fingerprint (ingest_if_changed) alike."""
    path, work = Path(inputs["a"]), tmp_path / "w"
    resources = db.Resources(memory_limit="1GB", threads=1, temp_directory=str(work / "tmp"))
    assert ingest_if_changed([str(path)], work, PARAMS, resources) is not None
    assert ingest_if_changed([str(path)], work, PARAMS, resources) is None  # up to date
    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(b"apple", b"grape"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    again = ingest_if_changed([str(path)], work, PARAMS, resources)
    assert again is not None and read_counts(again) == (1, 0)
    assert tables(work) == from_scratch([str(path)], tmp_path)


def test_a_file_that_grows_while_it_is_read_is_read_again_next_time(inputs, tmp_path, monkeypatch):
    """A writer appending to a JSON Lines file while lshsql reads it: the folder records the file as it
    was before it was read, and keeps no entry of it, so the next ingest reads it again, appended lines
    and all."""
    from lshsql.sources import ingest as ingest_module

    normalize_all = ingest_module._normalize_all
    grown = Path(inputs["a"])

    def read_then_grow(*args, **kwargs):
        n = normalize_all(*args, **kwargs)
        with grown.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"id": "late", "text": "appended while read"}) + "\n")
        return n

    work = tmp_path / "w"
    resources = db.Resources(memory_limit="1GB", threads=1, temp_directory=str(work / "tmp"))
    monkeypatch.setattr(ingest_module, "_normalize_all", read_then_grow)
    ingest_if_changed([inputs["a"]], work, PARAMS, resources)
    monkeypatch.setattr(ingest_module, "_normalize_all", normalize_all)
    assert entries(work) == {}
    again = ingest_if_changed([inputs["a"]], work, PARAMS, resources)
    assert again is not None and read_counts(again) == (1, 0)
    assert tables(work) == from_scratch([inputs["a"]], tmp_path)
    assert "late" in {p["url"] for p in pq.read_table(work / "pages.parquet").to_pylist()}


def test_a_removed_input_has_its_rows_removed(inputs, tmp_path):
    work = tmp_path / "w"
    ingest_into([inputs["a"], inputs["b"]], work)
    alone = ingest_into([inputs["a"]], work)
    assert read_counts(alone) == (0, 1)
    assert tables(work) == from_scratch([inputs["a"]], tmp_path)
    assert len(entries(work)) == 1  # b's entry dropped once the new tables were switched in
    labels = pq.read_table(work / "labels.parquet").to_pylist()
    assert [row["label"] for row in labels if row["url"] == "shared"] == ["a", "both"]


def test_reordered_inputs_reuse_both_and_number_records_by_the_new_order(inputs, tmp_path):
    work = tmp_path / "w"
    ingest_into([inputs["a"], inputs["b"]], work)
    kept = entries(work)
    moved = ingest_into([inputs["b"], inputs["a"]], work)
    assert read_counts(moved) == (0, 2)
    assert entries(work) == kept  # moved record ids are written to the ingest's raw folder, not the entry
    assert tables(work) == from_scratch([inputs["b"], inputs["a"]], tmp_path)
    pages = pq.read_table(work / "pages.parquet").to_pylist()
    assert {p["source_file"]: p["record_id"] >> 32 for p in pages} == {inputs["b"]: 0, inputs["a"]: 1}
    # the labels' record ids moved too: a's 'shared' is now read last, and its labels are the ones kept
    labels = pq.read_table(work / "labels.parquet").to_pylist()
    assert [row["label"] for row in labels if row["url"] == "shared"] == ["a", "both"]


def test_force_reads_every_input_again(inputs, tmp_path):
    work = tmp_path / "w"
    ingest_into([inputs["a"], inputs["b"]], work)
    before, kept = tables(work), entries(work)
    resources = db.Resources(memory_limit="1GB", threads=1, temp_directory=str(work / "tmp"))
    forced = ingest_if_changed([inputs["a"], inputs["b"]], work, PARAMS, resources, force=True)
    assert forced is not None and read_counts(forced) == (2, 0)
    assert forced.lines()[0] == "files read:      2"
    after = entries(work)
    assert set(after) == set(kept) and after != kept  # the same keys, new files
    assert tables(work) == before


def test_another_option_reads_every_input_again(inputs, tmp_path):
    """--require-label is decided per document, from the document alone: it is one of the options in
    the key, as the text options are."""
    work = tmp_path / "w"
    ingest_into([inputs["a"], inputs["b"]], work)
    labelled = IngestParams(buckets=4, require_label=True)
    again = ingest_into([inputs["a"], inputs["b"]], work, labelled)
    assert read_counts(again) == (2, 0)
    assert tables(work) == from_scratch([inputs["a"], inputs["b"]], tmp_path, labelled)
    assert len(entries(work)) == 2


def test_limit_counts_the_documents_used_before_an_input(inputs, tmp_path):
    """With --limit an input's rows depend on the documents used before it: that count (at most the
    limit) is part of its key, so an input is reused when the inputs before it are the same; after an
    input that is read, only once the limit is reached before it."""
    a, b, c = inputs["a"], inputs["b"], inputs["c"]
    limited = IngestParams(buckets=4, limit=10)  # a and b use 7 documents each
    work = tmp_path / "w"
    ingest_into([a], work, limited)
    grown = ingest_into([a, b], work, limited)
    assert read_counts(grown) == (1, 1) and grown.skipped == {"over_limit": 4}  # b's shared too
    assert tables(work) == from_scratch([a, b], tmp_path, limited)
    past = ingest_into([a, b, c], work, limited)  # c comes after the limit: all its documents over it
    assert read_counts(past) == (1, 2) and past.skipped == {"over_limit": 11}
    assert tables(work) == from_scratch([a, b, c], tmp_path, limited)
    moved = ingest_into([b, a, c], work, limited)  # b has none before it now: read, and what follows it
    assert read_counts(moved) == (3, 0)
    assert tables(work) == from_scratch([b, a, c], tmp_path, limited)
    assert read_counts(ingest_into([b, a, c], work, limited)) == (0, 3)
    five = IngestParams(buckets=4, limit=5)  # reached in a: b and c over it wherever they are
    ingest_into([a, c], work, five)
    added = ingest_into([a, b, c], work, five)
    assert read_counts(added) == (1, 2)  # c reused at another position, its record ids moved
    assert tables(work) == from_scratch([a, b, c], tmp_path, five)


def test_an_in_memory_table_is_kept_by_its_rows_digest(inputs, tmp_path):
    table = pa.Table.from_pylist(documents("t", FRUIT))
    work = tmp_path / "w"
    ingest_into([inputs["a"], table], work)
    kept = entries(work)
    same_rows = pa.Table.from_pylist(documents("t", FRUIT))  # another object, the same rows
    grown = ingest_into([inputs["a"], same_rows, inputs["b"]], work)
    assert read_counts(grown) == (1, 2)
    assert {k: v for k, v in entries(work).items() if k in kept} == kept
    assert tables(work) == from_scratch([inputs["a"], same_rows, inputs["b"]], tmp_path)
    assert "<pyarrow.Table #1>" in {
        p["source_file"] for p in pq.read_table(work / "pages.parquet").to_pylist()
    }
    other = pa.Table.from_pylist(documents("t", FRUIT, n=3))
    changed = ingest_into([inputs["a"], other, inputs["b"]], work)
    assert read_counts(changed) == (1, 2)
    assert tables(work) == from_scratch([inputs["a"], other, inputs["b"]], tmp_path)


def pairs(work: Path) -> list[tuple]:
    """The rows of a run's pairs.parquet, in its order."""
    return [tuple(row.values()) for row in pq.read_table(work / "pairs.parquet").to_pylist()]


def test_run_after_an_incremental_ingest_gives_the_pairs_of_one_from_scratch(inputs, tmp_path):
    params = Params(weighting="none", threshold=0.5, k=2, l=12)
    resources = db.Resources(memory_limit="1GB", threads=1)
    work, scratch = tmp_path / "w", tmp_path / "scratch"
    ingest_into([inputs["a"]], work)
    run_stages(work, params, resources=resources)
    assert read_counts(ingest_into([inputs["a"], inputs["b"]], work)) == (1, 1)
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--work",
            str(work),
            "--weighting",
            "none",
            "--threshold",
            "0.5",
            "-k",
            "2",
            "-l",
            "12",
            "--threads",
            "1",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    ingest_into([inputs["a"], inputs["b"]], scratch)
    run_stages(scratch, params, resources=resources)
    found = pairs(work)
    assert len(found) > 6 and found == pairs(scratch)
    assert {(u[0], v[0]) for u, v, *_ in found} == {("a", "a"), ("b", "b")}  # b's documents, added


def big_input(path: Path, n_docs: int = 3000) -> str:
    """Documents enough for several batches, so that worker processes normalize them."""
    words = " ".join(f"word{i}" for i in range(60))
    return write_jsonl(path, [{"id": f"big{n}", "text": f"{words} doc{n}"} for n in range(n_docs)])


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_kill_9_while_reading_an_added_input_keeps_the_last_result(inputs, tmp_path):
    work = tmp_path / "w"
    ingest_into([inputs["a"]], work)
    before, kept = tables(work), entries(work)
    entry = manifest.read(work)["stages"]["extract"]
    paths = [inputs["a"], big_input(tmp_path / "big.jsonl")]
    options = ["--buckets", "4", "--threads", "2", "-q"]  # PARAMS
    command = [sys.executable, "-m", "lshsql", "ingest", *paths, "--work", str(work), *options]
    assert kill_9_while_workers_run(command), "the ingest ended before it could be killed while reading"
    assert tables(work) == before and entries(work) == kept
    assert manifest.read(work)["stages"]["extract"] == entry
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "files read:      2 (1 read, 1 reused)" in result.stdout
    assert tables(work) == from_scratch(paths, tmp_path)
