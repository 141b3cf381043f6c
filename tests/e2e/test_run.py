"""`lshsql run` end to end: the handbook near-duplicates, the benchmark contract, reruns and the catalogue."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from lshsql.engines import duckdb as db
from lshsql.params import Params
from lshsql.pipeline import STAGES, output_path, run
from lshsql.sources.extract import ExtractParams, extract
from tests.conftest import copy_work, shared

RESOURCES = db.Resources(memory_limit="2GB", threads=2)


@pytest.fixture
def cli(lshsql_command) -> Callable[..., subprocess.CompletedProcess]:
    """`lshsql ARGS...`, which must succeed: in this process in the everyday loop, in a process of its own
    as well in `make test-all` (conftest.lshsql_command)."""

    def succeeded(*args: str) -> subprocess.CompletedProcess:
        result = lshsql_command(*args)
        assert result.returncode == 0, result.stderr
        return result

    return succeeded


def scalar(query: str, **params):
    with duckdb.connect() as con:
        return con.execute(query, params).fetchall()[0][0]


PURITY = """
with labelled as (
    select clusters.center, regexp_extract(clusters.url, '/([^/]+[.]html)$', 1) as label
    from read_parquet($clusters) as clusters
    where clusters.url in (select url from read_parquet($pages) where skip_reason is null)
),
counted as (select center, label, count(*) as n from labelled group by all)
select
    (select sum(n) from (select max(n) as n from counted group by center)) / (select count(*) from labelled),
    (select sum(n) from (select max(n) as n from counted group by label)) / (select count(*) from labelled)
"""


@pytest.mark.slow
def test_handbook_pages_cluster_across_languages(tmp_path):
    """The same page in 26 languages shares untranslated words; with content words, CENTER at 0.2 puts
    most translations of a page in one cluster. Measured: purity 0.94, inverse purity 0.87."""
    crawl = shared("crawls", "fixture-handbook-neardup.warc.gz")
    extract([str(crawl)], tmp_path, ExtractParams(content=True), RESOURCES)
    run(tmp_path, Params(), resources=RESOURCES)
    with duckdb.connect() as con:
        purity, inverse = con.execute(
            PURITY, {"clusters": str(tmp_path / "clusters.parquet"), "pages": str(tmp_path / "pages.parquet")}
        ).fetchall()[0]
    assert purity >= 0.9 and inverse >= 0.8, (purity, inverse)


def make_bags(path: Path, n_docs: int = 600, seed: int = 3) -> Path:
    """Unrelated docs plus planted near-duplicates (a base set with a few tokens swapped)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    urls, terms = [], []
    base = rng.choice(20_000, size=60, replace=False)
    for doc in range(n_docs):
        if doc % 3 == 0:  # a new group of three: the base and two near-duplicates of it
            base = rng.choice(20_000, size=60, replace=False)
        tokens = base.copy()
        if doc % 3:
            swap = rng.choice(60, size=int(rng.integers(0, 12)), replace=False)
            tokens[swap] = rng.integers(20_000, 40_000, size=len(swap))
        urls += [f"doc{doc:05d}"] * len(tokens)
        terms += [f"t{t}" for t in tokens]
    pq.write_table(pa.table({"url": urls, "term": terms}), path)
    return path


EXACT_PAIRS = """
with sets as (select url, term from read_parquet($bags) group by all),
sizes as (select url, count(*) as n from sets group by url),
shared as (
    select a.url as u, b.url as v, count(*) as n_shared
    from sets as a inner join sets as b on a.term = b.term and a.url < b.url group by all
)
select shared.u, shared.v from shared
inner join sizes as su on shared.u = su.url inner join sizes as sv on shared.v = sv.url
where shared.n_shared / (su.n + sv.n - shared.n_shared) >= $t
"""


def test_benchmark_contract_from_a_bags_table(tmp_path, cli):
    """compare.py calls exactly this and reads (u VARCHAR, v VARCHAR, similarity DOUBLE) with u < v."""
    bags = make_bags(tmp_path / "docs.parquet")
    work = tmp_path / "w"
    work.mkdir()
    cli("run", "--bags", str(bags), "--weighting", "none", "--threshold", "0.5", "--work", str(work), "-q")
    pairs = str(work / "pairs.parquet")
    with duckdb.connect() as con:
        types = dict(
            con.execute(
                "select column_name, column_type from (describe select * from read_parquet($p))", {"p": pairs}
            ).fetchall()
        )
        assert (types["u"], types["v"], types["similarity"]) == ("VARCHAR", "VARCHAR", "DOUBLE")
        assert con.execute(
            "select count(*) from read_parquet($p) where not u < v", {"p": pairs}
        ).fetchall() == [(0,)]
        found = set(con.execute("select u, v from read_parquet($p)", {"p": pairs}).fetchall())
        truth = set(con.execute(EXACT_PAIRS, {"bags": str(bags), "t": 0.5}).fetchall())
    assert len(truth) > 200
    recall = len(found & truth) / len(truth)
    assert recall >= 0.85, recall  # S-curve at 0.95 for pairs at T, estimate noise on pairs near T


def test_only_changed_stages_rerun(example_run, tmp_path, cli):
    work = copy_work(example_run, tmp_path / "w")
    first = json.loads((work / "manifest.json").read_text())["stages"]
    output = cli("run", "--work", str(work), "--threshold", "0.5", "-q").stdout
    second = json.loads((work / "manifest.json").read_text())["stages"]
    unchanged = ("extract", "term_counts", "urls", "terms", "bags", "signatures")
    assert all(first[s] == second[s] for s in unchanged)
    assert all(
        first[s]["fingerprint"] != second[s]["fingerprint"] for s in ("buckets", "candidates", "pairs")
    )
    assert output.count("up to date") == 5
    # the planner chose (k, l) from a sample of the signatures; it reaches recall 0.95 at the threshold
    import re

    from lshsql.lsh.scurve import collision_probability

    k, l = (int(v) for v in re.search(r"k=(\d+) l=(\d+)", output).groups())
    assert (second["buckets"]["params"]["k"], second["buckets"]["params"]["l"]) == (k, l)
    assert collision_probability(0.5, k, l) >= 0.95
    # Parameters not given again are kept: a later `stage` run keeps threshold 0.5.
    cli("stage", "pairs", "--work", str(work), "-q")
    assert json.loads((work / "manifest.json").read_text())["stages"]["pairs"] == second["pairs"]


def test_catalogue_views_work_without_the_udf(example_run, monkeypatch):
    monkeypatch.chdir(example_run)  # the views name the folder's files by relative path
    with duckdb.connect("lshsql.duckdb", read_only=True) as con:
        counts = {
            name: con.execute(f"select count(*) from {name}").fetchall()[0][0]
            for name in (
                "pages",
                "links",
                "fragments",
                "urls",
                "terms",
                "bags",
                "signatures",
                "buckets",
                "candidates",
                "pairs",
                "clusters",
            )
        }
        with_bags = con.execute("select count(distinct url_id) from bags").fetchall()[0][0]
    # a URL whose fragments are all empty once template words are cut has no bag, and no cluster
    assert counts["pages"] == 121 and counts["clusters"] == with_bags > 0.99 * counts["urls"]
    assert counts["buckets"] > counts["candidates"] > 0  # here mostly buckets of two: one pair, two rows


def test_invariants_of_a_run(example_extraction, tmp_path):
    work = copy_work(example_extraction, tmp_path / "w")
    run(work, Params(threshold=0.3, verify=True), resources=RESOURCES)
    checks = {
        "pairs ordered and unique": "select count(*) from (select u_id, v_id, count(*) as n from read_parquet($w || "
        "'/pairs.parquet') group by all having n > 1 or u_id >= v_id)",
        "every URL with a bag in exactly one cluster": "select count(*) from (select url_id from read_parquet($w || "
        "'/bags.parquet') group by url_id) as b full join (select url_id, count(*) as n from read_parquet($w || "
        "'/clusters.parquet') group by url_id) as c using (url_id) where c.n is distinct from 1 or b.url_id is null",
        "each cluster has one center": "select count(*) from (select center_id, count(*) filter (where is_center) "
        "as n from read_parquet($w || '/clusters.parquet') group by all) where n <> 1",
        "pairs agree at least the threshold": "select count(*) from read_parquet($w || '/pairs.parquet') "
        "where similarity < 0.3 or jaccard is null",
    }
    for name, query in checks.items():
        assert scalar(query, w=str(work)) == 0, name
    # each stage's file is written with the compression its Stage names (whichever runner writes it)
    for stage in STAGES:
        meta = pq.ParquetFile(output_path(work, stage.name)).metadata
        groups, columns = range(meta.num_row_groups), range(meta.num_columns)
        codecs = {meta.row_group(g).column(c).compression for g in groups for c in columns}
        assert codecs <= {stage.compression.upper()}, stage.name


def test_run_from_the_cli_prints_what_it_found(example_run, tmp_path, cli):
    work = copy_work(example_run, tmp_path / "w")
    clusters = cli("clusters", "--work", str(work), "--limit", "3").stdout
    assert clusters.splitlines()[0].split() == [
        "cluster_id",
        "size",
        "pair_share",
        "min_pair_similarity",
        "center",
        "top_terms",
        "members",
    ]
    # three clusters of at least 5 members each, one member a line (and the top terms wrapped beside them)
    assert len(clusters.splitlines()) == 2 + 3 * 5
    assert len([line for line in clusters.splitlines() if line[:1].isdigit()]) == 3
    related = cli(
        "related",
        "https://docs.python.example/3.11/library/site.html",
        "--work",
        str(work),
        "--format",
        "json",
    ).stdout
    rows = [json.loads(line) for line in related.splitlines()]
    assert rows and all(0.2 <= row["similarity"] <= 1 for row in rows)
    info = cli("info", "--work", str(work), "--format", "csv").stdout
    assert [line.split(",")[0] for line in info.splitlines()[1:]] == [
        "extract",
        "term_counts",
        "urls",
        "terms",
        "bags",
        "signatures",
        "buckets",
        "candidates",
        "bucket_sizes",
        "pairs",
        "clusters",
        "cluster_labels",
    ]
    assert json.loads((work / "info.json").read_text())[0]["stage"] == "extract"
    query = cli("query", "select count(*) as n from pairs", "--work", str(work), "--format", "csv").stdout
    assert int(query.splitlines()[1]) > 0


def test_stages_start_from_tables_put_in_the_work_folder(example_run, tmp_path, cli):
    """Any stage can start from a user's table of the documented schema: here signatures, urls and bags
    copied from a finished run give the same pairs and clusters, one `lshsql stage` at a time."""
    import shutil

    first, second = copy_work(example_run, tmp_path / "first"), tmp_path / "second"
    cli("run", "--work", str(first), "-q", "--threshold", "0.4")
    second.mkdir()
    for table in ("urls", "bags", "signatures"):
        shutil.copy(first / f"{table}.parquet", second / f"{table}.parquet")
    for stage in ("buckets", "candidates", "pairs", "clusters"):
        cli("stage", stage, "--work", str(second), "--threshold", "0.4", "-q")
    assert (first / "pairs.parquet").read_bytes() == (second / "pairs.parquet").read_bytes()
    # the same clusters; their ids differ, as `first` kept those of its earlier run at threshold 0.2
    clusters = [pq.read_table(w / "clusters.parquet").drop_columns(["cluster_id"]) for w in (first, second)]
    assert clusters[0].equals(clusters[1])


def test_quality_commands_from_the_cli(example_run, tmp_path, cli):
    """eval, plan, explain and report run as a user types them, on one finished run."""
    work = copy_work(example_run, tmp_path / "w")
    cli("run", "--work", str(work), "-q", "--threshold", "0.5")
    out = cli("eval", "--work", str(work), "--sample", "20").stdout
    result = json.loads((work / "eval" / "eval.json").read_text())
    assert result["pairs"]["precision"] == 1.0 and result["pairs"]["recall"] >= 0.9  # verified by default
    assert "recall" in out
    plan = cli("plan", "--threshold", "0.5", "--work", str(work)).stdout
    assert "<- chosen" in plan and "expected candidates" in plan
    with duckdb.connect() as con:
        u, v = con.execute(
            "select u, v from read_parquet($p) limit 1", {"p": str(work / "pairs.parquet")}
        ).fetchall()[0]
    assert "kept as a pair" in cli("explain", u, v, "--work", str(work)).stdout
    report = Path(cli("report", "--work", str(work)).stdout.strip())
    assert report.exists() and report.read_text().count("<svg") >= 4
