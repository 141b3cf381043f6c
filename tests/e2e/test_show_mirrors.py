"""`lshsql mirrors` and `lshsql show` end to end: a site mirrored on a second host, beside an unrelated site;
stored HTML read back from every kind of crawl file."""

from __future__ import annotations

import json
import shutil

import duckdb
import pyarrow.parquet as pq
import pytest

from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.params import Params
from lshsql.pipeline import run
from lshsql.sources import anchors
from lshsql.sources.extract import ExtractParams, extract
from lshsql.tools.show import NOT_FETCHED, cluster_members, stored_html
from tests.conftest import (
    clusters_by_id,
    html_response,
    shared,
    write_jsonl,
    write_single_member_gzip,
    write_warc,
)
from tests.test_cli import lshsql

RESOURCES = db.Resources(memory_limit="1GB", threads=2)
# Stopwords count in a link's window of 8 words but give no term: ten of them keep each link's window to
# its own anchor text, so a page is described by the anchors pointing to it and its title alone.
FILLER = "the of and to in a is it that was"
# path -> (title, anchor text other pages use for it); durian.html is linked to but never fetched
SITE = {
    "/": ("Orchard home", "orchard homepage welcome"),
    "/apples.html": ("Apple varieties", "apple varieties crisp"),
    "/bananas.html": ("Banana plantations", "banana plantation tropical"),
    "/cherries.html": ("Cherry blossoms", "cherry blossom spring"),
    "/durian.html": (None, "durian spiky fruit"),
}
FETCHED = [path for path, (title, _) in SITE.items() if title]
HOSTS = ("http://a.example", "http://b.example")  # the site and its mirror: the same bytes on both hosts


def site_page(path: str) -> str:
    """One page of the orchard site, linking to every other page with relative hrefs."""
    links = "".join(
        f"<p>{FILLER} <a href='{target}'>{anchor}</a> {FILLER}</p>\n"
        for target, (_, anchor) in SITE.items()
        if target != path
    )
    return f"<html><head><title>{SITE[path][0]}</title></head>\n<body>\n{links}</body></html>\n"


# The unrelated site: two copies of a page about guitar strings (one cluster of c.example alone); its home
# page's words are in no other URL, so it has no bag after min_df = 2 and is in no cluster.
UNRELATED = {
    "/": f"<title>Music shop</title><p>{FILLER} <a href='/strings.html'>guitar strings steel</a> {FILLER} "
    f"<a href='/strings-old.html'>guitar strings steel</a> {FILLER}</p>",
    "/strings.html": "<title>Guitar strings</title><p>see the <a href='/'>music shop</a></p>",
    "/strings-old.html": "<title>Guitar strings</title><p>see the <a href='/'>music shop</a></p>",
}


def mirrored_crawl(path):
    records = [html_response(host + page, site_page(page)) for host in HOSTS for page in FETCHED]
    records += [html_response("http://c.example" + page, html) for page, html in UNRELATED.items()]
    return write_warc(path, records)


@pytest.fixture(scope="module")
def mirrored(tmp_path_factory):
    """The crawl, extracted and run by the CLI (CENTER at the default threshold)."""
    tmp = tmp_path_factory.mktemp("mirrored")
    crawl = mirrored_crawl(tmp / "crawl.warc.gz")
    work = tmp / "work"
    result = lshsql("run", str(crawl), "--work", str(work), "--quiet", "--threads", "2")
    assert result.returncode == 0, result.stderr
    return crawl, work


def ok(*args: str):
    result = lshsql(*args)
    assert result.returncode == 0, result.stderr
    return result


def error(*args: str, run=lshsql) -> str:
    result = run(*args)
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("lshsql: error: "), result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr


def json_rows(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_every_page_clusters_with_its_copy_and_nothing_else(mirrored):
    _, work = mirrored
    got = [members for _, _, members in clusters_by_id(work).values() if len(members) >= 2]
    expected = [[a + path, b + path] for path in sorted(SITE) for a, b in [HOSTS]]
    expected.append(["http://c.example/strings-old.html", "http://c.example/strings.html"])
    assert sorted(got) == sorted(expected)


def test_mirrors_reports_exactly_the_mirrored_host_pair(mirrored):
    _, work = mirrored
    result = ok("mirrors", "--work", str(work), "--format", "json")
    # every page of a.example, fetched or only linked to, is in a cluster with its copy on b.example and
    # in no other: 5 shared clusters of 5 on each side. c.example's one cluster is shared with no host.
    assert json_rows(result.stdout) == [
        {
            "host_a": "a.example",
            "host_b": "b.example",
            "shared_clusters": 5,
            "clusters_a": 5,
            "clusters_b": 5,
            "jaccard": 1.0,
        }
    ]
    assert "1 pairs of hosts share >= 2 clusters" in result.stderr
    with duckdb.connect() as con:  # the file holds all pairs >= min_shared: the same single pair
        assert con.execute(
            "select count(*) from read_parquet($p)", {"p": str(work / "mirrors.parquet")}
        ).fetchall() == [(1,)]
    table = ok("mirrors", "--work", str(work), "--min-shared", "6").stdout
    assert table.startswith("0 pairs of hosts share >= 6 clusters")
    assert "a.example" not in table
    assert (
        ok("query", "select host_a from mirrors", "--work", str(work), "--format", "csv").stdout == "host_a\n"
    )


def test_show_prints_the_members_with_titles_offsets_and_in_degrees(mirrored):
    crawl, work = mirrored
    with duckdb.connect() as con:
        offsets = dict(
            con.execute(
                "select url, source_offset from read_parquet($p) where skip_reason is null",
                {"p": str(work / "pages.parquet")},
            ).fetchall()
        )
    rows = json_rows(
        ok("show", "http://b.example/apples.html", "--work", str(work), "--format", "json").stdout
    )
    cluster_id, center_id = rows[0]["cluster_id"], rows[0]["center_id"]
    assert rows == [
        {
            "cluster_id": cluster_id,
            "center_id": center_id,
            "size": 2,
            "url": host + "/apples.html",
            "is_center": host == HOSTS[0],  # CENTER: the smallest URL of the pair is the center
            "fetched": True,
            "title": "Apple varieties",
            "in_degree": 3,  # linked from the 3 other fetched pages of its host
            "source_file": str(crawl),
            "source_offset": offsets[host + "/apples.html"],
        }
        for host in HOSTS
    ]
    # the cluster by its cluster_id, in a table with a heading line
    table = ok("show", str(cluster_id), "--work", str(work)).stdout.splitlines()
    assert table[0] == f"cluster {cluster_id}: 2 URLs, center http://a.example/apples.html"
    assert table[1].startswith("pair_share 1.000: 1 of its 1 member pairs are pairs; least similar pair ")
    assert table[1].endswith(": http://a.example/apples.html http://b.example/apples.html")
    assert table[2].split() == [
        "url",
        "is_center",
        "fetched",
        "title",
        "in_degree",
        "source_file",
        "source_offset",
    ]
    assert "Apple varieties" in table[4] and str(offsets["http://a.example/apples.html"]) in table[4]
    # a member that was only linked to
    [durian, _] = cluster_members(work, "http://a.example/durian.html").to_pylist()
    assert list(durian.values())[3:] == [
        "http://a.example/durian.html",
        True,
        False,
        NOT_FETCHED,
        4,
        None,
        None,
    ]
    assert cluster_members(work, cluster_id, limit=1).num_rows == 1


def clusters_of(work) -> dict[int, tuple[int, list[str]]]:
    """{cluster_id: (center_id, members in URL order)} of a work folder's clusters.parquet."""
    return {
        cluster_id: (center_id, members)
        for cluster_id, (_, center_id, members) in clusters_by_id(work).items()
    }


@pytest.fixture(scope="module")
def grown(mirrored, tmp_path_factory):
    """The mirrored folder rerun with a crawl of 0.example added: its URLs sort first, so every url_id and
    center_id of the earlier clusters shifts, while their cluster_ids are kept."""
    crawl, work = mirrored
    tmp = tmp_path_factory.mktemp("grown")
    page = "<title>Kites</title><p>kites</p>"
    home = f"<title>Kite shop</title><p>{FILLER} <a href='/kites.html'>kite string reel</a> {FILLER} "
    home += f"<a href='/kites-old.html'>kite string reel</a> {FILLER}</p>"
    added = write_warc(
        tmp / "added.warc.gz",
        [
            html_response("http://0.example/", home),
            html_response("http://0.example/kites.html", page),
            html_response("http://0.example/kites-old.html", page),
        ],
    )
    rerun = shutil.copytree(work, tmp / "work")
    ok("run", str(crawl), str(added), "--work", str(rerun), "--quiet", "--threads", "2")
    return clusters_of(work), rerun


def test_show_takes_a_cluster_id_that_a_rerun_kept_never_a_shifted_center_id(grown):
    before, work = grown
    after = clusters_of(work)
    apples = next(i for i, (_, members) in before.items() if "http://a.example/apples.html" in members)
    assert after[apples][1] == before[apples][1]  # kept its id and members
    old_center, new_center = before[apples][0], after[apples][0]
    assert new_center != old_center  # the added URLs shifted it
    rows = json_rows(ok("show", str(apples), "--work", str(work), "--format", "json").stdout)
    assert [(r["cluster_id"], r["center_id"], r["url"]) for r in rows] == [
        (apples, new_center, url) for url in after[apples][1]
    ]
    heading = ok("show", str(apples), "--work", str(work)).stdout.splitlines()[0]
    assert heading == f"cluster {apples}: 2 URLs, center http://a.example/apples.html"
    # its center_id now is another kept cluster's id: the added URLs shifted a.example's center_ids
    assert new_center in after and new_center != apples
    shown = json_rows(ok("show", str(new_center), "--work", str(work), "--format", "json").stdout)
    assert [r["url"] for r in shown] == after[new_center][1] != after[apples][1]
    not_ids = [center for center, _ in after.values() if center not in after]
    assert not_ids  # a folder where some center_id is no cluster_id: it is refused, in one line
    message = error("show", str(not_ids[0]), "--work", str(work))
    assert message == (
        f"lshsql: error: {not_ids[0]}: no such cluster (give a cluster_id or a member's URL of the "
        "clusters table)\n"
    )


def test_the_ids_diff_lists_are_the_ids_show_takes(grown):
    before, work = grown
    changed = json_rows(ok("diff", "--work", str(work), "--format", "json").stdout)
    [added] = [row for row in changed if row["event"] == "new"]  # the kite pages, and the shops' homes
    assert added["cluster_id"] not in before
    shown = json_rows(ok("show", str(added["cluster_id"]), "--work", str(work), "--format", "json").stdout)
    assert {r["url"] for r in shown} == set(clusters_of(work)[added["cluster_id"]][1])
    earlier = {url for _, members in before.values() for url in members}
    assert len(shown) == added["size_after"] >= 2 and not earlier & {r["url"] for r in shown}


def test_a_folder_made_before_cluster_ids_is_shown_by_center_id(mirrored, tmp_path):
    _, work = mirrored
    old = shutil.copytree(work, tmp_path / "old")
    clusters = pq.read_table(old / "clusters.parquet")
    pq.write_table(clusters.drop_columns(["cluster_id"]), old / "clusters.parquet")
    center_id = clusters_of(work)[1][0]
    rows = json_rows(ok("show", str(center_id), "--work", str(old), "--format", "json").stdout)
    assert {r["cluster_id"] for r in rows} == {center_id} == {r["center_id"] for r in rows}
    message = error("show", "987654", "--work", str(old))
    assert "987654: no such cluster (give a center_id or a member's URL" in message
    listed = json_rows(ok("clusters", "--work", str(old), "--format", "json").stdout)
    centers = {row["center"]: row["center_id"] for row in clusters.to_pylist()}
    assert listed and all(row["cluster_id"] == centers[row["center"]] for row in listed)


def test_show_html_prints_the_page_exactly_as_written(mirrored):
    _, work = mirrored
    for host in HOSTS:
        for path in FETCHED:
            assert stored_html(work, host + path) == site_page(path)
    result = ok("show", "http://a.example/", "--work", str(work), "--html", "http://b.example/")
    assert result.stdout == site_page("/")


def test_show_errors_are_one_line(mirrored, tmp_path, lshsql_command):
    crawl, work = mirrored

    def show_error(*args: str) -> str:
        return error("show", *args, "--work", str(work), run=lshsql_command)

    assert "987654: no such cluster" in show_error("987654")
    assert "no such cluster" in show_error("http://nowhere.example/")
    message = show_error("http://a.example/", "--html", "http://a.example/apples.html")
    assert "http://a.example/apples.html: not a member of cluster" in message
    message = show_error("http://a.example/durian.html", "--html", "http://a.example/durian.html")
    assert "not fetched" in message
    assert "no cut.parquet yet" in show_error("http://a.example/", "--from", "cut")
    assert "--from must be clusters or cut" in show_error("1", "--from", "tree")
    # the crawl moved after extraction
    moved = shutil.copy(crawl, tmp_path / "crawl.warc.gz")
    extract([str(moved)], tmp_path / "w", ExtractParams(), RESOURCES)
    (tmp_path / "crawl.warc.gz").rename(tmp_path / "elsewhere.warc.gz")
    with pytest.raises(InputError, match="moved or missing"):
        stored_html(tmp_path / "w", "http://a.example/")
    # the crawl was replaced by another file: the record at the offset is not the page's
    write_warc(tmp_path / "crawl.warc.gz", [html_response("http://z.example/", "<p>z</p>")])
    with pytest.raises(InputError, match="the file changed since extraction"):
        stored_html(tmp_path / "w", "http://a.example/cherries.html")


@pytest.mark.slow  # the whole hierarchy of a crawl, then a cut
def test_show_and_mirrors_from_a_cut_of_the_cluster_tree(mirrored):
    _, work = mirrored
    ok("hierarchy", "--work", str(work), "--quiet")
    ok("cut", "--threshold", "0.5", "--work", str(work))
    rows = json_rows(ok("mirrors", "--work", str(work), "--from", "cut", "--format", "json").stdout)
    assert [(r["host_a"], r["host_b"], r["shared_clusters"], r["jaccard"]) for r in rows] == [
        ("a.example", "b.example", 5, 1.0)
    ]
    members = json_rows(
        ok(
            "show", "http://a.example/cherries.html", "--work", str(work), "--from", "cut", "--format", "json"
        ).stdout
    )
    assert [m["url"] for m in members] == [host + "/cherries.html" for host in HOSTS]


# --- stored HTML from every kind of input -------------------------------------------------------------

PAGES = {
    "http://s.example/": "<html><head><title>Caf\u00e9</title></head><body><p>\u00fcber</p></body></html>",
    "http://s.example/two.html": "<title>Two</title><p>second page</p>\n",
}


def extracted(tmp_path, *inputs, **options):
    work = tmp_path / "w"
    extract([str(i) for i in inputs], work, ExtractParams(**options), RESOURCES)
    return work


@pytest.mark.parametrize("kind", ["warc.gz", "warc", "single-member gzip"])
def test_stored_html_from_warc_files(tmp_path, kind):
    records = [html_response(url, html) for url, html in PAGES.items()]
    records.insert(1, {"type": "request", "url": "http://s.example/two.html"})
    if kind == "single-member gzip":  # offsets are in the decompressed stream
        crawl = write_single_member_gzip(tmp_path / "one.warc.gz", records)
    else:
        crawl = write_warc(tmp_path / f"c.{kind}", records, compress=kind == "warc.gz")
    work = extracted(tmp_path, crawl)
    for url, html in PAGES.items():
        assert stored_html(work, url) == html


def test_stored_html_of_a_latin1_page_is_decoded_as_extraction_decoded_it(tmp_path):
    html = "<title>D\u00e9j\u00e0 vu</title><p>na\u00efve</p>"
    crawl = write_warc(
        tmp_path / "c.warc.gz",
        [
            html_response(
                "http://s.example/", html.encode("latin-1"), content_type="text/html; charset=iso-8859-1"
            )
        ],
    )
    assert stored_html(extracted(tmp_path, crawl), "http://s.example/") == html


def test_stored_html_from_json_lines_and_html_folders(tmp_path):
    lines = write_jsonl(tmp_path / "pages.jsonl", [{"url": u, "html": h} for u, h in PAGES.items()])
    work = extracted(tmp_path, lines)
    for url, html in PAGES.items():
        assert stored_html(work, url) == html
    folder = tmp_path / "site"
    (folder / "sub").mkdir(parents=True)
    (folder / "index.html").write_text(PAGES["http://s.example/"], encoding="utf-8")
    (folder / "sub" / "two.html").write_text(PAGES["http://s.example/two.html"], encoding="utf-8")
    work = tmp_path / "w2"
    extract([str(folder)], work, ExtractParams(base_url="http://h.example/"), RESOURCES)
    assert stored_html(work, "http://h.example/index.html") == PAGES["http://s.example/"]
    assert stored_html(work, "http://h.example/sub/two.html") == PAGES["http://s.example/two.html"]


def test_stored_html_from_a_real_arc_file(tmp_path):
    from lshsql.sources.readers import Source, iter_records

    crawl = shared("real-warc", "pywb", "example.arc.gz")
    [record] = [r for r in iter_records(Source(str(crawl), "warc"), 2**30) if r.body]
    work = extracted(tmp_path, crawl)
    assert stored_html(work, record.url) == anchors.decode_html(record.body, record.content_type)[0]


@pytest.mark.slow
def test_show_on_the_shared_crawl_reads_back_every_fetched_member(tmp_path):
    crawl = shared("crawls", "fixture-small.warc.gz")
    work = tmp_path / "w"
    extract([str(crawl)], work, ExtractParams(), RESOURCES)
    run(work, Params(), resources=RESOURCES)
    with duckdb.connect() as con:  # the largest cluster with a fetched member
        [(cluster_id,)] = con.execute(
            "select any_value(clusters.cluster_id) from read_parquet($c) as clusters "
            "semi join (select url from read_parquet($p) where skip_reason is null) as used using (url) "
            "group by clusters.center_id order by max(clusters.size) desc, clusters.center_id limit 1",
            {"c": str(work / "clusters.parquet"), "p": str(work / "pages.parquet")},
        ).fetchall()
    members = json_rows(ok("show", str(cluster_id), "--work", str(work), "--format", "json").stdout)
    assert len(members) == members[0]["size"] >= 2
    fetched = [m for m in members if m["fetched"]]
    assert fetched and all(m["source_file"] == str(crawl) and m["source_offset"] >= 0 for m in fetched)
    for member in fetched:
        html = stored_html(work, member["url"], cluster_id)
        # parsed again, the HTML read back gives the title extraction stored
        assert (
            anchors.parse_page(html.encode("utf-8"), member["url"], "text/html; charset=utf-8").title
            == (member["title"])
        )
    first = fetched[0]["url"]
    shown = ok("show", str(cluster_id), "--work", str(work), "--html", first).stdout
    assert shown == stored_html(work, first)
