"""The single-link cluster tree (dendrogram) of merge edges, and flat cuts of it as a SQL stage.

Kruskal's algorithm over the edges by similarity, highest first, gives the maximum spanning forest; each
edge that joins two components becomes an internal node. Leaves are numbered in depth-first order so the
leaves under any node are one range of positions, and a cut at any threshold is a range join in SQL.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from lshsql import schemas, sqlfiles
from lshsql.engines.base import DuckDBEngine
from lshsql.lsh import cluster_ids


def single_link_tree(
    leaf_ids: np.ndarray,
    u: np.ndarray,
    v: np.ndarray,
    similarity: np.ndarray,
    level: np.ndarray | None = None,
) -> pa.Table:
    """The cluster_tree of the edges (u, v, similarity): Kruskal's maximum spanning forest as a binary
    dendrogram, deterministic (similarity descending, ties by (u, v), then level) whatever the edge order.
    level may hold nulls (None or NaN, as the exact method's merges have).

    Node ids: a leaf is its url_id, the j-th merge (j = 1, 2, ...) is max(leaf_ids) + j, so children always
    have smaller ids than their parent. Positions: trees in order of their smallest leaf id, each walked
    depth first with the left child (the side of the merge edge's u) first; trees take consecutive ranges.
    """
    leaves = np.sort(np.asarray(leaf_ids, dtype=np.int64))
    u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
    similarity = np.asarray(similarity, dtype=np.float64)
    levels = np.full(len(u), np.nan) if level is None else np.asarray(level, dtype=np.float64)
    _check(leaves, u, v, similarity, levels)
    n = len(leaves)
    iu, iv = _leaf_index(leaves, u), _leaf_index(leaves, v)
    edges = np.argsort(levels, kind="stable")  # last tie: level, nulls last
    edges = edges[np.argsort((iu * n + iv)[edges], kind="stable")]  # then (u, v) ascending
    edges = edges[np.argsort(-similarity[edges], kind="stable")]  # first similarity descending
    merged, left, right, size, roots = _kruskal(n, iu[edges], iv[edges])
    edge = edges[merged]
    m = len(edge)

    parent = np.full(n + m, -1, dtype=np.int64)
    parent[left] = parent[right] = np.arange(n, n + m)
    sizes = np.concatenate([np.ones(n, dtype=np.int64), size])
    first = _first_positions(left, right, sizes, roots)
    node_id = np.concatenate([leaves, (leaves[-1] if n else 0) + np.arange(1, m + 1, dtype=np.int64)])
    node_sim = np.concatenate([np.full(n, np.nan), similarity[edge]])
    node_level = np.concatenate([np.full(n, np.nan), levels[edge]])
    root, leaf = parent < 0, np.arange(n + m) < n

    def internal(values: np.ndarray) -> pa.Array:
        """A column with values for the merges and null for the leaves."""
        return pa.array(np.concatenate([np.zeros(n, dtype=values.dtype), values]), mask=leaf)

    columns = {
        "node_id": node_id,
        "parent_id": pa.array(node_id[parent], mask=root),
        "is_leaf": leaf,
        "similarity": pa.array(node_sim, mask=leaf),
        "parent_similarity": pa.array(node_sim[parent], mask=root),
        "level": pa.array(np.nan_to_num(node_level).astype(np.int32), mask=np.isnan(node_level)),
        "left_id": internal(node_id[left]),
        "right_id": internal(node_id[right]),
        "u_id": internal(u[edge]),
        "v_id": internal(v[edge]),
        "size": sizes,
        "first_position": first,
        "last_position": first + sizes - 1,
    }
    return pa.table(columns, schema=schemas.schema("cluster_tree"))


def cut(con: duckdb.DuckDBPyConnection, threshold: float, out: Path, given: int = 0) -> tuple[int, int]:
    """Write the flat clusters at `threshold` (sql/85_cut.sql on views cluster_tree, urls); returns the rows
    written and the largest cluster id given out. Their cluster_id is matched to the cut `out` replaces
    (lsh/cluster_ids.py), fresh ids above `given` too: the cut is made once without ids for its members,
    then again with them, into a new file renamed into place."""
    sql, params = sqlfiles.load("85_cut.sql"), {"threshold": float(threshold)}
    engine = DuckDBEngine(con)
    engine.empty_table("cluster_ids", {"center_id": "bigint", "cluster_id": "bigint"})
    sqlfiles.to_table(con, sql, params, "cut_found")
    engine.view("members", "select url, center_id from cut_found")
    last_id = cluster_ids.number(engine, Path(out), given=given)
    fresh = Path(out).with_name(Path(out).name + ".new")
    rows = sqlfiles.materialize(con, sql, params, fresh)
    os.replace(fresh, out)
    return rows, last_id


def _check(leaves: np.ndarray, u: np.ndarray, v: np.ndarray, sim: np.ndarray, level: np.ndarray) -> None:
    """One-line ValueError for inputs no tree can be built from (leaves sorted)."""
    lengths = {len(u), len(v), len(sim), len(level)}
    if len(lengths) > 1:
        raise ValueError(f"u, v, similarity (and level) differ in length: {sorted(lengths)}")
    if (np.diff(leaves) == 0).any():
        raise ValueError("leaf_ids has duplicates")
    if np.isnan(sim).any():
        raise ValueError("similarity has NaN")


def _leaf_index(leaves: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Indices of ids in the sorted leaves (a lookup table when dense, as url_ids are), else ValueError."""
    if len(leaves) and leaves[-1] - leaves[0] < 4 * len(leaves):
        table = np.full(leaves[-1] - leaves[0] + 1, -1, dtype=np.int64)
        table[leaves - leaves[0]] = np.arange(len(leaves))
        inside = (ids >= leaves[0]) & (ids <= leaves[-1])
        index = np.full(len(ids), -1, dtype=np.int64)
        index[inside] = table[ids[inside] - leaves[0]]
        found = index >= 0
    else:
        index = np.searchsorted(leaves, ids)
        found = index < len(leaves)
        found[found] = leaves[index[found]] == ids[found]
    if not found.all():
        raise ValueError(f"edge endpoint {int(ids[~found][0])} is not in leaf_ids")
    return index


def _kruskal(n: int, iu: np.ndarray, iv: np.ndarray) -> tuple[np.ndarray, ...]:
    """Union-find over the sorted edges: merging edges, children (left = u's side), sizes, ordered roots.
    Python lists, not numpy arrays, in the loop: their scalar indexing is several times faster."""
    up, size, node = list(range(n)), [1] * n, list(range(n))  # node: the dendrogram node of a root
    merged: list[int] = []
    left: list[int] = []
    right: list[int] = []
    sizes: list[int] = []
    step, last = n, 2 * n - 1  # node number of the next merge, and of the last possible one
    for k, a, b in zip(range(len(iu)), iu.tolist(), iv.tolist(), strict=True):
        p = up[a]
        while p != a:  # path splitting: each node on the way points to its grandparent
            up[a] = q = up[p]
            a, p = p, q
        p = up[b]
        while p != b:
            up[b] = q = up[p]
            b, p = p, q
        if a == b:
            continue
        merged.append(k)
        left.append(node[a])
        right.append(node[b])
        if size[a] < size[b]:
            a, b = b, a
        up[b] = a
        size[a] += size[b]
        sizes.append(size[a])
        node[a] = step
        step += 1
        if step == last:
            break
    label = np.array(up, dtype=np.int64)
    while not np.array_equal(label[label], label):  # union by size: O(log n) jumps
        label = label[label]
    smallest = np.sort(np.unique(label, return_index=True)[1])  # each tree's smallest leaf, ascending
    roots = np.array(node, dtype=np.int64)[label[smallest]]
    return (*(np.array(x, dtype=np.int64) for x in (merged, left, right, sizes)), roots)


def _first_positions(left: np.ndarray, right: np.ndarray, sizes: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """First leaf position of every node, top-down in reverse id order (parents outnumber their children)."""
    first = np.zeros(len(sizes), dtype=np.int64)
    first[roots] = np.cumsum(sizes[roots]) - sizes[roots]
    start, size = first.tolist(), sizes.tolist()
    parents = range(len(sizes) - 1, len(sizes) - len(left) - 1, -1)
    for p, a, b in zip(parents, reversed(left.tolist()), reversed(right.tolist()), strict=True):
        start[a] = start[p]
        start[b] = start[p] + size[a]
    return np.array(start, dtype=np.int64)
