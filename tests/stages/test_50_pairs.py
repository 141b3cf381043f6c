"""pairs: agreement filter and exact weighted Jaccard on hand-made tables."""

from __future__ import annotations

import re

import pytest

from lshsql.lsh.scurve import resolve
from lshsql.params import Params
from tests.conftest import rendered_contexts, run_stage

TABLES = {
    "candidates": [{"u_id": 1, "v_id": 2, "n_bands": 1}, {"u_id": 1, "v_id": 3, "n_bands": 1}],
    "signatures": [
        {"url_id": 1, "h0": 1, "h1": 2, "h2": 3, "h3": 4},
        {"url_id": 2, "h0": 1, "h1": 2, "h2": 9, "h3": 9},  # agrees with 1 on 2 of 4
        {"url_id": 3, "h0": 1, "h1": 8, "h2": 8, "h3": 8},  # agrees with 1 on 1 of 4
    ],
    "urls": [
        {"url_id": 1, "url": "http://a/"},
        {"url_id": 2, "url": "http://b/"},
        {"url_id": 3, "url": "http://c/"},
    ],
    "bags": [  # term_hash stands for the term (any distinct integers)
        {"url_id": 1, "term": "a", "term_hash": 11, "weight": 1.0},
        {"url_id": 1, "term": "b", "term_hash": 12, "weight": 3.0},
        {"url_id": 2, "term": "b", "term_hash": 12, "weight": 1.0},
        {"url_id": 2, "term": "c", "term_hash": 13, "weight": 2.0},
        {"url_id": 3, "term": "z", "term_hash": 26, "weight": 1.0},
    ],
}


def pairs(tmp_path, **params):
    p = resolve(Params(num_perm=4, k=2, l=2, **params), True)
    return run_stage(tmp_path, "pairs", p, TABLES)


def test_agreement_filter_without_verify(tmp_path):
    kept = pairs(tmp_path, threshold=0.5, verify=False)
    assert [(r["u"], r["v"], r["n_agree"], r["similarity"], r["jaccard"]) for r in kept] == [
        ("http://a/", "http://b/", 2, 0.5, None)
    ]
    assert len(pairs(tmp_path, threshold=0.25, verify=False)) == 2
    assert pairs(tmp_path, threshold=0.6, verify=False) == []


def test_verify_keeps_pairs_by_exact_weighted_jaccard(tmp_path):
    # a-b: shared min: min(3, 1) = 1; totals 4 and 3: 1 / (4 + 3 - 1) = 1/6. a-c share no term: 0.
    # m = 4 makes the agreement cut 1 position, so both candidates are checked against their bags.
    [row] = pairs(tmp_path, threshold=0.15)
    assert (row["u"], row["v"], row["n_agree"]) == ("http://a/", "http://b/", 2)
    assert row["jaccard"] == pytest.approx(1 / 6) and row["similarity"] == row["jaccard"]
    # the estimate (2 of 4 agree = 0.5) would keep a-b at 0.5; its exact 1/6 does not
    assert pairs(tmp_path, threshold=0.5) == []


def test_sets_are_verified_without_a_list_of_copies(tmp_path, monkeypatch):
    """Bags whose weights all round to 1 are packed without their copies (every list would be NULL); one
    weight of 3 brings the copies back, and each way the exact Jaccard is that of the multisets."""
    rendered = rendered_contexts(monkeypatch, "one_copy_each")
    p = resolve(Params(num_perm=4, k=2, l=2, threshold=0.15), True)
    sets = TABLES | {"bags": [{**row, "weight": 1.0} for row in TABLES["bags"]]}
    [as_sets] = run_stage(tmp_path / "sets", "pairs", p, sets)
    assert as_sets["jaccard"] == pytest.approx(1 / 3)  # {a, b} and {b, c}
    [weighted] = run_stage(tmp_path / "weighted", "pairs", p, TABLES)
    assert weighted["jaccard"] == pytest.approx(1 / 6)
    assert rendered == [True, False]


@pytest.mark.parametrize("num_perm", [99, 100, 101, 250])
def test_agreement_counts_past_the_positions_summed_at_a_time(tmp_path, num_perm):
    """Differing positions are summed 100 at a time (TINYINTs overflow past 127): whatever m, n_agree counts
    every position. u agrees with v everywhere but the last position, and with w only at positions 0, 7,
    14, ... (w differs on more than 127 positions when m = 250)."""
    u = {f"h{i}": 1000 + i for i in range(num_perm)}
    v = u | {f"h{num_perm - 1}": 5}
    w = u | {f"h{i}": 7 for i in range(num_perm) if i % 7}
    tables = TABLES | {
        "signatures": [{"url_id": 1} | u, {"url_id": 2} | v, {"url_id": 3} | w],
    }
    p = resolve(Params(num_perm=num_perm, k=2, l=2, threshold=0.1, verify=False), True)
    rows = run_stage(tmp_path, "pairs", p, tables)
    assert [(r["v"], r["n_agree"]) for r in rows] == [
        ("http://b/", num_perm - 1),
        ("http://c/", len(range(0, num_perm, 7))),
    ]


@pytest.mark.parametrize("num_perm", [4, 13, 80, 250])
def test_the_low_bit_filter_keeps_what_the_full_count_keeps(tmp_path, num_perm):
    """Candidates are first compared by the low 4 bits of each min-hash, whose agreement bounds n_agree from
    above. Here most differing positions differ by a multiple of 16 (the same low bits), values are negative
    as well as positive (a table of one's own may hold any int32), and m is not a multiple of the 12 lanes
    a BIGINT holds: the pairs kept and their n_agree are exactly those of a count of equal min-hashes."""
    import math

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(num_perm)
    n = 30
    min_agree = math.ceil(0.5 * num_perm)
    first = rng.integers(-(2**31), 2**31, size=num_perm)
    signatures = [first]
    for row in range(1, n):
        # odd rows differ in the low bits too (the bound is then the count itself), even rows mostly do not
        low_bits_kept = rng.random(num_perm) < (0.9 if row % 2 == 0 else 0.0)
        step = np.where(
            low_bits_kept,
            16 * rng.integers(1, 2**20, num_perm),
            16 * rng.integers(0, 2**20, num_perm) + rng.integers(1, 16, num_perm),
        )
        changed = (first + step + 2**31) % 2**32 - 2**31  # wrapped into int32
        same = np.zeros(num_perm, dtype=bool)  # rows 1 and 2 agree with row 0 on exactly min_agree positions
        same[
            rng.choice(
                num_perm, min_agree if row <= 2 else int(rng.uniform(0.3, 0.7) * num_perm), replace=False
            )
        ] = True
        signatures.append(np.where(same, first, changed))
    signatures = np.array(signatures)
    candidates = [{"u_id": u + 1, "v_id": v + 1, "n_bands": 1} for u in range(n) for v in range(u + 1, n)]
    tables = TABLES | {
        "candidates": candidates,
        "signatures": [
            {"url_id": i + 1} | {f"h{j}": int(h) for j, h in enumerate(row)}
            for i, row in enumerate(signatures)
        ],
        "urls": [{"url_id": i + 1, "url": f"http://u{i + 1:03d}/"} for i in range(n)],
    }
    schema = pa.schema([("url_id", pa.int64())] + [(f"h{j}", pa.int32()) for j in range(num_perm)])
    params = resolve(Params(num_perm=num_perm, k=2, l=2, threshold=0.5, verify=False), True)
    rows = run_stage(tmp_path, "pairs", params, tables, schemas={"signatures": schema})
    agree = {
        (c["u_id"], c["v_id"]): int((signatures[c["u_id"] - 1] == signatures[c["v_id"] - 1]).sum())
        for c in candidates
    }
    low_bits = {
        (c["u_id"], c["v_id"]): int((signatures[c["u_id"] - 1] % 16 == signatures[c["v_id"] - 1] % 16).sum())
        for c in candidates
    }
    expected = {pair: a for pair, a in agree.items() if a >= params.min_agree}
    assert {(r["u_id"], r["v_id"]): r["n_agree"] for r in rows} == expected
    assert params.min_agree == min_agree and expected[(1, 2)] == expected[(1, 3)] == min_agree
    # the filter is put to work: many candidates pass it on their low bits and fail the full count
    assert sum(low_bits[pair] >= params.min_agree > agree[pair] for pair in agree) >= 20
    assert 0 < len(expected) < len(candidates)
    assert not pq.read_schema(tmp_path / "pairs.parquet").field("n_agree").nullable  # as before the filter


@pytest.mark.parametrize("verify", [True, False])
def test_blocks_of_url_ranges_give_the_same_pairs(tmp_path, monkeypatch, verify):
    """When the signatures would not fit twice in memory the runner cuts url_ids into P ranges and runs
    P(P+1)/2 blocks: the same rows, in the same order, as in one piece. Forced with ranges of 20 URLs; pairs
    fall both within one range and across two."""
    import duckdb
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lshsql import manifest, pipeline
    from lshsql.engines import base as engine
    from lshsql.engines import duckdb as db
    from lshsql.pipeline import batching

    rng = np.random.default_rng(11)
    rows = []
    for group in range(20):  # 20 groups of near-duplicates, spread over the url_id ranges by their names
        base = rng.choice(400, size=30, replace=False)
        for member in ("0", "0b", "1", "2"):  # 0 and 0b are neighbours in url order: one range, mostly
            url = f"http://site{(7 * group + 3 * int(member[0])) % 20:02d}.example/{group}-{member}"
            rows += [{"url": url, "term": f"t{term}"} for term in base[rng.random(30) > 0.15]]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "bags.parquet")
    blocks = []  # the runner's views of each block's candidates
    view = engine.DuckDBEngine.view

    def block_view(self, name, select, params=None):
        bounds = re.search(r"u_id >= (\d+) and u_id < (\d+) and v_id >= (\d+) and v_id < (\d+)", select)
        if name == "candidates" and bounds:  # not the view of all candidates put back after the blocks
            blocks.append(
                dict(zip(("u_from", "u_to", "v_from", "v_to"), map(int, bounds.groups()), strict=True))
            )
        return view(self, name, select, params)

    monkeypatch.setattr(engine.DuckDBEngine, "view", block_view)
    params = Params(weighting="none", threshold=0.5, verify=verify)
    resources = db.Resources(memory_limit="1GB", threads=2)
    results, clusters = {}, {}
    for blocked in (False, True):
        if blocked:
            monkeypatch.setattr(batching, "PAIR_BLOCK_URLS", 20)
        work = tmp_path / f"blocked{blocked}"
        pipeline.run(work, params, bags=tmp_path / "bags.parquet", resources=resources)
        with duckdb.connect() as con:
            results[blocked] = con.read_parquet(str(work / "pairs.parquet")).fetchall()
            # the stages after read all bags again, not the last block's view of them
            clusters[blocked] = con.read_parquet(str(work / "clusters.parquet")).fetchall()
        assert manifest.read(work)["stages"]["pairs"]["blocks"] == (10 if blocked else 1)
        assert not (work / "tmp" / "pairs_blocks").exists()
    assert len(blocks) == 10  # url_ids 1..80 in 4 ranges of at most 20: 4 * 5 / 2 blocks, each run once
    assert results[True] == results[False] and clusters[True] == clusters[False]
    columns = ("u", "v", "similarity", "n_agree", "n_bands", "u_id", "v_id", "jaccard")
    found = [dict(zip(columns, row, strict=True)) for row in results[True]]
    homes = [
        next(
            b for b in blocks if b["u_from"] <= p["u_id"] < b["u_to"] and b["v_from"] <= p["v_id"] < b["v_to"]
        )
        for p in found
    ]
    assert any(b["u_from"] == b["v_from"] for b in homes) and any(b["u_from"] != b["v_from"] for b in homes)


@pytest.mark.parametrize(
    ("passing", "memory", "expected"),
    [
        (1_000, 10**9, 1),
        (5_000_000, 10**9, 1),
        (9_500_000, 10**9, 2),
        (9_500_000, 10**8, 7),
        (10**9, 10**9, 20),
    ],
)
def test_passing_ranges_hold_the_largest_block(passing, memory, expected):
    """The fewest ranges whose largest block (two ranges: 2 / P^2 of the candidates) holds its passing
    candidates in memory."""
    from lshsql.pipeline.batching import PASSING_CANDIDATE_BYTES, passing_ranges

    ranges = passing_ranges(passing, memory)
    assert ranges == expected
    share = lambda p: 1.0 if p == 1 else 2 / p**2  # noqa: E731
    assert passing * PASSING_CANDIDATE_BYTES * share(ranges) <= memory
    assert ranges == 1 or passing * PASSING_CANDIDATE_BYTES * share(ranges - 1) > memory


def test_many_identical_bags_are_verified_in_blocks(tmp_path, monkeypatch):
    """Identical bags make every candidate pass the lanes' bound, whatever a URL holds. The planner counts
    the passing candidates (from its sample, where every pair agrees) and cuts blocks for them, also where
    the candidates' url_ids are; the pairs are those of one piece."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lshsql import manifest, pipeline
    from lshsql.engines import base as engine
    from lshsql.engines import duckdb as db
    from lshsql.pipeline import batching

    rows = [{"url": f"https://copy.example/{i:03d}", "term": f"t{t}"} for i in range(400) for t in range(30)]
    rows += [
        {"url": f"https://other.example/{i:03d}", "term": f"o{i}-{t}"} for i in range(400) for t in range(30)
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "bags.parquet")
    params = Params(weighting="none", threshold=0.5)
    resources = db.Resources(memory_limit="1GB", threads=2)
    bounds = []  # each block's (u_from, u_to, v_from, v_to)
    view = engine.DuckDBEngine.view

    def block_view(self, name, select, params=None):
        found = re.search(r"u_id >= (\d+) and u_id < (\d+) and v_id >= (\d+) and v_id < (\d+)", select)
        if name == "candidates" and found:
            bounds.append(tuple(map(int, found.groups())))
        return view(self, name, select, params)

    monkeypatch.setattr(engine.DuckDBEngine, "view", block_view)
    results = {}
    for blocked in (False, True):
        if blocked:  # as if each passing candidate took 100 times the memory it does
            monkeypatch.setattr(batching, "PASSING_CANDIDATE_BYTES", 20_000)
        work = tmp_path / f"blocked{blocked}"
        pipeline.run(work, params, bags=tmp_path / "bags.parquet", resources=resources)
        with duckdb.connect() as con:
            results[blocked] = con.read_parquet(str(work / "pairs.parquet")).fetchall()
        assert manifest.read(work)["stages"]["pairs"]["blocks"] == (len(bounds) if blocked else 1)
    assert results[True] == results[False] and len(results[True]) == 400 * 399 // 2
    # the copies are url_ids 1..400 of 800 (their URLs sort first): cut where the candidates are, not
    # only in equal halves of the ids, no block holds much more than half of them (2 / P^2, P = 2)
    held = [sum(u0 <= u < u1 and v0 <= v < v1 for *_, u, v, _ in results[True]) for u0, u1, v0, v1 in bounds]
    assert sum(held) == len(results[True]) and max(held) < 0.55 * len(results[True])


@pytest.mark.parametrize(
    ("id_span", "rows_per_range", "expected"),
    [
        (10_000_000, 15_600_000, 2),  # the 5M cap: 10M URLs (8GB holds 15.6M ids of m = 80) in 2 ranges
        (10_000_000, 2_000_000, 5),  # the memory limit's rows
        (1_000_000, 760_000, 2),
        (1_000_000, 3_000_000, 1),
        (1, 0, 1),  # no signatures (span 1): one range
        (10_000_000, None, 1),  # Spark: one piece
    ],
)
def test_pair_ranges(id_span, rows_per_range, expected):
    from lshsql.pipeline import pair_ranges

    assert pair_ranges(id_span, rows_per_range) == expected


@pytest.mark.parametrize(
    ("num_perm", "lanes"),
    [(1, 1), (12, 1), (13, 2), (80, 7), (128, 11), (256, 22)],
)
def test_pair_range_bytes_follow_the_lanes(num_perm, lanes):
    """A range's URL is planned by the lanes row the stage joins every candidate to (a url_id and a BIGINT
    per 12 min-hashes, the template's lanes), PAIR_ROW_FACTOR times for each of a block's two ranges, and
    by its full row twice (the two joins on the near candidates' signatures) for the share of URLs that
    meet it."""
    from lshsql import sqlfiles
    from lshsql.pipeline import batching
    from lshsql.pipeline.stages import template_context

    params = Params(weighting="none", threshold=0.9, num_perm=num_perm, k=1, l=1)
    context = template_context(params) | {"narrow_differences": True, "one_copy_each": True}
    sql = sqlfiles.render(sqlfiles.load("50_pairs.sql"), context)  # the lanes the stage makes
    assert len(set(re.findall(r"\blanes(\d+)", sql))) == lanes
    lanes_only = 2 * batching.PAIR_ROW_FACTOR * 8 * (1 + lanes)
    assert batching.pair_range_bytes(num_perm, 0.0) == lanes_only
    assert batching.pair_range_bytes(num_perm, 1.0) == lanes_only + 2 * 2 * (8 + 4 * num_perm)


@pytest.mark.parametrize(("threshold", "k", "l", "passes"), [(0.5, 5, 161, False), (0.2, 2, 106, True)])
def test_lanes_pass_rate_by_chance(threshold, k, l, passes):  # noqa: E741
    """Without a sample, a candidate is taken to share one table's k min-hashes and no more: at T = 0.5
    its other low bits hardly ever make up min_agree (26 of 80), at T = 0.2 with k = 2 (min_agree 5)
    they mostly do, and with tens of candidates a URL nearly every URL's full row is joined."""
    from lshsql.lsh.scurve import lanes_pass_rate
    from lshsql.pipeline import batching

    params = Params(weighting="none", threshold=threshold, num_perm=80, k=k, l=l)
    rate = lanes_pass_rate(80, k, l, params.min_agree)
    share = batching.near_share(50, rate)
    assert (rate > 0.5 and share > 0.999) if passes else (rate < 1e-6 and share < 1e-3)


def test_lanes_pass_rate_follows_the_sampled_agreements():
    """Candidates are distributed as the planner expects them: the sampled pairs' agreements times the
    tables' collision probability. Pairs agreeing on 30 of 80 min-hashes nearly all pass a bound of 26,
    pairs agreeing on 5 hardly ever; a sample of both passes in between, weighted by how often each
    collides."""
    import numpy as np

    from lshsql.lsh.scurve import collision_by_agreement, lanes_pass_rate

    far, near = np.zeros(81), np.zeros(81)
    far[5], near[30] = 1000.0, 1.0
    assert lanes_pass_rate(80, 5, 161, 26, far) < 1e-6
    assert lanes_pass_rate(80, 5, 161, 26, near) > 0.9
    both = far + near
    collide = collision_by_agreement(80, 5, 161)
    expected = (near[30] * collide[30] * lanes_pass_rate(80, 5, 161, 26, near)) / (
        far[5] * collide[5] + near[30] * collide[30]
    )
    assert lanes_pass_rate(80, 5, 161, 26, both) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("verify", [True, False])
def test_min_hashes_anywhere_in_int32_are_compared(tmp_path, verify):
    """A signatures table of one's own may hold any int32 (the pipeline's are below 2^31 and not negative):
    min-hashes far apart with both signs differ without overflowing, equal extremes agree."""
    import pyarrow as pa

    low, high = -(2**31), 2**31 - 1
    signatures = [
        {"url_id": 1, "h0": low, "h1": high, "h2": low, "h3": 0},
        {"url_id": 2, "h0": low, "h1": high, "h2": high, "h3": 0},  # agrees with 1 on 3 of 4
        {"url_id": 3, "h0": high, "h1": low, "h2": high, "h3": low},  # agrees with 1 on none
    ]
    schema = pa.schema([("url_id", pa.int64())] + [(f"h{i}", pa.int32()) for i in range(4)])
    p = resolve(Params(num_perm=4, k=2, l=2, threshold=0.1 if verify else 0.75, verify=verify), True)
    rows = run_stage(tmp_path, "pairs", p, TABLES | {"signatures": signatures}, {"signatures": schema})
    assert [(r["v"], r["n_agree"]) for r in rows] == [("http://b/", 3)]


def test_blocks_over_signatures_narrower_than_m_give_the_stages_error(tmp_path, monkeypatch):
    """A signatures table of one's own with fewer min-hashes than m, in blocks: the planner's sample of
    them is skipped (it would look up columns they lack) and the stage's one-line error says what is
    wrong, as it does in one piece."""
    import pyarrow as pa

    from lshsql.errors import StageError
    from lshsql.pipeline import batching

    monkeypatch.setattr(batching, "PAIR_BLOCK_URLS", 1)
    signatures = [{"url_id": i, "h0": 7, "h1": 7, "h2": i, "h3": 0} for i in (1, 2, 3)]
    schema = pa.schema([("url_id", pa.int64())] + [(f"h{i}", pa.int32()) for i in range(4)])
    p = resolve(Params(num_perm=8, k=2, l=2, threshold=0.5), True)
    with pytest.raises(StageError, match="h4"):
        run_stage(tmp_path, "pairs", p, TABLES | {"signatures": signatures}, {"signatures": schema})


def test_the_integer_difference_only_where_it_cannot_overflow(tmp_path, monkeypatch):
    """The runner takes h_u - h_v as INTEGER (faster) only when the signatures' Parquet statistics show it
    fits: the pipeline's min-hashes in [0, 2^31) do; both signs far apart, or no statistics, do not. Both
    forms give the same pairs."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lshsql import pipeline
    from lshsql.pipeline import pairs_runner

    schema = pa.schema([("url_id", pa.int64())] + [(f"h{i}", pa.int32()) for i in range(2)])
    cases = {
        "pipeline": ([0, 2**31 - 1], True, True),
        "negatives": ([-5, 2**31 - 1], True, False),
        "both_signs": ([-(2**30), 2**30 - 1], True, True),
        "no_statistics": ([0, 1], False, False),
    }
    for name, (values, statistics, fits) in cases.items():
        table = pa.Table.from_pylist([{"url_id": 1, "h0": values[0], "h1": values[1]}], schema=schema)
        pq.write_table(table, tmp_path / f"{name}.parquet", write_statistics=statistics)
        assert pipeline.min_hash_differences_fit_integer(tmp_path / f"{name}.parquet") is fits, name
    # the h columns by name, wherever a table of one's own puts url_id
    table = pa.table(
        {"h0": pa.array([-5], pa.int32()), "h1": pa.array([2**31 - 1], pa.int32()), "url_id": [1]}
    )
    pq.write_table(table, tmp_path / "url_id_last.parquet")
    assert pipeline.min_hash_differences_fit_integer(tmp_path / "url_id_last.parquet") is False

    narrow = pairs(tmp_path / "narrow", threshold=0.15)
    monkeypatch.setattr(pairs_runner, "min_hash_differences_fit_integer", lambda path: False)
    assert pairs(tmp_path / "wide", threshold=0.15) == narrow and len(narrow) == 1
