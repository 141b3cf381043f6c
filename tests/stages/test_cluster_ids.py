"""Stable cluster ids (sql/62_cluster_ids.sql, lshsql/lsh/cluster_ids.py): new clusters matched to the
earlier ones by shared member URLs on tiny hand-checked tables, the history the clusters stage records, and
properties: ids unique, the same on the same inputs, an unchanged cluster keeps its id."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from lshsql import manifest
from lshsql.engines.base import DuckDBEngine
from lshsql.lsh import cluster_ids
from lshsql.params import Params
from tests.conftest import run_stage, write_table
from tests.stages.test_62_clusters import PAIR_SCHEMA, TABLES, pair_rows, url

COLUMNS = ("cluster_id", "event", "size_before", "size_after", "n_gained", "n_lost", "other_id")


def match(tmp_path, members: dict[str, int], previous: dict[str, int] | None) -> dict:
    """cluster_ids for `members` (url -> center_id) against an earlier file (url -> cluster_id): by the
    new cluster's center_id, and the ended ids under ("ended", id)."""
    path = tmp_path / "previous.parquet"
    path.unlink(missing_ok=True)
    if previous is not None:
        write_table(path, [{"url": u, "cluster_id": i} for u, i in previous.items()])
    with duckdb.connect() as con:
        con.execute(
            "create table members as select unnest($u) as url, unnest($c)::bigint as center_id",
            {"u": list(members), "c": list(members.values())},
        )
        cluster_ids.number(DuckDBEngine(con), path)
        rows = con.execute(f"select center_id, {', '.join(COLUMNS)} from cluster_ids").fetchall()
    return {center if center is not None else ("ended", row[0]): tuple(row) for center, *row in rows}


def test_a_first_run_numbers_clusters_in_center_order(tmp_path):
    found = match(tmp_path, {"a": 1, "b": 1, "c": 3}, None)
    assert found == {1: (1, "new", None, 2, 2, 0, None), 3: (2, "new", None, 1, 1, 0, None)}


def test_unchanged_clusters_keep_their_ids_whatever_their_center_id(tmp_path):
    found = match(tmp_path, {"a": 4, "b": 4, "c": 7}, {"a": 10, "b": 10, "c": 20})
    assert found == {4: (10, "unchanged", 2, 2, 0, 0, None), 7: (20, "unchanged", 1, 1, 0, 0, None)}


def test_grown_shrunk_and_changed(tmp_path):
    grown = match(tmp_path, {"a": 1, "b": 1, "x": 1}, {"a": 10, "b": 10})
    assert grown == {1: (10, "grew", 2, 3, 1, 0, None)}
    # c is no longer in any cluster (its page is gone): 10 shrank
    shrunk = match(tmp_path, {"a": 1, "b": 1}, {"a": 10, "b": 10, "c": 10})
    assert shrunk == {1: (10, "shrank", 3, 2, 0, 1, None)}
    changed = match(tmp_path, {"a": 1, "b": 1, "x": 1}, {"a": 10, "b": 10, "c": 10})
    assert changed == {1: (10, "changed", 3, 3, 1, 1, None)}


def test_a_split_leaves_the_id_with_the_bigger_part(tmp_path):
    # 10 = {a..e} splits into {a, b} (center 1) and {c, d, e} (center 3): the second holds most of it
    found = match(tmp_path, {"a": 1, "b": 1, "c": 3, "d": 3, "e": 3}, dict.fromkeys("abcde", 10))
    assert found == {3: (10, "shrank", 5, 3, 0, 2, None), 1: (11, "split", None, 2, 2, 0, 10)}


def test_a_merge_keeps_the_id_holding_more_members(tmp_path):
    # {a, b} = 20 and {c, d, e} = 10 merge: 10 contributes more members and keeps its id
    previous = {"a": 20, "b": 20, "c": 10, "d": 10, "e": 10}
    found = match(tmp_path, dict.fromkeys("abcde", 1), previous)
    assert found == {1: (10, "grew", 3, 5, 2, 0, None), ("ended", 20): (20, "merged", 2, None, 0, 2, 10)}


def test_ties_go_to_the_smaller_center_and_the_smaller_id(tmp_path):
    # a split into two halves: the part with the smaller center_id (the smaller center URL) keeps 10
    split = match(tmp_path, {"a": 1, "b": 1, "c": 2, "d": 2}, dict.fromkeys("abcd", 10))
    assert split == {1: (10, "shrank", 4, 2, 0, 2, None), 2: (11, "split", None, 2, 2, 0, 10)}
    # a merge of two halves: the smaller id, 10, survives whichever center the merged cluster has
    merged = match(tmp_path, dict.fromkeys("abcd", 5), {"a": 20, "b": 20, "c": 10, "d": 10})
    assert merged == {5: (10, "grew", 2, 4, 2, 0, None), ("ended", 20): (20, "merged", 2, None, 0, 2, 10)}


def test_an_id_goes_where_most_of_its_members_went(tmp_path):
    """10 = {a, b, c, d} leaves d to join 20 = {e}: 10 stays with {a, b, c}; {d, e} takes 20, gaining d."""
    found = match(tmp_path, {"a": 1, "b": 1, "c": 1, "d": 4, "e": 4}, {**dict.fromkeys("abcd", 10), "e": 20})
    assert found == {1: (10, "shrank", 4, 3, 0, 1, None), 4: (20, "grew", 1, 2, 1, 0, None)}


def test_gone_and_fresh_ids_above_every_earlier_one(tmp_path):
    # 30 lost every member; the new cluster {x, y} gets 31, above the largest earlier id
    found = match(tmp_path, {"c": 1, "x": 2, "y": 2}, {"a": 30, "b": 30, "c": 20})
    assert found == {
        1: (20, "unchanged", 1, 1, 0, 0, None),
        2: (31, "new", None, 2, 2, 0, None),
        ("ended", 30): (30, "gone", 2, None, 0, 2, None),
    }


def test_a_file_from_before_cluster_ids_lends_its_center_id(tmp_path):
    path = tmp_path / "previous.parquet"
    write_table(path, [{"url": "a", "center_id": 7}, {"url": "b", "center_id": 7}])
    with duckdb.connect() as con:
        con.execute("create table members as select * from (values ('a', 1), ('b', 1)) as m(url, center_id)")
        cluster_ids.number(DuckDBEngine(con), path)
        assert con.execute("select center_id, cluster_id, event from cluster_ids").fetchall() == [
            (1, 7, "unchanged")
        ]


def test_the_stage_records_a_split_and_a_merge_in_the_history(tmp_path):
    """The clusters stage twice in one folder (components). Run 1: {1..4}, {5, 6, 7}, {9..13}, 8 alone.
    Run 2 drops 2-3 (splitting {1, 2, 3, 4} into {1, 2} and {3, 4}) and adds 7-8 (8 joins {5, 6, 7}); run
    3 adds 4-5, merging {3, 4} into {5, 6, 7, 8}."""
    params = Params(clustering="components")
    first = run_stage(tmp_path, "clusters", params, TABLES, PAIR_SCHEMA)
    ids = {r["url_id"]: r["cluster_id"] for r in first}
    # fresh ids in center order: {1..4} 1, {5, 6, 7} 2, 8 3, {9..13} 4
    assert ids == {1: 1, 2: 1, 3: 1, 4: 1, 5: 2, 6: 2, 7: 2, 8: 3, **dict.fromkeys(range(9, 14), 4)}
    pairs = [p for p in pair_rows_of(TABLES) if p != (2, 3)] + [(7, 8)]
    second = run_stage(tmp_path, "clusters", params, {"pairs": pair_rows_with(pairs)}, PAIR_SCHEMA)
    ids = {r["url_id"]: r["cluster_id"] for r in second}
    # the tie of the split goes to the smaller center: {1, 2} keeps 1, {3, 4} is 5; 8's own id 3 ends
    assert {ids[i] for i in (1, 2)} == {1} and {ids[i] for i in (3, 4)} == {5}
    assert {ids[i] for i in (5, 6, 7, 8)} == {2}
    third = run_stage(tmp_path, "clusters", params, {"pairs": pair_rows_with([*pairs, (4, 5)])}, PAIR_SCHEMA)
    assert {r["url_id"]: r["cluster_id"] for r in third if r["url_id"] in (3, 4, 5, 8)} == dict.fromkeys(
        (3, 4, 5, 8), 2
    )
    history = [tuple(r.values()) for r in pq.read_table(tmp_path / cluster_ids.HISTORY).to_pylist()]
    # run, cluster_id, event, size_before, size_after, n_gained, n_lost, other_id; 8 alone merging into 2
    # is 2's growth only (a URL alone before and after has no row of its own)
    assert history == [
        (1, 1, "new", None, 4, 4, 0, None),
        (1, 2, "new", None, 3, 3, 0, None),
        (1, 4, "new", None, 5, 5, 0, None),
        (2, 1, "shrank", 4, 2, 0, 2, None),
        (2, 2, "grew", 3, 4, 1, 0, None),
        (2, 5, "split", None, 2, 2, 0, 1),
        (3, 2, "grew", 4, 6, 2, 0, None),
        (3, 5, "merged", 2, None, 0, 2, 2),
    ]


def pair_rows_of(tables: dict) -> list[tuple[int, int]]:
    return [(r["u_id"], r["v_id"]) for r in tables["pairs"]]


def pair_rows_with(pairs: list[tuple[int, int]]) -> list[dict]:
    return pair_rows([(u, v, 0.9) for u, v in pairs])


def test_a_rerun_on_the_same_clusters_writes_the_same_bytes_and_no_history(tmp_path):
    params = Params(clustering="center")
    run_stage(tmp_path, "clusters", params, TABLES, PAIR_SCHEMA)
    before = (tmp_path / "clusters.parquet").read_bytes(), (tmp_path / cluster_ids.HISTORY).read_bytes()
    run_stage(tmp_path, "clusters", params)
    # run 2 (after the history's last run, as run_stage records no manifest) finds every cluster unchanged
    assert (tmp_path / "clusters.parquet").read_bytes() == before[0]
    assert (tmp_path / cluster_ids.HISTORY).read_bytes() == before[1]


# random partitions of a few URLs into clusters: url -> cluster label
partitions = st.dictionaries(st.sampled_from([url(i) for i in range(12)]), st.integers(1, 5), max_size=12)


@settings(deadline=None)
@given(old=partitions, new=partitions)
def test_ids_are_unique_deterministic_and_kept_by_unchanged_clusters(tmp_path_factory, old, new):
    work = tmp_path_factory.mktemp("ids")
    # a cluster's center_id: its label; the old ids: 100 + label
    first = match(work, new, {u: 100 + c for u, c in old.items()})
    assert first == match(work, new, {u: 100 + c for u, c in old.items()})
    new_ids = [row[0] for key, row in first.items() if not isinstance(key, tuple)]
    assert len(new_ids) == len(set(new_ids)) == len(set(new.values()))
    ended = {row[0] for key, row in first.items() if isinstance(key, tuple)}
    old_ids = {100 + c for c in old.values()}
    kept = set(new_ids) & old_ids
    assert ended | kept == old_ids and not ended & kept  # every earlier id kept once, or ended
    assert all(i > max(old_ids, default=0) for i in set(new_ids) - old_ids)
    members = lambda partition, c: {u for u, label in partition.items() if label == c}  # noqa: E731
    for center, row in first.items():
        if isinstance(center, tuple):
            continue
        same = [c for c in set(old.values()) if members(old, c) == members(new, center)]
        assert row[0] == (100 + same[0] if same else row[0])
        assert (row[1] == "unchanged") == bool(same)


def test_a_run_that_died_before_its_clusters_were_renamed_is_recorded_once(tmp_path):
    """Run 2 wrote its history, then died before clusters.parquet was replaced and the manifest recorded
    it: run again, it is run 2 again, and its rows replace the dead run's."""
    params = Params(clustering="components")
    run_stage(tmp_path, "clusters", params, TABLES, PAIR_SCHEMA)
    manifest.record_stage(tmp_path, "clusters", {"run": 1})
    first = (tmp_path / "clusters.parquet").read_bytes()
    split = {"pairs": pair_rows_with([p for p in pair_rows_of(TABLES) if p != (2, 3)])}
    run_stage(tmp_path, "clusters", params, split, PAIR_SCHEMA)
    history = pq.read_table(tmp_path / cluster_ids.HISTORY).to_pylist()
    (tmp_path / "clusters.parquet").write_bytes(first)  # as if the rename had not happened
    run_stage(tmp_path, "clusters", params, split, PAIR_SCHEMA)
    assert pq.read_table(tmp_path / cluster_ids.HISTORY).to_pylist() == history
    assert [(r["run"], r["event"]) for r in history if r["run"] == 2] == [(2, "shrank"), (2, "split")]


def test_a_dead_runs_rows_go_when_its_rerun_changes_nothing(tmp_path):
    """Run 2 wrote its history, then died before its clusters took the old ones' place; its rerun (the
    input put back as it was) finds every cluster unchanged: the dead run's rows must not stay behind."""
    params = Params(clustering="components")
    run_stage(tmp_path, "clusters", params, TABLES, PAIR_SCHEMA)
    manifest.record_stage(tmp_path, "clusters", {"run": 1})
    first = (tmp_path / "clusters.parquet").read_bytes()
    history = pq.read_table(tmp_path / cluster_ids.HISTORY).to_pylist()
    split = {"pairs": pair_rows_with([p for p in pair_rows_of(TABLES) if p != (2, 3)])}
    run_stage(tmp_path, "clusters", params, split, PAIR_SCHEMA)
    assert {r["run"] for r in pq.read_table(tmp_path / cluster_ids.HISTORY).to_pylist()} == {1, 2}
    (tmp_path / "clusters.parquet").write_bytes(first)  # as if the rename had not happened
    run_stage(tmp_path, "clusters", params, TABLES, PAIR_SCHEMA)
    assert (tmp_path / "clusters.parquet").read_bytes() == first
    assert pq.read_table(tmp_path / cluster_ids.HISTORY).to_pylist() == history
