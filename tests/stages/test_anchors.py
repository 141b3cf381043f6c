"""Anchor windows, cleaning and decoding on hand-made HTML (Haveliwala et al. 2000, sec. 2)."""

from __future__ import annotations

import gzip

import pytest

from lshsql.sources.anchors import decode_html, parse_page, sniff_skip_reason

PAGE = "http://site.example/dir/page.html"


def page(body: str, url: str = PAGE, window: int = 8, **kw):
    return parse_page(body.encode("utf-8"), url, "text/html; charset=utf-8", window=window, **kw)


def only_link(body: str, **kw):
    links = page(body, **kw).links
    assert len(links) == 1
    return links[0]


def test_window_takes_w_words_each_side():
    body = "<p>one two three four five <a href='t.html'>Anchor Text</a> six seven eight nine ten</p>"
    link = only_link(body, window=3)
    assert link.before == ["three", "four", "five"]
    assert link.anchor == ["anchor", "text"]
    assert link.after == ["six", "seven", "eight"]
    assert link.target_url == "http://site.example/dir/t.html"
    assert link.anchor_text == "Anchor Text"


def test_window_is_cut_at_document_edges():
    link = only_link("<a href='/x'>first</a> only one", window=8)
    assert link.before == [] and link.after == ["only", "one"]
    link = only_link("just before <a href='/x'>last</a>", window=8)
    assert link.before == ["just", "before"] and link.after == []


def test_window_crosses_elements_in_reading_order():
    body = """<div><h1>Big heading</h1><ul><li>alpha</li><li><b>beta</b> <a href=x>gamma <i>delta</i></a></li>
              <li>epsilon</li></ul></div><p>zeta</p>"""
    link = only_link(body, window=2)
    assert link.before == ["alpha", "beta"]
    assert link.anchor == ["gamma", "delta"]
    assert link.after == ["epsilon", "zeta"]


def test_neighbouring_links_share_words_but_keep_their_own_anchor():
    body = "<p>a1 <a href=one>first</a> mid <a href=two>second</a> z1</p>"
    first, second = page(body, window=2).links
    assert (first.before, first.anchor, first.after) == (["a"], ["first"], ["mid", "second"])
    assert (second.before, second.anchor, second.after) == (["first", "mid"], ["second"], ["z"])


def test_dropped_elements_and_comments_keep_their_tails():
    body = """<p>keep1 <!-- hidden comment --> keep2 <script>var hidden = 1;</script> keep3
              <style>.hidden{}</style> keep4 <noscript>hidden</noscript> keep5
              <template><p>hidden</p></template> keep6 <a href=x>go</a></p>"""
    link = only_link(body, window=20)
    assert link.before == ["keep", "keep", "keep", "keep", "keep", "keep"]
    assert "hidden" not in link.before + link.after
    assert page(body, content=True).words.count("hidden") == 0


def test_image_alt_text_stands_where_the_image_is():
    body = "<p>before <img src=a.png alt='Logo Word'> <a href=x><img src=b.png alt='Inner Alt'> text</a> after</p>"
    link = only_link(body)
    assert link.before == ["before", "logo", "word"]
    assert link.anchor == ["inner", "alt", "text"]
    assert link.anchor_text == "Inner Alt text"


def test_inline_tags_do_not_split_words_but_blocks_do():
    body = "<div>data<b>base</b></div><div>end</div><p><a href=x>go</a></p>"
    assert only_link(body).before == ["database", "end"]


def test_base_href_is_honoured():
    body = "<html><head><base href='http://other.example/root/'></head><body><a href='p.html'>p</a></body></html>"
    assert only_link(body).target_url == "http://other.example/root/p.html"


@pytest.mark.parametrize(
    ("href", "reason"),
    [
        ("javascript:void(0)", "javascript"),
        ("mailto:a@b.example", "mailto"),
        ("tel:+123", "tel"),
        ("data:text/html,hi", "data"),
        ("#section", "fragment_only"),
    ],
)
def test_links_that_lead_nowhere_are_kept_with_a_reason(href: str, reason: str):
    link = only_link(f"<p>x <a href='{href}'>y</a></p>")
    assert link.target_url is None
    assert link.skip_reason == reason


def test_relative_links_are_resolved_and_canonicalized():
    body = "<a href='../Other/./x.html#frag'>a</a><a href='HTTP://Example.COM:80'>b</a><a href='//cdn.example//a'>c</a>"
    targets = [link.target_url for link in page(body).links]
    assert targets == ["http://site.example/Other/x.html", "http://example.com/", "http://cdn.example/a"]


def test_title_is_extracted_and_whitespace_collapsed():
    result = page("<html><head><title>  The\n  Title  </title></head><body>x</body></html>")
    assert result.title == "The Title"
    assert result.title_words == ["the", "title"]


def test_unicode_letters_make_words():
    link = only_link("<p>Привет мир <a href=x>Документация</a> café 42 x_y</p>")
    assert link.before == ["привет", "мир"]
    assert link.anchor == ["документация"]
    assert link.after == ["café", "x", "y"]


def test_truncated_html_is_recovered():
    link = only_link("<html><body><p>words here <a href='t.html'>anchor te")
    assert link.anchor == ["anchor", "te"]


@pytest.mark.parametrize("tag", ["font", "div", "noscript"])
def test_links_after_nesting_deeper_than_libxml2_parses_are_read(tag):
    """Past 2,048 open elements libxml2 stops parsing; the page is parsed again without the nesting (and
    with no tag left that nests when even dropped elements like noscript nest that deep: their words show)."""
    body = f"<title>Deep</title><p>first <a href='/a'>one</a></p>{f'<{tag}>word ' * 2100}<p>after <a href='/b'>two</a>"
    got = page(body, window=2)
    assert got.title == "Deep"
    assert [(link.target_url, link.anchor, link.before, link.after) for link in got.links] == [
        ("http://site.example/a", ["one"], ["first"], ["word", "word"]),
        ("http://site.example/b", ["two"], ["word", "after"], []),
    ]


def test_links_past_max_links_are_counted_and_read_as_text_only():
    body = "<p>" + " ".join(f"w{c} <a href='/{c}'>a{c}</a>" for c in "vwxyz") + " end</p>"
    got = page(body, window=2, max_links=2)
    assert [link.target_url for link in got.links] == ["http://site.example/v", "http://site.example/w"]
    assert got.links_over_cap == 3
    assert got.links[1].after == ["wx", "ax"]  # the windows are those of the page without the cap
    assert page(body, window=2).links[1] == got.links[1] and page(body).links_over_cap == 0


def test_xml_declaration_and_xhtml_are_parsed():
    body = '<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml"><body><a href="a">x</a></body></html>'
    assert only_link(body).anchor == ["x"]


def test_decoding_follows_http_charset_then_meta():
    latin = "<p>caf\xe9 <a href=x>na\xefve</a></p>".encode("latin-1")
    text, encoding = decode_html(latin, "text/html; charset=iso-8859-1")
    assert "café" in text and "naïve" in text
    meta = b'<meta charset="windows-1251"><p>' + "Привет".encode("cp1251") + b"</p>"
    text, _ = decode_html(meta, "text/html")
    assert "Привет" in text


def test_mislabelled_latin1_is_reread_as_windows_1252():
    body = "<p>Ger\xe4te f\xfcr Drucker</p>".encode("latin-1")
    text, encoding = decode_html(body, "text/html; charset=utf-8")
    assert "Geräte für" in text
    assert encoding == "cp1252"


def test_valid_utf8_with_a_replacement_character_stays_utf8():
    body = "<p>ok \ufffd ok</p>".encode()
    assert decode_html(body, "text/html; charset=utf-8")[1] in ("utf-8", "utf8")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "empty_body"),
        (b"   \n\t ", "empty_body"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary_body"),
        (gzip.compress(b"<html></html>", mtime=0), "binary_body"),
        (b"<html>\x00\x01\x02</html>", "binary_body"),
        (b"<html><body>fine</body></html>", None),
        ("\ufeff<html>x</html>".encode("utf-16"), None),
    ],
)
def test_sniffing_rejects_bodies_that_are_not_html(body: bytes, reason: str | None):
    assert sniff_skip_reason(body) == reason


def test_text_without_any_element_still_parses():
    assert page("just words, no tags").links == []
