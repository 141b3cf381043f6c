"""`lshsql serve`: started on a free port and queried over HTTP, every page kind on the example crawl's run,
a crawl with hostile titles and a dedup folder; the front page rendered by a real headless Chromium."""

from __future__ import annotations

import contextlib
import html
import http.client
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import duckdb
import pyarrow.parquet as pq
import pytest

from lshsql.engines import duckdb as db
from lshsql.errors import InputError
from lshsql.params import Params
from lshsql.pipeline import run
from lshsql.sources.extract import ExtractParams, extract
from lshsql.sources.ingest import IngestParams, ingest
from lshsql.tools import explain, explore
from lshsql.tools.dedup import DedupParams, dedup_files
from lshsql.web import address, make_server
from lshsql.web.pair import marked
from lshsql.web.text import html_text, snippet
from tests.conftest import (
    EXAMPLE_CRAWL,
    REPO,
    clusters_by_id,
    copy_work,
    html_response,
    write_jsonl,
    write_warc,
)

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("LSHSQL_TEST_ARTIFACTS", REPO / "test-artifacts"))
HOSTILE = '<script>alert("x")</script> Evil & "quoted" <b>page</b>'


def one_thread(tmp: Path) -> db.Resources:
    """Spill (if ever) outside the work folder: serving writes nothing into it."""
    return db.Resources(memory_limit="1GB", threads=1, temp_directory=str(tmp / "spill"))


@pytest.fixture(scope="module")
def serving(tmp_path_factory) -> Iterator:
    """serve(work) on a free port in a thread of this process, stopped at the end of the module."""
    servers = []

    def start(work: Path) -> str:
        server = make_server(work, port=0, resources=one_thread(tmp_path_factory.mktemp("serve")))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return address(server).rstrip("/")

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def example(example_run, serving) -> str:
    return serving(example_run)


def get(base: str, path: str) -> tuple[int, str, dict]:
    """Status, body and headers of GET base+path; an error status is an answer, not an exception."""
    try:
        with urllib.request.urlopen(base + path, timeout=60) as response:
            return response.status, response.read().decode("utf-8"), dict(response.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8"), dict(e.headers)


def ok(base: str, path: str) -> str:
    status, body, _ = get(base, path)
    assert status == 200, body
    assert "Traceback" not in body
    return body


def linked_urls(body: str) -> list[str]:
    """The URLs of the /url?u= links of a page, in page order."""
    return [html.unescape(quoted) for quoted in re.findall(r'href="/url\?u=([^"&]+)"', body)]


def test_front_page_lists_the_clusters_largest_first_a_page_at_a_time(example_run, example):
    status, body, headers = get(example, "/?limit=5")
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    assert "default-src 'none'" in headers["Content-Security-Policy"]  # no script runs, nothing loads
    with duckdb.connect() as con:
        top = con.execute(
            "select center, size from read_parquet($p) where is_center order by size desc, center limit 10",
            {"p": str(example_run / "clusters.parquet")},
        ).fetchall()
        n_clusters = con.execute(
            "select count(*) from read_parquet($p) where is_center",
            {"p": str(example_run / "clusters.parquet")},
        ).fetchone()[0]
    from urllib.parse import unquote

    centers = [unquote(u) for u in linked_urls(body)]
    assert centers == [center for center, _ in top[:5]]
    assert f"1&ndash;5 of {n_clusters:,}" in body
    assert "desktop task" in body  # the largest cluster's top terms (README: task-cinnamon-desktop)
    second = ok(example, "/?limit=5&offset=5")
    assert [unquote(u) for u in linked_urls(second)] == [center for center, _ in top[5:10]]
    assert f"6&ndash;10 of {n_clusters:,}" in second and "previous" in second


def test_search_finds_clusters_by_word_url_or_title_and_lists_the_urls(example):
    from urllib.parse import unquote

    body = ok(example, "/?q=btrfs")
    centers = [unquote(u) for u in linked_urls(body.split("<h2>")[0])]
    assert "http://packages.debian.org/sid/btrfs-progs" in centers
    assert "http://packages.debian.org/sid/task-cinnamon-desktop" not in centers
    urls_found = [unquote(u) for u in linked_urls(body.split("<h2>")[1])]
    assert urls_found and all("btrfs" in u.lower() for u in urls_found)
    by_host = ok(example, "/?host=docs.python.example&min_size=3&fetched=1")
    sizes = [int(s.replace(",", "")) for s in re.findall(r'href="/cluster/\d+">([\d,]+)</a>', by_host)]
    assert sizes and min(sizes) >= 3
    for center in linked_urls(by_host):
        assert unquote(center).startswith("https://docs.python.example/")  # every one holds such a member
    assert "No cluster matches." in ok(example, "/?q=zzzznothing")
    by_word = ok(example, "/?q=Arbeitsplatzumgebung")  # a word of the labels only, in any case
    assert "http://packages.debian.org/sid/task-cinnamon-desktop" in [
        unquote(u) for u in linked_urls(by_word)
    ]
    by_title = ok(example, "/?q=exception%20handling")  # a title's words, in any case
    exceptions = quote("https://docs.python.example/3.11/c-api/exceptions.html", safe="")
    assert exceptions in by_title.split("<h2>")[1]


def test_cluster_page_shows_members_by_similarity_with_snippets_and_chaining(example_run, example):
    about = "https://docs.python.example/3.11/about.html"
    with duckdb.connect() as con:
        cluster_id, center_id, size = con.execute(
            "select cluster_id, center_id, size from read_parquet($p) where url = $u",
            {"p": str(example_run / "clusters.parquet"), "u": about},
        ).fetchone()
        similarities = con.execute(
            "select similarity from read_parquet($p) where (u_id = $id or v_id = $id) order by 1 desc",
            {"p": str(example_run / "pairs.parquet"), "id": center_id},
        ).fetchall()
    body = ok(example, f"/cluster/{cluster_id}")
    assert f"Cluster of {size:,}" in body
    members = linked_urls(body.split("<table>")[1])
    assert len(members) == size and members[0] == quote(about, safe="")
    shown = [float(s) for s in re.findall(r'<td class="num">(0\.\d{3}) <a href="/pair', body)]
    assert shown == [round(s, 3) for (s,) in similarities]  # the center's pairs, most similar first
    assert "About these documents Contributors to the Python Documentation" in body  # read from the WARC
    assert "pair share" in body and "least similar pair" in body
    assert "not fetched: a link target only" in body  # github.com/python/cpython/.../ACKS


def test_url_page_is_whats_related_with_why_each_pair_was_kept(example_run, example):
    url = "https://docs.python.example/3.11/library/index.html"
    related = explore.related(
        example_run, url, limit=50, resources=one_thread(example_run.parent)
    ).to_pylist()
    body = ok(example, f"/url?u={quote(url)}")
    from urllib.parse import unquote

    listed = [unquote(u) for u in linked_urls(body.split("What's Related")[1])]
    assert listed[: len(related)] == [r["related_url"] for r in related]
    assert f"What's Related ({len(related)} pairs)" in body
    assert f"{related[0]['similarity']:.3f}" in body
    assert body.count(">why, side by side</a>") == len(related)
    assert "<dt>page</dt><dd>not fetched</dd>" in body  # known from links only
    about = "https://docs.python.example/3.11/about.html"
    assert f'<a href="/capture?u={quote(about, safe="")}">stored capture</a>' in ok(
        example, f"/url?u={about}"
    )


def test_pair_page_explains_and_marks_the_differing_words(example_run, example):
    u, v = (
        "https://docs.python.example/3.11/about.html",
        "https://docs.python.example/3.11/library/filesys.html",
    )
    e = explain.explain_pair(example_run, u, v, one_thread(example_run.parent))
    body = ok(example, f"/pair?u={quote(u)}&v={quote(v)}")
    assert f"kept as a pair, similarity {e['similarity_kept']:.3f}" in body
    assert f"{e['agreeing']} of {e['num_perm']} min-hashes agree" in body
    assert f"<td>{e['shared_terms'][0][0]}</td>" in body
    assert "<del>" in body and "<ins>" in body  # both pages read back and compared word by word


def test_capture_shows_the_stored_page_as_text_never_as_markup(example):
    body = ok(example, "/capture?u=" + quote("https://docs.python.example/3.11/about.html"))
    assert "About these documents" in body
    assert "&lt;title&gt;" in body  # the HTML source, escaped
    assert "<script" not in body.split("<details>")[1]


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/cluster/999999999", 404, "no cluster 999999999"),
        ("/cluster/abc", 404, "no cluster"),
        ("/?min_size=x", 400, "min_size must be a whole number"),
        ("/?limit=0", 400, "limit must be between 1 and 500"),
        ("/?fetched=maybe", 400, "fetched must be 1 or 0"),
        ("/url", 400, "give a URL"),
        ("/url?u=http://nowhere.example/", 404, "not described in this work folder"),
        ("/pair?u=http://nowhere.example/&v=http://x.example/", 404, "not described"),
        ("/capture?u=" + quote("https://github.com/python/cpython/tree/3.11/Misc/ACKS"), 404, "not fetched"),
        ("/no/such/page", 404, "no page /no/such/page"),
        ("/pair?u=https://www.python.org/&v=https://www.python.org/", 400, "the two URLs are the same"),
    ],
)
def test_errors_are_pages_with_a_status_never_a_traceback(example, path, status, says):
    got, body, _ = get(example, path)
    assert got == status
    assert says in html.unescape(body) and "Traceback" not in body
    assert body.startswith("<!DOCTYPE html>")


def test_a_query_stopped_by_ctrl_c_is_a_quiet_503(example, monkeypatch, capfd):
    # Ctrl-C interrupts the DuckDB queries in flight (cli/interrupts.py): their pages say the server is
    # stopping, and nothing is printed as an error
    from lshsql.web import server

    def stopped(site, query):
        raise db.duckdb.InterruptException("INTERRUPT Error: Interrupted!")

    monkeypatch.setitem(server.ROUTES, "/", stopped)
    status, body, _ = get(example, "/")
    assert status == 503 and "the server is stopping" in body
    assert "error" not in capfd.readouterr().err


def test_stopping_the_server_stops_its_queries_and_waits_for_them(example_run, tmp_path, monkeypatch):
    # Python exiting while a request's thread is still inside DuckDB aborts the process (SIGABRT after
    # `stopped`): stop_queries interrupts what runs, waits until no request is in a query, and answers
    # later requests without one
    from lshsql.web import server as web_server
    from lshsql.web.site import connect
    from tests.e2e.test_interrupt import ENDLESS

    entered, started = threading.Event(), []

    def endless(site, query):
        started.append(site)
        with connect(site) as con:
            entered.set()
            con.execute(ENDLESS).fetchall()
        return "never", ""

    monkeypatch.setitem(web_server.ROUTES, "/", endless)
    server = make_server(example_run, port=0, resources=one_thread(tmp_path))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = address(server).rstrip("/")
    answers = []
    request = threading.Thread(target=lambda: answers.append(get(base, "/")), daemon=True)
    try:
        request.start()
        assert entered.wait(60)
        time.sleep(0.3)  # into the query
        before = time.monotonic()
        assert server.stop_queries(timeout=30) is True
        assert time.monotonic() - before < 10
        request.join(30)
        assert answers and answers[0][0] == 503 and "the server is stopping" in answers[0][1]
        assert get(base, "/")[0] == 503 and len(started) == 1  # no query for a request after stopping
    finally:
        server.shutdown()
        server.server_close()


def test_stop_queries_says_when_a_request_outlasts_its_wait(example_run, tmp_path, monkeypatch):
    from lshsql.web import server as web_server

    inside = threading.Event()

    def slow(site, query):  # not in DuckDB, so no interrupt shortens it
        inside.set()
        time.sleep(1.5)
        return "slow", ""

    monkeypatch.setitem(web_server.ROUTES, "/", slow)
    server = make_server(example_run, port=0, resources=one_thread(tmp_path))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = address(server).rstrip("/")
    request = threading.Thread(target=lambda: get(base, "/"), daemon=True)
    try:
        request.start()
        assert inside.wait(30)
        assert server.stop_queries(timeout=0.3) is False
        request.join(30)
        assert server.stop_queries(timeout=5) is True  # once it has ended
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_ctrl_c_with_requests_in_flight_stops_the_server_cleanly(example_run):
    process = subprocess.Popen(
        [sys.executable, "-m", "lshsql", "serve", "--work", str(example_run), "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    base = process.stdout.readline().split(" at ")[1].split()[0].rstrip("/")
    stop, answered = threading.Event(), []

    def ask(number: int) -> None:
        paths = ["/", "/?q=python", "/url?u=https://docs.python.example/3.11/index.html", f"/?page={number}"]
        while not stop.is_set():
            with contextlib.suppress(OSError, http.client.HTTPException):  # the server gone meanwhile
                answered.append(get(base, paths[len(answered) % len(paths)])[0])

    askers = [threading.Thread(target=ask, args=(n,), daemon=True) for n in range(8)]
    for asker in askers:
        asker.start()
    time.sleep(2)
    os.killpg(process.pid, signal.SIGINT)
    try:
        out, err = process.communicate(timeout=60)
    finally:
        stop.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0 and out.endswith("stopped\n"), (process.returncode, err)
    assert err == "" and set(answered) <= {200, 503} and 200 in answered


def cluster_link(body: str) -> str:
    """The one /cluster/ link of a URL's page."""
    [link] = re.findall(r'href="(/cluster/\d+)"', body)
    return link


def members_shown(body: str) -> list[str]:
    """The members a cluster's page lists, in URL order."""
    return sorted(urllib.parse.unquote(u) for u in linked_urls(body.split("<table>")[1]))


def test_a_cluster_link_kept_from_a_run_opens_the_same_cluster_after_a_rerun(
    example_run, example, serving, tmp_path
):
    # an unrelated crawl added and the folder rerun: its URLs sort first, so every url_id shifts
    pages = [
        html_response(f"http://0.example/{i}.html", f"<title>Kites {i}</title><p>kites</p>") for i in range(3)
    ]
    added = write_warc(tmp_path / "added.warc.gz", pages)
    grown = copy_work(example_run, tmp_path / "grown")
    extract([str(EXAMPLE_CRAWL), str(added)], grown, ExtractParams(), one_thread(tmp_path))
    run(grown, Params(), resources=one_thread(tmp_path))
    before, after = clusters_by_id(example_run), clusters_by_id(grown)
    larger = [i for i, (_, _, members) in before.items() if len(members) >= 3]
    kept = [i for i in larger if i in after and after[i][2] == before[i][2] and after[i][1] != before[i][1]]
    assert len(kept) >= 0.9 * len(larger)  # same members and id, another center_id
    cluster_id = max(kept, key=lambda i: (len(before[i][2]), -i))  # the largest cluster the rerun kept
    center, center_before, members = before[cluster_id]
    link = cluster_link(ok(example, f"/url?u={quote(center, safe='')}"))  # as a user keeps it
    assert link == f"/cluster/{cluster_id}"
    base = serving(grown)
    body = ok(base, f"{link}?limit=500")
    assert members_shown(body) == members and f"Cluster of {len(members):,}" in body
    assert cluster_link(ok(base, f"/url?u={quote(center, safe='')}")) == link
    # the center_id it had names another cluster now, or none
    status, old, _ = get(base, f"/cluster/{center_before}?limit=500")
    assert status == 404 or members_shown(old) != members


def test_a_link_to_a_cluster_that_merged_opens_the_cluster_holding_its_pages(tmp_path, serving):
    """Run 1: {a,b} 1, {c,d} 2, {e..i} 3; run 2: {c,d} joins {a,b} (2 merged into 1); run 3: {a..d} joins
    {e..i} (1 merged into 3); run 4: only j and k (3 gone). A saved link follows the merges."""
    from lshsql.tools.show import cluster_members as explore_show
    from tests.conftest import write_table

    work, params = tmp_path / "w", Params(weighting="none", threshold=0.5)
    runs = (
        {"a": "x", "b": "x", "c": "y", "d": "y", **dict.fromkeys("efghi", "z")},
        {**dict.fromkeys("abcd", "x"), **dict.fromkeys("efghi", "z")},
        dict.fromkeys("abcdefghi", "z"),
        dict.fromkeys("jk", "w"),
    )
    bodies = []
    for n, named in enumerate(runs):
        rows = [{"url": u, "term": f"{word}{i}"} for u, word in named.items() for i in range(10)]
        run(work, params, bags=write_table(tmp_path / f"b{n}.parquet", rows), resources=one_thread(tmp_path))
        if n == 2:
            base = serving(work)
            bodies = [get(base, f"/cluster/{i}") for i in (1, 2, 3)]
            with pytest.raises(InputError, match=r"^2: merged into cluster 1 in run 2, now cluster 3 \("):
                explore_show(work, 2)
    for status, body, _ in bodies:  # all three open the cluster of the nine URLs, cluster 3
        assert status == 200 and members_shown(body) == list("abcdefghi") and "Cluster of 9" in body
    assert "Cluster 2 merged into cluster 1 in run 2, which is now cluster 3: this is cluster 3." in (
        html.unescape(bodies[1][1])
    )
    assert "Cluster 1 merged into cluster 3 in run 3: this is cluster 3." in html.unescape(bodies[0][1])
    assert 'class="notice"' not in bodies[2][1]
    base = serving(work)  # after run 4, whose URLs are others
    said = {}
    for cluster_id in (1, 2, 3):
        status, body, _ = get(base, f"/cluster/{cluster_id}")
        assert status == 404 and "Traceback" not in body
        said[cluster_id] = re.findall(r'class="error">([^<]*)<', body)[0]
    assert html.unescape(said[1]) == "no cluster 1: merged into cluster 3 in run 3, which ended since"
    with pytest.raises(InputError, match=r"^1: merged into cluster 3 in run 3, which ended since \("):
        explore_show(work, 1)
    assert html.unescape(said[3]) == "no cluster 3: it ended in run 4; none of its members is in one now"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, serving) -> tuple[Path, str]:
    """A crawl whose pages carry markup in their titles, anchor texts and bodies, extracted and run."""
    tmp = tmp_path_factory.mktemp("hostile")
    home = "<title>Home</title>" + "".join(
        f"<p><a href='/{name}.html'>evil {name} page</a> about {words}</p>"
        for name, words in (("a", "tricks"), ("b", "tricks"), ("c", "apples"), ("d", "bananas"))
    )
    evil = f"<title>{html.escape(HOSTILE)}</title><p>evil &lt;script&gt;alert(2)&lt;/script&gt; body</p>"
    pages = [
        html_response("http://evil.example/", home),
        html_response("http://evil.example/a.html", evil),
        html_response("http://evil.example/b.html", evil + "<p>more</p>"),
        html_response("http://evil.example/c.html", "<title>Apple orchard</title><p>apples</p>"),
        html_response("http://evil.example/d.html", "<title>Banana plantation</title><p>bananas</p>"),
    ]
    crawl = write_warc(tmp / "evil.warc.gz", pages)
    work = tmp / "work"
    extract([str(crawl)], work, ExtractParams(), one_thread(tmp))
    run(work, Params(min_df=1), resources=one_thread(tmp))
    return work, serving(work)


def test_hostile_titles_and_text_are_shown_escaped_on_every_page(hostile):
    work, base = hostile
    with duckdb.connect() as con:
        cluster_id = con.execute(
            "select cluster_id from read_parquet($p) where url = 'http://evil.example/a.html'",
            {"p": str(work / "clusters.parquet")},
        ).fetchone()[0]
        assert (
            con.execute(
                "select title from read_parquet($p) where url = 'http://evil.example/a.html'",
                {"p": str(work / "pages.parquet")},
            ).fetchone()[0]
            == HOSTILE
        )
    a, b = quote("http://evil.example/a.html"), quote("http://evil.example/b.html")
    for path in (
        "/",
        "/?q=evil",
        f"/cluster/{cluster_id}",
        f"/url?u={a}",
        f"/capture?u={a}",
        f"/pair?u={a}&v={b}",
    ):
        body = ok(base, path)
        assert "<script" not in body and "<b>page</b>" not in body, path
        assert html.escape(HOSTILE) in body or "&lt;script&gt;alert(2)" in body, path
    assert "evil &lt;script&gt;alert(2)&lt;/script&gt; body" in ok(base, f"/cluster/{cluster_id}")


def test_a_folder_made_before_cluster_ids_is_served_by_center_id(hostile, serving, tmp_path):
    work, _ = hostile
    old = copy_work(work, tmp_path / "old")
    clusters = pq.read_table(old / "clusters.parquet")
    pq.write_table(clusters.drop_columns(["cluster_id"]), old / "clusters.parquet")
    [(center_id, size)] = {
        (row["center_id"], row["size"])
        for row in clusters.to_pylist()
        if row["url"] == "http://evil.example/a.html"
    }
    base = serving(old)
    assert f'href="/cluster/{center_id}"' in ok(base, "/")
    assert f"Cluster of {size:,}" in ok(base, f"/cluster/{center_id}")
    assert cluster_link(ok(base, f"/url?u={quote('http://evil.example/a.html')}")) == f"/cluster/{center_id}"


@pytest.fixture(scope="module")
def dedup_site(tmp_path_factory, serving) -> tuple[Path, str]:
    """A dedup of 6 documents: one an edited copy of another, one with an id and text holding markup."""
    tmp = tmp_path_factory.mktemp("dedup")
    base = " ".join(f"word{i}" for i in range(60))
    docs = [
        {"id": "orig", "text": base},
        {"id": "copy", "text": base.replace("word30", "changed")},
        {"id": "<img src=x onerror=alert(1)>", "text": "<script>alert(3)</script> " + base[:40]},
        *({"id": f"other{i}", "text": " ".join(f"t{i}w{j}" for j in range(50))} for i in range(3)),
    ]
    corpus = write_jsonl(tmp / "docs.jsonl", docs)
    work = tmp / "work"
    dedup_files([str(corpus)], work, DedupParams(), resources=one_thread(tmp))
    return work, serving(work)


def test_a_dedup_folder_shows_documents_and_their_differences(dedup_site):
    work, base = dedup_site
    body = ok(base, "/")
    assert "&lt;img src=x onerror=alert(1)&gt;" in body and "<img" not in body
    with duckdb.connect() as con:
        orig, copy, cluster_id = con.execute(
            "select min(url), max(url), any_value(cluster_id) from read_parquet($p) where size = 2",
            {"p": str(work / "clusters.parquet")},
        ).fetchone()
    cluster = ok(base, f"/cluster/{cluster_id}")
    assert "word0 word1 word2" in cluster  # the document's text, read again from docs.jsonl
    pair = ok(base, f"/pair?u={quote(orig)}&v={quote(copy)}")
    assert "duplicate of orig" in pair
    assert "<del>word30</del>" in pair and "<ins>changed</ins>" in pair


def test_an_ingested_folder_shows_each_documents_text(tmp_path, serving):
    texts = ["apples pears plums fruit market stall", "apples pears plums fruit market shop"]
    texts += ["cars trucks buses roads traffic", "violin cello piano orchestra music"]
    docs = [{"id": f"d{i}", "title": f"Doc {i} <i>", "text": text} for i, text in enumerate(texts)]
    work = tmp_path / "work"
    ingest([str(write_jsonl(tmp_path / "docs.jsonl", docs))], work, IngestParams(), one_thread(tmp_path))
    run(work, Params(threshold=0.3), resources=one_thread(tmp_path))
    base = serving(work)
    cluster = ok(base, "/cluster/1")  # d0 and d1, their text read again at each line's offset
    assert "Doc 0 &lt;i&gt;" in cluster and "<i>" not in cluster
    assert re.findall(r'class="snippet">([^<]*) <a', cluster) == texts[:2]
    pair = ok(base, "/pair?u=d0&v=d1")
    assert "market <del>stall</del>" in pair and "market <ins>shop</ins>" in pair


def test_a_missing_or_unfinished_work_folder_is_a_one_line_error_at_start(tmp_path, example_extraction):
    with pytest.raises(InputError, match="no such work folder"):
        make_server(tmp_path / "missing", port=0)
    with pytest.raises(InputError, match="no urls yet; run `lshsql run"):
        make_server(example_extraction, port=0)


def test_the_command_fails_in_one_line_with_exit_2(lshsql_command, tmp_path):
    result = lshsql_command("serve", "--work", str(tmp_path / "missing"), "--port", "0")
    assert result.returncode == 2
    assert result.stderr.strip() == f"lshsql: error: {tmp_path / 'missing'}: no such work folder"


def test_it_binds_the_loopback_address_by_default(example_run, tmp_path):
    server = make_server(example_run, port=0, resources=one_thread(tmp_path))
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert address(server) == f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.server_close()


def test_marked_wraps_the_runs_of_words_only_in_one_side():
    assert marked("a b c d", "a x c d e") == ("a <del>b</del> c d", "a <ins>x</ins> c d <ins>e</ins>")
    assert marked("<i>", "<i> &") == ("&lt;i&gt;", "&lt;i&gt; <ins>&amp;</ins>")


def test_marked_finds_each_changed_word_of_a_long_text_of_common_words():
    # thousands of words from a small Zipf-like vocabulary: the case where the most common words are so
    # frequent that the diff must not try every one of them as the start of a match
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(300)]
    left = rng.choices(vocabulary, [1 / (i + 2.7) for i in range(300)], k=4000)
    right = list(left)
    changed = sorted(rng.sample(range(4000), 25))
    for i in changed:
        right[i] = f"new{i}"
    out_left, out_right = marked(" ".join(left), " ".join(right))
    assert re.findall(r"<ins>([^<]*)</ins>", out_right) == [f"new{i}" for i in changed]
    assert re.findall(r"<del>([^<]*)</del>", out_left) == [left[i] for i in changed]
    assert re.sub(r"</?del>", "", out_left) == " ".join(left)


def test_html_text_is_what_a_reader_sees():
    page = "<html><head><title>T</title><style>p{}</style></head><body><p>one <b>two</b></p>"
    page += "<script>var x;</script><!-- c --><p>three</p></body></html>"
    assert html_text(page) == "one two three"
    assert snippet("aaa bbb ccc", 8) == "aaa bbb ..."


def chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={cwd / 'profile'}", *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=90, cwd=cwd)


def test_a_headless_browser_renders_the_front_page(example, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed (Debian: apt-get install -y chromium); browser check skipped")
    dom = chromium("--dump-dom", example + "/", cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr
    assert 'class="clusters"' in dom.stdout and "task-cinnamon-desktop" in dom.stdout
    shot = tmp_path / "front.png"
    result = chromium(f"--screenshot={shot}", "--window-size=1280,1600", example + "/", cwd=tmp_path)
    assert result.returncode == 0 and shot.exists(), result.stderr
    from matplotlib.image import imread

    pixels = (imread(shot)[..., :3] * 255).round().astype(int)
    assert pixels.shape[:2] == (1600, 1280)
    assert tuple(pixels[3, 3]) == (255, 255, 255)  # the page's white, styled by the inline CSS
    colours = {tuple(p) for p in pixels[::5, ::5].reshape(-1, 3)}
    assert (0xF3, 0xF5, 0xF8) in colours  # the filter bar and table heads
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, ARTIFACTS / "serve-front.png")


def test_a_request_for_another_host_name_is_refused(example):
    """A page elsewhere that rebinds its DNS name to 127.0.0.1 makes the browser send its own name as Host."""
    port = urllib.parse.urlsplit(example).port
    for host, status in ((f"attacker.example:{port}", 400), (f"localhost:{port}", 200)):
        request = urllib.request.Request(example, headers={"Host": host})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                answer, body = response.status, response.read().decode("utf-8")
        except urllib.error.HTTPError as e:
            answer, body = e.code, e.read().decode("utf-8")
        assert answer == status, host
        if status == 400:
            assert "its own address only (Host header)" in body


def test_the_pagers_keep_a_chosen_page_size(example_run, example):
    with duckdb.connect() as con:
        cluster_id, center = con.execute(
            "select cluster_id, center from read_parquet($p) where is_center order by size desc, center limit 1",
            {"p": str(example_run / "clusters.parquet")},
        ).fetchone()
    body = ok(example, f"/cluster/{cluster_id}?limit=2")
    assert html.escape(f"/cluster/{cluster_id}?limit=2&offset=2") in body
    body = ok(example, f"/url?u={quote(center, safe='')}&limit=2")
    assert "limit=2&amp;offset=2" in body
