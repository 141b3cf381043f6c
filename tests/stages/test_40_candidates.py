"""buckets, candidates and bucket_sizes on hand-made signatures (m = 4, two bands of two rows)."""

from __future__ import annotations

import pytest

from lshsql.lsh.scurve import resolve
from lshsql.params import Params
from tests.conftest import run_stage

# band 0 = (h0, h1), band 1 = (h2, h3)
SIGNATURES = [
    {"url_id": 1, "h0": 1, "h1": 2, "h2": 3, "h3": 4},
    {"url_id": 2, "h0": 1, "h1": 2, "h2": 5, "h3": 6},  # shares band 0 with 1 and 4
    {"url_id": 3, "h0": 7, "h1": 8, "h2": 3, "h3": 4},  # shares band 1 with 1 and 4
    {"url_id": 4, "h0": 1, "h1": 2, "h2": 3, "h3": 4},  # equal to 1: both bands
    {"url_id": 5, "h0": 1, "h1": 9, "h2": 3, "h3": 9},  # one value of each band only: no bucket
]
PARAMS = resolve(Params(num_perm=4, k=2, l=2, banding=True), True)


def lsh(work, params, signatures=None) -> tuple[list[dict], list[dict], list[dict]]:
    """buckets, then candidates and bucket_sizes from them: the three stages' rows."""
    buckets = run_stage(work, "buckets", params, signatures and {"signatures": signatures})
    return buckets, run_stage(work, "candidates", params), run_stage(work, "bucket_sizes", params)


def test_shared_buckets_one_row_per_member_named_by_the_smallest(tmp_path):
    rows = run_stage(tmp_path, "buckets", PARAMS, {"signatures": SIGNATURES})
    # band 0 (h0, h1) = (1, 2): urls 1, 2, 4; band 1 (h2, h3) = (3, 4): urls 1, 3, 4; url 5 shares none
    assert [(r["band"], r["bucket"], r["url_id"], r["n_members"]) for r in rows] == [
        (0, 1, 1, 3),
        (0, 1, 2, 3),
        (0, 1, 4, 3),
        (1, 1, 1, 3),
        (1, 1, 3, 3),
        (1, 1, 4, 3),
    ]


def test_pairs_sharing_a_bucket_with_their_band_count(tmp_path):
    _, rows, _ = lsh(tmp_path, PARAMS, SIGNATURES)
    assert [(r["u_id"], r["v_id"], r["n_bands"]) for r in rows] == [
        (1, 2, 1),
        (1, 3, 1),
        (1, 4, 2),
        (2, 4, 1),
        (3, 4, 1),
    ]


def test_bucket_sizes(tmp_path):
    _, _, rows = lsh(tmp_path, PARAMS, SIGNATURES)
    # two shared buckets, of three members each: 3 pairs each
    assert rows == [{"n_members": 3, "n_buckets": 2, "n_pairs": 6.0, "n_pairs_emitted": 6.0}]


def test_a_big_bucket_is_capped(tmp_path):
    same = [{"url_id": i, "h0": 1, "h1": 1, "h2": 10 * i, "h3": 10 * i} for i in range(1, 11)]
    params = resolve(Params(num_perm=4, k=2, l=2, banding=True, max_bucket=3), True)
    _, rows, sizes = lsh(tmp_path, params, same)
    # each member paired with the bucket's first 3 members (url ids 1, 2, 3): 3 + 7*3 = 24 = 3*(2*10-3-1)/2
    assert len(rows) == 24
    assert {(r["u_id"], r["v_id"]) for r in rows} == {(u, v) for u in (1, 2, 3) for v in range(u + 1, 11)}
    assert sizes == [{"n_members": 10, "n_buckets": 1, "n_pairs": 45.0, "n_pairs_emitted": 24.0}]


@pytest.mark.parametrize(
    ("knob", "value", "tables"),
    [
        ("BAND_KEY_BYTES", 10**12, 6),
        ("BATCH_BAND_KEYS", 1, 6),
        ("BATCH_BAND_KEYS", 4 * 59, 6),
        ("BATCH_BAND_KEYS", 100 * 59, 130),
    ],
)
def test_batches_of_tables_give_the_same_buckets(tmp_path, monkeypatch, knob, value, tables):
    """When l * N band keys exceed the memory limit or BATCH_BAND_KEYS the buckets runner takes the tables
    in batches and writes the batches' rows in order: the same buckets, so the same candidates and bucket
    sizes, as in one go (the Parquet encoding may differ). Forced here with one table per batch, by either
    bound, with batches of 4 and 2 of the 6 tables, and of 100 and 30 of 130 (the first batch's selects
    take two tables each, the second's one, macros/band_keys_hashed.sql)."""
    import numpy as np

    from lshsql.engines import base as engine
    from lshsql.pipeline import batching

    combined = []
    materialize_query = engine.DuckDBEngine.materialize_query
    monkeypatch.setattr(
        engine.DuckDBEngine,
        "materialize_query",
        lambda self, *a, **kw: combined.append(kw.get("table")) or materialize_query(self, *a, **kw),
    )

    rng = np.random.default_rng(3)
    signatures = [{"url_id": i, **{f"h{j}": int(rng.integers(0, 3)) for j in range(8)}} for i in range(1, 60)]
    params = resolve(Params(num_perm=8, k=2, l=tables, max_bucket=5), True)
    files = {}
    for batched in (False, True):
        work = tmp_path / f"batched{batched}"
        if batched:
            monkeypatch.setattr(batching, knob, value)
        files[batched] = buckets, rows, sizes = lsh(work, params, signatures)
        assert buckets and rows and any(s["n_pairs_emitted"] < s["n_pairs"] for s in sizes)  # capped too
        assert not (work / "tmp" / "buckets_batches").exists()
    assert files[False] == files[True]
    assert combined == ["buckets"]  # the batched run's


# 130 tables: several a select of the band keys, and one alone (macros/band_keys_hashed.sql)
@pytest.mark.parametrize("tables", [7, 130])
def test_both_files_of_the_buckets_stage_give_the_same_rows(tmp_path, monkeypatch, tables):
    """On DuckDB (sql/35_buckets.sql) a table's k values are one 64-bit hash (sql/macros/band_keys_hashed.sql)
    and the shared keys are found by sorting the band keys; the portable file Spark runs
    (sql/35_buckets_grouped.sql) keeps the k values and groups them. Both give the same buckets (named by
    their smallest url_id, not by the key), so the same candidates and bucket sizes, capped buckets too.
    Half the URLs draw from few values (big buckets), half from many (keys of one URL, next to shared ones
    in key order)."""
    import numpy as np

    from lshsql.pipeline import runners

    rng = np.random.default_rng(5)
    signatures = [
        {"url_id": i, **{f"h{j}": int(rng.integers(0, 3 if i % 2 else 6)) for j in range(9)}}
        for i in range(1, 160)
    ]
    params = resolve(Params(num_perm=9, k=3, l=tables, max_bucket=4), True)
    sql_file = runners.sql_file
    results = {}
    for portable in (False, True):
        monkeypatch.setattr(
            runners,
            "sql_file",
            lambda stage, p, hashed=not portable, **kw: sql_file(
                stage, p, **(kw | {"hashed_band_keys": hashed})
            ),
        )
        results[portable] = lsh(tmp_path / f"portable{portable}", params, signatures)
    buckets, rows, sizes = results[False]
    assert len(rows) > 500 and any(s["n_pairs_emitted"] < s["n_pairs"] for s in sizes)
    members = {(r["band"], r["url_id"]) for r in buckets}
    assert {r["n_members"] for r in buckets} >= {2, 3} and 159 * tables - len(
        members
    ) > 100  # keys of one URL
    assert results[True] == results[False]
    from lshsql import pipeline, sqlfiles

    text = sqlfiles.render(sqlfiles.load("35_buckets.sql"), pipeline.band_context(params, tmp_path))
    assert text.count("unnest([") == (2 * 43 if tables > 64 else 0)  # 43 selects of 3 tables, 1 of 1


def test_the_band_key_is_hashed_and_sorted_on_duckdb_only(tmp_path):
    from lshsql import pipeline, sqlfiles
    from lshsql.engines.base import DuckDBEngine, SparkEngine

    params = resolve(Params(num_perm=9, k=3, l=7), True)
    context = pipeline.band_context(params, tmp_path)
    for engine, hashed in ((DuckDBEngine(None), True), (SparkEngine(None), False)):  # no connection needed
        file = pipeline.sql_file("buckets", params, hashed_band_keys=engine.hashes_band_keys)
        text = sqlfiles.render(sqlfiles.load(file), context)
        assert ("hash(" in text) is hashed
        assert ("lag(" in text) is hashed and ("group by" in text) is not hashed  # a sort, or a group
        assert ("key3" in text) is not hashed  # the k = 3 values, or the one hashed key


@pytest.mark.parametrize(
    ("n_urls", "n_tables", "fitting", "expected"),
    [
        (100_000, 47, 800, 80),  # 80 >= l = 47 tables: one batch, 4.7M band keys
        (1_000_000, 95, 40, 8),  # 8M keys per batch, within what the memory limit holds
        (1_000_000, 95, 5, 5),  # the memory limit holds fewer
        (10_000_000, 191, 8, 1),  # N over 8M: one table per batch
        (0, 3, 10**9, 8_000_000),  # no URLs: one batch
        (1_000_000, 95, None, 95),  # Spark: all at once
    ],
)
def test_tables_per_batch(n_urls, n_tables, fitting, expected):
    from lshsql.pipeline import tables_per_batch

    assert tables_per_batch(n_urls, n_tables, fitting) == expected


def near_duplicate_bags(tmp_path):
    """A bags table of 60 URLs in 6 groups of near-copies (30 terms of 40 shared within a group)."""
    from tests.conftest import write_table

    rows = [
        {"url": f"u{g}-{i}", "term": f"t{g}-{t}"}
        for g in range(6)
        for i in range(10)
        for t in range(40)
        if (t + i) % 4  # each member drops a different quarter of its group's terms
    ]
    return write_table(tmp_path / "bags.parquet", rows)


def test_a_new_bucket_cap_reruns_candidates_but_not_the_buckets(tmp_path):
    """max_bucket is a parameter of candidates and bucket_sizes only: the buckets stay up to date."""
    from lshsql.pipeline import run

    bags, work = near_duplicate_bags(tmp_path), tmp_path / "w"
    first = run(work, Params(weighting="none", k=3, l=8, max_bucket=1000), bags=bags)
    second = run(work, Params(weighting="none", k=3, l=8, max_bucket=2), bags=bags)
    assert first.stages["candidates"]["rows"] > second.stages["candidates"]["rows"] > 0
    up_to_date = {name for name, entry in second.stages.items() if entry.get("skipped")}
    assert {"signatures", "buckets"} <= up_to_date
    assert not up_to_date & {"candidates", "bucket_sizes", "pairs", "clusters"}
    assert second.stages["bucket_sizes"]["buckets_capped"] > 0


def test_a_stage_refuses_inputs_made_with_other_parameters(tmp_path):
    """`lshsql stage candidates -k 4` after a run with k = 3: the buckets were made with k = 3, so candidates
    would silently be of the old tables; it stops with a one-line error naming the stage to run first."""
    from lshsql.errors import ParamError
    from lshsql.pipeline import run

    bags, work = near_duplicate_bags(tmp_path), tmp_path / "w"
    run(work, Params(weighting="none", k=3, l=8), bags=bags)
    with pytest.raises(ParamError, match=r"buckets\.parquet was made with other parameters.*stage buckets"):
        run(work, Params(weighting="none", k=4, l=8), bags=bags, only=("candidates",))
    run(work, Params(weighting="none", k=4, l=8), bags=bags, only=("buckets", "candidates"))  # in order: fine
    run(work, Params(weighting="none", k=4, l=8), bags=bags, only=("pairs",))
    with pytest.raises(ParamError, match=r"candidates\.parquet was made with other parameters"):
        run(work, Params(weighting="none", k=4, l=8, max_bucket=5), bags=bags, only=("pairs",))


def test_a_table_of_ones_own_is_checked_for_its_key(tmp_path):
    """Any stage may start from a user's table (one with no manifest entry). A signatures table that repeats
    a url_id would repeat pairs without an error, so the stage refuses it with a one-line error naming the
    key; one without the key column likewise. The same table without the repeat gives the run's pairs."""
    import shutil

    import duckdb

    from lshsql.errors import InputError
    from lshsql.pipeline import run

    bags, work, own = near_duplicate_bags(tmp_path), tmp_path / "w", tmp_path / "own"
    params = Params(weighting="none", k=3, l=8)
    run(work, params, bags=bags)
    own.mkdir()
    for relation in ("urls", "terms", "bags"):
        shutil.copy(work / f"{relation}.parquet", own)
    signatures = str(work / "signatures.parquet")

    def write_signatures(select: str) -> None:
        with duckdb.connect() as con:
            con.execute(
                f"copy ({select}) to $out (format parquet)", {"s": signatures, "out": str(own / "s.parquet")}
            )

    write_signatures(
        "select * from read_parquet($s) union all select * from read_parquet($s) where url_id <= 2"
    )
    (own / "s.parquet").replace(own / "signatures.parquet")
    with pytest.raises(
        InputError, match=r"signatures\.parquet: 2 value\(s\) of \(url_id\) are in more than one"
    ):
        run(own, params, only=("buckets", "candidates", "bucket_sizes", "pairs"))
    assert not (own / "buckets.parquet").exists()  # checked before any stage ran
    write_signatures("select * exclude (url_id), url_id as id from read_parquet($s)")
    (own / "s.parquet").replace(own / "signatures.parquet")
    with pytest.raises(InputError, match=r"no column url_id; a signatures table has url_id, h0"):
        run(own, params, only=("buckets",))
    shutil.copy(signatures, own)
    run(own, params, only=("buckets", "candidates", "bucket_sizes", "pairs"))
    with duckdb.connect() as con:
        pairs = "select u, v, similarity from read_parquet($p) order by all"
        mine = con.execute(pairs, {"p": str(own / "pairs.parquet")}).fetchall()
        assert mine and mine == con.execute(pairs, {"p": str(work / "pairs.parquet")}).fetchall()


def test_a_table_put_in_place_of_a_stage_output_is_the_users_own(tmp_path):
    """A table put where a stage wrote its output is no longer the stage's (the manifest records each
    output's size and footer). A stage run on its own takes it as the user's own: the key check applies, and
    the stages after it rerun instead of calling their old outputs up to date. `run` makes it again."""
    import duckdb

    from lshsql.errors import InputError
    from lshsql.pipeline import run

    bags, work = near_duplicate_bags(tmp_path), tmp_path / "w"
    params = Params(weighting="none", k=3, l=8)
    run(work, params, bags=bags)
    signatures, fresh = work / "signatures.parquet", tmp_path / "fresh.parquet"
    fresh.write_bytes((work / "pairs.parquet").read_bytes())

    def replace_signatures(select: str) -> None:
        with duckdb.connect() as con:
            con.execute(
                f"copy ({select}) to $out (format parquet)",
                {"s": str(signatures), "out": str(tmp_path / "s")},
            )
        (tmp_path / "s").replace(signatures)

    def urls_in(relation: str, column: str = "url_id") -> set[int]:
        with duckdb.connect() as con:
            query = f"select distinct {column} from read_parquet($p)"
            return {row[0] for row in con.execute(query, {"p": str(work / f"{relation}.parquet")}).fetchall()}

    replace_signatures("select * from read_parquet($s) where url_id <= 3 order by url_id")
    summary = run(work, params, only=("buckets", "candidates", "bucket_sizes", "pairs"))
    assert not any(entry.get("skipped") for entry in summary.stages.values())
    assert urls_in("buckets") <= {1, 2, 3} and urls_in("pairs", "u_id") | urls_in("pairs", "v_id") <= {
        1,
        2,
        3,
    }
    summary = run(work, params, only=("pairs",))  # the same table again: up to date now
    assert summary.stages["pairs"].get("skipped")

    replace_signatures(
        "select * from read_parquet($s) union all select * from read_parquet($s) where url_id = 1"
    )
    with pytest.raises(
        InputError, match=r"signatures\.parquet: 1 value\(s\) of \(url_id\) are in more than one"
    ):
        run(work, params, only=("buckets",))

    summary = run(work, params)  # the whole run makes signatures again, and everything after them
    assert {"signatures", "buckets", "pairs"} <= {
        n for n, e in summary.stages.items() if not e.get("skipped")
    }
    assert (work / "pairs.parquet").read_bytes() == fresh.read_bytes()


def test_a_truncated_stage_output_is_made_again(tmp_path):
    """A damaged output (here cut in half) is not up to date: `run` writes it again rather than failing on
    it, and a stage run on its own that reads it says which file cannot be read."""
    from lshsql.errors import InputError
    from lshsql.pipeline import run

    bags, work = near_duplicate_bags(tmp_path), tmp_path / "w"
    params = Params(weighting="none", k=3, l=8)
    run(work, params, bags=bags)
    pairs, signatures = work / "pairs.parquet", work / "signatures.parquet"
    whole = pairs.read_bytes()
    pairs.write_bytes(whole[: len(whole) // 2])
    summary = run(work, params)
    assert not summary.stages["pairs"].get("skipped") and pairs.read_bytes() == whole
    signatures.write_bytes(signatures.read_bytes()[:100])
    with pytest.raises(InputError, match=r"signatures\.parquet: not a readable Parquet file"):
        run(work, params, only=("buckets",))


@pytest.mark.parametrize("max_bucket", [1000, 4])
def test_candidates_in_ranges_of_u_equal_those_in_one_piece(tmp_path, monkeypatch, max_bucket):
    """When the pairs the self-join emits would not fit in the memory limit, the runner takes ranges of
    u_id one at a time (batching.candidate_ranges): the candidates are those of one piece, row for row in
    the same order (the Parquet encoding may differ), capped buckets (max_bucket 4) included, and the
    pairs are the same bytes."""
    import hashlib
    import json

    import pyarrow.parquet as pq

    from lshsql.pipeline import batching, run

    bags = near_duplicate_bags(tmp_path)
    found = []
    for name, row_bytes in (("one", batching.CANDIDATE_ROW_BYTES), ("ranges", 2**40)):
        monkeypatch.setattr(batching, "CANDIDATE_ROW_BYTES", row_bytes)  # 1 GB holds 0 rows of 2^40 bytes
        work = tmp_path / name
        run(work, Params(weighting="none", k=3, l=8, max_bucket=max_bucket), bags=bags)
        stages = json.loads((work / "manifest.json").read_text())["stages"]
        assert (stages["bucket_sizes"]["buckets_capped"] > 0) == (max_bucket == 4)
        pairs = hashlib.sha256((work / "pairs.parquet").read_bytes()).hexdigest()
        rows = pq.read_table(work / "candidates.parquet").to_pylist()
        found.append((stages["candidates"].get("u_ranges", 1), rows, pairs))
    (one_piece, rows, pairs), (n_ranges, ranged_rows, ranged_pairs) = found
    assert one_piece == 1 and n_ranges > 3
    assert len(rows) > 100 and ranged_rows == rows and ranged_pairs == pairs


@pytest.mark.parametrize(
    ("first", "last", "width", "bins", "fitting", "expected"),
    [
        (1, 10, 1, [(0, 5.0)], None, [(1, 10)]),  # Spark: one piece
        (1, 10, 1, [(0, 3.0), (5, 2.0)], 10, [(1, 10)]),  # fits: one piece
        (0, 0, 1, [], 0, [(0, 0)]),  # no buckets
        (1, 10, 1, [(0, 4.0), (1, 4.0), (2, 4.0), (5, 1.0)], 8, [(1, 2), (3, 10)]),  # packed to 8
        (1, 10, 1, [(0, 1.0), (3, 50.0), (4, 1.0)], 8, [(1, 3), (4, 4), (5, 10)]),  # a bin over: alone
        (1, 100, 10, [(0, 5.0), (3, 5.0), (9, 5.0)], 6, [(1, 30), (31, 90), (91, 100)]),  # cut at bins
        (1, 5, 1, [(0, 1.0), (2, 1.0)], 0, [(1, 2), (3, 5)]),  # nothing fits: a range per non-empty bin
        (1, 4, 1, [(0, 3.0), (1, 3.0), (2, 3.0), (3, 3.0)], 10, [(1, 2), (3, 4)]),  # two of 6, not 9 and 3
        (1, 3, 1, [(0, 2.0), (1, 3.0), (2, 1.0)], 4, [(1, 1), (2, 3)]),  # a share cut short: not 3 ranges
        (1, 3, 1, [(0, 10.0), (1, 10.0), (2, 0.0)], 10, [(1, 1), (2, 3)]),  # no range of no pairs
    ],
)
def test_candidate_ranges_cover_every_id_once(first, last, width, bins, fitting, expected):
    """Ranges of u_id: contiguous, in order, none empty, from first to last, cut between bins into as few
    ranges as hold at most `fitting` of the pairs counted in their bins (unless one bin alone holds more),
    of about equal pairs where that takes no more ranges, and none without pairs."""
    from lshsql.pipeline.batching import candidate_ranges

    ranges = candidate_ranges(first, last, width, bins, fitting)
    assert ranges == expected
    assert ranges[0][0] == first and ranges[-1][1] == last
    assert all(lo <= hi for lo, hi in ranges) and all(
        a[1] + 1 == b[0] for a, b in zip(ranges[:-1], ranges[1:], strict=True)
    )


def test_candidate_ranges_are_the_fewest_that_fit_on_random_bins():
    """On random bins (zeros and bins over the limit included): as many ranges as cutting only before an
    overflowing bin gives, the fewest contiguous ranges that fit; each within the limit unless it is one
    bin; none without pairs."""
    import random

    from lshsql.pipeline.batching import candidate_ranges

    rng = random.Random(7)
    for _ in range(2000):
        first, width, fitting = rng.randint(0, 5), rng.randint(1, 3), rng.randint(1, 12)
        bins = [(b, float(rng.choice([0, 0, 1, 2, 3, 5, 8, 15]))) for b in range(rng.randint(1, 12))]
        last = first + width * len(bins) - 1
        ranges = candidate_ranges(first, last, width, bins, fitting)
        held = [sum(p for b, p in bins if lo <= first + b * width <= hi) for lo, hi in ranges]
        fewest, acc = 1, 0.0
        for _, pairs in bins:
            if pairs and acc and acc + pairs > fitting:
                fewest, acc = fewest + 1, 0.0
            acc += pairs
        assert ranges[0][0] == first and ranges[-1][1] == last
        assert len(ranges) == (1 if sum(held) <= fitting else fewest)
        assert all(
            h <= fitting or len([b for b, p in bins if p and lo <= first + b * width <= hi]) == 1
            for h, (lo, hi) in zip(held, ranges, strict=True)
        )
        assert len(ranges) == 1 or all(h > 0 for h in held)


@pytest.mark.parametrize("max_bucket", [1000, 4])
def test_the_pairs_counted_per_bin_are_those_the_self_join_emits(tmp_path, max_bucket):
    """The runner places the ranges' cuts by the pairs each url_id emits as u (runners.EMITTED_PAIRS_BY_BIN,
    from the buckets alone): exactly the candidates' n_bands summed by u_id, capped buckets included, and
    their total is the cheap estimate's (runners.EMITTED_PAIRS)."""
    import duckdb

    from lshsql.pipeline import run, runners

    work = tmp_path / "w"
    run(work, Params(weighting="none", k=3, l=8, max_bucket=max_bucket), bags=near_duplicate_bags(tmp_path))
    con = duckdb.connect()
    con.read_parquet(str(work / "buckets.parquet")).create_view("buckets")
    first, _, emitted = con.execute(runners.EMITTED_PAIRS, {"cap": max_bucket}).fetchall()[0]
    counted = con.execute(runners.EMITTED_PAIRS_BY_BIN, {"cap": max_bucket, "first": first, "width": 1})
    by_u = {first + b: pairs for b, pairs in counted.fetchall() if pairs}
    emitted_by_u = con.execute(
        "select u_id, sum(n_bands) from read_parquet($p) group by u_id",
        {"p": str(work / "candidates.parquet")},
    ).fetchall()
    assert len(by_u) > 10 and by_u == dict(emitted_by_u)
    assert sum(by_u.values()) == pytest.approx(emitted)


def parts_in_order(folder, n_parts: int = 3, rows: int = 120_000) -> list[str]:
    """Parquet files of (u_id, v_id) that follow one another in that order, each of many row groups, and
    whose rows DuckDB could emit out of order if it did not keep insertion order (v_id falls as u_id rises)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    files = []
    for part in range(n_parts):
        u = pa.array(range(part * rows, (part + 1) * rows), pa.int64())
        table = pa.table({"u_id": u, "v_id": pa.array([10**9 - x for x in u.to_pylist()], pa.int64())})
        files.append(str(folder / f"part-{part:05d}.parquet"))
        pq.write_table(table, files[-1], row_group_size=7_000)
    return files


def test_parts_in_order_are_concatenated_in_order_without_a_sort(tmp_path):
    """DuckDB's concatenate writes the rows of ordered parts one part after another, with two threads and
    parts of many row groups, and leaves the connection's preserve_insertion_order as it found it (false,
    as every run sets it, so DuckDB may reorder again; or a caller's true)."""
    import pyarrow.parquet as pq

    from lshsql.engines import duckdb as db
    from lshsql.engines.base import DuckDBEngine

    files = parts_in_order(tmp_path / "parts")
    with db.connect(db.Resources(memory_limit="1GB", threads=2)) as con:
        engine = DuckDBEngine(con)
        engine.register({"parts": files})
        assert engine.concatenate("parts", "u_id, v_id", tmp_path / "out.parquet") == 360_000
        assert con.sql("select current_setting('preserve_insertion_order')").fetchall() == [(False,)]
        con.execute("set preserve_insertion_order = true")
        assert engine.concatenate("parts", "u_id, v_id", tmp_path / "again.parquet") == 360_000
        assert con.sql("select current_setting('preserve_insertion_order')").fetchall() == [(True,)]
    for name in ("out.parquet", "again.parquet"):
        assert pq.read_table(tmp_path / name)["u_id"].to_pylist() == list(range(360_000))
