"""term_counts, urls, terms and bags on hand-made fragments: TF-IDF values worked out by hand."""

from __future__ import annotations

import math

import pytest

from lshsql.lsh.scurve import resolve
from lshsql.params import Params
from tests.conftest import run_stage

# Three URLs: A = apple x2, banana; B = apple, cherry; C = banana, cherry, durian (durian in one URL only).
FRAGMENTS = [
    {
        "url": "http://a/",
        "kind": "anchor",
        "source_url": "http://s/",
        "position": 0,
        "terms": ["apple", "banana"],
    },
    {"url": "http://a/", "kind": "title", "source_url": "http://a/", "position": 0, "terms": ["apple"]},
    {
        "url": "http://b/",
        "kind": "anchor",
        "source_url": "http://s/",
        "position": 1,
        "terms": ["apple", "cherry"],
    },
    {
        "url": "http://c/",
        "kind": "anchor",
        "source_url": "http://s/",
        "position": 2,
        "terms": ["banana", "cherry", "durian"],
    },
]


def bags(tmp_path, **params) -> dict[tuple[int, str], float]:
    p = resolve(Params(**{"min_df": 1, "max_df": 1.0, **params}), whole_sets=False)
    run_stage(tmp_path, "term_counts", p, {"fragments": FRAGMENTS})
    run_stage(tmp_path, "urls", p)
    run_stage(tmp_path, "terms", p)
    return {(r["url_id"], r["term"]): r["weight"] for r in named(tmp_path, run_stage(tmp_path, "bags", p))}


def named(work, rows: list[dict]) -> list[dict]:
    """Bag rows with the text of their term (bags name a term by term_hash; terms has the text)."""
    text = {t["term_hash"]: t["term"] for t in read_rows(work / "terms.parquet")}
    return sorted(({**r, "term": text[r["term_hash"]]} for r in rows), key=lambda r: (r["url_id"], r["term"]))


def read_rows(path) -> list[dict]:
    import duckdb

    with duckdb.connect() as con:
        return con.read_parquet(str(path)).to_arrow_table().to_pylist()


def test_terms_are_numbered_in_hash_order(tmp_path):
    from lshsql.engines.udf import term_hash

    p = resolve(Params(), whole_sets=False)
    run_stage(tmp_path, "term_counts", p, {"fragments": FRAGMENTS})
    terms = run_stage(tmp_path, "terms", p)
    words = ["apple", "banana", "cherry", "durian"]
    import pyarrow as pa

    hashes = dict(zip(words, term_hash(pa.array(words)).to_pylist(), strict=True))
    assert sorted((r["term"], r["term_hash"]) for r in terms) == sorted(hashes.items())
    assert [r["term_id"] for r in terms] == [1, 2, 3, 4]
    assert [r["term_hash"] for r in terms] == sorted(hashes.values())


def test_term_counts_and_url_ids(tmp_path):
    p = resolve(Params(), whole_sets=False)
    counts = run_stage(tmp_path, "term_counts", p, {"fragments": FRAGMENTS})
    assert [(r["url"], r["term"], r["tf"]) for r in counts] == [
        ("http://a/", "apple", 2.0),
        ("http://a/", "banana", 1.0),
        ("http://b/", "apple", 1.0),
        ("http://b/", "cherry", 1.0),
        ("http://c/", "banana", 1.0),
        ("http://c/", "cherry", 1.0),
        ("http://c/", "durian", 1.0),
    ]
    urls = run_stage(tmp_path, "urls", p)
    assert [(r["url_id"], r["url"], r["n_terms"]) for r in urls] == [
        (1, "http://a/", 2),
        (2, "http://b/", 2),
        (3, "http://c/", 3),
    ]


def test_tfidf_weights_normalized_to_100(tmp_path):
    w = bags(tmp_path)
    idf2, idf1 = math.log(3 / 2), math.log(3)
    # A: apple 2*idf2, banana idf2 -> 2/3 and 1/3 of 100
    assert w[(1, "apple")] == pytest.approx(200 / 3) and w[(1, "banana")] == pytest.approx(100 / 3)
    assert w[(2, "apple")] == pytest.approx(50) and w[(2, "cherry")] == pytest.approx(50)
    total_c = 2 * idf2 + idf1
    assert w[(3, "durian")] == pytest.approx(100 * idf1 / total_c)  # 57.53
    assert w[(3, "banana")] == pytest.approx(100 * idf2 / total_c)  # 21.23
    for url_id in (1, 2, 3):
        assert sum(v for (u, _), v in w.items() if u == url_id) == pytest.approx(100)


def test_document_frequency_limits(tmp_path):
    assert (3, "durian") not in bags(tmp_path / "a", min_df=2)
    # max_df 0.5 of 3 URLs keeps terms in at most 1.5 URLs: only durian; A and B are left with empty bags.
    assert bags(tmp_path / "b", max_df=0.5) == {(3, "durian"): pytest.approx(100)}


def test_empty_bags_are_counted(tmp_path):
    import json

    from lshsql.pipeline import run

    p = Params(max_df=0.5, min_df=1)
    (tmp_path / "fragments" / "bucket=0").mkdir(parents=True)
    run_stage(tmp_path, "term_counts", resolve(p, False), {"fragments": FRAGMENTS})
    run(tmp_path, p, only=("term_counts", "urls", "terms", "bags"))
    entry = json.loads((tmp_path / "manifest.json").read_text())["stages"]["bags"]
    assert (entry["urls"], entry["urls_with_bag"], entry["urls_empty_bag"]) == (3, 1, 2)
    # durian's one row is used; apple, banana and cherry are in 2 of 3 URLs, over 0.5 * 3: their 6 rows go
    assert (entry["rows_read"], entry["rows_used"], entry["rows_dropped"]) == (7, 1, {"above_max_df": 6})


def bags_entry_with_tables_of_ones_own(tmp_path, params: Params, edit: dict[str, str]) -> dict:
    """The bags stage's manifest entry after term_counts, urls and terms, with `edit` (table: select over
    it) rewriting urls or terms as a user's own tables would be."""
    import json

    import duckdb

    from lshsql.pipeline import run

    (tmp_path / "fragments" / "bucket=0").mkdir(parents=True)
    run_stage(tmp_path, "term_counts", resolve(params, False), {"fragments": FRAGMENTS})
    run(tmp_path, params, only=("term_counts", "urls", "terms"))
    for table, select in edit.items():
        path = tmp_path / f"{table}.parquet"
        with duckdb.connect() as con:
            con.execute(f"create view {table} as select * from read_parquet('{path}')")
            con.execute(f"copy ({select}) to '{path}.new' (format parquet)")
        path.with_suffix(".parquet.new").replace(path)
    run(tmp_path, params, only=("bags",), force=True)
    return json.loads((tmp_path / "manifest.json").read_text())["stages"]["bags"]


def test_rows_are_counted_with_a_terms_table_without_n_urls(tmp_path):
    """A terms table of the user's own (any stage may start from one) need not have n_urls: the bags are
    made the grouped way, and the rows are counted that way."""
    edit = {"terms": "select * exclude (n_urls) from terms"}
    entry = bags_entry_with_tables_of_ones_own(tmp_path, Params(min_df=2, max_df=1.0), edit)
    assert (entry["rows"], entry["rows_read"], entry["rows_used"]) == (6, 7, 6)
    assert entry["rows_dropped"] == {"below_min_df": 1}  # durian, in one URL


@pytest.mark.parametrize("n_urls", [True, False])
@pytest.mark.parametrize(
    ("edit", "rows", "unknown"),
    [
        ({"terms": "select * from terms where term <> 'banana'"}, 5, 2),  # banana's rows, of A and C
        ({"urls": "select * from urls where url <> 'http://c/'"}, 4, 3),  # C's three rows
    ],
)
def test_rows_of_urls_or_terms_missing_from_ones_own_tables_are_counted(
    tmp_path, edit, rows, unknown, n_urls
):
    """The stage's inner joins drop a row whose url or term the tables lack: counted, whichever way."""
    if not n_urls:
        edit = {**edit, "terms": edit.get("terms", "select * from terms").replace("*", "* exclude (n_urls)")}
    entry = bags_entry_with_tables_of_ones_own(tmp_path, Params(min_df=1, max_df=1.0, weighting="none"), edit)
    assert (entry["rows"], entry["rows_read"], entry["rows_used"]) == (rows, 7, rows)
    assert entry["rows_dropped"] == {"unknown_url_or_term": unknown}


def test_a_term_in_every_url_is_counted_so_even_when_its_tf_rounds_to_0(tmp_path):
    from lshsql.pipeline import run
    from tests.conftest import write_table

    rows = [("a", "x", 1e-14), ("a", "y", 1.0), ("b", "x", 1.0)]
    source = write_table(tmp_path / "in.parquet", [{"url": u, "term": t, "weight": w} for u, t, w in rows])
    only = ("term_counts", "urls", "terms", "bags")
    entry = run(tmp_path / "w", Params(weighting="tfidf"), bags=source, only=only).stages["bags"]
    assert (entry["rows_used"], entry["rows_dropped"]) == (1, {"in_every_url": 2})  # df filters come first


# u1: x, y = 2, z = 1e-14 (rounds to 0); u2: x, w; u3: x, v = 3. x is in every URL.
ROWS = [("u1", "x", 1.0), ("u1", "y", 2.0), ("u1", "z", 1e-14), ("u2", "x", 1.0), ("u2", "w", 1.0)]
ROWS += [("u3", "x", 1.0), ("u3", "v", 3.0)]
# again u1's y (they add up to 3) and u2's w with a weight that rounds to 0 (w's total stays 1)
REPEATS = [("u1", "y", 1.0), ("u2", "w", 1e-14)]


@pytest.mark.parametrize(
    ("repeats", "params", "used", "dropped"),
    [
        (False, {"weighting": "none"}, 6, {"weight_rounds_to_zero": 1}),
        (False, {"weighting": "tf"}, 6, {"weight_rounds_to_zero": 1}),
        (False, {"weighting": "tfidf"}, 3, {"in_every_url": 3, "weight_rounds_to_zero": 1}),
        (False, {"weighting": "none", "min_df": 2}, 3, {"below_min_df": 4}),
        (False, {"weighting": "tfidf", "max_df": 0.5}, 3, {"above_max_df": 3, "weight_rounds_to_zero": 1}),
        (True, {"weighting": "none"}, 8, {"weight_rounds_to_zero": 1}),
        (True, {"weighting": "tfidf"}, 5, {"in_every_url": 3, "weight_rounds_to_zero": 1}),
        # df counts URLs once the rows add up: y and w are in one URL each, so their 4 rows go
        (True, {"weighting": "none", "min_df": 2}, 3, {"below_min_df": 6}),
    ],
)
def test_rows_that_make_no_bag_are_counted_per_reason(tmp_path, repeats, params, used, dropped):
    """Every row of term_counts is used or dropped with its reason, whichever way the bags are made."""
    import json

    from lshsql.pipeline import run
    from tests.conftest import write_table

    rows = ROWS + REPEATS if repeats else ROWS
    source = write_table(tmp_path / "in.parquet", [{"url": u, "term": t, "weight": w} for u, t, w in rows])
    summary = run(
        tmp_path / "w", Params(**params), bags=source, only=("term_counts", "urls", "terms", "bags")
    )
    stages = json.loads((tmp_path / "w" / "manifest.json").read_text())["stages"]
    entry = stages["bags"]
    assert entry["repeated_rows_added_up"] == repeats
    assert entry["rows_read"] == stages["term_counts"]["rows"] == len(rows)
    assert (entry["rows_used"], entry["rows_dropped"]) == (used, dropped)
    reasons = ", ".join(f"{reason} {n}" for reason, n in dropped.items())
    assert f"bags: {sum(dropped.values())} rows dropped ({reasons})" in summary.lines()


def test_tf_and_none_weightings(tmp_path):
    w = bags(tmp_path / "tf", weighting="tf")
    assert w[(1, "apple")] == pytest.approx(200 / 3) and w[(3, "durian")] == pytest.approx(100 / 3)
    w = bags(tmp_path / "none", weighting="none")
    assert w[(1, "apple")] == 2.0 and w[(1, "banana")] == 1.0  # counts as they are, not normalized


def test_scale(tmp_path):
    w = bags(tmp_path, scale=10)
    assert w[(2, "apple")] == pytest.approx(5)


def test_user_bags_are_summed_and_bad_rows_counted(tmp_path):
    import json

    from lshsql.pipeline import run
    from tests.conftest import write_table

    bags_file = write_table(
        tmp_path / "in.parquet",
        [
            {"url": "u1", "term": "x", "weight": 1.5},
            {"url": "u1", "term": "x", "weight": 1.0},
            {"url": "u1", "term": "y", "weight": 2.0},
            {"url": "u2", "term": "x", "weight": 1.0},
            {"url": None, "term": "x", "weight": 1.0},
            {"url": "u2", "term": None, "weight": 1.0},
            {"url": "u2", "term": "z", "weight": 0.0},
            {"url": "u2", "term": "w", "weight": None},
        ],
    )
    summary = run(
        tmp_path / "w",
        Params(weighting="none", threshold=0.5),
        bags=bags_file,
        only=("term_counts", "urls", "terms", "bags"),
    )
    entry = json.loads((tmp_path / "w" / "manifest.json").read_text())["stages"]["term_counts"]
    skipped = {"null_url": 1, "null_term": 1, "null_weight": 1, "weight_not_positive": 1}
    assert entry["rows_skipped"] == skipped
    line = "term_counts: 4 rows skipped (null_url 1, null_term 1, null_weight 1, weight_not_positive 1)"
    assert line in summary.lines()
    # term_counts is a view of the user's table, not a copy; the bags stage adds up the repeated rows
    assert entry["view"] and not (tmp_path / "w" / "term_counts.parquet").exists()
    rows = run_stage(tmp_path / "w", "bags", resolve(Params(weighting="none", min_df=1, max_df=1.0), True))
    rows = named(tmp_path / "w", rows)
    assert [(r["url_id"], r["term"], r["weight"]) for r in rows] == [
        (1, "x", 2.5),
        (1, "y", 2.0),
        (2, "x", 1.0),
    ]
    entry = json.loads((tmp_path / "w" / "manifest.json").read_text())["stages"]["bags"]
    assert entry["repeated_rows_added_up"]


@pytest.mark.parametrize("weighting", ["none", "tfidf"])
def test_bags_of_split_rows_equal_bags_of_whole_rows(tmp_path, weighting):
    """The bags stage first assumes one row per (url, term) and checks its output; a table that splits
    weights over repeated rows must take the grouped way and give the bags of the whole rows."""
    import json
    import random

    from lshsql.pipeline import run
    from tests.conftest import write_table

    rng = random.Random(5)
    whole = [
        {"url": f"u{u}", "term": f"t{t}", "weight": rng.randint(1, 40) / 8}
        for u in range(30)
        for t in rng.sample(range(60), rng.randint(1, 20))
    ]
    split = [{**r, "weight": r["weight"] / 2} for r in whole for _ in range(2)]  # halves of eighths: exact
    rng.shuffle(split)
    results = []
    for name, table in (("whole", whole), ("split", split)):
        work = tmp_path / name
        source = write_table(tmp_path / f"{name}.parquet", table)
        run(work, Params(weighting=weighting), bags=source, only=("term_counts", "urls", "terms", "bags"))
        entry = json.loads((work / "manifest.json").read_text())["stages"]["bags"]
        results.append((entry["repeated_rows_added_up"], read_rows(work / "bags.parquet")))
    (whole_repeated, whole_rows), (split_repeated, split_rows) = results
    assert (whole_repeated, split_repeated) == (False, True)
    assert len(whole_rows) == len(whole) and split_rows == whole_rows


@pytest.mark.parametrize(
    ("rows", "weighting", "expected"),
    [
        # x is in 2 of 2 URLs, but its 3 rows make n_urls 3 > max_df * 2: the fast way drops x unseen
        (
            [("u1", "x", 1.0), ("u1", "x", 1.0), ("u1", "y", 1.0), ("u2", "x", 1.0)],
            "none",
            [(1, "x", 2.0, 2, 2.0), (1, "y", 1.0, 1, 1.0), (2, "x", 1.0, 2, 1.0)],
        ),
        # x is in 1 of 2 URLs, but n_urls 2 = N gives it idf 0 the fast way: x is dropped unseen
        (
            [("u1", "x", 1.0), ("u1", "x", 1.0), ("u2", "y", 1.0)],
            "tfidf",
            [(1, "x", 2.0, 1, 100.0), (2, "y", 1.0, 1, 100.0)],
        ),
        # the second row of y rounds to tf 0 at 12 decimals, so the fast way keeps one row of y (df 2)
        (
            [("u1", "x", 1.0), ("u1", "y", 2.0), ("u1", "y", 1e-14), ("u2", "x", 1.0)],
            "none",
            [(1, "x", 1.0, 2, 1.0), (1, "y", 2.0, 1, 2.0), (2, "x", 1.0, 2, 1.0)],
        ),
    ],
)
def test_repeats_the_bags_cannot_show_are_found(tmp_path, rows, weighting, expected):
    """Repeats among rows the bags stage drops leave no trace in its output; the runner looks for them."""
    import json

    from lshsql.pipeline import run
    from tests.conftest import write_table

    source = write_table(tmp_path / "in.parquet", [{"url": u, "term": t, "weight": w} for u, t, w in rows])
    run(
        tmp_path / "w",
        Params(weighting=weighting),
        bags=source,
        only=("term_counts", "urls", "terms", "bags"),
    )
    entry = json.loads((tmp_path / "w" / "manifest.json").read_text())["stages"]["bags"]
    assert entry["repeated_rows_added_up"]
    got = named(tmp_path / "w", read_rows(tmp_path / "w" / "bags.parquet"))
    assert [(r["url_id"], r["term"], r["tf"], r["df"], pytest.approx(r["weight"])) for r in got] == expected


def test_a_tiny_tf_without_a_repeat_keeps_the_fast_way(tmp_path):
    """A tf that rounds to 0 leaves its bag either way; only a repeat of its (url, term) needs the group."""
    import json

    from lshsql.pipeline import run
    from tests.conftest import write_table

    rows = [("a", "x", 1.0), ("a", "y", 1e-13), ("b", "x", 1.0)]
    source = write_table(tmp_path / "in.parquet", [{"url": u, "term": t, "weight": w} for u, t, w in rows])
    run(tmp_path / "w", Params(weighting="none"), bags=source, only=("term_counts", "urls", "terms", "bags"))
    entry = json.loads((tmp_path / "w" / "manifest.json").read_text())["stages"]["bags"]
    assert not entry["repeated_rows_added_up"]
    got = named(tmp_path / "w", read_rows(tmp_path / "w" / "bags.parquet"))
    assert [(r["url_id"], r["term"], r["weight"]) for r in got] == [(1, "x", 1.0), (2, "x", 1.0)]


def test_repeated_rows_are_found_within_and_across_batches(tmp_path):
    from lshsql.pipeline import has_repeated_rows
    from tests.conftest import write_table

    def check(keys: list[tuple[int, int]], batch_rows: int) -> bool:
        rows = [{"url_id": u, "term_hash": t, "weight": 1.0} for u, t in keys]
        path = write_table(tmp_path / "bags.parquet", rows)
        return has_repeated_rows(path, ("url_id", "term_hash"), batch_rows)

    distinct = [(1, 5), (1, 7), (2, 5), (2, 7), (3, 1)]
    assert not any(check(distinct, n) for n in (1, 2, 3, 100))
    assert not check([], 2)
    assert check([(1, 5), (1, 7), (1, 7), (2, 1)], 100)  # within a batch
    assert check([(1, 5), (1, 7), (1, 7), (2, 1)], 2)  # the repeat straddles two batches
    assert not check([(1, 7), (2, 7)], 1)  # equal term_hash alone is no repeat


def test_repeated_rows_are_found_across_row_groups(tmp_path):
    """The check reads a row group at a time: a repeat split between two row groups is still found."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lshsql.pipeline import has_repeated_rows

    def check(keys: list[tuple[int, int]]) -> bool:
        path = tmp_path / "bags.parquet"
        table = pa.Table.from_pylist([{"url_id": u, "term_hash": t} for u, t in keys])
        pq.write_table(table, path, row_group_size=2)
        assert pq.ParquetFile(path).num_row_groups == (len(keys) + 1) // 2
        return has_repeated_rows(path, ("url_id", "term_hash"))

    assert not check([(1, 5), (1, 7), (2, 5), (2, 7), (3, 1)])
    assert check([(1, 5), (1, 7), (1, 7), (2, 1)])  # rows 2 and 3: the second row group's first row
    assert check([(1, 5), (1, 5), (2, 7)])  # within the first row group


def test_the_repeat_pass_counts_the_urls_of_ordered_bags(tmp_path):
    """ordered_keys counts the runs of url_id, across batches and row groups, when no key repeats."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lshsql.pipeline.accounting import ordered_keys

    def check(keys: list[tuple[int, int]], batch_rows: int) -> tuple[bool, int | None]:
        path = tmp_path / "bags.parquet"
        table = pa.Table.from_pylist([{"url_id": u, "term_hash": t} for u, t in keys])
        pq.write_table(table, path, row_group_size=2)
        return ordered_keys(path, ("url_id", "term_hash"), batch_rows)

    # url 1 spans the first row group and the second's first row; url 2 the rest of it; url 3 alone
    keys = [(1, 5), (1, 7), (1, 9), (2, 5), (3, 1)]
    assert [check(keys, n) for n in (1, 2, 100)] == [(False, 3)] * 3
    assert check([(4, 1), (9, 1)], 1) == (False, 2)  # equal term_hash, two URLs
    assert check([], 2) == (False, 0)
    assert check([(1, 5), (1, 5), (2, 7)], 100) == (True, None)


def test_rows_out_of_order_stop_the_repeat_pass(tmp_path):
    """Both answers of ordered_keys rely on the file's order, so rows out of it are a StageError, not a
    wrong count: within a batch, and from one row group to the next."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lshsql.errors import StageError
    from lshsql.pipeline.accounting import ordered_keys

    path = tmp_path / "bags.parquet"
    for keys in ([(1, 5), (1, 3), (2, 1)], [(1, 5), (2, 7), (1, 9)], [(2, 1), (2, 2), (1, 9)]):
        pq.write_table(
            pa.Table.from_pylist([{"url_id": u, "term_hash": t} for u, t in keys]), path, row_group_size=2
        )
        with pytest.raises(StageError, match="not in"):
            ordered_keys(path, ("url_id", "term_hash"))


def test_bags_found_out_of_order_are_not_left_for_the_next_stage(tmp_path, monkeypatch):
    """When the repeat pass finds the bags just written out of order, the run stops and removes them, as a
    refused --freeze-idf run does: a later `--only` would otherwise take them as a user's table."""
    from lshsql.errors import StageError
    from lshsql.pipeline import run, runners
    from tests.conftest import write_table

    def out_of_order(path, keys):
        raise StageError(f"{path}: rows not in ({', '.join(keys)}) order")

    monkeypatch.setattr(runners, "ordered_keys", out_of_order)
    bags = write_table(tmp_path / "in.parquet", [{"url": f"u{i}", "term": f"t{i % 3}"} for i in range(6)])
    with pytest.raises(StageError, match="not in"):
        run(tmp_path / "w", Params(weighting="none", k=2, l=2), bags=bags)
    assert not (tmp_path / "w" / "bags.parquet").exists()


@pytest.mark.parametrize("weighting", ["none", "tfidf"])
def test_bags_without_weights_are_sorted_on_fewer_columns_to_the_same_rows(tmp_path, monkeypatch, weighting):
    """A user's table without a weight column has tf 1 on every row, so the runner renders sql/20_bags.sql
    with tf (and, weighting none, weight) made after the sort (macros/bags_sorted.sql); its bags are those
    of the same table with a weight of 1 on every row, row for row in the same order."""
    import random

    from lshsql.pipeline import run
    from tests.conftest import rendered_contexts, write_table

    rng = random.Random(3)
    plain = [
        {"url": f"u{u:02d}", "term": f"t{t}"}
        for u in rng.sample(range(40), 40)
        for t in rng.sample(range(50), rng.randint(1, 15))
    ]
    found = []
    for name, table in (("plain", plain), ("weighted", [{**r, "weight": 1.0} for r in plain])):
        work, source = tmp_path / name, write_table(tmp_path / f"{name}.parquet", table)
        run(work, Params(weighting=weighting, min_df=2), bags=source, only=("term_counts", "urls", "terms"))
        seen = rendered_contexts(monkeypatch, "unit_tf")
        run(work, Params(weighting=weighting, min_df=2), bags=source, only=("bags",))
        assert seen == [name == "plain"]
        monkeypatch.undo()
        found.append(read_rows(work / "bags.parquet"))
    rows, weighted_rows = found
    assert rows == weighted_rows
    assert [(r["url_id"], r["term_hash"]) for r in rows] == sorted(
        (r["url_id"], r["term_hash"]) for r in rows
    )
    assert {r["tf"] for r in rows} == {1.0} and len(rows) < len(plain)  # min_df dropped some
    assert weighting != "none" or all(r["weight"] == 1.0 for r in rows)


def test_repeated_rows_of_a_table_without_weights_add_up(tmp_path):
    """Without a weight column the fast form takes tf as 1 on every row (unit_tf); a repeated (url, term)
    is then two rows side by side, which the runner finds, and the grouped form adds them up: tf 2."""
    import json

    from lshsql.pipeline import run
    from tests.conftest import write_table

    rows = [("u1", "x"), ("u1", "y"), ("u1", "x"), ("u2", "x")]
    source = write_table(tmp_path / "in.parquet", [{"url": u, "term": t} for u, t in rows])
    run(tmp_path / "w", Params(weighting="none"), bags=source, only=("term_counts", "urls", "terms", "bags"))
    entry = json.loads((tmp_path / "w" / "manifest.json").read_text())["stages"]["bags"]
    assert entry["repeated_rows_added_up"]
    got = named(tmp_path / "w", read_rows(tmp_path / "w" / "bags.parquet"))
    assert [(r["url_id"], r["term"], r["tf"], r["weight"]) for r in got] == [
        (1, "x", 2.0, 2.0),
        (1, "y", 1.0, 1.0),
        (2, "x", 1.0, 1.0),
    ]


def test_terms_sharing_a_hash_stop_the_run(tmp_path, monkeypatch):
    """Bags know a term by its 63-bit hash alone, so two terms with one hash must not pass silently."""
    import pyarrow as pa

    from lshsql.engines import udf
    from lshsql.errors import StageError

    monkeypatch.setattr(udf, "term_hash", lambda terms: pa.array([7] * len(terms), type=pa.int64()))
    p = resolve(Params(), whole_sets=False)
    run_stage(tmp_path, "term_counts", p, {"fragments": FRAGMENTS})
    with pytest.raises(StageError, match="share a 63-bit term_hash"):
        run_stage(tmp_path, "terms", p)


def test_weights_that_are_not_finite_are_counted_and_types_checked(tmp_path):
    """NaN and infinite weights are skipped and counted as weight_not_finite, also from a file written by
    pyarrow, whose statistics leave NaN out of the column's min and max (DuckDB trusts them). Columns of
    another type than the schema's, and weights too large to add up or to flatten, stop with one line."""
    import json

    import pyarrow as pa

    from lshsql.errors import InputError
    from lshsql.pipeline import run
    from tests.conftest import write_table

    for weight in (float("nan"), float("inf")):  # apart: an infinite max would make DuckDB look at NaN too
        rows = [{"url": f"u{i}", "term": t, "weight": 1.0} for i in range(3) for t in "xyz"]
        rows[0]["weight"] = weight
        work = tmp_path / f"w{weight}"
        summary = run(work, Params(weighting="none"), bags=write_table(tmp_path / f"{weight}.parquet", rows))
        entry = json.loads((work / "manifest.json").read_text())["stages"]
        assert entry["term_counts"]["rows_skipped"] == {"weight_not_finite": 1}
        assert entry["bags"]["rows_read"] == 8
        assert "term_counts: 1 rows skipped (weight_not_finite 1)" in summary.lines()

    bad_tables = {
        "term is list<element: string>; a bags table's term is text or an integer": {"term": [["x"], ["y"]]},
        "url is double; a bags table's url is text or an integer": {"url": [1.5, 2.5]},
        "weight is string; a bags table's weight is a number": {"weight": ["1", "2"]},
        "weight is bool; a bags table's weight is a number": {"weight": [True, False]},
        r"1 row\(s\) of the bags table have a weight above 1e\+15": {"weight": [1e16, 1.0]},
    }
    for number, (message, columns) in enumerate(bad_tables.items()):
        table = pa.table({"url": ["a", "b"], "term": ["x", "y"]} | columns)
        path = write_table(tmp_path / f"bad{number}.parquet", table.to_pylist(), table.schema)
        with pytest.raises(InputError, match=message):
            run(tmp_path / f"w{number}", Params(weighting="tf"), bags=path)
    heavy = write_table(tmp_path / "heavy.parquet", [{"url": "a", "term": "x", "weight": 3e9}])
    with pytest.raises(
        InputError,
        match=r"a weight of 3,000,000,000 makes as many copies .* over the 1,000,000 .*: with --weighting none "
        r"a weight is the term's count or the bags table's own; use --weighting tf",
    ):
        run(tmp_path / "heavy", Params(weighting="none"), bags=heavy)
    # two URLs: the planner's choice of m signs a sample of the bags before the signatures stage, and
    # refuses the weight first, rather than min-hash 10^12 copies
    rows = [{"url": url, "term": "x", "weight": 1e12} for url in ("a", "b")]
    with pytest.raises(InputError, match=r"a weight of 1,000,000,000,000 makes as many copies"):
        run(
            tmp_path / "heavy2", Params(weighting="none"), bags=write_table(tmp_path / "heavy2.parquet", rows)
        )
    run(tmp_path / "light", Params(weighting="tf"), bags=heavy)  # tf bags sum to --scale


def test_freeze_idf_keeps_the_frozen_df_and_url_count(tmp_path):
    """frozen_idf says N = 10, apple in 5 URLs, banana in 2; cherry and durian it does not know, so their df
    is counted here (2 and 1), and N stays 10 for them too. A: apple tf 2, banana; C: banana, cherry,
    durian; weights tf * ln(10 / df) scaled to sum to 100. With max_df 0.4, apple (5 > 4) is dropped."""
    from tests.conftest import write_table

    for max_df in (1.0, 0.4):
        work = tmp_path / str(max_df)
        p = resolve(Params(min_df=1, max_df=max_df, freeze_idf=True), whole_sets=False)
        run_stage(work, "term_counts", p, {"fragments": FRAGMENTS})
        run_stage(work, "urls", p)
        frozen_hashes = {t["term"]: t["term_hash"] for t in run_stage(work, "terms", p)}
        write_table(
            work / "frozen_idf.parquet",
            [
                {"term_hash": frozen_hashes["apple"], "n_urls": 5, "corpus_urls": 10},
                {"term_hash": frozen_hashes["banana"], "n_urls": 2, "corpus_urls": 10},
                {"term_hash": 12345, "n_urls": 7, "corpus_urls": 10},  # a term this run does not have
            ],
        )
        rows = named(work, run_stage(work, "bags", p))
        got = {(r["url_id"], r["term"]): (r["df"], round(r["weight"], 6)) for r in rows}
        ln = math.log
        a = {"apple": 2 * ln(10 / 5), "banana": ln(10 / 2)}
        c = {"banana": ln(10 / 2), "cherry": ln(10 / 2), "durian": ln(10 / 1)}
        b = {"apple": ln(10 / 5), "cherry": ln(10 / 2)}
        if max_df == 0.4:
            a, b = {"banana": a["banana"]}, {"cherry": b["cherry"]}
        df = {"apple": 5, "banana": 2, "cherry": 2, "durian": 1}
        expected = {
            (url_id, term): (df[term], round(100 * w / sum(bag.values()), 6))
            for url_id, bag in ((1, a), (2, b), (3, c))
            for term, w in bag.items()
        }
        assert got == expected, max_df
