"""cluster_tree (Kruskal's single-link dendrogram) and sql/85_cut.sql: a hand-checked example, and on random
graphs the cut against scipy's connected components and the tree against scipy's minimum spanning tree."""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

from lshsql import schemas, sqlfiles

# leaves 10..50; a cycle 10-20-30 (10-30 and the reversed duplicate 20-10 are not in the tree), a tie at
from lshsql.lsh import tree

# 0.7 (20-30 before 40-50 by u), a self-loop, and 30-40 joining the two groups at 0.3
LEAVES = [50, 10, 20, 30, 40]
EDGES = [  # u, v, similarity, level
    (10, 20, 0.9, 1),
    (20, 30, 0.7, 2),
    (40, 50, 0.7, 2),
    (10, 30, 0.5, 3),
    (30, 40, 0.3, 4),
    (30, 30, 1.0, 5),
    (20, 10, 0.6, 6),
]
URLS = {10: "http://a/", 20: "http://b/", 30: "http://c/", 40: "http://d/", 50: "http://e/"}

# node, parent, is_leaf, similarity, parent_similarity, level, left, right, u, v, size, first, last
TREE = [
    (10, 51, True, None, 0.9, None, None, None, None, None, 1, 0, 0),
    (20, 51, True, None, 0.9, None, None, None, None, None, 1, 1, 1),
    (30, 52, True, None, 0.7, None, None, None, None, None, 1, 2, 2),
    (40, 53, True, None, 0.7, None, None, None, None, None, 1, 3, 3),
    (50, 53, True, None, 0.7, None, None, None, None, None, 1, 4, 4),
    (51, 52, False, 0.9, 0.7, 1, 10, 20, 10, 20, 2, 0, 1),
    (52, 54, False, 0.7, 0.3, 2, 51, 30, 20, 30, 3, 0, 2),
    (53, 54, False, 0.7, 0.3, 2, 40, 50, 40, 50, 2, 3, 4),
    (54, None, False, 0.3, None, 4, 52, 53, 30, 40, 5, 0, 4),
]


def build(leaves=LEAVES, edges=EDGES, with_level=True) -> pa.Table:
    u, v, sim, level = (np.array(c) for c in zip(*edges, strict=True)) if edges else ([], [], [], [])
    return tree.single_link_tree(np.array(leaves), u, v, sim, np.array(level) if with_level else None)


def rows(table: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in table.to_pylist()]


def cut_rows(work: Path, table: pa.Table, urls: dict[int, str], threshold: float) -> list[dict]:
    """Run sql/85_cut.sql the way the pipeline does: Parquet inputs registered as views."""
    pq.write_table(table, work / "cluster_tree.parquet")
    pq.write_table(pa.table({"url_id": list(urls), "url": list(urls.values())}), work / "urls.parquet")
    out = work / "cut.parquet"
    with duckdb.connect() as con:
        inputs = {name: str(work / f"{name}.parquet") for name in ("cluster_tree", "urls")}
        sqlfiles.register_inputs(con, inputs)
        written, _ = tree.cut(con, threshold, out)
    result = pq.read_table(out)
    schemas.validate(out, "cut")
    clusters = schemas.schema("clusters")
    assert schemas.schema("cut") == pa.schema(f for f in clusters if f.name not in schemas.CHAINING_COLUMNS)
    assert written == result.num_rows
    return result.to_pylist()


def centers(cut: list[dict]) -> dict[int, int]:
    return {r["url_id"]: r["center_id"] for r in cut}


def test_hand_checked_tree():
    table = build()
    assert table.schema == schemas.schema("cluster_tree")
    assert rows(table) == TREE
    assert build(with_level=False).column("level").null_count == len(TREE)
    u, v, sim, level = zip(*EDGES, strict=True)
    partial = tree.single_link_tree(np.array(LEAVES), u, v, sim, [None, *level[1:]])  # a null level
    assert partial.column("level").to_pylist() == [None] * 6 + [2, 2, 4]


@pytest.mark.parametrize(
    "threshold, groups",
    [
        (1.01, [[10], [20], [30], [40], [50]]),
        (1.0, [[10], [20], [30], [40], [50]]),  # the self-loop at 1.0 merges nothing
        (0.9, [[10, 20], [30], [40], [50]]),
        (0.8, [[10, 20], [30], [40], [50]]),
        (0.7, [[10, 20, 30], [40, 50]]),
        (0.5, [[10, 20, 30], [40, 50]]),
        (0.3, [[10, 20, 30, 40, 50]]),
        (0.0, [[10, 20, 30, 40, 50]]),
    ],
)
def test_hand_checked_cuts(tmp_path, threshold, groups):
    expected = []
    for group in groups:
        expected += [(m, URLS[m], group[0], URLS[group[0]], len(group), m == group[0]) for m in group]
    got = [
        (r["url_id"], r["url"], r["center_id"], r["center"], r["size"], r["is_center"])
        for r in cut_rows(tmp_path, build(), URLS, threshold)
    ]
    assert got == sorted(expected)


def test_url_not_in_the_tree_is_its_own_cluster(tmp_path):
    # 52 is also the node_id of a merge: the URL must not join that merge's cluster
    urls = {**URLS, 52: "http://f/", 60: "http://g/"}
    cut = cut_rows(tmp_path, build(), urls, 0.7)
    assert centers(cut) == {10: 10, 20: 10, 30: 10, 40: 40, 50: 40, 52: 52, 60: 60}
    assert [r["size"] for r in cut if r["url_id"] in (52, 60)] == [1, 1]


def test_forest_positions_and_left_is_the_side_of_u():
    # trees by smallest leaf: {1}, {3, 9}, {5}; the edge's u (9) is the left child
    table = tree.single_link_tree(np.array([5, 1, 9, 3]), np.array([9]), np.array([3]), np.array([0.5]))
    got = {
        r["node_id"]: (r["parent_id"], r["left_id"], r["first_position"], r["last_position"])
        for r in table.to_pylist()
    }
    assert got == {
        1: (None, None, 0, 0),
        3: (10, None, 2, 2),
        5: (None, None, 3, 3),
        9: (10, None, 1, 1),
        10: (None, 9, 1, 2),
    }


@pytest.mark.parametrize("reverse", [False, True])
def test_ties_go_by_u_then_v_then_level(reverse):
    edges = [(1, 4, 0.5, 0), (2, 3, 0.5, 0), (1, 2, 0.5, 3), (1, 2, 0.5, 1)]
    merges = [
        r for r in build([1, 2, 3, 4], edges[::-1] if reverse else edges).to_pylist() if not r["is_leaf"]
    ]
    assert [
        (r["node_id"], r["u_id"], r["v_id"], r["level"], r["left_id"], r["right_id"]) for r in merges
    ] == [
        (5, 1, 2, 1, 1, 2),
        (6, 1, 4, 0, 5, 4),
        (7, 2, 3, 0, 6, 3),
    ]


def test_empty_and_edgeless(tmp_path):
    assert build(leaves=[], edges=[]).num_rows == 0
    table = build(leaves=[3, 1, 2], edges=[])
    assert [(r["node_id"], r["parent_id"], r["first_position"]) for r in table.to_pylist()] == [
        (1, None, 0),
        (2, None, 1),
        (3, None, 2),
    ]
    assert centers(cut_rows(tmp_path, build(leaves=[], edges=[]), {1: "a", 2: "b"}, 0.5)) == {1: 1, 2: 2}


@pytest.mark.parametrize(
    "leaves, edges, message",
    [
        ([1, 2], [(1, 3, 0.5, 1)], "edge endpoint 3 is not in leaf_ids"),
        ([10, 2000], [(7, 10, 0.5, 1)], "edge endpoint 7 is not in leaf_ids"),  # sparse ids: searchsorted
        ([1, 1, 2], [], "leaf_ids has duplicates"),
        ([1, 2], [(1, 2, float("nan"), 1)], "similarity has NaN"),
    ],
)
def test_bad_input_is_a_one_line_value_error(leaves, edges, message):
    with pytest.raises(ValueError, match=message) as error:
        build(leaves=leaves, edges=edges)
    assert "\n" not in str(error.value)


def test_lengths_must_agree():
    with pytest.raises(ValueError, match="differ in length"):
        tree.single_link_tree(np.array([1, 2]), np.array([1]), np.array([2]), np.array([0.5, 0.6]))


# ---- properties on random graphs: similarities in tenths so ties and thresholds equal to edges are common


@st.composite
def graphs(draw) -> tuple[list[int], list[tuple[int, int, float, int]]]:
    leaves = draw(st.lists(st.integers(1, 300), min_size=1, max_size=25, unique=True))
    edge = st.tuples(st.sampled_from(leaves), st.sampled_from(leaves), st.integers(0, 10), st.integers(0, 3))
    edges = [(u, v, s / 10, level) for u, v, s, level in draw(st.lists(edge, max_size=60))]
    return leaves, edges


THRESHOLDS = st.one_of(st.sampled_from([k / 10 for k in range(11)]), st.floats(-0.1, 1.1))


def scipy_centers(leaves: list[int], edges: list[tuple], threshold: float) -> dict[int, int]:
    """Smallest leaf of each connected component of the edges with similarity >= threshold."""
    ids = np.array(sorted(leaves))
    kept = [(u, v) for u, v, s, _ in edges if s >= threshold]
    iu, iv = (np.searchsorted(ids, [e[i] for e in kept]).astype(int) for i in (0, 1))
    graph = coo_matrix((np.ones(len(kept)), (iu, iv)), shape=(len(ids), len(ids))).tocsr()
    _, label = connected_components(graph, directed=False)
    smallest = {lab: ids[i] for i, lab in reversed(list(enumerate(label)))}
    return {int(ids[i]): int(smallest[label[i]]) for i in range(len(ids))}


@settings(deadline=None, derandomize=True)
@given(graphs(), st.lists(THRESHOLDS, min_size=1, max_size=4))
def test_cut_equals_connected_components(graph, thresholds):
    leaves, edges = graph
    table = build(leaves, edges)
    urls = {i: f"http://x/{i:04d}" for i in leaves}
    with tempfile.TemporaryDirectory() as work, duckdb.connect() as con:
        con.register(
            "cluster_tree", table
        )  # Arrow tables as views: the same relations, no Parquet round trip
        con.register("urls", pa.table({"url_id": list(urls), "url": list(urls.values())}))
        for threshold in thresholds:
            tree.cut(con, threshold, Path(work) / "cut.parquet")
            cut = pq.read_table(Path(work) / "cut.parquet").to_pylist()
            assert [r["url_id"] for r in cut] == sorted(leaves)
            assert centers(cut) == scipy_centers(leaves, edges, threshold)
            sizes = {}
            for r in cut:
                sizes[r["center_id"]] = sizes.get(r["center_id"], 0) + 1
            assert all(
                r["size"] == sizes[r["center_id"]] and r["center"] == urls[r["center_id"]] for r in cut
            )
            assert all(r["is_center"] == (r["url_id"] == r["center_id"]) for r in cut)


@settings(deadline=None, derandomize=True)
@given(graphs())
def test_merges_are_a_maximum_spanning_forest(graph):
    leaves, edges = graph
    merges = [r for r in build(leaves, edges).to_pylist() if not r["is_leaf"]]
    best: dict[tuple[int, int], float] = {}  # scipy sums duplicate entries: keep each pair's best edge
    for u, v, s, _ in edges:
        if u != v:
            best[min(u, v), max(u, v)] = max(s, best.get((min(u, v), max(u, v)), -1.0))
    ids = sorted(leaves)
    index = {leaf: i for i, leaf in enumerate(ids)}
    weight = [2 - s for s in best.values()]  # > 0: scipy reads a zero as no edge
    rows_, cols = [index[u] for u, _ in best], [index[v] for _, v in best]
    mst = minimum_spanning_tree(coo_matrix((weight, (rows_, cols)), shape=(len(ids), len(ids))).tocsr())
    assert len(merges) == mst.nnz
    assert sum(r["similarity"] for r in merges) == pytest.approx(2 * mst.nnz - mst.sum(), abs=1e-9)
    assert all((r["u_id"], r["v_id"], r["similarity"], r["level"]) in {e[:4] for e in edges} for r in merges)


@settings(deadline=None, derandomize=True)
@given(graphs(), st.randoms(use_true_random=False))
def test_tree_is_monotone_nested_and_deterministic(graph, random):
    leaves, edges = graph
    table = build(leaves, edges)
    nodes = {r["node_id"]: r for r in table.to_pylist()}
    assert list(nodes) == sorted(nodes)
    n = len(leaves)
    assert [r["node_id"] for r in nodes.values() if not r["is_leaf"]] == list(
        range(max(leaves) + 1, max(leaves) + len(nodes) - n + 1)
    )
    positions = sorted(r["first_position"] for r in nodes.values() if r["is_leaf"])
    assert positions == list(range(n))
    for r in nodes.values():
        inside = [p for p in positions if r["first_position"] <= p <= r["last_position"]]
        assert len(inside) == r["size"] == r["last_position"] - r["first_position"] + 1
        if r["parent_id"] is not None:
            parent = nodes[r["parent_id"]]
            assert parent["node_id"] > r["node_id"]
            assert r["parent_similarity"] == parent["similarity"]
            assert (
                parent["first_position"]
                <= r["first_position"]
                <= r["last_position"]
                <= parent["last_position"]
            )
            if not r["is_leaf"]:
                assert r["parent_similarity"] <= r["similarity"]
        if not r["is_leaf"]:
            left, right = nodes[r["left_id"]], nodes[r["right_id"]]
            assert (left["first_position"], right["last_position"]) == (
                r["first_position"],
                r["last_position"],
            )
            assert left["last_position"] + 1 == right["first_position"]
            assert left["size"] + right["size"] == r["size"]
    leaf_at = {r["first_position"]: r["node_id"] for r in nodes.values() if r["is_leaf"]}
    roots = sorted(
        (r["first_position"], r["last_position"]) for r in nodes.values() if r["parent_id"] is None
    )
    smallest = [min(leaf_at[p] for p in range(first, last + 1)) for first, last in roots]
    assert smallest == sorted(smallest)  # trees in order of their smallest leaf
    shuffled = random.sample(edges, len(edges))
    assert build(random.sample(leaves, n), shuffled).equals(table)


def test_successive_cuts_into_one_file_keep_their_cluster_ids(tmp_path):
    """A cut matches its ids to the cut it replaces (lsh/cluster_ids.py): at 0.9 the fresh ids follow the
    center URLs, {a, b} 1, c 2, d 3, e 4; at 0.7, {a, b, c} keeps 1 (it holds all of {a, b}, ties: the
    smaller id), {d, e} keeps 3; at 0.3 all five keep 1."""
    ids = {}
    for threshold in (0.9, 0.7, 0.3):
        ids[threshold] = {r["url_id"]: r["cluster_id"] for r in cut_rows(tmp_path, build(), URLS, threshold)}
    assert ids == {
        0.9: {10: 1, 20: 1, 30: 2, 40: 3, 50: 4},
        0.7: {10: 1, 20: 1, 30: 1, 40: 3, 50: 3},
        0.3: dict.fromkeys(URLS, 1),
    }
