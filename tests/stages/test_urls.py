"""Tests for lshsql.urls: each canonicalization rule on its own, then the public functions."""

import contextlib
import inspect
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests
import tldextract
from hypothesis import given, settings
from hypothesis import strategies as st

from lshsql import urls
from lshsql.urls import (
    TRACKING_PARAMS,
    UrlError,
    UrlOptions,
    canonicalize,
    host_of,
    is_internal,
    link_kind,
    registered_domain,
    resolve,
)

REPO = Path(__file__).resolve().parents[2]


# --- the seven reference examples -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://mypunia.com", "http://mypunia.com/"),
        ("http://mypunia.com/search.php#d1", "http://mypunia.com/search.php"),
        ("http://mypunia.com:80", "http://mypunia.com/"),
        ("HTTP://Mypunia.com", "http://mypunia.com/"),
        ("http://mypunia.com/%7Eroot", "http://mypunia.com/~root"),
        ("http://mypunia.com/p1//p3.php", "http://mypunia.com/p1/p3.php"),
        ("http://mypunia.com/p1/p2/./../p3.php", "http://mypunia.com/p1/p3.php"),
    ],
)
def test_reference_examples(url, expected):
    assert canonicalize(url) == expected


# --- rules, one at a time ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (" \x00http://a.com/ \x1f", "http://a.com/"),
        ("http://a.\tcom/x\ny\r", "http://a.com/xy"),
        ("\xa0x", "\xa0x"),
    ],
)
def test_strip_whitespace(raw, expected):
    assert urls.strip_whitespace(raw) == expected


def test_backslashes_to_slashes_only_before_query_and_fragment():
    assert urls.backslashes_to_slashes(r"http:\\a.com\b?c\d#e\f") == r"http://a.com/b?c\d#e\f"
    assert urls.backslashes_to_slashes(r"a\b#c\d?e") == r"a/b#c\d?e"


def test_normalize_scheme_lowercases_and_rejects_non_web_schemes():
    assert urls.normalize_scheme("HTTPS") == "https"
    with pytest.raises(UrlError, match="unsupported scheme 'ftp'"):
        urls.normalize_scheme("FTP")
    with pytest.raises(UrlError, match="missing scheme"):
        urls.normalize_scheme("")


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("Mypunia.COM", "mypunia.com"),
        ("mypunia.com.", "mypunia.com"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("BÜCHER.example.", "xn--bcher-kva.example"),
        ("пример.рф", "xn--e1afmkfd.xn--p1ai"),
        ("faß.de", "xn--fa-hia.de"),  # non-transitional, as browsers: not 'fass.de'
        ("例え。テスト", "xn--r8jz45g.xn--zckzah"),  # ideographic full stop is a dot
        ("☃.net", "xn--n3h.net"),  # IDNA 2008 forbids it, IDNA 2003 (and browsers) accept it
        ("a_b.bücher.de", "a_b.xn--bcher-kva.de"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("127.0.0.1", "127.0.0.1"),
        ("[0:0::1]", "[::1]"),
        ("[2001:DB8:0:0:0:0:0:1]", "[2001:db8::1]"),
    ],
)
def test_normalize_host(host, expected):
    assert urls.normalize_host(host) == expected


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("", "missing host"),
        ("...", "missing host"),
        ("exa mple.com", "invalid host"),
        ("a<b", "invalid host"),
        ("::1", "invalid host"),  # IPv6 only in brackets
        ("a..bücher.de", "invalid international host"),
        ("[1::2::3]", "invalid IPv6 host"),
    ],
)
def test_normalize_host_rejects(host, reason):
    with pytest.raises(UrlError, match=reason):
        urls.normalize_host(host)


@pytest.mark.parametrize(
    ("port", "scheme", "expected"),
    [(None, "http", ""), (80, "http", ""), (443, "https", ""), (443, "http", ":443"), (80, "https", ":80"),
     (8080, "http", ":8080"), (0, "http", ":0")],
)  # fmt: skip
def test_normalize_port_removes_only_the_default(port, scheme, expected):
    assert urls.normalize_port(port, scheme) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("%7Eroot", "~root"),
        ("%7e%2D%2e%5F%30%41%7a", "~-._0Az"),  # every unreserved class is decoded
        ("%2f", "%2F"),  # reserved: stays escaped, hex uppercased
        ("a%2fb%3d%e4", "a%2Fb%3D%E4"),
        ("100%", "100%25"),  # a stray '%' is escaped, so decoding later can't build a new escape
        ("%zz%4", "%25zz%254"),
        ("%%3441", "%25441"),
        ("plain", "plain"),
    ],
)
def test_normalize_percent_escapes(text, expected):
    assert urls.normalize_percent_escapes(text) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/p1//p3.php", "/p1/p3.php"), ("///a////b//", "/a/b/"), ("/a/b", "/a/b"), ("", "")],
)
def test_collapse_slashes(path, expected):
    assert urls.collapse_slashes(path) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/p1/p2/./../p3.php", "/p1/p3.php"),
        ("/a/b/c/./../../g", "/a/g"),  # RFC 3986 5.2.4 example
        ("/a/b/..", "/a/"),
        ("/a/b/.", "/a/b/"),
        ("/..", "/"),
        ("/../../x", "/x"),
        ("/./x/", "/x/"),
        ("/a/..b/.c", "/a/..b/.c"),  # dots inside names are not dot segments
        ("/", "/"),
        ("", ""),
    ],
)
def test_remove_dot_segments(path, expected):
    assert urls.remove_dot_segments(path) == expected


def test_empty_path_to_slash():
    assert urls.empty_path_to_slash("") == "/"
    assert urls.empty_path_to_slash("/x") == "/x"


def test_strip_query_params_is_case_insensitive_and_exact():
    query = "a=1&UTM_Source=x&utm_sourced=2&fbclid&&b="
    assert urls.strip_query_params(query, frozenset({"utm_source", "FBCLID"})) == "a=1&utm_sourced=2&b="
    assert urls.strip_query_params("utm_source=x", TRACKING_PARAMS) == ""


def test_sort_query_params_is_stable_and_keeps_blank_values():
    assert urls.sort_query_params("b=2&a=2&c&a=1&&a=") == "a=2&a=1&a=&b=2&c"


def test_tracking_params_list():
    assert {"utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "gclid", "fbclid",
            "msclkid", "mc_cid", "mc_eid", "yclid", "_ga", "igshid"} <= TRACKING_PARAMS  # fmt: skip
    assert all(name == name.lower() for name in TRACKING_PARAMS)


# --- canonicalize as a whole --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://пример.рф/", "http://xn--e1afmkfd.xn--p1ai/"),
        ("http://a.com/%2f%41", "http://a.com/%2FA"),
        ("http://a.com/päth/ä?q=ü", "http://a.com/p%C3%A4th/%C3%A4?q=%C3%BC"),
        ("http://a.com/a b?q=a b", "http://a.com/a%20b?q=a%20b"),
        ("http://a.com/p?q=a+b", "http://a.com/p?q=a+b"),  # '+' is left alone
        ("https://a.com:443/x", "https://a.com/x"),
        ("https://a.com:80/x", "https://a.com:80/x"),
        ("http://a.com:8080", "http://a.com:8080/"),
        ("http://a.com:/x", "http://a.com/x"),
        ("http://a.com/x?", "http://a.com/x"),
        ("http://a.com/x?#frag", "http://a.com/x"),
        ("http://a.com/x?b=2&a=1&utm_source=z", "http://a.com/x?b=2&a=1&utm_source=z"),  # order kept
        ("http://WWW.A.com./X/Y.HTML", "http://www.a.com/X/Y.HTML"),  # only scheme and host lowercased
        ("http://User:PW@A.com/", "http://User:PW@a.com/"),  # userinfo kept
        ("http://@a.com/", "http://a.com/"),
        ("http://[::0:1]:80/x", "http://[::1]/x"),
        ("http://a.com/%2e%2E/x/%2e/y", "http://a.com/x/y"),  # escaped dots are dots
        ("  http://a.com/x\n/y  ", "http://a.com/x/y"),
        ("http:\\\\a.com\\x\\y?q=\\", "http://a.com/x/y?q=%5C"),
        ("http://a.com/<x>", "http://a.com/%3Cx%3E"),
    ],
)
def test_canonicalize(url, expected):
    assert canonicalize(url) == expected


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://a.com/", "unsupported scheme 'ftp'"),
        ("mailto:x@a.com", "unsupported scheme 'mailto'"),
        ("a.com/x", "missing scheme"),
        ("http:///x", "missing host"),
        ("http://:80/x", "missing host"),
        ("http://a.com:99999/", "invalid port"),
        ("http://a.com:8o/", "invalid port"),
        ("http://[::1/", "malformed URL"),
        ("http://exa mple.com/", "invalid host"),
        ("http://[v1.fe]/", "invalid IPv6 host"),  # an IPvFuture literal must not become a DNS name
    ],
)
def test_canonicalize_rejects(url, reason):
    with pytest.raises(UrlError, match=reason):
        canonicalize(url)


def test_url_error_is_a_value_error():
    assert issubclass(UrlError, ValueError)


def test_optional_rules_are_off_by_default_and_work_together():
    url = "http://a.com/?b=2&utm_source=x&a=1&UTM_MEDIUM=y&a=0"
    assert canonicalize(url) == url
    assert (
        canonicalize(url, UrlOptions(sort_query=True))
        == "http://a.com/?UTM_MEDIUM=y&a=1&a=0&b=2&utm_source=x"
    )
    stripped = UrlOptions(strip_params=TRACKING_PARAMS)
    assert canonicalize(url, stripped) == "http://a.com/?b=2&a=1&a=0"
    both = UrlOptions(sort_query=True, strip_params=TRACKING_PARAMS)
    assert canonicalize(url, both) == "http://a.com/?a=1&a=0&b=2"
    assert canonicalize("http://a.com/x?utm_source=x#f", stripped) == "http://a.com/x"


# --- link_kind and resolve ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("href", "kind"),
    [
        ("javascript:void(0)", "javascript"),
        ("  JavaScript:go()", "javascript"),
        ("java\tscript:go()", "javascript"),
        ("mailto:a@b.com", "mailto"),
        ("MAILTO:a@b.com", "mailto"),
        ("tel:+4412345", "tel"),
        ("data:text/html,hi", "data"),
        ("#top", "fragment_only"),
        ("  #", "fragment_only"),
        ("", "empty"),
        (" \n ", "empty"),
        ("ftp://a.com/f", "other_scheme"),
        ("file:///etc/passwd", "other_scheme"),
        ("irc://irc.libera.chat/x", "other_scheme"),
        ("http://a.com/", "web"),
        ("HTTPS://a.com/", "web"),
        ("//cdn.a.com/x", "web"),
        ("../x", "web"),
        ("?a=1", "web"),
        ("page.html#top", "web"),
    ],
)
def test_link_kind(href, kind):
    assert link_kind(href) == kind


BASE = "http://www.a.com/dir/sub/page.html?x=1#frag"


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("../other.html", "http://www.a.com/dir/other.html"),
        ("../../../../x", "http://www.a.com/x"),
        ("next.html", "http://www.a.com/dir/sub/next.html"),
        ("/root", "http://www.a.com/root"),
        ("//cdn.a.com/lib.js", "http://cdn.a.com/lib.js"),
        ("?a=1", "http://www.a.com/dir/sub/page.html?a=1"),
        ("  next.html \n", "http://www.a.com/dir/sub/next.html"),
        ("ne\nxt\t.html", "http://www.a.com/dir/sub/next.html"),
        ("https://Other.com:443/a/./b#x", "https://other.com/a/b"),
        ("..\\x.html", "http://www.a.com/dir/x.html"),
        ("page two.html", "http://www.a.com/dir/sub/page%20two.html"),
    ],
)
def test_resolve(href, expected):
    assert resolve(href, BASE) == expected


def test_resolve_applies_the_optional_rules():
    options = UrlOptions(sort_query=True, strip_params=TRACKING_PARAMS)
    assert resolve("x?b=1&fbclid=z&a=2#f", BASE, options) == "http://www.a.com/dir/sub/x?a=2&b=1"


def test_resolve_protocol_relative_keeps_the_page_scheme():
    assert resolve("//cdn.a.com/x", "https://a.com/") == "https://cdn.a.com/x"


@pytest.mark.parametrize(
    "href", ["#top", "", "javascript:void(0)", "mailto:a@b.com", "tel:1", "data:,x", "ftp://a/"]
)
def test_resolve_skips_non_web_links(href):
    assert resolve(href, BASE) is None


def test_resolve_skips_relative_links_on_non_web_pages():
    assert resolve("x.html", "ftp://a.com/dir/") is None


@pytest.mark.parametrize(
    ("href", "base"), [("http://[::1/x", BASE), ("http://a.com:99999/", BASE), ("x", "")]
)
def test_resolve_raises_for_malformed_links(href, base):
    with pytest.raises(UrlError):
        resolve(href, base)


# --- hosts and sites ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "host"),
    [("http://User@WWW.A.com.:8080/x", "www.a.com"), ("https://bücher.example/", "xn--bcher-kva.example"),
     ("http://[::1]:80/", "[::1]"), ("ftp://files.a.com/", "files.a.com")],
)  # fmt: skip
def test_host_of(url, host):
    assert host_of(url) == host


def test_host_of_rejects_urls_without_host():
    with pytest.raises(UrlError, match="missing host"):
        host_of("mailto:a@b.com")


@pytest.mark.parametrize(
    ("url_or_host", "domain"),
    [
        ("www.bbc.co.uk", "bbc.co.uk"),
        ("WWW.BBC.CO.UK.", "bbc.co.uk"),
        ("http://news.bbc.co.uk:8080/x", "bbc.co.uk"),
        ("bbc.co.uk", "bbc.co.uk"),
        ("co.uk", "co.uk"),  # a public suffix is its own site
        ("a.b.example", "b.example"),  # reserved TLD: last label is the suffix
        ("docs.python.example", "python.example"),
        ("http://x.y.test/", "y.test"),
        ("localhost", "localhost"),
        ("http://localhost:8000/", "localhost"),
        ("a.b.notatld", "b.notatld"),
        ("192.168.0.1", "192.168.0.1"),
        ("http://10.0.0.1:8080/x", "10.0.0.1"),
        ("http://[2001:db8::1]/", "[2001:db8::1]"),
        ("shop.пример.рф", "xn--e1afmkfd.xn--p1ai"),
        ("user.github.io", "github.io"),  # the list's private section is not used
    ],
)
def test_registered_domain(url_or_host, domain):
    assert registered_domain(url_or_host) == domain


@pytest.mark.parametrize(
    ("source", "target", "internal"),
    [
        ("http://www.a.com/x", "https://blog.a.com/y", True),
        ("http://a.com/", "http://A.COM:8080/z", True),
        ("http://www.bbc.co.uk/", "http://news.bbc.co.uk/", True),
        ("http://a.com/", "http://b.com/", False),
        ("http://a.co.uk/", "http://b.co.uk/", False),
        ("http://a.com/", "http://a.com.evil.net/", False),
        ("http://10.0.0.1/", "http://10.0.0.2/", False),
    ],
)
def test_is_internal(source, target, internal):
    assert is_internal(source, target) is internal


def test_registered_domain_needs_no_network_and_writes_no_cache(monkeypatch, tmp_path):
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled in this test")

    def no_http(*args, **kwargs):
        raise AssertionError("tldextract made an HTTP request")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(requests.Session, "request", no_http)
    for var in ("HOME", "XDG_CACHE_HOME", "TLDEXTRACT_CACHE"):
        monkeypatch.setenv(var, str(tmp_path))
    default_cache = Path(inspect.signature(tldextract.TLDExtract).parameters["cache_dir"].default)
    default_cache_existed = default_cache.exists()
    urls._psl_extractor.cache_clear()
    try:
        assert registered_domain("www.bbc.co.uk") == "bbc.co.uk"
        assert registered_domain("a.b.kawasaki.jp") == "a.b.kawasaki.jp"  # wildcard rule from the snapshot
    finally:
        urls._psl_extractor.cache_clear()
    assert attempts == []
    assert list(tmp_path.iterdir()) == []
    assert default_cache.exists() == default_cache_existed


def test_import_is_cheap_and_lazy():
    code = (
        "import sys, lshsql.urls as u\n"
        "heavy = {'tldextract', 'requests', 'idna'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
        "u.registered_domain('www.bbc.co.uk')\n"
        "assert 'tldextract' in sys.modules\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# --- properties -----------------------------------------------------------------------------------------

_LABEL = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9-]{0,8}[A-Za-z0-9])?", fullmatch=True)
_HOST = st.one_of(
    st.lists(_LABEL, min_size=1, max_size=4).map(".".join),
    st.sampled_from(["bücher.example", "пример.рф", "例え。テスト", "WWW.Example.COM.", "[::1]", "10.0.0.1"]),
)
_SEGMENT = st.one_of(
    st.sampled_from(
        [".", "..", "", "%2e", "%2E%2e", "%7e", "%7E%41", "%2f", "%zz", "%", "%%3441", "a b", "ä"]
    ),
    st.text(max_size=6),
)
_PATH = st.lists(_SEGMENT, max_size=6).map(lambda segments: "".join("/" + s for s in segments))
_PART = st.one_of(st.none(), st.text(max_size=12), st.sampled_from(["", "a=1&b=%7e", "q=ä x", "%41%2f&&"]))


@st.composite
def http_urls(draw):
    """Valid http(s) URLs built from generated parts; paths, queries and fragments may hold any text."""
    url = draw(st.sampled_from(["http", "https", "HTTP", "hTtPs"])) + "://"
    if draw(st.booleans()):
        url += draw(st.from_regex(r"[A-Za-z0-9._~-]{1,6}(:[A-Za-z0-9%]{0,6})?", fullmatch=True)) + "@"
    url += draw(_HOST)
    port = draw(st.one_of(st.none(), st.integers(0, 65535)))
    url += "" if port is None else f":{port}"
    url += draw(_PATH)
    query, fragment = draw(_PART), draw(_PART)
    return url + ("" if query is None else "?" + query) + ("" if fragment is None else "#" + fragment)


@settings(max_examples=400, deadline=None)
@given(http_urls(), st.booleans(), st.booleans())
def test_canonicalize_is_idempotent(url, sort_query, strip):
    options = UrlOptions(sort_query=sort_query, strip_params=TRACKING_PARAMS if strip else frozenset())
    once = canonicalize(url, options)
    assert canonicalize(once, options) == once
    assert once.isascii() and "#" not in once


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(st.text(), st.text().map(lambda t: "http://" + t), st.text().map(lambda t: "https://a.com" + t))
)
def test_canonicalize_raises_only_url_error_on_arbitrary_text(text):
    try:
        once = canonicalize(text)
    except UrlError:
        return
    assert canonicalize(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_link_functions_raise_only_url_error_on_arbitrary_text(text):
    kinds = {"web", "javascript", "mailto", "tel", "data", "fragment_only", "empty", "other_scheme"}
    assert link_kind(text) in kinds
    for call in (
        lambda: resolve(text, BASE),
        lambda: registered_domain(text),
        lambda: host_of("http://" + text),
    ):
        with contextlib.suppress(UrlError):
            call()


@pytest.mark.parametrize(
    ("href", "bases", "expected"),
    [
        # an href with a path reads only the base's folder: pages of one folder share the resolution
        ("next.html", ("http://a.com/d/one.html", "http://a.com/d/two.html?q=1"), "http://a.com/d/next.html"),
        ("../up", ("http://a.com/d/e/one", "http://a.com/d/e/"), "http://a.com/d/up"),
        ("/root", ("http://a.com/d/one", "http://a.com/x/two"), "http://a.com/root"),
    ],
)
def test_resolve_is_the_same_from_every_page_of_a_folder(href, bases, expected):
    assert [resolve(href, base) for base in bases] == [expected, expected]


@pytest.mark.parametrize(
    ("href", "first", "second"),
    [
        # these read more of the base than its folder, so a resolution from another page is never reused
        ("?a=1", "http://a.com/d/one.html?a=2", "http://a.com/d/two.html"),
        ("?", "http://a.com/d/one.html?b=1", "http://a.com/d/two.html"),
        ("http:?x", "http://a.com/d/one.html", "http://a.com/d/two.html"),
        ("//b.com/x", "http://a.com/d/one", "https://a.com/d/one"),
        ("x", "http://a.com/d/one", "http://b.com/d/one"),
    ],
)
def test_resolve_from_another_page_differs_where_the_href_reads_more_than_the_folder(href, first, second):
    assert resolve(href, first) == urls._resolve(href, first, UrlOptions())
    assert resolve(href, second) == urls._resolve(href, second, UrlOptions())
    assert resolve(href, first) != resolve(href, second)
