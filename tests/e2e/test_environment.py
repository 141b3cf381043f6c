"""`lshsql environment SITE`: the external domains around a site, their counts, clusters and labels."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.sources.extract import ExtractParams, extract
from lshsql.tools.environment import environment, site_unit
from tests.conftest import html_response, shared, write_warc

RESOURCES = db.Resources(memory_limit="1GB", threads=2)


def page(url: str, links: list[tuple[str, str]], title: str = "page") -> dict:
    anchors = " ".join(f"<p>read <a href='{href}'>{text}</a> here</p>" for href, text in links)
    return html_response(url, f"<title>{title}</title><body>{anchors}</body>")


CRAWL = [
    page(
        "https://www.site.example/a",
        [
            ("https://news.example.com/1", "daily news headlines"),
            ("https://news.example.com/2", "news headlines today"),
            ("https://blog.example.org/", "personal blog posts"),
            ("/b", "page b"),  # internal
            ("https://cdn.site.example/x", "static files"),  # another host of the site's own domain
        ],
    ),
    page("https://www.site.example/b", [("https://news.example.com/1", "news headlines")]),
    page("https://blog.example.org/", [("https://www.site.example/a", "a great site")]),
    page("https://news.example.com/1", [("https://www.site.example/b", "site page b")]),
    page("https://other.example.net/", [("https://news.example.com/2", "headlines")]),  # not the site's
]


@pytest.fixture(scope="module")
def crawl_work(tmp_path_factory):
    root = tmp_path_factory.mktemp("environment")
    write_warc(root / "crawl.warc.gz", CRAWL)
    extract([str(root / "crawl.warc.gz")], root / "work", ExtractParams(), RESOURCES)
    return root / "work"


def test_site_is_a_host_or_a_registered_domain():
    assert site_unit("www.site.example") == ("www.site.example", "host")
    assert site_unit("site.example") == ("site.example", "domain")
    assert site_unit("https://WWW.Python.org/about/") == ("www.python.org", "host")
    assert site_unit("bbc.co.uk") == ("bbc.co.uk", "domain")
    with pytest.raises(ParamError):
        site_unit("  ")


def test_counts_of_the_external_environment(crawl_work):
    result = environment(crawl_work, "www.site.example", resources=RESOURCES)
    rows = pq.read_table(result.out / "domains.parquet").to_pylist()
    assert rows == [
        {
            "domain": "example.com",
            "direction": "both",
            "links_out": 3,
            "pages_out": 2,
            "links_in": 1,
            "citing_pages": 1,
        },
        {
            "domain": "example.org",
            "direction": "both",
            "links_out": 1,
            "pages_out": 1,
            "links_in": 1,
            "citing_pages": 1,
        },
    ]
    totals = result.totals
    assert (totals["external_links"], totals["linking_pages"], totals["external_domains"]) == (4, 2, 2)
    assert (totals["citing_pages"], totals["citing_domains"], totals["domains"]) == (2, 2, 2)
    # every environment domain with a bag is in exactly one cluster, and nothing else is
    clusters = pq.read_table(result.out / "clusters.parquet").to_pylist()
    assert sorted(r["url"] for r in clusters) == ["example.com", "example.org"]
    assert sorted(d for c in result.clusters for d in c["domains"]) == ["example.com", "example.org"]
    summary = json.loads((result.out / "summary.json").read_text())
    assert summary["external_links"] == 4 and summary["site_unit"] == "host"


def test_the_site_as_a_domain_takes_all_its_hosts(crawl_work):
    result = environment(crawl_work, "site.example", resources=RESOURCES)
    assert result.site_unit == "domain" and result.totals["external_links"] == 4  # cdn. is the site's own
    assert result.totals["domains"] == 2


def test_a_site_without_links_and_a_folder_without_a_crawl(crawl_work, tmp_path):
    result = environment(crawl_work, "nowhere.example", resources=RESOURCES)
    assert result.totals["domains"] == 0 and result.clusters == []
    with pytest.raises(InputError, match="no links.parquet"):
        environment(tmp_path, "www.site.example", resources=RESOURCES)


def test_cli_prints_the_environment(crawl_work):
    from tests.test_cli import lshsql

    result = lshsql("environment", "www.site.example", "--work", str(crawl_work), "--quiet")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "www.site.example (host): 4 external links from 2 of its pages to 2 external domains; "
        "2 citing pages on 2 citing domains"
    )


@pytest.mark.slow
def test_the_python_docs_environment_in_the_small_fixture(tmp_path):
    extract([str(shared("crawls", "fixture-small.warc.gz"))], tmp_path, ExtractParams(), RESOURCES)
    result = environment(tmp_path, "docs.python.example", resources=RESOURCES)
    t = result.totals
    assert (t["external_links"], t["linking_pages"], t["external_domains"], t["citing_domains"]) == (
        305,
        30,
        20,
        0,
    )
    assert sum(c["size"] for c in result.clusters) == 20 and all(c["label"] for c in result.clusters)
    python = next(c for c in result.clusters if "python.org" in c["domains"])
    assert "python" in python["label"]


def test_a_moved_or_copied_work_folder_uses_its_own_fragments(crawl_work, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(crawl_work, copy, symlinks=True)
    moved = tmp_path / "moved"
    environment(copy, "www.site.example", resources=RESOURCES)
    shutil.move(copy, moved)  # the links of DIR/units/domain must still resolve inside the folder
    result = environment(moved, "www.site.example", resources=RESOURCES)
    assert result.totals["external_links"] == 4
    link = moved / "units" / "domain" / "fragments"
    assert link.is_symlink() and link.resolve() == (moved / "fragments").resolve()
