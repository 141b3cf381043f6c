"""Stable cluster ids across runs in one work folder: the example crawl run again with another threshold
(its history and `lshsql diff`), and with an unrelated crawl added (most URLs keep their cluster_id)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from lshsql.engines import duckdb as db
from lshsql.params import Params
from lshsql.pipeline import run
from lshsql.sources.extract import ExtractParams, extract
from lshsql.tools.changes import EVENTS, change_counts, cluster_changes
from tests.conftest import EXAMPLE_CRAWL, copy_work, shared

RESOURCES = db.Resources(memory_limit="1GB", threads=1)


def kept_share(before: Path, after: Path) -> float:
    """The share of the URLs of `before` (a clusters file) that have the same cluster_id in `after`."""
    query = (
        "select avg(cast(b.cluster_id = a.cluster_id as double)) from read_parquet($b) as b "
        "inner join read_parquet($a) as a on a.url = b.url"
    )
    with duckdb.connect() as con:
        return con.execute(query, {"b": str(before), "a": str(after)}).fetchall()[0][0]


def test_a_rerun_records_the_changes_and_diff_prints_them(example_run, tmp_path, lshsql_command):
    work = copy_work(example_run, tmp_path / "work")
    first = pq.read_table(work / "clusters.parquet")
    assert first.column("cluster_id").null_count == 0
    centers = first.filter(first.column("is_center"))
    # one id per cluster, numbered 1, 2, ... in center URL order on a first run
    ids = centers.sort_by("center").column("cluster_id").to_pylist()
    assert ids == list(range(1, len(ids) + 1))
    (work / "first.parquet").write_bytes((work / "clusters.parquet").read_bytes())
    run(work, Params(threshold=0.3), resources=RESOURCES)
    assert 0.5 < kept_share(work / "first.parquet", work / "clusters.parquet") < 1.0
    history = pq.read_table(work / "cluster_history.parquet").to_pylist()
    assert {r["run"] for r in history} == {1, 2}
    second = [r for r in history if r["run"] == 2]
    events = {r["event"] for r in second}
    assert {"shrank", "split"} <= events <= set(EVENTS)  # a higher threshold only breaks clusters apart
    counts = change_counts(work)
    assert sum(counts.values()) == len(second) and counts["new"] == 0
    for row in second:  # sizes and counts agree
        before, after = row["size_before"] or 0, row["size_after"] or 0
        assert after - before == row["n_gained"] - row["n_lost"]
        assert (row["other_id"] is not None) == (row["event"] in ("split", "merged"))
    table = cluster_changes(work, events=("split",), limit=3)
    assert table.column_names == [
        "event", "cluster_id", "size_before", "size_after", "n_gained", "n_lost", "other_id", "center",
        "top_terms",
    ]  # fmt: skip
    splits = table.to_pylist()
    assert splits and all(r["event"] == "split" and r["center"] for r in splits)
    assert [r["size_after"] for r in splits] == sorted((r["size_after"] for r in splits), reverse=True)

    shown = lshsql_command(
        "diff", "--work", str(work), "--event", "split", "--limit", "3", "--format", "json"
    )
    assert shown.returncode == 0, shown.stderr
    assert [json.loads(line) for line in shown.stdout.splitlines()] == splits
    assert shown.stderr.startswith(f"run 2: 0 new, {counts['split']} split, ")
    earlier = lshsql_command("diff", "--work", str(work), "--run", "1", "--format", "csv")
    assert earlier.returncode == 0 and earlier.stdout.count("\nnew,") == counts_of_run(history, 1)
    queried = lshsql_command("query", "select max(run) as runs from cluster_history", "--work", str(work))
    assert queried.stdout.split()[-1] == "2"
    for args, message in (
        (("--run", "3"), "lshsql: error: --run must be a run of this folder, 1 .. 2, got 3"),
        (("--event", "moved"), "lshsql: error: --event must be among new, split, grew, shrank, changed, "
         "merged, gone, got moved"),
    ):  # fmt: skip
        refused = lshsql_command("diff", "--work", str(work), *args)
        assert (refused.returncode, refused.stderr.strip(), refused.stdout) == (2, message, "")


def counts_of_run(history: list[dict], run_number: int) -> int:
    return sum(1 for r in history if r["run"] == run_number)


@pytest.mark.slow
def test_most_urls_keep_their_cluster_id_when_an_unrelated_site_is_added(tmp_path):
    """The example crawl (4 documentation sites), then the same with the Debian handbook's 130 pages added:
    the example's URLs keep their cluster_id (97 % when measured), though adding a site changes every
    URL's TF-IDF weights and so some pairs."""
    handbook = shared("crawls", "fixture-handbook-neardup.warc.gz")
    work = tmp_path / "work"
    extract([str(EXAMPLE_CRAWL)], work, ExtractParams(), RESOURCES)
    run(work, Params(), resources=RESOURCES)
    (work / "first.parquet").write_bytes((work / "clusters.parquet").read_bytes())
    extract([str(EXAMPLE_CRAWL), str(handbook)], work, ExtractParams(), RESOURCES)
    run(work, Params(), resources=RESOURCES)
    assert kept_share(work / "first.parquet", work / "clusters.parquet") >= 0.95
    counts = change_counts(work)
    assert counts["new"] > 0 and counts["gone"] == 0  # the handbook's clusters; no URL of the example left


def test_an_id_that_ended_unrecorded_is_never_given_again(tmp_path):
    """d, alone in run 1 with the largest id, joins {a, b} in run 2: a URL alone has no history row, so its
    id ends unrecorded; the new cluster {e, f} of run 3 must not take it (a saved link to it would open an
    unrelated cluster)."""
    from tests.conftest import write_table

    def bags(named: dict[str, str]) -> Path:
        path = tmp_path / f"bags{len(list(tmp_path.glob('bags*')))}.parquet"
        rows = [{"url": u, "term": f"{word}{i}"} for u, word in named.items() for i in range(10)]
        return write_table(path, rows)

    params = Params(weighting="none", threshold=0.5)
    work = tmp_path / "w"

    def ids(named: dict[str, str]) -> dict[str, int]:
        run(work, params, bags=bags(named), resources=RESOURCES)
        return {r["url"]: r["cluster_id"] for r in pq.read_table(work / "clusters.parquet").to_pylist()}

    assert ids({"a": "x", "b": "x", "c": "y", "d": "z"}) == {"a": 1, "b": 1, "c": 2, "d": 3}
    assert ids({"a": "x", "b": "x", "c": "y", "d": "x"}) == {"a": 1, "b": 1, "c": 2, "d": 1}
    third = ids({"a": "x", "b": "x", "c": "y", "d": "x", "e": "w", "f": "w"})
    assert third["e"] == third["f"] == 4


def test_show_says_how_an_id_that_ended_ended(tmp_path):
    from lshsql.errors import InputError
    from lshsql.tools.show import cluster_members
    from tests.conftest import write_table

    params, work = Params(weighting="none", threshold=0.5), tmp_path / "w"
    for n, named in enumerate(({"a": "x", "b": "x", "c": "y", "d": "y"}, dict.fromkeys("abcd", "x"))):
        rows = [{"url": u, "term": f"{word}{i}"} for u, word in named.items() for i in range(10)]
        run(work, params, bags=write_table(tmp_path / f"b{n}.parquet", rows), resources=RESOURCES)
    assert {r["cluster_id"] for r in pq.read_table(work / "clusters.parquet").to_pylist()} == {1}
    assert cluster_members(work, 1).num_rows == 4
    with pytest.raises(InputError, match=r"^2: merged into cluster 1 in run 2 \(lshsql diff"):
        cluster_members(work, 2)
    with pytest.raises(InputError, match=r"^7: no such cluster"):
        cluster_members(work, 7)


def test_a_run_killed_after_renaming_its_clusters_is_recorded_against_the_run_before(tmp_path):
    """Killed between the rename of clusters.parquet and the manifest's write (simulated: the manifest's
    clusters entry put back as run 1 left it): the rerun matches its ids to run 1's clusters, kept in
    DIR/reuse, and records the same changes as an uninterrupted run 2, not 'nothing changed'."""
    from lshsql import manifest
    from tests.conftest import write_table

    params = Params(weighting="none", threshold=0.5)

    def bags(name: str, named: dict[str, str]) -> Path:
        rows = [{"url": u, "term": f"{word}{i}"} for u, word in named.items() for i in range(10)]
        return write_table(tmp_path / f"{name}.parquet", rows)

    first = bags("first", {"a": "x", "b": "x", "c": "y", "d": "y"})
    second = bags("second", dict.fromkeys("abcd", "x"))
    histories = []
    for killed in (False, True):
        work = tmp_path / f"w{int(killed)}"
        run(work, params, bags=first, resources=RESOURCES)
        entry = manifest.read(work)["stages"]["clusters"]
        run(work, params, bags=second, resources=RESOURCES)
        if killed:
            data = manifest.read(work)
            data["stages"]["clusters"] = entry
            manifest.write(work, data)
            run(work, params, bags=second, resources=RESOURCES)
        histories.append(pq.read_table(work / "cluster_history.parquet").to_pylist())
    assert histories[1] == histories[0]
    assert {(r["cluster_id"], r["event"]) for r in histories[0] if r["run"] == 2} == {
        (1, "grew"),
        (2, "merged"),
    }
