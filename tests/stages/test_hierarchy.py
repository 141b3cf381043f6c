"""LSH single-link clustering (`lshsql hierarchy`), its exact reference and flat cuts (`lshsql cut`)."""

from __future__ import annotations

import itertools
import random

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lshsql import pipeline, sqlfiles
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.params import Params
from lshsql.tools.evaluate import score_clusters
from lshsql.tools.hierarchy import HierarchyParams, cut, hierarchy

RESOURCES = db.Resources(memory_limit="1GB", threads=2)


def test_levels_shrink_from_r_start_to_r_min():
    assert HierarchyParams(r_start=10, r_min=4, delta=2).levels(80) == [10, 8, 6, 4]
    assert HierarchyParams(r_start=9, r_min=4, delta=2).levels(80) == [9, 7, 5]
    assert HierarchyParams(r_start=100, r_min=19, delta=1).levels(20) == [
        20,
        19,
    ]  # one band of m rows at most
    assert HierarchyParams(r_start=100, r_min=30, delta=1).levels(80) == [32, 31, 30]  # keys of 32 at most
    assert HierarchyParams(method="exact").levels(80) == []
    bad_ones = ({"r_min": 0}, {"r_start": 2, "r_min": 3}, {"delta": 0}, {"threshold": 0}, {"method": "x"})
    for bad in (*bad_ones, {"r_start": 40, "r_min": 33}):
        with pytest.raises(ParamError):
            HierarchyParams(**bad)


def test_level_thresholds_follow_the_s_curve_midpoint_and_end_at_t():
    params = HierarchyParams(threshold=0.3, r_start=20, r_min=2, delta=2)
    # r = 20: 4 bands, (1/4)^(1/20) = 0.933; r = 4: 20 bands, (1/20)^(1/4) = 0.473; the last level: t
    assert params.level_threshold(20, 80) == pytest.approx(0.25**0.05)
    assert params.level_threshold(4, 80) == pytest.approx(0.05**0.25)
    assert params.level_threshold(2, 80) == 0.3  # the last level
    not_last = HierarchyParams(threshold=0.3, r_start=20, r_min=1, delta=1)
    assert not_last.level_threshold(2, 80) == 0.3  # (1/40)^(1/2) = 0.158 < t: t
    assert not_last.level_threshold(3, 80) == pytest.approx((1 / 26) ** (1 / 3))  # 0.337 > t
    assert HierarchyParams(threshold=0.3, r_min=3, delta=1).level_threshold(3, 80) == 0.3  # 0.337, but last
    assert HierarchyParams(threshold=0.3, level_thresholds=False).level_threshold(20, 80) == 0.3


def test_candidates_of_a_level_pair_one_representative_per_cluster():
    # m = 4, r = 2: band 0 = (h0, h1), band 1 = (h2, h3); documents 1 and 3 are already one cluster
    signatures = pa.table(
        {
            "url_id": [1, 2, 3, 4],
            "h0": [1, 1, 1, 9],
            "h1": [1, 1, 1, 9],
            "h2": [5, 6, 5, 5],
            "h3": [5, 6, 5, 5],
        }
    )
    memberships = pa.table({"url_id": [1, 2, 3, 4], "cluster_id": [1, 2, 1, 4]})
    context = pipeline.template_context(Params(num_perm=4, k=2, l=2, banding=True))
    with duckdb.connect() as con:
        con.register("signatures", signatures)
        con.register("memberships", memberships)
        sqlfiles.to_table(
            con, sqlfiles.load("80_hierarchy_candidates.sql"), {"max_bucket": 10}, "out", context
        )
        rows = con.execute("select * from out order by all").fetchall()
    # band 0 bucket (1,1): clusters 1 (representative 1, not 3) and 2; band 1 bucket (5,5): clusters 1 and 4
    assert rows == [(1, 2, 1), (1, 4, 1)]


def test_merges_keep_the_most_similar_pair_between_two_clusters():
    level_pairs = pa.table({"u_id": [1, 2, 1, 5], "v_id": [3, 4, 5, 6], "similarity": [0.5, 0.7, 0.9, 0.4]})
    memberships = pa.table({"url_id": [1, 2, 3, 4, 5, 6], "cluster_id": [1, 1, 3, 3, 5, 5]})
    with duckdb.connect() as con:
        con.register("level_pairs", level_pairs)
        con.register("memberships", memberships)
        sqlfiles.to_table(con, sqlfiles.load("81_merges.sql"), {"level": 7, "threshold": 0.3}, "out")
        rows = con.execute("select * from out").fetchall()
    # clusters 1 and 3 are joined by (1,3) at 0.5 and (2,4) at 0.7: one edge, the closer pair; (5,6) is inside 5
    assert rows == [(7, 0.3, 2, 4, 1, 3, 0.7), (7, 0.3, 1, 5, 1, 5, 0.9)]


def _planted_corpus(path, topics: int = 4, docs: int = 15, seed: int = 5) -> dict[str, set[str]]:
    """Documents drawn from a few topic vocabularies, as plain sets (weighting none: exact Jaccard)."""
    rng = random.Random(seed)
    bags = {}
    for topic in range(topics):
        vocabulary = [f"t{topic}w{i}" for i in range(30)]
        for d in range(docs):
            bags[f"doc{topic}-{d:02d}"] = set(rng.sample(vocabulary, 18)) | {f"n{rng.randrange(500)}"}
    rows = [(url, term) for url, terms in bags.items() for term in sorted(terms)]
    pq.write_table(pa.table({"url": [u for u, _ in rows], "term": [t for _, t in rows]}), path)
    return bags


def _single_link(bags: dict[str, set[str]], h: float) -> set[frozenset[str]]:
    """Brute force: connected components of the pairs with Jaccard >= h."""
    parent = {url: url for url in bags}

    def find(x: str) -> str:
        while parent[x] != x:
            x = parent[x]
        return x

    for u, v in itertools.combinations(sorted(bags), 2):
        if len(bags[u] & bags[v]) >= h * len(bags[u] | bags[v]):
            parent[find(u)] = find(v)
    groups: dict[str, set[str]] = {}
    for url in bags:
        groups.setdefault(find(url), set()).add(url)
    return {frozenset(g) for g in groups.values()}


def _partition(path) -> set[frozenset[str]]:
    groups: dict[int, set[str]] = {}
    for row in pq.read_table(path).to_pylist():
        groups.setdefault(row["center_id"], set()).add(row["url"])
    return {frozenset(g) for g in groups.values()}


def signatures_of(work, bags) -> None:
    """The stages up to signatures on a bags table of plain sets (the input of hierarchy)."""
    pipeline.run(
        work, Params(weighting="none"), bags=bags, resources=RESOURCES, only=pipeline.STAGE_NAMES[:6]
    )


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    bags = _planted_corpus(root / "bags.parquet")
    signatures_of(root / "work", root / "bags.parquet")
    return root, bags


def test_exact_method_cuts_are_exact_single_link(planted):
    root, bags = planted
    work = root / "work"
    summary = hierarchy(work, HierarchyParams(threshold=0.2, method="exact"), resources=RESOURCES)
    assert summary.levels == []
    for h in (0.2, 0.3, 0.4, 0.6):
        path, counts = cut(work, h, RESOURCES)
        assert _partition(path) == _single_link(bags, h), h
        assert counts["rows"] == len(bags)


def test_lsh_method_finds_the_single_link_clusters_and_merges_by_level(planted):
    root, bags = planted
    work = root / "work"
    summary = hierarchy(
        work, HierarchyParams(threshold=0.3, r_start=12, r_min=3, delta=3), resources=RESOURCES
    )
    assert [level["r"] for level in summary.levels] == [12, 9, 6, 3]
    assert [level["bands"] for level in summary.levels] == [6, 8, 13, 26]
    assert summary.clusters == len(_single_link(bags, 0.3)) == 4
    merges = pq.read_table(work / "merges.parquet").to_pylist()
    for merge in merges:  # every merge edge is a real pair above t with its exact Jaccard
        u, v = sorted(bags)[merge["u_id"] - 1], sorted(bags)[merge["v_id"] - 1]
        assert merge["similarity"] == pytest.approx(len(bags[u] & bags[v]) / len(bags[u] | bags[v]))
        assert merge["similarity"] >= 0.3 and merge["level"] in (12, 9, 6, 3)
    path, _ = cut(work, 0.3, RESOURCES)
    assert _partition(path) == _single_link(bags, 0.3)


def test_a_cut_file_never_gives_an_id_again_even_once_deleted(planted, tmp_path):
    """Ids that ended (at 0.2 the clusters of 0.6 merge) are not given again: not by the next cut into the
    file, nor after the file is deleted (the manifest keeps each cut file's largest id); another --out file
    numbers its own."""
    import shutil

    from lshsql import manifest

    work = shutil.copytree(planted[0] / "work", tmp_path / "work")
    hierarchy(work, HierarchyParams(threshold=0.2, method="exact"), resources=RESOURCES)
    (work / "cut.parquet").unlink(missing_ok=True)  # the module's earlier tests cut this folder
    data = manifest.read(work)
    data["stages"].pop("cut", None)
    manifest.write(work, data)

    def ids(h: float, out=None) -> set[int]:
        path, _ = cut(work, h, RESOURCES, out=out)
        return set(pq.read_table(path).column("cluster_id").to_pylist())

    first = ids(0.6)
    assert min(first) == 1 and len(ids(0.2)) < len(first)
    (work / "cut.parquet").unlink()
    second = ids(0.6)
    assert min(second) > max(first)
    (work / "cut.parquet").unlink()  # the same file, named by a path written another way
    assert min(ids(0.6, out=work / ".." / work.name / "cut.parquet")) > max(second)
    assert ids(0.6, out=tmp_path / "other.parquet") == first


def test_hierarchy_is_deterministic(planted, tmp_path):
    root, _ = planted
    outputs = []
    for name in ("a", "b"):
        work = tmp_path / name
        signatures_of(work, root / "bags.parquet")
        hierarchy(work, HierarchyParams(threshold=0.3, r_start=8, r_min=3, delta=1), resources=RESOURCES)
        cut(work, 0.4, RESOURCES)
        outputs.append(
            [(work / f).read_bytes() for f in ("merges.parquet", "cluster_tree.parquet", "cut.parquet")]
        )
    assert outputs[0] == outputs[1]


def test_cut_scores_multi_label_documents(planted, tmp_path):
    root, bags = planted
    work = root / "work"
    hierarchy(work, HierarchyParams(threshold=0.3, r_start=12, r_min=3, delta=3), resources=RESOURCES)
    path, _ = cut(work, 0.3, RESOURCES)
    labels = tmp_path / "labels.csv"
    rows = [f"{url},topic{url[3]}" for url in bags] + ["doc0-00,extra"]  # one document with two labels
    labels.write_text("url,label\n" + "\n".join(rows) + "\n")
    quality = score_clusters(path, labels, RESOURCES)
    assert quality["multi_label"] and quality["labels"] == 5
    assert quality["pairwise_precision"] == 1.0 and quality["pairwise_recall"] == 1.0
    assert quality["pairwise_accuracy"] == 1.0 and quality["purity"] == 1.0


def test_cut_refuses_what_the_tree_cannot_answer(planted, tmp_path):
    root, _ = planted
    with pytest.raises(InputError, match="no cluster tree"):
        cut(tmp_path, 0.5, RESOURCES)
    hierarchy(root / "work", HierarchyParams(threshold=0.3, r_start=6, r_min=5), resources=RESOURCES)
    with pytest.raises(ParamError, match="merges of similarity >= 0.3 only"):
        cut(root / "work", 0.2, RESOURCES)


def test_cli_hierarchy_then_cut_with_labels(planted, tmp_path, lshsql_command):
    lshsql = lshsql_command
    root, bags = planted
    work = str(root / "work")
    # the module's other tests build trees in this folder too, whose options hierarchy keeps: all given
    built = lshsql(
        "hierarchy",
        "--work",
        work,
        "--threshold",
        "0.3",
        "--r-start",
        "9",
        "--delta",
        "3",
        "--r-min",
        "2",
        "--method",
        "lsh",
        "--verify",
        "--level-thresholds",
        "--max-bucket",
        "1000",
        "--quiet",
    )
    assert built.returncode == 0, built.stderr
    assert built.stdout.splitlines()[0].split() == [
        "r",
        "bands",
        "candidates",
        "pairs",
        "merges",
        "clusters",
        "seconds",
    ]
    assert "4 clusters at t=0.3" in built.stdout
    labels = tmp_path / "labels.csv"
    labels.write_text("url,label\n" + "\n".join(f"{url},topic{url[3]}" for url in bags) + "\n")
    result = lshsql("cut", "--threshold", "0.3", "--work", work, "--labels", str(labels))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"4 clusters of {len(bags)} URLs at similarity 0.3")
    assert "pairwise precision 1.0000, recall 1.0000, F 1.0000, accuracy 1.0000" in result.stdout
    for args, message in (
        (["cut", "--threshold", "0.1", "--work", work], "merges of similarity >= 0.3 only"),
        (["hierarchy", "--work", work, "--r-min", "0"], "r_min must be >= 1"),
        (["cut", "--threshold", "0.5", "--work", str(tmp_path)], "no cluster tree"),
        (
            [
                "cut",
                "--threshold",
                "0.5",
                "--work",
                work,
                "--out",
                f"{tmp_path}/c.parquet",
                "--labels",
                "none",
            ],
            "none",
        ),
    ):
        failed = lshsql(*args)
        assert failed.returncode != 0 and failed.stderr.count("\n") == 1, failed.stderr
        assert failed.stderr.startswith("lshsql: error: ") and message in failed.stderr
    assert not (tmp_path / "c.parquet").exists()  # a missing labels file stops the cut before it is written


def test_tree_and_cut_are_in_the_work_folder_catalog(planted):
    from lshsql.tools.explore import query

    root, bags = planted
    work = root / "work"
    hierarchy(work, HierarchyParams(threshold=0.3, r_start=12, r_min=3, delta=3), resources=RESOURCES)
    cut(work, 0.3, RESOURCES)
    result = query(
        work,
        "select (select count(*) from cut), (select count(*) from cluster_tree where is_leaf), (select count(*) > 0 from merges)",
    )
    assert [tuple(row.values()) for row in result.to_pylist()] == [(len(bags), len(bags), True)]


@pytest.mark.slow
def test_reuters_1000_lsh_single_link_tracks_exact_single_link(tmp_path):
    """The first 1,000 labelled Reuters stories (bench/reuters.py's smallest row): the LSH tree cut at 0.25
    scores within 2 points of F of exact single-link's, with about as many clusters."""
    from lshsql.sources.ingest import IngestParams, ingest
    from tests.conftest import shared

    ingest([str(shared("reuters21578"))], tmp_path, IngestParams(limit=1000, require_label=True), RESOURCES)
    pipeline_params = Params(weighting="none")
    scores = {}
    for method in ("exact", "lsh"):
        hierarchy(tmp_path, HierarchyParams(threshold=0.25, method=method), pipeline_params, RESOURCES)
        path, counts = cut(tmp_path, 0.25, RESOURCES)
        scores[method] = {**score_clusters(path, tmp_path / "labels.parquet", RESOURCES), **counts}
    exact, lsh = scores["exact"], scores["lsh"]
    assert exact["multi_label"] and exact["urls"] == 1000
    assert (exact["clusters"], round(exact["pairwise_f"], 3)) == (523, 0.708)
    assert (lsh["clusters"], round(lsh["pairwise_f"], 3)) == (525, 0.692)
    assert lsh["pairwise_precision"] > 0.99 and abs(lsh["pairwise_f"] - exact["pairwise_f"]) < 0.02


def test_cut_refuses_a_tree_built_on_other_urls(planted, tmp_path):
    root, _ = planted
    work = tmp_path / "w"
    signatures_of(work, root / "bags.parquet")
    hierarchy(work, HierarchyParams(threshold=0.3, r_start=6, r_min=5), resources=RESOURCES)
    cut(work, 0.3, RESOURCES)
    fewer = pq.read_table(root / "bags.parquet").slice(0, 200)  # other documents: other url_ids
    pq.write_table(fewer, tmp_path / "fewer.parquet")
    signatures_of(work, tmp_path / "fewer.parquet")
    with pytest.raises(InputError, match="cluster tree was built on other URLs"):
        cut(work, 0.3, RESOURCES)
