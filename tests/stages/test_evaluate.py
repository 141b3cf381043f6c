"""eval: the exact pairs of sql/70_truth.sql against brute force, recall/precision, overlap@10 and the
cluster scores on hand-made work folders, and the handbook crawl end to end."""

from __future__ import annotations

import itertools
import json
import math
import re
import zlib
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lshsql import schemas, sqlfiles
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.tools import evaluate
from lshsql.tools.cluster_scores import adjusted_rand_index, cluster_metrics
from lshsql.tools.evaluate import summary_lines
from tests.conftest import shared, write_table

# ---------------------------------------------------------------- brute force


def decimal12(x: float) -> Decimal:
    """DuckDB's cast(double as decimal(38, 12)): x * 10^12 in double arithmetic, rounded half away from 0."""
    return Decimal(x * 1e12).quantize(Decimal(1), rounding=ROUND_HALF_UP) / Decimal(10**12)


def exact_jaccard(a: dict[str, float], b: dict[str, float]) -> float:
    """sum(min) / sum(max) as the SQL computes it: DECIMAL sums, then shared / (W_a + W_b - shared)."""
    shared = float(sum((decimal12(min(a[t], b[t])) for t in a.keys() & b.keys()), Decimal(0)))
    total_a = float(sum((decimal12(w) for w in a.values()), Decimal(0)))
    total_b = float(sum((decimal12(w) for w in b.values()), Decimal(0)))
    return shared / (total_a + total_b - shared)


def brute_force(bags: dict[int, dict[str, float]], threshold: float) -> list[tuple[int, int, float]]:
    out = []
    for u, v in itertools.combinations(sorted(bags), 2):
        if bags[u].keys() & bags[v].keys():
            j = exact_jaccard(bags[u], bags[v])
            if j >= threshold:
                out.append((u, v, j))
    return out


def distinct_hash(term: str) -> int:
    return zlib.crc32(term.encode())


def bags_table(bags: dict[int, dict[str, float]], hash_of=distinct_hash) -> pa.Table:
    """bags rows with df = URLs holding the term and a term_hash."""
    df: dict[str, int] = {}
    for bag in bags.values():
        for term in bag:
            df[term] = df.get(term, 0) + 1
    rows = [
        {"url_id": u, "term": t, "term_hash": hash_of(t), "tf": 1.0, "df": df[t], "weight": w}
        for u, bag in sorted(bags.items())
        for t, w in sorted(bag.items())
    ]
    return pa.Table.from_pylist(rows, schema=schemas.schema("bags"))


@pytest.fixture(scope="module")
def con():
    with db.connect(db.Resources(memory_limit="1GB", threads=2)) as connection:
        yield connection


def truth_rows(con, bags: dict[int, dict[str, float]], threshold: float, hash_of=distinct_hash, batch=(1, 0)):
    con.register("bags", bags_table(bags, hash_of))
    params = {"threshold": threshold, "batches": batch[0], "batch": batch[1]}
    query, bound = sqlfiles.final_select(con, sqlfiles.load("70_truth.sql"), params)
    rows = con.execute(query, bound).fetchall()
    con.unregister("bags")
    return rows


# ---------------------------------------------------------------- truth: the prefix rule


def suffix_weights(bag: dict[str, float], order: list[str]) -> dict[str, float]:
    """S(x): the weight of x and of the terms after it in the global order."""
    out, rest = {}, 0.0
    for term in reversed([t for t in order if t in bag]):
        rest += bag[term]
        out[term] = rest
    return out


def test_prefix_boundary_is_inclusive(con):
    # order a < b (df 1 < 2). u = {a: 1, b: 1}, v = {b: 1}: J = 1 / 2. At t = 0.5, u's only chance is b,
    # whose S_u(b) = 1 equals t * W_u = 1: the prefix must keep S >= t * W, not S > t * W.
    u, v = {"a": 1.0, "b": 1.0}, {"b": 1.0}
    s_u = suffix_weights(u, ["a", "b"])
    assert s_u["b"] == 0.5 * sum(u.values())
    assert truth_rows(con, {1: u, 2: v}, 0.5) == [(1, 2, 0.5)]
    # the same at 3/4: {a, b, c, d} and {b, c, d}; b's S is 3 = 0.75 * 4
    u, v = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}, {"b": 1.0, "c": 1.0, "d": 1.0}
    assert truth_rows(con, {1: u, 2: v}, 0.75) == [(1, 2, 0.75)]
    assert truth_rows(con, {1: u, 2: v}, 0.76) == []


def test_edge_cases(con):
    bags = {
        1: {"x": 2.0},  # one-term bags
        2: {"x": 2.0},  # identical to 1: J = 1
        3: {"x": 1.0},  # min 1 / max 2 = 0.5
        4: {"y": 0.25, "z": 0.75},
        5: {"y": 0.25, "z": 0.75},  # identical, fractional weights
        6: {"y": 0.75, "z": 0.25},  # same terms, swapped weights: (0.25 + 0.25) / (0.75 + 0.75) = 1/3
        7: {"q": 1.0},  # shares nothing
    }
    rows = truth_rows(con, bags, 1 / 3)
    assert rows == brute_force(bags, 1 / 3)
    assert [(u, v) for u, v, _ in rows] == [(1, 2), (1, 3), (2, 3), (4, 5), (4, 6), (5, 6)]
    assert [(u, v) for u, v, _ in truth_rows(con, bags, 1.0)] == [(1, 2), (4, 5)]


NICE_WEIGHTS = st.sampled_from([1.0, 2.0, 3.0, 0.5, 0.25, 1.5, 4.0])
ANY_WEIGHTS = st.one_of(
    NICE_WEIGHTS,
    st.sampled_from([0.1, 1 / 3, 2 / 3, 0.7, 2.7, 1e-3]),
    st.floats(min_value=0.01, max_value=10.0, allow_nan=False, allow_infinity=False),
)


@st.composite
def weighted_bags(draw):
    """~30 URLs over ~40 terms: random bags, with copies (identical or reweighted) and one-term bags."""
    weights = draw(st.sampled_from([NICE_WEIGHTS, ANY_WEIGHTS]))
    n_terms = draw(st.integers(1, 40))
    terms = [f"t{i}" for i in range(n_terms)]
    bags: dict[int, dict[str, float]] = {}
    for url_id in range(1, draw(st.integers(2, 30)) + 1):
        kind = draw(st.sampled_from(["random", "random", "copy", "one"]))
        if kind == "copy" and bags:
            base = bags[draw(st.sampled_from(sorted(bags)))]
            bag = {t: (w if draw(st.booleans()) else draw(weights)) for t, w in base.items()}
            if draw(st.booleans()):  # drop or add one term
                bag.pop(draw(st.sampled_from(sorted(bag))), None)
                bag[draw(st.sampled_from(terms))] = draw(weights)
        elif kind == "one":
            bag = {draw(st.sampled_from(terms)): draw(weights)}
        else:
            chosen = draw(st.lists(st.sampled_from(terms), min_size=1, max_size=12, unique=True))
            bag = {t: draw(weights) for t in chosen}
        bags[url_id] = bag or {terms[0]: 1.0}
    return bags


THRESHOLDS = st.one_of(
    st.sampled_from([0.2, 0.25, 1 / 3, 0.4, 0.5, 0.6, 2 / 3, 0.75, 0.8, 0.9]),
    st.floats(min_value=0.2, max_value=0.9),
)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bags=weighted_bags(), threshold=THRESHOLDS)
@example(bags={1: {"a": 1.0, "b": 1.0}, 2: {"b": 1.0}, 3: {"b": 1.0}}, threshold=0.5)
def test_truth_equals_brute_force(con, bags, threshold):
    rows = truth_rows(con, bags, threshold)
    assert rows == brute_force(bags, threshold)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bags=weighted_bags(), threshold=THRESHOLDS, batches=st.integers(2, 4))
def test_truth_in_batches_is_the_truth(con, bags, threshold, batches):
    """Each batch keeps the pairs whose smaller bag has url_id % batches = batch: together, every pair once."""
    parts = [truth_rows(con, bags, threshold, batch=(batches, b)) for b in range(batches)]
    assert sorted(row for part in parts for row in part) == brute_force(bags, threshold)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shared_weights=st.lists(NICE_WEIGHTS | st.sampled_from([0.1, 0.05, 0.02]), min_size=1, max_size=30),
    own_u=st.lists(ANY_WEIGHTS, max_size=8),
    own_v=st.lists(ANY_WEIGHTS, max_size=8),
)
def test_pairs_exactly_at_the_threshold_are_found(con, shared_weights, own_u, own_v):
    """Tight pairs: each bag's own terms (df 1) come first in the order, then the shared terms with equal
    weights on both sides, so S(c_1) = sum(min) exactly and every prefix bound holds with (near) equality;
    with t = J the pair must be found, and with the next double above J it must not."""
    shared = {f"c{i}": w for i, w in enumerate(shared_weights)}
    u = {**{f"u{i}": w for i, w in enumerate(own_u)}, **shared}
    v = {**{f"v{i}": w for i, w in enumerate(own_v)}, **shared}
    j = exact_jaccard(u, v)
    assert truth_rows(con, {1: u, 2: v}, j) == [(1, 2, j)]
    if j < 1:
        assert truth_rows(con, {1: u, 2: v}, math.nextafter(j, 2)) == []


@pytest.mark.parametrize("t", [0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0])
def test_tight_pairs_of_every_size_ratio(con, t):
    """Disjoint pairs (s, l) with W_s / W_l from t to 1 at several scales (so across size-class borders),
    each an own term then one shared term of weight M = t (W_s + W_l) / (1 + t): J = t and every bound
    on both sides holds with equality. All must be found at the smallest of their (rounded) J."""
    bags: dict[int, dict[str, float]] = {}
    for i, (scale, percent) in enumerate(itertools.product([1.0, 7.3, 100.0, 1e4], range(100, 0, -1))):
        ratio = percent / 100
        if ratio < t:
            break
        w_l, w_s = scale, ratio * scale
        m = t * (w_s + w_l) / (1 + t)
        bags[2 * i + 1] = {f"c{i}": m, **({f"s{i}": w_s - m} if w_s - m > 1e-9 * scale else {})}
        bags[2 * i + 2] = {f"c{i}": m, **({f"l{i}": w_l - m} if w_l - m > 1e-9 * scale else {})}
    pairs = len(bags) // 2
    lowest = min(exact_jaccard(bags[2 * i + 1], bags[2 * i + 2]) for i in range(pairs))
    assert lowest == pytest.approx(t)
    rows = truth_rows(con, bags, lowest)
    assert [(u, v) for u, v, _ in rows] == [(2 * i + 1, 2 * i + 2) for i in range(pairs)]


@settings(deadline=None)
@given(bags=weighted_bags(), threshold=THRESHOLDS)
def test_first_shared_term_is_in_both_prefixes(bags, threshold):
    """The documented rule, checked with exact fractions: J >= t puts the first shared term (in the order
    df, then term) in both prefixes {x : S(x) >= t * W}, and the pair passes the size filter."""
    df: dict[str, int] = {}
    for bag in bags.values():
        for term in bag:
            df[term] = df.get(term, 0) + 1
    order = sorted(df, key=lambda term: (df[term], term))
    t = Fraction(threshold)
    exact = {u: {term: Fraction(w) for term, w in bag.items()} for u, bag in bags.items()}
    for u, v in itertools.combinations(sorted(exact), 2):
        a, b = exact[u], exact[v]
        common = a.keys() & b.keys()
        if not common:
            continue
        shared = sum(min(a[x], b[x]) for x in common)
        if shared / (sum(a.values()) + sum(b.values()) - shared) < t:
            continue
        first = min(common, key=order.index)
        for bag in (a, b):
            suffix = sum(w for x, w in bag.items() if order.index(x) >= order.index(first))
            assert suffix >= t * sum(bag.values())
        assert t * sum(a.values()) <= sum(b.values()) <= sum(a.values()) / t


# ---------------------------------------------------------------- a hand-made work folder

BAGS = {
    1: {"a": 1.0, "b": 1.0, "c": 1.0},
    2: {"a": 1.0, "b": 1.0, "c": 1.0},  # = 1: J 1
    3: {"a": 1.0, "b": 1.0, "d": 1.0},  # J(1, 3) = J(2, 3) = 2 / 4
    4: {"x": 1.0, "y": 1.0},
    5: {"x": 1.0, "z": 1.0},  # J(4, 5) = 1 / 3
}


def url(i: int) -> str:
    return f"http://site.example/{i}.html"


def pair_rows(pairs: list[tuple[int, int, float]]) -> list[dict]:
    return [
        {
            "u": url(u),
            "v": url(v),
            "similarity": s,
            "n_agree": int(s * 4),
            "n_bands": 1,
            "u_id": u,
            "v_id": v,
            "jaccard": None,
        }
        for u, v, s in pairs
    ]


def make_work(work: Path, pairs, candidates, clusters: dict[int, int], bags=BAGS, threshold=0.5) -> Path:
    write_table(work / "bags.parquet", bags_table(bags).to_pylist(), schemas.schema("bags"))
    write_table(
        work / "urls.parquet",
        [{"url_id": i, "url": url(i), "n_terms": len(bags[i])} for i in bags],
        schemas.schema("urls"),
    )
    write_table(work / "pairs.parquet", pair_rows(pairs), schemas.schema("pairs"))
    write_table(
        work / "candidates.parquet",
        [{"u_id": u, "v_id": v, "n_bands": 1} for u, v in candidates],
        schemas.schema("candidates"),
    )
    sizes = {c: list(clusters.values()).count(c) for c in clusters.values()}
    write_table(
        work / "clusters.parquet",
        [
            {
                "url": url(i),
                "url_id": i,
                "center": url(c),
                "center_id": c,
                "size": sizes[c],
                "is_center": i == c,
            }
            for i, c in sorted(clusters.items())
        ],
        schemas.schema("clusters"),
    )
    (work / "manifest.json").write_text(json.dumps({"params": {"threshold": threshold}, "stages": {}}))
    return work


RESOURCES = db.Resources(memory_limit="1GB", threads=2)


@pytest.fixture
def work(tmp_path):
    return make_work(
        tmp_path,
        pairs=[(1, 2, 1.0), (4, 5, 0.5)],
        candidates=[(1, 2), (1, 3), (4, 5)],
        clusters={1: 1, 2: 1, 3: 3, 4: 4, 5: 4},
    )


def test_recall_and_precision(work):
    result = evaluate.evaluate(work, sample=5, resources=RESOURCES)
    assert result["threshold"] == 0.5  # from the manifest
    # exact pairs at 0.5: (1, 2) J 1, (1, 3) and (2, 3) J 0.5
    assert result["truth"]["pairs"] == 3
    assert json.loads((work / "eval" / "eval.json").read_text())["truth"]["pairs"] == 3
    # pairs keep (1, 2) (correct) and (4, 5) (J 1/3, wrong)
    assert result["pairs"] == {"rows": 2, "correct": 1, "recall": 1 / 3, "precision": 1 / 2}
    # candidates (1, 2), (1, 3) correct, (4, 5) not
    assert result["candidates"] == {"rows": 3, "correct": 2, "recall": 2 / 3, "precision": 2 / 3}
    # missed: (1, 3), (2, 3) at J 0.5 (bin [0.5, 0.6)); wrongly kept: (4, 5) at 1/3 (bin [0.3, 0.4))
    assert result["histograms"]["missed"] == [0, 0, 0, 0, 0, 2, 0, 0, 0, 0]
    assert result["histograms"]["wrong"] == [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
    assert len(result["histograms"]["edges"]) == 11
    with duckdb.connect() as c:
        missed = c.execute(
            f"select u_id, v_id, jaccard, in_candidates from '{work}/eval/missed.parquet'"
        ).fetchall()
        wrong = c.execute(f"select u_id, v_id, jaccard from '{work}/eval/wrong.parquet'").fetchall()
    assert missed == [(1, 3, 0.5, True), (2, 3, 0.5, False)]
    assert wrong == [(4, 5, 1 / 3)]
    assert result["clusters"] is None
    lines = summary_lines(result)
    assert lines[0] == "threshold 0.5: 3 exact pairs" and any(line.startswith("pairs") for line in lines)


def test_truth_written_in_batches_equals_it_written_at_once(work):
    with db.connect(RESOURCES) as con:
        whole = evaluate.truth(con, work, 0.3)
        rows = con.execute(f"select * from '{work}/eval/truth.parquet'").fetchall()
        assert evaluate.truth(con, work, 0.3, batches=3) == whole == len(rows) > 0
        assert con.execute(f"select * from '{work}/eval/truth.parquet'").fetchall() == rows
    assert not (work / "eval" / "truth_batches").exists()


@pytest.mark.parametrize("batches", [0, "2", 2.0])
def test_truth_batches_must_be_a_whole_number(work, batches):
    from lshsql.errors import ParamError

    with db.connect(RESOURCES) as con, pytest.raises(ParamError, match="whole number of at least 1"):
        evaluate.truth(con, work, 0.3, batches=batches)


def test_threshold_given_and_truth_reused(work):
    first = evaluate.evaluate(work, threshold=0.3, sample=0, resources=RESOURCES)
    assert first["truth"]["pairs"] == 4 and first["pairs"]["precision"] == 1.0  # (4, 5) counts at 0.3
    again = evaluate.evaluate(work, threshold=0.3, sample=0, resources=RESOURCES)
    assert again["truth"].get("reused") and again["truth"]["pairs"] == 4
    assert evaluate.evaluate(work, threshold=0.5, sample=0, resources=RESOURCES)["truth"]["pairs"] == 3
    assert again["neighbours"]["overlap"] is None and again["neighbours"]["sample"] == 0


def test_overlap_at_10(work):
    result = evaluate.evaluate(work, sample=5, resources=RESOURCES)
    # exact neighbours / related (pairs) per URL:
    #   1: {2 (J 1), 3 (0.5)} / {2}: 1/2     2: {1, 3} / {1}: 1/2     3: {1, 2} / {}: 0
    #   4: {5} / {5}: 1                      5: {4} / {4}: 1          mean 3/5
    assert result["neighbours"] == {
        "k": 10,
        "sample": 5,
        "seed": 1,
        "evaluated": 5,
        "overlap": pytest.approx(0.6),
    }


def test_overlap_cuts_both_lists_at_10(tmp_path):
    # URL 1 shares terms with 2..14, J(1, i) = (20 - i) / 20 falls with i, so its exact top 10 is 2..11.
    # pairs list 1 with 13 (0.95), 2 (0.9), 3 (0.8), 14 (0.1): related top 4. Overlap for URL 1: 2 / 10.
    bags = {1: {f"t{k}": 1.0 for k in range(20)}}
    for i in range(2, 15):
        bags[i] = {f"t{k}": 1.0 for k in range(20 - i)}
    work = make_work(
        tmp_path,
        pairs=[(1, 2, 0.9), (1, 3, 0.8), (1, 13, 0.95), (1, 14, 0.1)],
        candidates=[],
        clusters={i: i for i in bags},
        bags=bags,
    )
    evaluate.evaluate(work, sample=14, resources=RESOURCES)
    with duckdb.connect() as c:
        rows = c.execute(
            f"select neighbour_id, exact_rank, related_rank from '{work}/eval/neighbours.parquet' where url_id = 1"
        ).fetchall()
    assert [r[0] for r in rows if r[1] is not None] == list(range(2, 12))
    assert sorted((r[0], r[2]) for r in rows if r[2] is not None) == [(2, 2), (3, 3), (13, 1), (14, 4)]
    overlap_1 = sum(1 for r in rows if r[1] is not None and r[2] is not None) / 10
    assert overlap_1 == 0.2


# ---------------------------------------------------------------- cluster scores


def test_cluster_metrics_hand_worked():
    # clusters A = {x, x, y}, B = {y, y}, C = {z} (labels of their URLs); N = 6
    contingency = [("A", "x", 2), ("A", "y", 1), ("B", "y", 2), ("C", "z", 1)]
    m = cluster_metrics(contingency)
    assert (m["urls"], m["clusters"], m["labels"]) == (6, 3, 3)
    assert m["purity"] == pytest.approx(5 / 6)  # (2 + 2 + 1) / 6: the majority label of each cluster
    assert m["inverse_purity"] == pytest.approx(5 / 6)  # x: 2 in A, y: 2 in B, z: 1 in C
    # same cluster and label: C(2,2) + C(2,2) = 2; same cluster: C(3,2) + C(2,2) = 4; same label: 1 + 3 = 4
    assert m["pairwise_precision"] == 0.5 and m["pairwise_recall"] == 0.5 and m["pairwise_f"] == 0.5
    # ARI: expected = 4 * 4 / C(6,2) = 16/15; (2 - 16/15) / ((4 + 4)/2 - 16/15) = (14/15) / (44/15) = 7/22
    assert m["ari"] == pytest.approx(7 / 22)
    # class F, each label's best 2 n_ij / (n_i + n_j): x 2*2/(2+3) in A, y 2*2/(3+2) in B, z 2*1/(1+1) in C
    assert m["class_f"] == pytest.approx((2 * 0.8 + 3 * 0.8 + 1 * 1.0) / 6)


def test_cluster_metrics_multi_label_hand_worked():
    # A = {a: {x}, b: {x, y}, c: {y}}, B = {d: {y}, e: {z}}; N = 5, 10 pairs
    contingency = [("A", "x", 1), ("A", ("x", "y"), 1), ("A", "y", 1), ("B", "y", 1), ("B", "z", 1)]
    m = cluster_metrics(contingency)
    assert m["multi_label"] and m["ari"] is None and (m["urls"], m["clusters"], m["labels"]) == (5, 2, 3)
    # same cluster: ab ac bc de = 4, of which share a label: ab (x), bc (y) = 2
    # share a label overall: ab, bc, bd, cd = 4 (ac shares nothing; e shares with no one)
    assert m["pairwise_precision"] == 0.5 and m["pairwise_recall"] == 0.5 and m["pairwise_f"] == 0.5
    # agree on: ab, bc (together in both) + apart in both: pairs neither together nor sharing = 10 - 4 - 4 + 2 = 4
    assert m["pairwise_accuracy"] == pytest.approx(6 / 10)
    # purity: A's most shared label x or y in 2 of 3, B's y or z in 1 of 2 -> 3/5
    assert m["purity"] == pytest.approx(3 / 5)
    # inverse purity over (URL, label) memberships x:2 (both in A), y:3 (2 in A), z:1 -> (2 + 2 + 1) / 6
    assert m["inverse_purity"] == pytest.approx(5 / 6)
    # class F over memberships (n = 6): x 2*2/(2+3) in A, y 2*2/(3+3) in A, z 2*1/(1+2) in B
    assert m["class_f"] == pytest.approx((2 * 0.8 + 3 * 2 / 3 + 1 * 2 / 3) / 6)


def test_class_f_and_purity_extremes():
    perfect = cluster_metrics([("A", "x", 3), ("B", "y", 2)])
    assert perfect["class_f"] == 1.0 and perfect["purity"] == 1.0
    # one cluster of everything: purity is the largest label's share; class F 2*3/(3+5), 2*2/(2+5)
    merged = cluster_metrics([("A", "x", 3), ("A", "y", 2)])
    assert merged["purity"] == pytest.approx(3 / 5)
    assert merged["class_f"] == pytest.approx((3 * 6 / 8 + 2 * 4 / 7) / 5)
    # all singletons: purity 1 but class F low, what purity alone hides: x 2*1/(3+1), y 2*1/(2+1)
    split = cluster_metrics([(i, "x", 1) for i in range(3)] + [(i, "y", 1) for i in range(3, 5)])
    assert split["purity"] == 1.0
    assert split["class_f"] == pytest.approx((3 * 0.5 + 2 * 2 / 3) / 5)


@settings(deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.frozensets(st.integers(0, 3), min_size=1, max_size=3)),
        min_size=2,
        max_size=20,
    )
)
def test_multi_label_pair_counts_equal_counting_pairs(assignments):
    counts: dict = {}
    for cluster, labels in assignments:
        key = (cluster, tuple(sorted(labels)) if len(labels) > 1 else next(iter(labels)))
        counts[key] = counts.get(key, 0) + 1
    m = cluster_metrics([(c, lab, n) for (c, lab), n in counts.items()])
    tp = same_cluster = same_label = agree = 0
    for (c1, l1), (c2, l2) in itertools.combinations(assignments, 2):
        together, share = c1 == c2, bool(l1 & l2)
        tp += together and share
        same_cluster += together
        same_label += share
        agree += together == share
    pairs = len(assignments) * (len(assignments) - 1) // 2
    assert m["pairwise_precision"] == (tp / same_cluster if same_cluster else None)
    assert m["pairwise_recall"] == (tp / same_label if same_label else None)
    assert m["pairwise_accuracy"] == pytest.approx(agree / pairs)


def test_ari_special_cases():
    assert cluster_metrics([("A", "x", 3), ("B", "y", 2)])["ari"] == 1.0  # identical partitions
    assert cluster_metrics([(i, i, 1) for i in range(4)])["ari"] == 1.0  # both all singletons
    assert cluster_metrics([("A", "x", 1)])["ari"] is None  # one URL: no pair
    # one cluster against all-different labels: no agreement beyond chance
    assert cluster_metrics([("A", i, 1) for i in range(4)])["ari"] == 0.0
    assert adjusted_rand_index(0, 0, 6, 6) == 0.0


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), min_size=2, max_size=25))
def test_cluster_metrics_equal_pair_counting(assignments):
    """Pairwise scores and ARI against counting every pair of URLs, and ARI against the pair confusion
    form 2(tp*tn - fn*fp) / ((tp+fn)(fn+tn) + (tp+fp)(fp+tn)) (sklearn's)."""
    counts: dict[tuple[int, int], int] = {}
    for cluster, label in assignments:
        counts[(cluster, label)] = counts.get((cluster, label), 0) + 1
    m = cluster_metrics([(c, lab, n) for (c, lab), n in counts.items()])
    tp = fp = fn = tn = 0
    for (c1, l1), (c2, l2) in itertools.combinations(assignments, 2):
        tp += c1 == c2 and l1 == l2
        fp += c1 == c2 and l1 != l2
        fn += c1 != c2 and l1 == l2
        tn += c1 != c2 and l1 != l2
    assert m["pairwise_precision"] == (tp / (tp + fp) if tp + fp else None)
    assert m["pairwise_recall"] == (tp / (tp + fn) if tp + fn else None)
    denominator = (tp + fn) * (fn + tn) + (tp + fp) * (fp + tn)
    expected = 1.0 if fn == 0 and fp == 0 else 2 * (tp * tn - fn * fp) / denominator
    assert m["ari"] == pytest.approx(expected, abs=1e-12)


def test_cluster_quality_from_a_labels_file(work):
    # clusters {1, 2}, {3}, {4, 5}; labels: 1, 2, 3 'abc', 4 'xy', 5 'xz'; 6 has no cluster (not counted)
    labels = work / "labels.csv"
    labels.write_text(
        "url,label\n"
        + "".join(
            f"{url(i)},{lab}\n"
            for i, lab in [(1, "abc"), (2, "abc"), (3, "abc"), (4, "xy"), (5, "xz"), (6, "abc")]
        )
    )
    result = evaluate.evaluate(work, labels=labels, sample=0, resources=RESOURCES)
    q = result["clusters"]
    assert (q["urls"], q["clusters"], q["labels"], q["labelled_rows"]) == (5, 3, 3, 6)
    # contingency: ({1,2}, abc) 2, ({3}, abc) 1, ({4,5}, xy) 1, ({4,5}, xz) 1
    assert q["purity"] == pytest.approx(4 / 5) and q["inverse_purity"] == pytest.approx(4 / 5)
    # together 1; same cluster 1 + 1 = 2; same label C(3,2) = 3
    assert q["pairwise_precision"] == 0.5 and q["pairwise_recall"] == pytest.approx(1 / 3)
    assert q["pairwise_f"] == pytest.approx(0.4)
    # ARI: C(5,2) = 10, expected 2 * 3 / 10 = 0.6: (1 - 0.6) / (2.5 - 0.6) = 4/19
    assert q["ari"] == pytest.approx(4 / 19)
    # the same labels from Parquet, URLs written non-canonically (upper-case host)
    parquet = work / "labels.parquet"
    write_table(
        parquet, [{"url": url(i).replace("site.example", "SITE.example"), "label": "abc"} for i in (1, 2)]
    )
    q = evaluate.evaluate(work, labels=parquet, sample=0, resources=RESOURCES)["clusters"]
    assert (q["urls"], q["purity"], q["pairwise_f"]) == (2, 1.0, 1.0)


# ---------------------------------------------------------------- errors


def test_missing_outputs_and_bad_labels(work, tmp_path):
    with pytest.raises(InputError, match="no such work folder"):
        evaluate.evaluate(tmp_path / "nowhere")
    (work / "pairs.parquet").unlink()
    with pytest.raises(InputError, match="no pairs.parquet"):
        evaluate.evaluate(work, resources=RESOURCES)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("labels.csv", "address,label\nhttp://a/,x\n", "need columns url and label"),
        ("labels.parquet", "not parquet", "not a readable labels file"),
        ("labels.json", "{}", "must be a .parquet or .csv"),
    ],
)
def test_bad_labels_file(work, name, text, message):
    path = work / name
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        evaluate.evaluate(work, labels=path, sample=0, resources=RESOURCES)
    with pytest.raises(InputError, match="no such labels file"):
        evaluate.evaluate(work, labels=work / "absent.csv", sample=0, resources=RESOURCES)


def test_bad_threshold(work):
    with pytest.raises(ParamError):
        evaluate.evaluate(work, threshold=0.0, resources=RESOURCES)
    (work / "manifest.json").unlink()
    with pytest.raises(InputError, match="no threshold"):
        evaluate.evaluate(work, resources=RESOURCES)


# ---------------------------------------------------------------- the handbook crawl

HANDBOOK_F = 0.8587  # measured pairwise F-measure of the default run (CENTER at 0.2, content words)


@pytest.mark.slow  # a real crawl from ../shared, clustered and scored end to end
def test_handbook_cluster_quality(tmp_path):
    """The 130 handbook pages, labelled by file name (5 pages, each in 26 languages): eval scores the
    clusters of the default run with content words. Measured: 13 clusters, purity 0.9615, inverse purity
    0.8769, pairwise precision 0.9527, recall 0.7815, F 0.8587, ARI 0.8288 (3 s)."""
    from lshsql.params import Params
    from lshsql.pipeline import run
    from lshsql.sources.extract import ExtractParams, extract

    crawl = shared("crawls", "fixture-handbook-neardup.warc.gz")
    resources = db.Resources(memory_limit="2GB", threads=2)
    extract([str(crawl)], tmp_path, ExtractParams(content=True), resources)
    run(tmp_path, Params(), resources=resources)
    with duckdb.connect() as c:
        pages = c.execute(
            "select url from read_parquet($p) where skip_reason is null order by url",
            {"p": str(tmp_path / "pages.parquet")},
        ).fetchall()
    labelled = [(u, m.group(1)) for (u,) in pages if (m := re.search(r"/([^/]+\.html)$", u))]
    assert len(labelled) == 130
    labels = tmp_path / "labels.csv"
    labels.write_text("url,label\n" + "".join(f"{u},{lab}\n" for u, lab in labelled))
    result = evaluate.evaluate(tmp_path, labels=labels, resources=resources)
    print("\n".join(summary_lines(result)))
    q = result["clusters"]
    assert q["urls"] == 130
    assert q["pairwise_f"] >= HANDBOOK_F - 0.03, q
    assert result["pairs"]["recall"] is not None and not math.isnan(result["pairs"]["recall"])
