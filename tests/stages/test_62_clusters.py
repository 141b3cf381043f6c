"""clusters: the chaining diagnostics (least similar pair within a cluster, share of member pairs that are
pairs) on a hand-made chain, cliques and a singleton, for CENTER and components, and how `lshsql clusters`
and `lshsql show` print them."""

from __future__ import annotations

import json
from itertools import combinations

import duckdb
import pytest

from lshsql import schemas
from lshsql.params import Params
from tests.conftest import run_stage, write_table


def url(url_id: int) -> str:
    return f"http://n.example/{url_id:02d}"  # byte order = id order, as urls.parquet promises


def pair_rows(pairs: list[tuple[int, int, float]]) -> list[dict]:
    return [
        {"u": url(u), "v": url(v), "similarity": s, "n_agree": 10, "n_bands": 1, "u_id": u, "v_id": v}
        for u, v, s in pairs
    ]


# A chain 1-2-3-4 (no 1-3, 1-4, 2-4); a clique 5-6-7 whose two least similar pairs tie at 0.6; a clique
# 9..13 of identical pages; 8 alone.
PAIRS = [(1, 2, 0.9), (2, 3, 0.5), (3, 4, 0.7), (5, 6, 0.8), (5, 7, 0.6), (6, 7, 0.6)]
PAIRS += [(u, v, 1.0) for u, v in combinations(range(9, 14), 2)]
N = 13
TABLES = {
    "pairs": pair_rows(PAIRS),
    "urls": [{"url_id": i, "url": url(i), "n_terms": 1} for i in range(1, N + 1)],
    "bags": [
        {"url_id": i, "term": "t", "term_hash": 1, "tf": 1.0, "df": N, "weight": 1.0} for i in range(1, N + 1)
    ],
}
PAIR_SCHEMA = {"pairs": schemas.schema("pairs")}  # jaccard: null, as with --no-verify
CHAINING = ("center_id", "size", "min_pair_similarity", "min_pair_u", "min_pair_v", "pair_share")

# Components: {1, 2, 3, 4} holds 3 of its 6 member pairs, the least similar 2-3; the clique's tie goes to
# the smaller ids, 5-7. CENTER (scan sorted by u): 1 takes 2; 3, unassigned, becomes a center and takes 4;
# 2-3 joins two clusters, so it is within neither: {1, 2} and {3, 4} are cliques of one pair each.
BOTH = {
    **{i: (5, 3, 0.6, url(5), url(7), 1.0) for i in (5, 6, 7)},
    8: (8, 1, None, None, None, None),
    **{i: (9, 5, 1.0, url(9), url(10), 1.0) for i in range(9, 14)},
}
EXPECTED = {
    "components": {i: (1, 4, 0.5, url(2), url(3), 0.5) for i in (1, 2, 3, 4)},
    "center": {
        **{i: (1, 2, 0.9, url(1), url(2), 1.0) for i in (1, 2)},
        **{i: (3, 2, 0.7, url(3), url(4), 1.0) for i in (3, 4)},
    },
}


def clusters(work, clustering: str, tables: dict = TABLES) -> dict[int, tuple]:
    rows = run_stage(work, "clusters", Params(clustering=clustering), tables, PAIR_SCHEMA)
    return {r["url_id"]: tuple(r[c] for c in CHAINING) for r in rows}


@pytest.mark.parametrize("clustering", ["components", "center"])
def test_chain_cliques_and_singleton(tmp_path, clustering):
    assert clusters(tmp_path, clustering) == EXPECTED[clustering] | BOTH


def test_a_star_under_center_holds_two_of_size_pairs(tmp_path):
    """CENTER's clusters are at least stars: center 1 with members 2, 3, 4 and no pair among them holds 3
    of 6 member pairs, 2 / size; a pair between two members (2-3) raises it to 4 of 6."""
    star = [(1, 2, 0.4), (1, 3, 0.3), (1, 4, 0.3)]
    for extra, share in (([], 0.5), ([(2, 3, 0.25)], 4 / 6)):
        found = clusters(tmp_path, "center", TABLES | {"pairs": pair_rows(star + extra)})
        least = (0.25, url(2), url(3)) if extra else (0.3, url(1), url(3))
        assert {i: found[i] for i in (1, 2, 3, 4)} == {i: (1, 4, *least, share) for i in (1, 2, 3, 4)}


def test_a_cut_has_no_chaining_columns():
    """The cluster tree keeps only the merging pairs, so a cut has the clusters' other columns only."""
    cut = [name for name, _, _ in schemas.COLUMNS["cut"]]
    assert cut == ["url", "url_id", "center", "center_id", "cluster_id", "size", "is_center"]
    assert [name for name, _, _ in schemas.COLUMNS["clusters"]] == cut + list(schemas.CHAINING_COLUMNS)


@pytest.fixture
def chain_work(tmp_path):
    """The components clusters of the tables above as a work folder the read commands take."""
    work = tmp_path / "w"
    clusters(work, "components")
    write_table(work / "terms.parquet", [{"term_id": 1, "term_hash": 1, "term": "t"}])
    return work


def test_clusters_prints_the_figures_and_sorts_chains_first(chain_work, lshsql_command):
    def centers(*options: str) -> list[tuple]:
        result = lshsql_command("clusters", "--work", str(chain_work), "--format", "json", *options)
        assert result.returncode == 0, result.stderr
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        return [(r["center"][-2:], r["size"], r["pair_share"], r["min_pair_similarity"]) for r in rows]

    by_size = [("09", 5, 1.0, 1.0), ("01", 4, 0.5, 0.5), ("05", 3, 1.0, 0.6), ("08", 1, None, None)]
    assert centers() == by_size
    assert centers("--sort", "pair_share") == [by_size[i] for i in (1, 0, 2, 3)]  # ties: largest first
    assert centers("--sort", "min_pair_similarity") == [by_size[i] for i in (1, 2, 0, 3)]
    table = lshsql_command("clusters", "--work", str(chain_work), "--limit", "1").stdout.splitlines()
    assert table[0].split()[:4] == ["cluster_id", "size", "pair_share", "min_pair_similarity"]
    with duckdb.connect() as con:  # the id `show` takes: the largest cluster's, not its center's url_id
        [(cluster_id,)] = con.execute(
            "select cluster_id from read_parquet($p) where is_center order by size desc limit 1",
            {"p": str(chain_work / "clusters.parquet")},
        ).fetchall()
    assert table[2].split()[:4] == [str(cluster_id), "5", "1.0", "1.0"]
    refused = lshsql_command("clusters", "--work", str(chain_work), "--sort", "chain")
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "lshsql: error: sort must be size, pair_share or min_pair_similarity, got 'chain'"
    )


def test_show_prints_the_share_and_the_least_similar_pair(chain_work, lshsql_command):
    result = lshsql_command("show", url(3), "--work", str(chain_work))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # a first run numbers its clusters 1, 2, ... in center order: 01, 05, 08, 09
    assert lines[0] == f"cluster 1: 4 URLs, center {url(1)}"
    assert (
        lines[1]
        == f"pair_share 0.500: 3 of its 6 member pairs are pairs; least similar pair 0.500: {url(2)} {url(3)}"
    )
    single = lshsql_command("show", url(8), "--work", str(chain_work)).stdout.splitlines()
    assert single[0] == f"cluster 3: 1 URLs, center {url(8)}" and single[1].startswith("url ")
