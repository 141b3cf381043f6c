"""`related`, `explain` and `show` on a run from a user's bags whose ids are not canonical URLs: lookup as
given first, then canonicalized; one-line errors for missing or unreadable stage outputs."""

from __future__ import annotations

import os
import shutil

import duckdb
import pytest

from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.params import Params
from lshsql.pipeline import run
from lshsql.tools.explain import PAIR_READS, URL_READS, explain_pair, explain_url
from lshsql.tools.explore import query, related, top_clusters
from lshsql.tools.show import cluster_members
from tests.test_cli import lshsql

RESOURCES = db.Resources(memory_limit="1GB", threads=2)
# Ids stored exactly as given. "HTTP://EX.COM/A" canonicalizes to "http://ex.com/A", another id of the
# table with other terms, so a lookup that canonicalizes first finds the wrong one.
BAGS = {
    "HTTP://EX.COM/A": "p q r",
    "http://ex.com/b": "p q r",
    "http://ex.com/A": "s t u",
    "http://ex.com/d": "s t u",
    "c": "m n",
    "id with space": "m n",
    "http://ex.com/%7euser/../x#frag": "m n",
}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lookup")
    rows = [(url, term) for url, terms in BAGS.items() for term in terms.split()]
    with duckdb.connect() as con:
        con.execute("create table t (url varchar, term varchar)")
        con.executemany("insert into t values (?, ?)", rows)
        con.execute(f"copy t to '{tmp / 'bags.parquet'}' (format parquet)")
    run(tmp / "w", Params(weighting="none"), bags=tmp / "bags.parquet", resources=RESOURCES)
    return tmp / "w"


def related_urls(work, url: str) -> list[str]:
    return related(work, url, resources=RESOURCES)["related_url"].to_pylist()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://EX.COM/A", ["http://ex.com/b"]),
        ("http://ex.com/A", ["http://ex.com/d"]),
        ("http://EX.com/A", ["http://ex.com/d"]),  # not an id: found canonicalized
        ("c", ["http://ex.com/%7euser/../x#frag", "id with space"]),
        ("id with space", ["c", "http://ex.com/%7euser/../x#frag"]),
        ("http://ex.com/%7euser/../x#frag", ["c", "id with space"]),
    ],
)
def test_related_finds_an_id_as_given_then_canonicalized(work, url, expected):
    assert related_urls(work, url) == expected


@pytest.mark.parametrize("url", ["HTTP://EX.COM/A", "id with space", "http://ex.com/%7euser/../x#frag"])
def test_explain_finds_an_id_as_given(work, url):
    assert explain_url(work, url, RESOURCES)["url"] == url


def test_explain_pair_of_odd_ids(work):
    e = explain_pair(work, "HTTP://EX.COM/A", "http://ex.com/b", RESOURCES)
    assert (e["u"], e["v"]) == ("HTTP://EX.COM/A", "http://ex.com/b")
    assert e["similarity_kept"] == pytest.approx(1.0)
    # an id and the canonical form of it are two URLs of this table, never paired
    e = explain_pair(work, "HTTP://EX.COM/A", "http://ex.com/A", RESOURCES)
    assert e["jaccard_flattened"] == 0 and not e["is_candidate"]


def test_show_still_finds_a_member_as_given(work):
    assert set(cluster_members(work, "HTTP://EX.COM/A", resources=RESOURCES)["url"].to_pylist()) == {
        "HTTP://EX.COM/A",
        "http://ex.com/b",
    }


def test_an_unknown_url_is_named_as_given(work):
    with pytest.raises(InputError, match=r"^http://EX\.COM/nope: not described"):
        related(work, "http://EX.COM/nope", resources=RESOURCES)
    with pytest.raises(InputError, match=r"^id nowhere: not described"):
        explain_url(work, "id nowhere", RESOURCES)


@pytest.mark.parametrize(("u", "v"), [("c", "c"), ("http://EX.COM/A", "http://ex.com/A")])
def test_explain_the_same_url_twice_says_so(work, u, v):
    with pytest.raises(ParamError, match="the two URLs are the same"):
        explain_pair(work, u, v, RESOURCES)


def copy_of(work, tmp_path):
    return shutil.copytree(work, tmp_path / "w")


@pytest.mark.parametrize("relation", PAIR_READS)
def test_explain_names_a_missing_stage_output(work, tmp_path, relation):
    broken = copy_of(work, tmp_path)
    (broken / f"{relation}.parquet").unlink()
    with pytest.raises(InputError, match=f"no {relation} yet; run `lshsql run --work "):
        explain_pair(broken, "c", "id with space", RESOURCES)
    if relation in URL_READS:
        with pytest.raises(InputError, match=f"no {relation} yet"):
            explain_url(broken, "c", RESOURCES)
    else:
        assert explain_url(broken, "c", RESOURCES)["url"] == "c"


def test_explain_in_an_empty_work_folder_is_one_line(tmp_path, lshsql_command):
    for args in (["x"], ["x", "y"]):
        result = lshsql_command("explain", *args, "--work", str(tmp_path))
        assert result.returncode == 2
        assert (
            result.stderr
            == f"lshsql: error: {tmp_path}: no urls yet; run `lshsql run --work {tmp_path}` first\n"
        )


def truncate(path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def test_a_truncated_file_fails_only_what_reads_it(work, tmp_path):
    broken = copy_of(work, tmp_path)
    truncate(broken / "signatures.parquet")
    assert related_urls(broken, "HTTP://EX.COM/A") == ["http://ex.com/b"]
    assert top_clusters(broken, resources=RESOURCES).num_rows == 3
    assert cluster_members(broken, "c", resources=RESOURCES).num_rows == 3
    assert explain_url(broken, "c", RESOURCES)["cluster"] is not None
    message = rf"^{broken}/signatures\.parquet: not a readable Parquet file \(.*\); rerun `lshsql run --work {broken} --force`$"
    with pytest.raises(InputError, match=message):
        explain_pair(broken, "c", "id with space", RESOURCES)
    with pytest.raises(InputError, match=message):
        query(broken, "select count(*) from signatures", RESOURCES)
    result = lshsql("explain", "c", "id with space", "--work", str(broken))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "signatures.parquet: not a readable Parquet file" in result.stderr


@pytest.mark.parametrize(
    ("relation", "reader"),
    [
        ("pairs", lambda work: related(work, "c", resources=RESOURCES)),
        ("clusters", lambda work: cluster_members(work, "c", resources=RESOURCES)),  # url in (...) filter
        ("urls", lambda work: explain_url(work, "c", RESOURCES)),
        ("family/lsh_tables", lambda work: explain_pair(work, "c", "id with space", RESOURCES)),
    ],
)
def test_a_command_reading_a_truncated_file_names_it(work, tmp_path, relation, reader):
    broken = copy_of(work, tmp_path)
    truncate(broken / f"{relation}.parquet")
    with pytest.raises(InputError, match=rf"^{broken}/{relation}\.parquet: not a readable Parquet file"):
        reader(broken)
