"""`lshsql plan` and `lshsql explain` on the example crawl."""

from __future__ import annotations

import os
import random

import duckdb
import pytest

from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.lsh import scurve
from lshsql.lsh.plan import plan
from lshsql.lsh.scurve import resolve, tables_recall
from lshsql.params import Params
from lshsql.pipeline import run
from lshsql.tools.explain import explain_pair, explain_url, pair_lines, url_lines
from tests.conftest import copy_work
from tests.e2e.test_reuse import RESOURCES, random_bags, write_bags

PYTHON_INDEX = "https://docs.python.example/3.11/index.html"


@pytest.fixture(scope="module")
def work(example_run, tmp_path_factory):
    work = copy_work(example_run, tmp_path_factory.mktemp("explain") / "w")
    run(work, Params(threshold=0.5), resources=db.Resources(memory_limit="1GB", threads=2))
    return work


def test_plan_without_data_is_the_s_curve_of_the_drawn_tables():
    chosen = plan(0.5)
    assert (chosen.k, chosen.l) == (3, 27)
    assert any((o.k, o.l) == (3, 27) for o in chosen.options)
    assert all(o.recall_at_threshold >= 0.95 for o in chosen.options)
    text = "\n".join(chosen.lines())
    assert "chosen: k = 3, l = 27" in text and "<- chosen" in text and "  0.5   0.95" in text


def test_a_lower_recall_takes_fewer_tables_and_still_reaches_it():
    chosen = resolve(Params(threshold=0.5, recall=0.8, num_perm=80), whole_sets=True)
    default = resolve(Params(threshold=0.5, num_perm=80), whole_sets=True)
    assert (chosen.k, chosen.l) == (plan(0.5, recall=0.8).k, plan(0.5, recall=0.8).l)
    assert chosen.k * chosen.l < default.k * default.l
    assert 0.8 <= tables_recall(0.5, chosen.k, chosen.l, 80) < 0.95


@pytest.mark.parametrize("recall", [0.0, 1.0, 1.5, -0.1])
def test_recall_is_a_probability(recall):
    from lshsql.errors import ParamError

    with pytest.raises(ParamError, match="recall is a probability"):
        Params(recall=recall)


def test_plan_with_data_is_the_choice_run_made(work):
    import json

    chosen = plan(0.5, work=work)
    made = json.loads((work / "manifest.json").read_text())
    used = made["params"]
    assert (chosen.k, chosen.l) == (used["k"], used["l"])
    assert tables_recall(0.5, chosen.k, chosen.l, 80) >= 0.95
    # the buckets stage records what its tables promise
    promised = made["stages"]["buckets"]["recall_at_threshold"]
    assert promised == round(tables_recall(0.5, chosen.k, chosen.l, 80), 4) >= 0.95
    assert chosen.sample_size > 0 and all(o.candidates is not None for o in chosen.options)
    # more tables of more hashes: fewer expected candidates
    expected = [o.candidates for o in chosen.options]
    assert expected == sorted(expected, reverse=True)


def test_explain_a_kept_pair(work):
    import duckdb

    with duckdb.connect() as con:
        u, v, similarity = con.execute(
            "select u, v, similarity from read_parquet($p) order by similarity desc, u, v limit 1",
            {"p": str(work / "pairs.parquet")},
        ).fetchall()[0]
    e = explain_pair(work, v, u)  # order does not matter
    assert (e["u"], e["v"]) == (u, v)
    assert e["similarity_kept"] == pytest.approx(similarity) == pytest.approx(e["jaccard_flattened"])
    assert e["is_candidate"] and e["tables_collided"] and e["same_cluster"]
    assert e["shared_terms"] and e["agreeing"] == round(e["estimate"] * e["num_perm"])
    text = "\n".join(pair_lines(e))
    assert "kept as a pair" in text and "shared terms" in text


def test_explain_a_pair_that_was_not_kept(work):
    e = explain_pair(work, PYTHON_INDEX, "https://www.postgresql.example/docs/15/index.html")
    assert e["similarity_kept"] is None and not e["same_cluster"]
    assert e["jaccard_flattened"] < 0.5  # the two manuals' home pages share few words
    verdict = "a candidate, but below the threshold" if e["is_candidate"] else "never a candidate"
    assert verdict in "\n".join(pair_lines(e))
    assert e["is_candidate"] == bool(e["tables_collided"])  # a candidate exactly when some table collided


def test_explain_one_url(work):
    e = explain_url(work, PYTHON_INDEX)
    assert e["terms"] and e["cluster"] is not None
    assert e["anchors"] and all(n >= 1 for _, n in e["anchors"])
    assert "heaviest terms" in "\n".join(url_lines(e))
    with duckdb.connect() as con:  # the cluster line names the cluster_id that `lshsql show` takes
        cluster_id, center, size = con.execute(
            "select cluster_id, center, size from read_parquet($p) where url = $u",
            {"p": str(work / "clusters.parquet"), "u": PYTHON_INDEX},
        ).fetchone()
    where = (
        f"center of a cluster of {size}"
        if center == PYTHON_INDEX
        else f"in the cluster of {center} ({size} URLs)"
    )
    assert url_lines(e)[1] == f"cluster: {cluster_id}, {where}; {e['n_pairs']} pairs"


def test_explain_an_unknown_url(work):
    with pytest.raises(InputError, match="not described"):
        explain_url(work, "http://nowhere.example/")


def test_the_query_commands_run_duckdb_with_the_resources_they_are_given(work, monkeypatch):
    """related, clusters, explain, show, report, mirrors and plan --work take --threads, --memory-limit and
    --max-spill as run does: every DuckDB connection they open gets them, and spills under DIR/tmp/duckdb."""
    import duckdb
    from typer.testing import CliRunner

    from lshsql.cli import app

    with duckdb.connect() as con:
        u, v = con.execute(
            "select u, v from read_parquet($p) order by similarity desc, u, v limit 1",
            {"p": str(work / "pairs.parquet")},
        ).fetchall()[0]
        [(fetched,)] = con.execute(  # a page of the crawl, whose HTML show --html reads back
            "select min(url) from read_parquet($pages) where url in (select url from read_parquet($clusters))",
            {"pages": str(work / "pages.parquet"), "clusters": str(work / "clusters.parquet")},
        ).fetchall()
    given: list[db.Resources] = []
    connect = db.connect

    def recording_connect(resources, *args, **kwargs):
        given.append(resources)
        return connect(resources, *args, **kwargs)

    monkeypatch.setattr(db, "connect", recording_connect)
    commands = [
        ["related", u],
        ["clusters"],
        ["explain", u],
        ["explain", u, v],
        ["show", fetched],
        ["show", fetched, "--html", fetched],
        ["report", "--out", str(work.parent / "report.html")],
        ["mirrors", "--min-shared", "1"],
        ["plan", "--threshold", "0.5"],
    ]
    for command in commands:
        given.clear()
        options = ["--work", str(work), "--threads", "1", "--memory-limit", "300MB", "--max-spill", "1GB"]
        result = CliRunner().invoke(app, [*command, *options])
        assert result.exit_code == 0, (command, result.output)
        assert given, command
        expected = db.Resources("300MB", 1, str(work / "tmp" / "duckdb" / str(os.getpid())), "1GB")
        assert all(resources == expected for resources in given), (command, given)


@pytest.mark.parametrize("recall", [0.0, 1.0, 1.5, -0.1])
def test_a_recall_outside_0_1_is_refused(recall):
    from lshsql.errors import ParamError

    with pytest.raises(ParamError, match=r"recall is a probability in \(0, 1\)"):
        plan(0.5, recall=recall)


def test_a_large_plan_is_told_and_a_usual_one_is_not():
    # the 100k sets corpus at the default threshold 0.2 (k = 4, l = 4178, 162M candidates expected)
    huge = Params(threshold=0.2, num_perm=80, k=4, l=4178)
    note = scurve.large_plan_note(huge, 100_000, 162_000_000)
    assert note.startswith("note: a large plan: 4,178 tables of k = 4 on 100,000 URLs")
    assert "162,000,000 candidate pairs expected (1,620 a URL)" in note and "(now 0.2)" in note
    # the PostgreSQL manual's crawl at 0.2, and 10M URLs at 0.5: a lot of work in all, little a URL
    assert scurve.large_plan_note(Params(threshold=0.2, num_perm=80, k=2, l=106), 2_844, 162_329) is None
    assert scurve.large_plan_note(Params(threshold=0.5, num_perm=128, k=6, l=293), 10**7, 1.7e8) is None
    # much work a URL on few URLs is quick whatever its plan
    assert scurve.large_plan_note(huge, 1_000, 1_620_000) is None


def test_candidates_in_work_inverts_the_planned_work():
    work = scurve.planned_work(66, 100_000, 2.3e6) + scurve.POSITION_COST * 80 * 100_000
    assert scurve.candidates_in_work(work, 66, 100_000, 80) == pytest.approx(2.3e6)


@pytest.mark.parametrize("num_perm", [None, 80], ids=["m planned", "m given"])
def test_run_tells_a_large_plan_before_the_signatures_are_made(tmp_path, monkeypatch, num_perm):
    rng = random.Random(3)
    bags = write_bags(tmp_path / "bags.parquet", random_bags(rng, 300))
    params = Params(weighting="none", threshold=0.5, num_perm=num_perm)
    said: list[str] = []
    run(tmp_path / "usual", params, bags=bags, resources=RESOURCES, log=said.append)
    assert said and not [line for line in said if "large plan" in line]
    monkeypatch.setattr(scurve, "LARGE_WORK", 0)
    monkeypatch.setattr(scurve, "LARGE_WORK_PER_URL", 0)
    said.clear()
    summary = run(tmp_path / "large", params, bags=bags, resources=RESOURCES, log=said.append)
    notes = [line for line in said if line.startswith("note: a large plan:")]
    assert len(notes) == 1, said
    p = summary.params
    assert f"{p.l:,} tables of k = {p.k} on 300 URLs" in notes[0]
    before = "  signatures ..." if num_perm is None else "  buckets ..."
    assert said.index(notes[0]) < said.index(before)
    said.clear()  # the same run again: every stage up to date, nothing to warn of
    run(tmp_path / "large", params, bags=bags, resources=RESOURCES, log=said.append)
    assert not [line for line in said if "large plan" in line], said
