"""Golden test of the Spark engine: every core stage file gives the same rows (and column types) on Spark
local[1] as on DuckDB, stage by stage, each run on the same inputs: DuckDB's output of the stage before.

Needs pyspark and Java (skipped without them). The SparkSession is tests/engines/conftest.py's.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.engines.conftest import require_spark
from tests.stages.test_20_bags import FRAGMENTS
from tests.stages.test_40_candidates import SIGNATURES as HAND_SIGNATURES
from tests.stages.test_50_pairs import TABLES as PAIR_TABLES

require_spark()

import duckdb  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pyspark  # noqa: E402

from lshsql import pipeline, schemas, sqlfiles  # noqa: E402
from lshsql.engines import spark as engine  # noqa: E402
from lshsql.engines import transpile, udf  # noqa: E402
from lshsql.engines.base import DuckDBEngine  # noqa: E402
from lshsql.lsh import cluster_ids, family  # noqa: E402
from lshsql.lsh.scurve import resolve  # noqa: E402
from lshsql.params import Params  # noqa: E402
from lshsql.pipeline import batching, template_context  # noqa: E402
from lshsql.sources.parse import PAGE_BLOCKS_SCHEMA  # noqa: E402
from tests.conftest import write_table  # noqa: E402

# Spark 4.1 brought WITH RECURSIVE (sql/04_url_aliases.sql) and Arrow UDFs (pyarrow arrays in and out).
RECURSIVE_CTES = tuple(int(v) for v in pyspark.__version__.split(".")[:2]) >= (4, 1)

PARAMS = resolve(Params(num_perm=16, k=2, l=6, min_df=1, max_df=1.0, threshold=0.5, seed=3), whole_sets=False)


def fragments() -> list[dict]:
    """test_20_bags' hand-made fragments, plus groups of near-duplicate pages (so there are pairs and
    clusters) and a few unrelated ones, from a fixed seed."""
    rng = random.Random(7)
    words = [f"w{i:02d}" for i in range(40)] + ["äpfel", "straße", "ünïcode"]
    rows = list(FRAGMENTS)
    for group in range(4):
        base = rng.sample(words, 9)
        for member in range(3 + group % 2):
            terms = [w for w in base if rng.random() > 0.15] + rng.sample(words, 1)
            terms += terms[: rng.randint(0, 3)]  # repeated terms: tf > 1
            url = f"http://g{group}.example/{member}"
            rows.append(
                {"url": url, "kind": "anchor", "source_url": "http://s/", "position": member, "terms": terms}
            )
            rows.append({"url": url, "kind": "title", "source_url": url, "position": 0, "terms": base[:2]})
    for single in range(5):
        rows.append(
            {
                "url": f"http://single/{single}",
                "kind": "anchor",
                "source_url": "http://s/",
                "position": single,
                "terms": rng.sample(words, 5),
            }
        )
    rows.append(
        {"url": "http://empty/", "kind": "anchor", "source_url": "http://s/", "position": 9, "terms": []}
    )
    return rows


class Engines:
    """Runs a stage file on both engines into work/duckdb and work/spark and compares the files."""

    def __init__(self, spark, work: Path):
        self.spark = spark
        self.spark, self.work = spark, work
        self.inputs: dict[str, str] = {}

    def table(self, relation: str, rows: list[dict], schema: pa.Schema | None = None) -> None:
        path = self.work / "in" / f"{relation}.parquet"
        write_table(path, rows, schema)
        self.inputs[relation] = str(path)

    def arrow(self, relation: str, table: pa.Table) -> None:
        self.inputs[relation] = str(family.write(table, self.work / "in" / f"{relation}.parquet"))

    def run(self, file: str, params: dict | None = None, context: dict | None = None, out: str | None = None):
        """Both engines' rows (equal, or the test fails); DuckDB's output becomes the input `out`."""
        sql = sqlfiles.load(file)
        out = out or sql.writes
        duck_out, spark_out = self.work / "duckdb" / f"{out}.parquet", self.work / "spark" / f"{out}.parquet"
        inputs = {r: self.inputs[r] for r in sql.reads if r in self.inputs}
        with duckdb.connect() as con:
            udf.register(con)
            sqlfiles.register_inputs(con, inputs)
            sqlfiles.materialize(con, sql, params or {}, duck_out, context)
        engine.register_inputs(self.spark, inputs)
        rendered = sqlfiles.render(sql, context)
        rows = engine.materialize(self.spark, rendered, params or {}, spark_out, name=file)
        duck, spark = pq.read_table(duck_out), pq.read_table(spark_out)
        assert [(f.name, f.type) for f in spark.schema] == [(f.name, f.type) for f in duck.schema], file
        duck_rows, spark_rows = duck.to_pylist(), spark.to_pylist()
        if sql.order.startswith("none"):
            duck_rows, spark_rows = sorted(duck_rows, key=repr), sorted(spark_rows, key=repr)
        assert rows == len(duck_rows)
        assert spark_rows == duck_rows, file  # exact: floats bit for bit
        self.inputs[out] = str(duck_out)
        return duck_rows


@pytest.fixture(scope="module")
def engines(spark, tmp_path_factory):
    """The chain of core stages, run once for the module; each test checks one part of it."""
    both = Engines(spark, tmp_path_factory.mktemp("golden"))
    both.table("fragments", fragments())
    both.table("url_aliases", [{"alias_url": "http://g0.example/2", "target_url": "http://g0.example/0"}])
    both.table("frozen_idf", [], schemas.schema("frozen_idf"))  # a run without --freeze-idf
    return both


def test_term_counts_urls_terms(engines):
    # with url_aliases applied and URLs mapped to hosts, then plain (the plain one feeds the later stages)
    mapped = engines.run("10_term_counts_mapped.sql", {"unit": "host"}, out="tc_hosts")
    assert {r["url"] for r in mapped} >= {"g0.example", "single"}
    counts = engines.run("10_term_counts.sql")
    assert len(counts) > 50
    assert [r["url_id"] for r in engines.run("15_urls.sql")] == list(range(1, 23))
    terms = engines.run("18_terms.sql")
    assert any(not r["term"].isascii() for r in terms)


@pytest.mark.parametrize("weighting", ["tfidf", "tf", "none"])
def test_bags(engines, weighting):
    base(engines)
    params = resolve(Params(min_df=1, max_df=0.9, weighting=weighting, scale=100.0), whole_sets=False)
    sql_params = {
        "min_df": params.min_df,
        "max_df": params.max_df,
        "weighting": weighting,
        "scale": params.scale,
    }
    # the stage's two files: term_counts with one row per (url, term), and the form that adds repeats up
    context = template_context(params)  # weighting none: its weight is made after the sort
    rows = engines.run("20_bags.sql", sql_params, context, out=f"bags_{weighting}")
    assert rows and (weighting == "none" or all(0 < r["weight"] < 100 for r in rows))
    assert engines.run("20_bags_grouped.sql", sql_params, out=f"bags_grouped_{weighting}") == rows
    # --freeze-idf: every other term's df frozen at 3 and N at 40 (the others counted here)
    unfrozen = engines.inputs["frozen_idf"]
    terms = pq.read_table(engines.inputs["terms"]).to_pylist()
    frozen = [{"term_hash": t["term_hash"], "n_urls": 3, "corpus_urls": 40} for t in terms[::2]]
    path = engines.work / "in" / f"frozen_idf_{weighting}.parquet"  # beside the empty one, kept for others
    engines.inputs["frozen_idf"] = str(write_table(path, frozen, schemas.schema("frozen_idf")))
    try:
        frozen_rows = engines.run("20_bags.sql", sql_params, context, out=f"bags_frozen_{weighting}")
    finally:
        engines.inputs["frozen_idf"] = unfrozen
    assert {r["df"] for r in frozen_rows} >= {3} and (weighting == "none" or frozen_rows != rows)


def base(engines) -> None:
    """term_counts, urls and terms, for a test run on its own (in file order the first test made them)."""
    if "terms" not in engines.inputs:
        engines.run("10_term_counts.sql")
        engines.run("15_urls.sql")
        engines.run("18_terms.sql")


def bags_and_signatures(engines, params: Params = PARAMS) -> None:
    if "signatures" in engines.inputs:
        return
    base(engines)
    sql_params = {"min_df": 1, "max_df": 1.0, "weighting": "tfidf", "scale": 100.0}
    bags = engines.run("20_bags.sql", sql_params, template_context(params))
    assert any(round(r["weight"]) > 1 for r in bags)  # several copies of heavy terms
    engines.run("30_signatures.sql", context=template_context(params))


def test_signatures(engines):
    bags_and_signatures(engines)
    three_bytes = resolve(Params(num_perm=16, signature_bytes=3, seed=3, k=2, l=6), whole_sets=False)
    rows = engines.run("30_signatures.sql", context=template_context(three_bytes), out="signatures_3b")
    assert all(0 <= r["h5"] < 2**24 for r in rows)


def test_oph_signatures(engines):
    # the weighted bags (copies > 1) through lsh_oph on both engines, and m beyond the bags' sizes, so
    # that densification fills empty bins
    bags_and_signatures(engines)
    for m in (16, 64):
        oph = resolve(Params(num_perm=m, seed=3, k=2, l=6, sketch="oph"), whole_sets=False)
        rows = engines.run("30_signatures_oph.sql", context=template_context(oph), out=f"signatures_oph{m}")
        assert rows and all(0 <= r[f"h{m - 1}"] < 2**31 for r in rows)


def lsh_stages(engines, params: Params, out: str = "") -> tuple[list[dict], list[dict], list[dict]]:
    """buckets, then candidates and bucket_sizes from them, on both engines (outputs named with `out`)."""
    context, max_bucket = template_context(params), {"max_bucket": params.max_bucket}
    buckets = engines.run("35_buckets_grouped.sql", {}, context, f"{out}buckets")  # Spark's form
    engines.inputs["buckets"] = engines.inputs[f"{out}buckets"]
    every_u = dict(zip(("u_first", "u_last"), batching.EVERY_ID, strict=True))  # the runner's on Spark
    candidates = engines.run("40_candidates.sql", max_bucket | every_u, context, f"{out}candidates")
    return buckets, candidates, engines.run("41_bucket_sizes.sql", max_bucket, context, f"{out}bucket_sizes")


def test_buckets_candidates_and_bucket_sizes(engines):
    bags_and_signatures(engines)
    assert all(lsh_stages(engines, PARAMS))
    # test_40's hand-made signatures, with a bucket over the cap
    banded = resolve(Params(num_perm=4, k=2, l=2, banding=True, max_bucket=3), True)
    same = [{"url_id": i, "h0": 1, "h1": 1, "h2": 10 * i, "h3": 10 * i} for i in range(1, 11)]
    hand = pa.schema([("url_id", pa.int64())] + [(f"h{i}", pa.int32()) for i in range(4)])
    engines.table("signatures", HAND_SIGNATURES + [{**r, "url_id": r["url_id"] + 10} for r in same], hand)
    try:
        _, rows, sizes = lsh_stages(engines, banded, "hand_")
        assert (1, 4, 2) in {(r["u_id"], r["v_id"], r["n_bands"]) for r in rows}
        assert {"n_members": 10, "n_buckets": 1, "n_pairs": 45.0, "n_pairs_emitted": 24.0} in sizes
    finally:
        for relation in ("signatures", "buckets"):
            engines.inputs[relation] = str(engines.work / "duckdb" / f"{relation}.parquet")


def pairs_of(engines, verify: bool) -> list[dict]:
    """The pairs stage's file for `verify` on both engines (after the stages before it, if no test made them)."""
    bags_and_signatures(engines)
    if "candidates" not in engines.inputs:
        lsh_stages(engines, PARAMS)
    params = resolve(Params(num_perm=16, k=2, l=6, threshold=0.3, verify=verify, seed=3), False)
    sql_params = {"min_agree": params.min_agree, "num_perm": params.num_perm, "threshold": params.threshold}
    file = pipeline.sql_file("pairs", params)
    return engines.run(file, sql_params, template_context(params), "pairs" if verify else "pairs_nv")


@pytest.mark.parametrize("verify", [True, False])
def test_pairs(engines, verify):
    rows = pairs_of(engines, verify)
    assert rows and all(r["similarity"] >= (0.3 if verify else 0) for r in rows)


def test_pairs_on_test_50s_tables(spark, tmp_path):
    hand = Engines(spark, tmp_path)
    for relation, rows in PAIR_TABLES.items():
        hand.table(relation, rows)
    for verify in (True, False):
        params = resolve(Params(num_perm=4, k=2, l=2, threshold=0.15, verify=verify), True)
        sql_params = {"min_agree": params.min_agree, "num_perm": 4, "threshold": 0.15}
        hand.run(pipeline.sql_file("pairs", params), sql_params, template_context(params), f"pairs_{verify}")


def edges_of(engines) -> list[dict]:
    if "pairs" not in engines.inputs:
        pairs_of(engines, True)
    pairs = pq.read_table(engines.inputs["pairs"]).to_pylist()
    edges = [{"src": p["u_id"], "dst": p["v_id"]} for p in pairs] + [
        {"src": p["v_id"], "dst": p["u_id"]} for p in pairs
    ]
    # and a chain 101-102-103-104 whose CENTER result needs several rounds
    chain = [(101, 102), (102, 103), (103, 104), (104, 105)]
    edges += [{"src": u, "dst": v} for u, v in chain] + [{"src": v, "dst": u} for u, v in chain]
    return edges


EDGE_SCHEMA = pa.schema([("src", pa.int64()), ("dst", pa.int64())])
NODE_SCHEMA = pa.schema([("node", pa.int64())])


def test_one_center_round_and_one_component_round(engines):
    edges = edges_of(engines)
    nodes = sorted({e["src"] for e in edges})
    engines.table("active_edges", edges, EDGE_SCHEMA)
    engines.table("active_nodes", [{"node": n} for n in nodes], NODE_SCHEMA)
    engines.table("centers", [], NODE_SCHEMA)
    rows = engines.run("60_center_round.sql")
    assert {"node": 101, "center": 101} in rows and not any(r["node"] == 103 for r in rows)
    engines.table("edges", edges, EDGE_SCHEMA)
    engines.table(
        "labels",
        [{"node": n, "label": n} for n in nodes],
        pa.schema([("node", pa.int64()), ("label", pa.int64())]),
    )
    rows = engines.run("61_component_round.sql")
    assert {"node": 102, "label": 101} in rows


def spark_center(spark) -> int:
    """pipeline.center's loop on Spark: the same statements as selects kept with to_table."""
    sql = sqlfiles.render(sqlfiles.load("60_center_round.sql"))
    engine.to_table(
        spark,
        "select cast(null as bigint) as node, cast(null as bigint) as center where false",
        {},
        "assignments",
    )
    engine.to_table(spark, "select cast(null as bigint) as node where false", {}, "centers")
    engine.to_table(spark, "select * from edges", {}, "active_edges")
    engine.to_table(spark, "select distinct src as node from edges", {}, "active_nodes")
    rounds = 0
    while engine.scalar(spark, "select count(*) from active_nodes"):
        rounds += 1
        assert engine.to_table(spark, sql, {}, "center_round", source="60_center_round.sql") and rounds < 50
        for table, select in (
            ("assignments", "select * from assignments union all select node, center from center_round"),
            ("centers", "select * from centers union all select node from center_round where node = center"),
            ("active_nodes", "select node from active_nodes anti join center_round using (node)"),
            (
                "active_edges",
                "select active_edges.* from active_edges "
                "anti join center_round on active_edges.dst = center_round.node "
                "anti join (select node from center_round where node <> center) as members "
                "on active_edges.src = members.node",
            ),
        ):
            engine.to_table(spark, select, {}, table)
    return rounds


def spark_components(spark) -> int:
    """pipeline.components' loop on Spark."""
    sql = sqlfiles.render(sqlfiles.load("61_component_round.sql"))
    engine.to_table(spark, "select distinct src as node, src as label from edges", {}, "labels")
    rounds = 0
    while True:
        rounds += 1
        engine.to_table(spark, sql, {}, "component_round", source="61_component_round.sql")
        changed = engine.scalar(
            spark,
            "select count(*) from component_round inner join labels using (node) "
            "where component_round.label <> labels.label",
        )
        engine.to_table(spark, "select * from component_round", {}, "labels")
        if not changed:
            break
    engine.to_table(spark, "select node, label as center from labels", {}, "assignments")
    return rounds


def clusters_of(engines, spark, clustering: str) -> tuple[int, int, list[tuple], list[dict]]:
    """CENTER or components on both engines over the pairs' edges (and a chain), then the clusters stage:
    Spark's rounds, DuckDB's rounds, their assignments (equal, or this fails) and the clusters rows."""
    edges = edges_of(engines)
    engines.table("edges", edges, EDGE_SCHEMA)
    engine.register_inputs(spark, {"edges": engines.inputs["edges"]})
    rounds = spark_center(spark) if clustering == "center" else spark_components(spark)
    with duckdb.connect() as con:
        sqlfiles.register_inputs(con, {"edges": engines.inputs["edges"]})
        con.execute("create or replace temp table edges as select * from edges").fetchall()
        duck = DuckDBEngine(con)
        duck_rounds = pipeline.center(duck) if clustering == "center" else pipeline.components(duck)
        duck = sorted(con.execute("select node, center from assignments").fetchall())
        path = engines.work / "in" / f"assignments_{clustering}.parquet"
        con.execute(
            "copy (select * from assignments order by node) to $p (format parquet)", {"p": str(path)}
        ).fetchall()
    spark_rows = sorted(tuple(r) for r in spark.sql("select node, center from assignments").collect())
    assert spark_rows == duck
    engines.inputs["assignments"] = str(path)
    # the ids, matched to earlier clusters that mix the new ones (URLs in threes, in URL order)
    with duckdb.connect() as con:
        sqlfiles.register_inputs(con, {r: engines.inputs[r] for r in ("urls", "bags", "assignments")})
        members = con.execute(cluster_ids.CLUSTER_MEMBERS + " order by url").fetchall()
    engines.table("members", [{"url": u, "center_id": c} for u, c in members])
    previous = [{"url": u, "cluster_id": 100 + i // 3} for i, (u, _) in enumerate(members)]
    engines.table("previous_clusters", previous)
    ids = engines.run("62_cluster_ids.sql", {"last_id": 200})
    assert "split" in {r["event"] for r in ids} and len({r["event"] for r in ids}) >= 3
    # the clusters stage: urls with bags, those in no pair alone; extra nodes of the chain have no url
    return rounds, duck_rounds, duck, engines.run("62_clusters.sql", out=f"clusters_{clustering}")


@pytest.mark.parametrize("clustering", ["center", "components"])
def test_loops_and_clusters(engines, spark, clustering):
    rounds, duck_rounds, assignments, rows = clusters_of(engines, spark, clustering)
    assert rounds == duck_rounds and len(assignments) >= 5
    assert (105, 101 if clustering == "components" else 105) in assignments
    assert any(r["size"] > 1 for r in rows)
    # the chaining columns: a pair (at the pairs' threshold 0.3) and a share for every cluster but singletons
    assert all((r["pair_share"] is None) == (r["size"] == 1) for r in rows)
    assert all(r["min_pair_similarity"] >= 0.3 and 0 < r["pair_share"] <= 1 for r in rows if r["size"] > 1)


def test_truth(engines):
    bags_and_signatures(engines)
    assert engines.run("70_truth.sql", {"threshold": 0.3, "batches": 1, "batch": 0})


def test_url_aliases_recursive_walk(engines):
    """04_url_aliases: a recursive CTE over lists (Spark 4.1+ runs WITH RECURSIVE): chains, a cycle, a URL
    running into it, canonical links and a redirect overriding one. (Each step of the walk is a Spark job:
    no 10-hop chain here.)"""
    from lshsql import schemas

    s = "http://s.example"
    redirects = [("/a", "/b"), ("/b", "/c"), ("/loop1", "/loop2"), ("/loop2", "/loop1"), ("/into", "/loop1")]
    redirects += [("/both", "/c"), ("/self", "/self")]
    canonicals = [("/p1?x", "/p1"), ("/p5", "/a"), ("/both", "/p1")]
    pages = [
        {"record_id": i, "url": s + u, "redirect_url": s + t, "warc_date": None, "skip_reason": "http_status"}
        for i, (u, t) in enumerate(redirects)
    ] + [
        {"record_id": 100 + i, "url": s + u, "canonical_url": s + t, "skip_reason": None}
        for i, (u, t) in enumerate(canonicals)
    ]
    engines.table("pages", pages, schemas.schema("pages"))
    links = [
        {"source_url": s + "/", "position": i, "target_url": s + t}
        for i, t in enumerate(["/a", "/a", "/into"])
    ]
    engines.table("links", links, schemas.schema("links"))
    if not RECURSIVE_CTES:  # Spark 3.5 and 4.0 have no WITH RECURSIVE: the stage stops, loudly
        from lshsql.errors import StageError

        with pytest.raises(
            StageError, match="sql/04_url_aliases.sql: WITH RECURSIVE needs Spark 4.1 or later"
        ):
            engines.run("04_url_aliases.sql")
        return
    rows = engines.run("04_url_aliases.sql")
    hops = {r["alias_url"][len(s) :]: (r["target_url"][len(s) :], r["hops"]) for r in rows}
    assert hops["/a"] == ("/c", 2) and hops["/into"] == ("/loop1", 1) and hops["/p5"] == ("/c", 3)
    # /both: its page (record 102) is captured after its redirect (record 5), so the page's canonical decides
    assert "/loop1" not in hops and "/self" not in hops and hops["/both"] == ("/p1", 1)


def test_cluster_labels_and_mirrors(engines):
    """63_cluster_labels (ln, a DECIMAL sum, ties broken by row_number) and 90_mirrors (a regexp) on the
    CENTER clusters of the chain above."""
    if "clusters_center" not in engines.inputs:
        clusters_of(engines, engines.spark, "center")
    engines.inputs["clusters"] = engines.inputs["clusters_center"]
    terms = pq.read_table(engines.inputs["terms"]).to_pylist()
    forms = [
        {"term": t["term"], "word": t["term"] + suffix, "n": n}
        for t in terms[:12]
        for suffix, n in (("s", 2), ("ing", 2))
    ]
    engines.table(
        "surface_forms", forms, pa.schema([("term", pa.string()), ("word", pa.string()), ("n", pa.int64())])
    )
    labels = engines.run("63_cluster_labels.sql", {"n_terms": 3, "min_size": 2})
    assert labels and {r["rank"] for r in labels} == {1, 2, 3}
    engines.run("90_mirrors.sql", {"min_shared": 1})


def test_decimal_sums_and_logarithms_agree_on_awkward_values(engines, spark):
    """The fix-ups' reason to be: values where Spark's own DECIMAL cast and ln differ from DuckDB's."""
    rng = random.Random(5)
    values = [rng.uniform(0, 100) for _ in range(3000)] + [k + 0.5 for k in range(50)] + [60.460496513078496]
    engines.table("awkward", [{"g": i % 7, "x": x} for i, x in enumerate(values)])
    query = (
        "select g, cast(sum(cast(x as decimal(38, 12))) as double) as total, min(ln(x)) as low, max(exp(x / 40)) as high, "
        "count(*) filter (where cast(x as integer) % 2 = 0) as even, sum(cast(x as bigint)) as whole, "
        "cast(min(x // 1.5) as double) as div from awkward group by g order by g"
    )
    with duckdb.connect() as con:
        sqlfiles.register_inputs(con, {"awkward": engines.inputs["awkward"]})
        duck = [tuple(r) for r in con.execute(query).fetchall()]
    engine.register_inputs(spark, {"awkward": engines.inputs["awkward"]})
    engine.to_table(spark, query, {}, "awkward_out")
    spark_rows = sorted(tuple(r) for r in spark.sql("select * from awkward_out").collect())
    assert spark_rows == duck
    # without the fix-ups Spark's own ln differs in the last bit on some of these values
    plain = spark.sql("select x, ln(x) as l from awkward").collect()
    with duckdb.connect() as con:
        sqlfiles.register_inputs(con, {"awkward": engines.inputs["awkward"]})
        duck_ln = dict(con.execute("select x, ln(x) from awkward").fetchall())
    assert any(duck_ln[r["x"]] != r["l"] for r in plain)


@pytest.mark.parametrize("arrow", [True, False], ids=["arrow_udf", "pandas_udf"])
def test_udfs_equal_duckdbs(spark, arrow):
    """The UDF bodies of lshsql/engines/udf.py give DuckDB's values bit for bit, as Arrow UDFs (Spark 4.1+) and as
    the pandas UDFs of Spark 3.5 and 4.0 (that path needs pandas, which the test extras install)."""
    from pyspark.sql import functions

    if arrow and not hasattr(functions, "arrow_udf"):
        pytest.skip(f"Spark {pyspark.__version__} has no Arrow UDFs (4.1+)")
    if not arrow:
        pytest.importorskip("pandas", reason="the pandas UDF path (Spark < 4.1) needs pandas")
    engine.register_udfs(spark, arrow=arrow)
    try:
        check_udfs(spark)
    finally:
        engine.register_udfs(spark)


def check_udfs(spark):
    words = ["apple", "straße", "", "日本語", None]
    urls = ["http://a.b.example.co.uk/x", "https://Example.org:8080/", "not a url", None]
    with duckdb.connect() as con:
        udf.register(con)
        duck_terms = con.execute("select lsh_term_hash(w) from unnest($w) as t(w)", {"w": words}).fetchall()
        duck_units = con.execute(
            "select lsh_url_unit(u, k) from unnest($u) as t(u), unnest(['url', 'host', 'domain']) as k(k)",
            {"u": urls},
        ).fetchall()
        duck_minhashes = con.execute(
            "select lsh_minhash(t, c, [2147483649, 4294967295], [5, 77]) "
            "from (values ([9223372036854775807, 0], [1, 7]), ([123], null)) t(t, c)"
        ).fetchall()
    spark.createDataFrame([(w,) for w in words], "w string").createOrReplaceTempView("words")
    spark.createDataFrame([(u,) for u in urls], "u string").createOrReplaceTempView("urls_in")
    spark_terms = spark.sql("select lsh_term_hash(w) from words").collect()
    spark_units = spark.sql(
        "select lsh_url_unit(u, k) from urls_in cross join (select explode(array('url', 'host', 'domain')) as k)"
    ).collect()
    spark_minhashes = spark.sql(
        "select lsh_minhash(t, c, array(2147483649L, 4294967295L), array(5L, 77L)) from values "
        "(array(9223372036854775807L, 0L), array(1L, 7L)), (array(123L), cast(null as array<bigint>)) as v(t, c)"
    ).collect()
    assert [r[0] for r in spark_terms] == [r[0] for r in duck_terms]
    assert sorted(map(repr, (r[0] for r in spark_units))) == sorted(map(repr, (r[0] for r in duck_units)))
    assert [list(r[0]) for r in spark_minhashes] == [r[0] for r in duck_minhashes]
    values = [0.5, 1.0, 2.0, 3.3, 60.460496513078496, 1e-300, 0.0]
    math = "ln(x), exp(x / 7), pow(x, 1.5)"
    with duckdb.connect() as con:
        duck_math = con.execute(f"select {math} from unnest($v) as t(x)", {"v": values}).fetchall()
    spark.createDataFrame([(v,) for v in values], "x double").createOrReplaceTempView("math_in")
    spark_math = spark.sql(transpile.to_spark(f"select {math} from math_in")).collect()
    assert [tuple(r) for r in spark_math] == duck_math


def test_a_refused_construct_stops_before_spark_runs(spark, tmp_path):
    from lshsql.errors import StageError

    with pytest.raises(StageError, match=r"sql/x.sql: a list index x\[i\] does not transpile to Spark"):
        engine.materialize(
            spark, "select terms[position] as t from fragments", {}, tmp_path / "x.parquet", name="x.sql"
        )
    with pytest.raises(StageError, match="missing SQL parameter"):
        engine.materialize(spark, "select $a as a", {}, tmp_path / "y.parquet")
    assert not list(tmp_path.iterdir())


# Every stage file, analyzed by Spark on empty tables of the right types: it parses, its functions exist
# and its columns come out with DuckDB's names and types. (The core files above also run on data.)
FILES = sorted(p.name for p in sqlfiles.sql_dir().glob("*.sql"))
PARAMETER_VALUES = {
    "unit": "url", "min_df": 1, "max_df": 1.0, "weighting": "tfidf", "scale": 100.0, "max_bucket": 100,
    "min_agree": 2, "num_perm": 4, "threshold": 0.5, "n_terms": 3, "min_size": 2, "level": 2, "min_shared": 1,
    "site": "a.example", "site_unit": "host", "batches": 1, "batch": 0, "share": 0.5, "min_pages": 3,
    "last_id": 0, "u_first": batching.EVERY_ID[0], "u_last": batching.EVERY_ID[1],
}  # fmt: skip
DUCKDB_ONLY = {
    "35_buckets.sql": "DuckDB's hash() band keys: Spark runs sql/35_buckets_grouped.sql",
    "35_buckets_reused.sql": "DuckDB's hash() band keys, in a rerun: reuse runs on DuckDB only",
    "92_documents.sql": "lshsql dedup runs on DuckDB only; its records table is written in Python",
}


def input_schema(relation: str, file: str) -> pa.Schema:
    from lshsql import schemas

    bigints = lambda *names: pa.schema([(n, pa.int64()) for n in names])  # noqa: E731
    special = {
        "pages_raw": lambda: schemas.raw_schema("pages"),
        "links_raw": lambda: schemas.raw_schema("links"),
        "fragments_raw": lambda: schemas.raw_schema("fragments"),
        "page_blocks_raw": lambda: PAGE_BLOCKS_SCHEMA,
        "template_blocks": lambda: bigints("block", "pages"),
        "surface_forms_raw": lambda: pa.schema(
            [("term", pa.string()), ("word", pa.string()), ("n", pa.int64())]
        ),
        "user_bags": lambda: pa.schema(
            [("url", pa.string()), ("term", pa.string()), ("weight", pa.float64())]
        ),
        "coefficients": lambda: family.coefficients(1, 4).schema,
        "signatures": lambda: pa.schema([("url_id", pa.int64())] + [(f"h{i}", pa.int32()) for i in range(4)]),
        "active_edges": lambda: bigints("src", "dst"),
        "edges": lambda: bigints("src", "dst"),
        "active_nodes": lambda: bigints("node"),
        "centers": lambda: bigints("node"),
        "labels": lambda: bigints("node", "label"),  # the component round's, not ingest's labels
        "assignments": lambda: bigints("node", "center"),
        "memberships": lambda: bigints("url_id", "cluster_id"),
        "cluster_ids": lambda: bigints("center_id", "cluster_id"),
        "members": lambda: pa.schema([("url", pa.string()), ("center_id", pa.int64())]),
        "previous_clusters": lambda: pa.schema([("url", pa.string()), ("cluster_id", pa.int64())]),
        "level_pairs": lambda: pa.schema(
            [("u_id", pa.int64()), ("v_id", pa.int64()), ("similarity", pa.float64())]
        ),
    }
    return special[relation]() if relation in special else schemas.schema(relation)


@pytest.mark.parametrize("file", FILES)
def test_every_stage_file_analyzes_on_spark_with_duckdbs_columns(spark, tmp_path, file):
    from lshsql.engines.spark import cast_to_schema, writes_of

    if file in DUCKDB_ONLY:
        pytest.skip(DUCKDB_ONLY[file])
    sql = sqlfiles.load(file)
    text = sqlfiles.render(sql, template_context(Params(num_perm=4, k=2, l=3)))
    inputs = {}
    for relation in sql.reads:
        inputs[relation] = str(
            family.write(input_schema(relation, file).empty_table(), tmp_path / f"{relation}.parquet")
        )
    with duckdb.connect() as con:
        udf.register(con)
        sqlfiles.register_inputs(con, inputs)
        query, bound = sqlfiles.final_select(
            con, sql, PARAMETER_VALUES, template_context(Params(num_perm=4, k=2, l=3))
        )
        duck = con.sql(query, params=bound).to_arrow_table().schema
    engine.register_inputs(spark, inputs)
    spark_sql = transpile.to_spark(text, file)
    args = {k: v for k, v in PARAMETER_VALUES.items() if f":{k}" in spark_sql}
    if "WITH RECURSIVE" in spark_sql and not RECURSIVE_CTES:
        with pytest.raises(Exception, match="(?i:syntax)"):
            spark.sql(spark_sql, args=args)
        return
    df = cast_to_schema(spark.sql(spark_sql, args=args), writes_of(file))
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        (f.name, spark_name(f.type)) for f in duck
    ]


def spark_name(dtype: pa.DataType) -> str:
    if pa.types.is_list(dtype):
        return f"array<{spark_name(dtype.value_type)}>"
    if pa.types.is_timestamp(dtype):
        return "timestamp"
    names = {pa.int64(): "bigint", pa.int32(): "int", pa.float64(): "double", pa.string(): "string"}
    return names.get(dtype, "boolean" if dtype == pa.bool_() else str(dtype))
