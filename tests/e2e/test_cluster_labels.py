"""Cluster labels end to end on the example crawl: surface forms kept by extract, readable words for every
cluster of two or more URLs (and for the cuts of the cluster tree), shown by `clusters` and `report`, and
byte-identical files whatever the number of workers."""

from __future__ import annotations

import html
import json
from pathlib import Path

import duckdb
import pytest

from lshsql import schemas
from lshsql.engines import duckdb as db
from lshsql.sources.ingest import IngestParams, ingest
from lshsql.tools import explore
from lshsql.tools.hierarchy import HierarchyParams, cut, hierarchy
from tests.conftest import EXAMPLE_CRAWL, REPO, copy_work


def resources(work: Path, threads: int) -> db.Resources:
    return db.Resources(memory_limit="2GB", threads=threads, temp_directory=str(work / "tmp"))


@pytest.fixture(scope="module")
def runs(example_run, example_run_two, tmp_path_factory) -> dict[str, Path]:
    """The example crawl extracted and run with 1 worker and thread (a copy of conftest.example_run, which
    the report step writes to) and with 2 (conftest.example_run_two)."""
    root = tmp_path_factory.mktemp("labels")
    return {"one": copy_work(example_run, root / "one"), "two": example_run_two}


def rows(query: str, **params) -> list[tuple]:
    with duckdb.connect() as con:
        return con.execute(query, {k: str(v) for k, v in params.items()}).fetchall()


def crawl_words() -> set[str]:
    """Every word of the crawl's pages as extraction reads them (titles and all text, lowercased)."""
    from lshsql.sources.anchors import parse_page
    from lshsql.sources.readers import iter_records, resolve_sources
    from lshsql.urls import UrlOptions

    found: set[str] = set()
    for record in iter_records(resolve_sources([str(EXAMPLE_CRAWL)])[0], 32 * 2**20):
        if record.skip_reason is None:
            page = parse_page(record.body, record.url, record.content_type, 8, UrlOptions(), True)
            found.update(page.title_words, page.words)
    return found


def test_every_cluster_of_two_or_more_urls_has_labels_and_singletons_none(runs):
    work = runs["one"]
    schemas.validate(work / "cluster_labels.parquet", "cluster_labels")
    schemas.validate(work / "surface_forms.parquet", "surface_forms")
    big = set(
        rows(
            "select center_id from read_parquet($c) where is_center and size >= 2",
            c=work / "clusters.parquet",
        )
    )
    labelled = set(rows("select distinct center_id from read_parquet($l)", l=work / "cluster_labels.parquet"))
    assert len(big) > 100 and labelled == big
    ranks = rows(
        "select min(rank), max(rank), count(*) = max(rank) from read_parquet($l) group by center_id",
        l=work / "cluster_labels.parquet",
    )
    assert all(low == 1 and high <= 10 and dense for low, high, dense in ranks)


def test_label_words_are_words_of_the_crawl_not_stems(runs):
    work = runs["one"]
    labels = rows("select term, word from read_parquet($l)", l=work / "cluster_labels.parquet")
    seen = crawl_words()
    assert {word for _, word in labels} <= seen
    assert len({term for term, word in labels if term != word}) > 100  # labels that would have been stems
    by_term = dict(labels)
    # Porter stems of the Python docs' and Debian pages' words, shown as the words written most often
    assert by_term["configur"] == "configuration" and by_term["librari"] == "library"
    assert not {"configur", "librari"} & seen  # stems no page writes ('modul' is German)
    # each word is the term's most frequent surface form in surface_forms.parquet (ties: the smaller word)
    top = dict(
        rows(
            "select term, word from (select term, word, row_number() over (partition by term order by n desc, "
            "word) as r from read_parquet($s)) where r = 1",
            s=work / "surface_forms.parquet",
        )
    )
    assert all(top[term] == word for term, word in labels)


def test_surface_forms_count_every_term_of_the_fragments(runs):
    work = runs["one"]
    fragments = work / "fragments" / "*" / "*.parquet"
    [(terms, occurrences)] = rows(
        "select count(distinct term), count(*) from (select unnest(terms) as term from read_parquet($f))",
        f=fragments,
    )
    [(forms_terms, total)] = rows(
        "select count(distinct term), sum(n) from read_parquet($s)", s=work / "surface_forms.parquet"
    )
    # the example crawl has no duplicate captures, so the pages parsed are the pages used; the forms also
    # count the words of anchor windows that template detection cut afterwards
    assert forms_terms >= terms and total >= occurrences
    assert forms_terms < 1.2 * terms and total < 1.5 * occurrences


def test_files_are_byte_identical_with_one_or_two_workers(runs):
    for name in ("surface_forms.parquet", "cluster_labels.parquet"):
        assert (runs["one"] / name).read_bytes() == (runs["two"] / name).read_bytes(), name


def test_clusters_and_report_show_the_words(runs, lshsql_command):
    work = runs["one"]
    table = explore.top_clusters(work, limit=5, terms=8)
    words_of = explore.cluster_labels(work, [row[2] for row in _centers(work, 5)], n=8)
    top_terms = table["top_terms"].to_pylist()
    assert top_terms == list(words_of.values())
    assert all(top_terms)
    shown = [word for words in top_terms for word in words]
    labels = rows("select term, word from read_parquet($l)", l=work / "cluster_labels.parquet")
    assert set(shown) <= {word for _, word in labels}
    # the Debian desktop tasks' cluster: environment, not its stem
    assert "environ" not in shown and "environment" in shown
    result = lshsql_command("report", "--work", str(work))
    assert result.returncode == 0, result.stderr
    page = Path(result.stdout.strip()).read_text(encoding="utf-8")
    assert all(html.escape(" ".join(terms)) in page for terms in top_terms)


def _centers(work: Path, limit: int) -> list[tuple]:
    return rows(
        "select size, center, center_id from read_parquet($c) where is_center order by size desc, center "
        f"limit {int(limit)}",
        c=work / "clusters.parquet",
    )


def test_cluster_labels_function_asks_for_clusters_and_computes_what_is_missing(runs, tmp_path):
    work = runs["one"]
    every = explore.cluster_labels(work, n=3)
    assert every and all(1 <= len(w) <= 3 for w in every.values())
    singleton = rows(
        "select center_id from read_parquet($c) where size = 1 limit 1", c=work / "clusters.parquet"
    )[0][0]
    some = list(every)[:2]
    assert explore.cluster_labels(work, [*some, singleton], n=3) == {
        some[0]: every[some[0]],
        some[1]: every[some[1]],
        singleton: [],
    }
    # a folder whose run made no labels file: computed from clusters, bags, terms, urls and surface forms
    import shutil

    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("clusters", "bags", "terms", "urls", "surface_forms"):
        shutil.copy(work / f"{name}.parquet", copy / f"{name}.parquet")
    assert explore.cluster_labels(copy, n=3) == every


def test_cut_gets_labels_from_the_same_file(runs, tmp_path):
    work = copy_work(runs["two"], tmp_path / "w")
    hierarchy(work, HierarchyParams(threshold=0.4), resources=resources(work, 2))
    path, counts = cut(work, 0.5, resources(work, 2))
    labels_path = work / "cut_labels.parquet"
    schemas.validate(labels_path, "cut_labels")
    big = set(rows("select center_id from read_parquet($c) where is_center and size >= 2", c=path))
    assert set(rows("select distinct center_id from read_parquet($l)", l=labels_path)) == big
    assert counts["label_rows"] == rows("select count(*) from read_parquet($l)", l=labels_path)[0][0]
    from_cut = explore.cluster_labels(work, from_cut=True, n=10)
    assert len(from_cut) == len(big) and "configur" not in {w for ws in from_cut.values() for w in ws}
    with duckdb.connect(str(work / "lshsql.duckdb"), read_only=True) as con:  # listing views reads no file
        catalog = {
            name
            for (name,) in con.execute("select view_name from duckdb_views() where not internal").fetchall()
        }
    assert {"cluster_labels", "cut_labels", "surface_forms"} <= catalog


def test_ingest_keeps_surface_forms_of_words_and_of_shingles(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "".join(
            json.dumps({"id": f"d{i}", "text": text}) + "\n"
            for i, text in enumerate(["Running dogs ran", "The running dogs", "Dogs running"])
        ),
        encoding="utf-8",
    )
    one = db.Resources(memory_limit="1GB", threads=1)
    ingest([str(docs)], tmp_path / "words", IngestParams(), one)
    ingest([str(docs)], tmp_path / "sh", IngestParams(shingle=2), one)
    assert rows("select * from read_parquet($s)", s=tmp_path / "words" / "surface_forms.parquet") == [
        ("dog", "dogs", 3),
        ("ran", "ran", 1),
        ("run", "running", 3),
    ]
    assert rows("select * from read_parquet($s)", s=tmp_path / "sh" / "surface_forms.parquet") == [
        ("dog ran", "dogs ran", 1),
        ("dog run", "dogs running", 1),
        ("run dog", "running dogs", 2),
    ]


def test_the_docs_list_the_stage(runs):
    stages = (REPO / "docs" / "how-it-works.md").read_text(encoding="utf-8")
    assert "| cluster_labels | `sql/63_cluster_labels.sql` |" in stages
