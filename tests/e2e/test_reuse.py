"""A rerun in the same folder on a grown, changed or shrunk bags table reuses the previous signatures,
buckets and pairs of the unchanged URLs (lshsql/pipeline/reuse.py) and writes what a run from scratch writes."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

from lshsql.engines import duckdb as db
from lshsql.params import Params
from lshsql.pipeline import run
from tests.conftest import write_table

RESOURCES = db.Resources(memory_limit="1GB", threads=2)
PARAMS = Params(weighting="none", threshold=0.5, k=2, l=12)
OUTPUTS = ("signatures", "buckets", "candidates", "pairs", "clusters")


def random_bags(rng: random.Random, n_urls: int, first: int = 0) -> dict[str, set[str]]:
    """URLs in families of near-duplicates: a family's 8 base terms with 0 to 2 of them swapped for others,
    so that many URLs pair up at threshold 0.5."""
    bags = {}
    for number in range(first, first + n_urls):
        family = rng.randrange(25)
        base = [f"f{family}_{i}" for i in range(8)]
        swapped = set(rng.sample(base, rng.randint(0, 2)))
        extra = {f"x{rng.randrange(400)}" for _ in swapped}
        bags[f"http://site{number % 7}.example/{number:05d}"] = (set(base) - swapped) | extra
    return bags


def write_bags(path: Path, bags: dict[str, set[str]]) -> Path:
    rows = [{"url": url, "term": term} for url, terms in bags.items() for term in sorted(terms)]
    random.Random(len(rows)).shuffle(rows)  # the table's row order is no part of a bag
    return write_table(path, rows)


def grown(rng: random.Random, bags: dict[str, set[str]], n_new: int, n_changed: int, n_removed: int):
    """The table of the next run: new URLs, changed bags (a term swapped), removed URLs; and which."""
    after = dict(bags)
    removed = rng.sample(sorted(after), n_removed)
    for url in removed:
        del after[url]
    changed = rng.sample(sorted(after), n_changed)
    for url in changed:
        after[url] = (after[url] - {min(after[url])}) | {f"new_{rng.randrange(10**6)}"}
    new = random_bags(rng, n_new, first=len(bags) + 1000)
    return after | new, set(changed) | set(new)


def same_tables(a: Path, b: Path, but: str = "") -> bool:
    """Whether two Parquet files hold the same rows, in any order, leaving out the column `but`."""
    rows = f"select * exclude ({but})" if but else "select *"  # but: a column name of this module
    with duckdb.connect() as con:
        query = f"select count(*) from ({rows} from read_parquet($a) except all {rows} from read_parquet($b))"
        return con.execute(query, {"a": str(a), "b": str(b)}).fetchall()[0][0] == 0 and (
            con.execute(query, {"a": str(b), "b": str(a)}).fetchall()[0][0] == 0
        )


def assert_same_outputs(work: Path, fresh: Path) -> None:
    for name in OUTPUTS:
        if (
            name == "clusters"
        ):  # a rerun's clusters keep the ids of the run before it; a fresh run numbers 1..
            assert same_tables(work / "clusters.parquet", fresh / "clusters.parquet", but="cluster_id")
            continue
        assert same_tables(work / f"{name}.parquet", fresh / f"{name}.parquet"), name
        assert (work / f"{name}.parquet").read_bytes() == (fresh / f"{name}.parquet").read_bytes(), name


# 130 tables: more than 64, so that each select of the band keys takes several (macros/band_keys_hashed.sql)
@pytest.mark.parametrize(("seed", "tables"), [(1, 12), (2, 12), (3, 130)])
def test_a_rerun_on_a_changed_table_equals_a_fresh_run(tmp_path, seed, tables):
    rng = random.Random(seed)
    params = replace(PARAMS, l=tables)
    before = random_bags(rng, 150)
    work = tmp_path / "w"
    run(work, params, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    after, touched = grown(rng, before, n_new=15, n_changed=6, n_removed=4)
    table = write_bags(tmp_path / "after.parquet", after)
    summary = run(work, params, bags=table, resources=RESOURCES)
    fresh = run(tmp_path / "fresh", params, bags=table, resources=RESOURCES)
    assert summary.stages["pairs"]["rows"] > 20  # pairs to compare, and kept ones among them
    assert_same_outputs(work, tmp_path / "fresh")
    # exactly the new and changed URLs are signed again: 150 - 4 + 15 URLs, 21 of them touched
    assert summary.stages["signatures"]["reuse"] == {"urls": 161, "computed": 21, "reused": 140}
    assert "signatures: 21 of 161 URLs computed, 140 reused from the previous run" in summary.lines()
    assert summary.stages["buckets"]["reuse"] == {"urls": 161, "computed": 21, "reused": 140}
    assert "kept that run's other buckets" in (work / "compiled" / "buckets.sql").read_text(encoding="utf-8")
    pairs = summary.stages["pairs"]["reuse"]
    assert 0 < pairs["pairs_kept"] < summary.stages["pairs"]["rows"]
    assert pairs["candidates_verified"] < summary.stages["candidates"]["rows"]
    assert "reuse" not in fresh.stages["signatures"]  # a first run has nothing to say
    assert "verified only the candidates involving a URL whose bag changed" in (
        work / "compiled" / "pairs.sql"
    ).read_text(encoding="utf-8")
    with duckdb.connect() as con:  # the kept pairs are the fresh run's pairs between untouched URLs
        kept = con.execute(
            "select count(*) from read_parquet($p) where not list_contains($t, u) and not list_contains($t, v)",
            {"p": str(work / "pairs.parquet"), "t": sorted(touched)},
        ).fetchall()[0][0]
    assert kept == pairs["pairs_kept"]


def capped_members(work: Path, max_bucket: int) -> set[str]:
    """The URLs in a bucket of more than max_bucket members, in the run the folder holds."""
    with duckdb.connect() as con:
        return {
            url
            for (url,) in con.execute(
                "select distinct urls.url from read_parquet($b) as b inner join read_parquet($u) as urls "
                "using (url_id) where b.n_members > $cap",
                {"b": str(work / "buckets.parquet"), "u": str(work / "urls.parquet"), "cap": max_bucket},
            ).fetchall()
        }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_capped_buckets_leave_the_other_pairs_reused(tmp_path, seed):
    """A bucket over --max-bucket pairs its members with its first members, so with other URLs: pairs of
    its members, in this run or the one before, are verified again; the others are kept, and the result is
    a fresh run's."""
    rng = random.Random(seed)
    params = replace(PARAMS, max_bucket=5)
    before = random_bags(rng, 150)
    work = tmp_path / "w"
    run(work, params, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    capped_before = capped_members(work, 5)
    after, touched = grown(rng, before, n_new=15, n_changed=6, n_removed=10)
    table = write_bags(tmp_path / "after.parquet", after)
    summary = run(work, params, bags=table, resources=RESOURCES)
    capped_now = capped_members(work, 5)
    assert capped_before and capped_now and capped_before != capped_now  # members enter and leave caps
    run(tmp_path / "fresh", params, bags=table, resources=RESOURCES)
    assert_same_outputs(work, tmp_path / "fresh")
    pairs = summary.stages["pairs"]["reuse"]
    assert 0 < pairs["pairs_kept"] < summary.stages["pairs"]["rows"]
    redone = sorted(touched | capped_before | capped_now)
    with duckdb.connect() as con:  # exactly the pairs between URLs untouched and never capped are kept
        kept = con.execute(
            "select count(*) from read_parquet($p) where not list_contains($t, u) and not list_contains($t, v)",
            {"p": str(work / "pairs.parquet"), "t": redone},
        ).fetchall()[0][0]
    assert kept == pairs["pairs_kept"]


@pytest.mark.parametrize("direction", ["cap lifted", "cap imposed"])
def test_a_pair_the_cap_hid_or_shows(tmp_path, direction):
    """Four equal bags in one bucket over --max-bucket 2: the last two are no candidate pair (neither is
    among the bucket's first two). With the first two gone the cap is lifted and they pair; the other way
    round, a cap imposed hides their pair. Their bags never change, so only the cap decides: the pair is
    found again, or dropped, as a fresh run finds or drops it."""
    params = replace(PARAMS, max_bucket=2)
    others = random_bags(random.Random(31), 40)
    terms = {f"same_{i}" for i in range(8)}
    four = {f"http://dup.example/{i}": terms for i in range(4)}
    two = {url: terms for url in list(four)[2:]}
    before, after = (
        (others | four, others | two) if direction == "cap lifted" else (others | two, others | four)
    )
    work = tmp_path / "w"
    run(work, params, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    table = write_bags(tmp_path / "after.parquet", after)
    summary = run(work, params, bags=table, resources=RESOURCES)
    run(tmp_path / "fresh", params, bags=table, resources=RESOURCES)
    assert summary.stages["pairs"]["reuse"]["pairs_kept"] > 0
    assert_same_outputs(work, tmp_path / "fresh")
    with duckdb.connect() as con:
        (found,) = con.execute(
            "select count(*) from read_parquet($p) where u = 'http://dup.example/2' and v = 'http://dup.example/3'",
            {"p": str(work / "pairs.parquet")},
        ).fetchone()
    assert found == (direction == "cap lifted")


def bucket_members(work: Path) -> set[tuple[int, tuple[str, ...]]]:
    """Each shared bucket of the run a folder holds: its table and its member URLs."""
    with duckdb.connect() as con:
        rows = con.execute(
            "select b.band, list(urls.url order by urls.url) from read_parquet($b) as b "
            "inner join read_parquet($u) as urls using (url_id) group by b.band, b.bucket",
            {"b": str(work / "buckets.parquet"), "u": str(work / "urls.parquet")},
        ).fetchall()
    return {(band, tuple(members)) for band, members in rows}


@pytest.mark.parametrize(("seed", "batch_keys"), [(11, 4 * 170), (12, 1), (13, 10**9)])
def test_buckets_of_a_rerun_equal_a_fresh_run_in_batches(tmp_path, monkeypatch, seed, batch_keys):
    """The rerun's buckets (sql/35_buckets_reused.sql) are the fresh run's rows, byte for byte, with the
    tables in batches or all at once, through every kind of change: buckets kept, gone, shrunk, grown by
    new URLs, and new ones, some joining an old URL that had a bucket of its own."""
    from lshsql.pipeline import batching

    monkeypatch.setattr(batching, "BATCH_BAND_KEYS", batch_keys)
    rng = random.Random(seed)
    params = replace(PARAMS, k=1, l=9)  # one min-hash a table: many shared buckets, of many sizes
    before = random_bags(rng, 160)
    work = tmp_path / "w"
    run(work, params, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    old = bucket_members(work)
    after, touched = grown(rng, before, n_new=20, n_changed=8, n_removed=12)
    table = write_bags(tmp_path / "after.parquet", after)
    summary = run(work, params, bags=table, resources=RESOURCES)
    run(tmp_path / "fresh", params, bags=table, resources=RESOURCES)
    assert summary.stages["buckets"]["reuse"] == {"urls": 168, "computed": 28, "reused": 140}
    assert summary.stages["buckets"]["batches"] == {4 * 170: 3, 1: 9, 10**9: 1}[batch_keys]
    assert_same_outputs(work, tmp_path / "fresh")
    new = bucket_members(work)
    gone = set(before) - set(after)
    assert old & new and old - new and new - old  # kept, and changed both ways
    assert any(set(m) & gone and (b, tuple(u for u in m if u not in gone)) in new for b, m in old - new)
    assert any(set(m) & touched and set(m) - touched for _, m in new - old)  # old and new URLs together
    old_members = {(b, u) for b, m in old for u in m}
    assert any(  # a new bucket of an old URL that was alone in its table before, and of a touched one
        any((b, u) not in old_members and u in before and u not in touched for u in m) and set(m) & touched
        for b, m in new - old
    )


def test_buckets_basis_older_than_the_signatures(tmp_path):
    """A run that stopped after its signatures leaves the buckets basis a run older: the buckets are still
    compared with the bags they were made from, and the third run equals a fresh one."""
    rng = random.Random(21)
    first = random_bags(rng, 120)
    work = tmp_path / "w"
    run(work, PARAMS, bags=write_bags(tmp_path / "first.parquet", first), resources=RESOURCES)
    second, _ = grown(rng, first, n_new=10, n_changed=5, n_removed=5)
    run(work, PARAMS, bags=write_bags(tmp_path / "second.parquet", second), resources=RESOURCES,
        only=("term_counts", "urls", "terms", "bags", "signatures"))  # fmt: skip
    third, _ = grown(rng, second, n_new=10, n_changed=5, n_removed=5)
    table = write_bags(tmp_path / "third.parquet", third)
    summary = run(work, PARAMS, bags=table, resources=RESOURCES)
    run(tmp_path / "fresh", PARAMS, bags=table, resources=RESOURCES)
    assert summary.stages["buckets"]["reuse"]["computed"] > summary.stages["signatures"]["reuse"]["computed"]
    assert_same_outputs(work, tmp_path / "fresh")


def test_no_shared_bucket_before(tmp_path):
    """The previous run had no shared bucket (an empty buckets file, without statistics): the rerun that
    makes the first one writes what a fresh run writes."""
    alone = {f"http://a.example/{i}": {f"t{i}_{j}" for j in range(6)} for i in range(30)}
    work = tmp_path / "w"
    run(work, PARAMS, bags=write_bags(tmp_path / "before.parquet", alone), resources=RESOURCES)
    with duckdb.connect() as con:
        assert not con.execute(
            "select count(*) from read_parquet($b)", {"b": str(work / "buckets.parquet")}
        ).fetchall()[0][0]
    table = write_bags(tmp_path / "after.parquet", alone | {"http://b.example/": alone["http://a.example/0"]})
    run(work, PARAMS, bags=table, resources=RESOURCES)
    run(tmp_path / "fresh", PARAMS, bags=table, resources=RESOURCES)
    assert_same_outputs(work, tmp_path / "fresh")


def test_a_table_that_only_shrinks_or_is_the_same(tmp_path):
    rng = random.Random(7)
    before = random_bags(rng, 120)
    work = tmp_path / "w"
    run(work, PARAMS, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    after = {url: terms for number, (url, terms) in enumerate(before.items()) if number % 10}
    table = write_bags(tmp_path / "after.parquet", after)
    summary = run(work, PARAMS, bags=table, resources=RESOURCES)
    run(tmp_path / "fresh", PARAMS, bags=table, resources=RESOURCES)
    assert summary.stages["signatures"]["reuse"] == {"urls": 108, "computed": 0, "reused": 108}
    assert summary.stages["buckets"]["reuse"] == {"urls": 108, "computed": 0, "reused": 108}
    assert summary.stages["pairs"]["reuse"]["candidates_verified"] == 0
    assert_same_outputs(work, tmp_path / "fresh")


@pytest.mark.parametrize(
    ("first", "change", "stage", "reason"),
    [
        ({}, {"seed": 2}, "signatures", "other parameters or versions"),
        ({}, {"l": 13}, "pairs", "other parameters or versions"),
        ({"max_bucket": 6}, {"max_bucket": 7}, "pairs", "other parameters or versions"),
    ],
)
def test_reuse_is_refused_when_the_result_could_differ(tmp_path, first, change, stage, reason):
    rng = random.Random(3)
    before = random_bags(rng, 100)
    work = tmp_path / "w"
    run(
        work,
        replace(PARAMS, **first),
        bags=write_bags(tmp_path / "before.parquet", before),
        resources=RESOURCES,
    )
    after, _ = grown(rng, before, n_new=10, n_changed=3, n_removed=2)
    table = write_bags(tmp_path / "after.parquet", after)
    params = replace(PARAMS, **change)
    summary = run(work, params, bags=table, resources=RESOURCES)
    assert reason in summary.stages[stage]["reuse"]["refused"]
    assert any(line.startswith(f"{stage}: all recomputed (") for line in summary.lines())
    run(tmp_path / "fresh", params, bags=table, resources=RESOURCES)
    assert_same_outputs(work, tmp_path / "fresh")


def test_another_version_refuses_reuse(tmp_path):
    """A basis kept by another lshsql or DuckDB version (its key differs) is not used."""
    rng = random.Random(4)
    before = random_bags(rng, 60)
    work = tmp_path / "w"
    run(work, PARAMS, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    state = work / "reuse" / "signatures.json"
    state.write_text(json.dumps(json.loads(state.read_text()) | {"key": "0123456789abcdef"}))
    after, _ = grown(rng, before, n_new=5, n_changed=2, n_removed=1)
    summary = run(work, PARAMS, bags=write_bags(tmp_path / "after.parquet", after), resources=RESOURCES)
    assert "other parameters or versions" in summary.stages["signatures"]["reuse"]["refused"]


def test_a_verify_cut_changed_in_code_refuses_reuse_of_pairs(tmp_path, monkeypatch):
    """min_agree is derived in code (params.py), not only from the options: a change to its rule (here
    oph's spread) must not keep pairs the old cut made."""
    from lshsql import params as params_module

    rng = random.Random(5)
    before = random_bags(rng, 60)
    work = tmp_path / "w"
    oph = replace(PARAMS, sketch="oph")
    run(work, oph, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    monkeypatch.setattr(params_module, "OPH_SPREAD", 1.0)
    after, _ = grown(rng, before, n_new=5, n_changed=2, n_removed=1)
    summary = run(work, oph, bags=write_bags(tmp_path / "after.parquet", after), resources=RESOURCES)
    assert "other parameters or versions" in summary.stages["pairs"]["reuse"]["refused"]


def test_force_reuses_nothing(tmp_path):
    rng = random.Random(8)
    before = random_bags(rng, 60)
    work = tmp_path / "w"
    run(work, PARAMS, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    after, _ = grown(rng, before, n_new=5, n_changed=2, n_removed=1)
    summary = run(
        work, PARAMS, bags=write_bags(tmp_path / "after.parquet", after), resources=RESOURCES, force=True
    )
    assert not any("reuse" in summary.stages[name] for name in ("signatures", "buckets", "pairs"))
    assert (work / "reuse" / "signatures.json").exists()  # the forced run is the next one's basis


def test_tfidf_weights_are_recomputed_and_equal_a_fresh_run(tmp_path):
    """Every TF-IDF weight moves when documents are added; a bag is reused only where its rounded copies
    did not change, so the result is still the fresh run's."""
    rng = random.Random(5)
    before = random_bags(rng, 120)
    params = Params(weighting="tfidf", threshold=0.5, k=2, l=12)
    work = tmp_path / "w"
    run(work, params, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    after, _ = grown(rng, before, n_new=12, n_changed=4, n_removed=3)
    table = write_bags(tmp_path / "after.parquet", after)
    summary = run(work, params, bags=table, resources=RESOURCES)
    run(tmp_path / "fresh", params, bags=table, resources=RESOURCES)
    assert summary.stages["signatures"]["reuse"]["computed"] >= 16
    assert_same_outputs(work, tmp_path / "fresh")


@pytest.mark.slow  # processes started and killed: make test-all (CI) runs it
def test_a_killed_incremental_run_leaves_the_previous_result_and_a_rerun_finishes(tmp_path):
    rng = random.Random(6)
    before = random_bags(rng, 3000)
    work = tmp_path / "w"
    run(work, PARAMS, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    previous = {name: (work / f"{name}.parquet").read_bytes() for name in OUTPUTS}
    after, _ = grown(rng, before, n_new=300, n_changed=30, n_removed=30)
    table = write_bags(tmp_path / "after.parquet", after)
    command = [sys.executable, "-m", "lshsql", "run", "--bags", str(table), "--work", str(work), "-q"]
    command += ["--weighting", "none", "--threshold", "0.5", "-k", "2", "-l", "12"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline and not (work / "tmp" / "reuse").exists():
        time.sleep(0.005)
    assert process.poll() is None, "the run ended before its reuse began"
    process.send_signal(signal.SIGKILL)
    process.wait()
    # the outputs are whole files: the previous run's, or those this run finished before it was killed
    for name in ("pairs", "clusters"):
        assert (work / f"{name}.parquet").read_bytes() == previous[name]
    summary = run(work, PARAMS, bags=table, resources=RESOURCES)
    run(tmp_path / "fresh", PARAMS, bags=table, resources=RESOURCES)
    assert_same_outputs(work, tmp_path / "fresh")
    assert summary.stages["pairs"].get("reuse", {}).get("pairs_kept", 0) > 0


def test_freeze_idf_keeps_unchanged_bags_and_signs_only_changed_urls(tmp_path, lshsql_command):
    """With --freeze-idf the df and N of the first run stay: the rerun on a grown table signs exactly the new
    and changed URLs, the other URLs' bag rows are the first run's, and a fresh folder given the same frozen
    vocabulary writes the same bytes. Without the option the folder gives a run from scratch again."""
    import shutil

    from lshsql.pipeline.catalog import open_catalog

    rng = random.Random(12)
    before = random_bags(rng, 120)
    params = Params(weighting="tfidf", threshold=0.5, k=2, l=12, freeze_idf=True)
    work, fresh = tmp_path / "w", tmp_path / "fresh"
    run(work, params, bags=write_bags(tmp_path / "before.parquet", before), resources=RESOURCES)
    frozen = (work / "frozen_idf.parquet").read_bytes()
    first_bags = bag_rows(work)
    after, touched = grown(rng, before, n_new=12, n_changed=4, n_removed=3)
    table = write_bags(tmp_path / "after.parquet", after)
    summary = run(work, params, bags=table, resources=RESOURCES)
    assert (work / "frozen_idf.parquet").read_bytes() == frozen  # kept, not frozen again
    with open_catalog(work) as con:  # the file is a view of the folder's catalog, as every output
        assert con.execute(
            "select count(distinct corpus_urls), max(corpus_urls) from frozen_idf"
        ).fetchall() == [(1, 120)]
    assert summary.stages["signatures"]["reuse"] == {"urls": 129, "computed": 16, "reused": 113}
    kept = {url: rows for url, rows in bag_rows(work).items() if url not in touched}
    assert kept == {url: rows for url, rows in first_bags.items() if url in kept} and len(kept) == 113
    used = summary.stages["bags"]
    assert used["rows_read"] == used["rows_used"] + sum(used["rows_dropped"].values())
    fresh.mkdir()
    shutil.copy(work / "frozen_idf.parquet", fresh / "frozen_idf.parquet")
    run(fresh, params, bags=table, resources=RESOURCES)
    assert_same_outputs(work, fresh)
    # the option off: every df counted again, as in a folder that never froze one
    unfrozen = replace(params, freeze_idf=False)
    run(work, unfrozen, bags=table, resources=RESOURCES)
    run(tmp_path / "plain", unfrozen, bags=table, resources=RESOURCES)
    assert_same_outputs(work, tmp_path / "plain")
    shown = lshsql_command("run", "--help")
    assert "--freeze-idf" in shown.stdout


def bag_rows(work: Path) -> dict[str, list[tuple]]:
    """Each URL's bag rows (term_hash, tf, df, weight), by URL (url_ids shift when URLs are added)."""
    with duckdb.connect() as con:
        rows = con.execute(
            "select urls.url, list((bags.term_hash, bags.tf, bags.df, bags.weight) order by bags.term_hash) "
            "from read_parquet($b) as bags inner join read_parquet($u) as urls using (url_id) group by urls.url",
            {"b": str(work / "bags.parquet"), "u": str(work / "urls.parquet")},
        ).fetchall()
    return dict(rows)


def test_freeze_idf_refused_runs_freeze_nothing_and_other_bags_are_refused(tmp_path, example_run):
    """A run refused (a table that repeats a (url, term)) leaves no frozen file: the next run freezes its own
    counts. A frozen vocabulary of URL bags is refused for host bags (its df counted URLs)."""
    from lshsql.errors import ParamError
    from tests.conftest import copy_work

    rows = [{"url": f"u{i}", "term": f"t{j}"} for i in range(30) for j in range(i % 5, i % 5 + 6)]
    repeated = write_table(tmp_path / "repeated.parquet", rows + rows[:7])
    plain = write_table(tmp_path / "plain.parquet", rows)
    params = Params(weighting="tfidf", threshold=0.5, freeze_idf=True)
    work = tmp_path / "w"
    with pytest.raises(ParamError, match=r"^--freeze-idf needs one row per \(url, term\)"):
        run(work, params, bags=repeated, resources=RESOURCES)
    assert not (work / "frozen_idf.parquet").exists() and not (work / "bags.parquet").exists()
    run(work, params, bags=plain, resources=RESOURCES)
    run(tmp_path / "fresh", params, bags=plain, resources=RESOURCES)
    for name in ("frozen_idf", "bags", "pairs"):
        assert (work / f"{name}.parquet").read_bytes() == (
            tmp_path / "fresh" / f"{name}.parquet"
        ).read_bytes()

    crawl = copy_work(example_run, tmp_path / "crawl")
    run(crawl, Params(freeze_idf=True), resources=RESOURCES)
    with pytest.raises(
        ParamError,
        match=r"counts other bags than this run's \(aliases true, input fragments, unit url; now aliases true, input fragments, unit host\): delete it",
    ):
        run(crawl, Params(freeze_idf=True, unit="host"), resources=RESOURCES)


def test_a_bags_file_rewritten_in_place_is_read_again(tmp_path):
    """--bags takes a folder of Parquet files too (DuckDB reads every file under it). A part rewritten in
    place (pyarrow's write_table keeps the folder's mtime) or a file rewritten to its old size with its old
    mtime put back is a changed input: the rerun equals a fresh run, where it took every stage as up to
    date before."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(5)
    before = random_bags(rng, 120)
    after, _ = grown(rng, before, n_new=12, n_changed=5, n_removed=3)
    folder = tmp_path / "bags"
    urls = sorted(after | before)
    half = set(urls[: len(urls) // 2])
    write_bags(folder / "part-0.parquet", {u: t for u, t in before.items() if u in half})
    write_bags(folder / "part-1.parquet", {u: t for u, t in before.items() if u not in half})
    work = tmp_path / "w"
    run(work, PARAMS, bags=folder, resources=RESOURCES)
    folder_mtime = folder.stat().st_mtime_ns
    write_bags(folder / "part-1.parquet", {u: t for u, t in after.items() if u not in half})
    os.utime(folder, ns=(folder_mtime, folder_mtime))
    summary = run(work, PARAMS, bags=folder, resources=RESOURCES)
    assert not summary.stages["bags"].get("skipped")
    (folder / "_SUCCESS").write_text("a file DuckDB does not read")  # changes nothing
    assert run(work, PARAMS, bags=folder, resources=RESOURCES).stages["bags"].get("skipped")
    run(tmp_path / "fresh", PARAMS, bags=folder, resources=RESOURCES)
    assert_same_outputs(work, tmp_path / "fresh")

    # one file, the same size and mtime, other weights: told apart by its bytes
    table = pa.table({"url": ["a", "b", "c"], "term": ["x", "x", "y"], "weight": [1.0, 1.0, 1.0]})
    single = tmp_path / "one.parquet"
    options = {"compression": "none", "use_dictionary": False, "write_statistics": False}
    pq.write_table(table, single, **options)
    stat = single.stat()
    run(tmp_path / "one", PARAMS, bags=single, resources=RESOURCES)
    pq.write_table(table.set_column(2, "weight", pa.array([1.0, 3.0, 1.0])), single, **options)
    assert single.stat().st_size == stat.st_size
    os.utime(single, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = run(tmp_path / "one", PARAMS, bags=single, resources=RESOURCES)
    assert not again.stages["bags"].get("skipped")
