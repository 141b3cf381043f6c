"""HTML bytes -> title, links with their anchor windows, and content words (Haveliwala et al. 2000, sec. 2).

The page's text is laid out once in reading order (comments, script, style, noscript and template dropped;
image alt text kept where the image stands) and tokenized once; every `<a href>` marks a span of that token
stream, so its window is the W words before the span, the span itself and the W words after it. Pure: no
I/O, no stopwords or stemming (the caller normalizes words into terms).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

import lxml.html
from lxml import etree

from lshsql import urls
from lshsql.text import WORD_RE

DROPPED_TAGS = frozenset({"script", "style", "noscript", "template", "head", "iframe", "object", "svg"})
# Elements that do not break a word: "<b>data</b>base" reads as one word, like a browser shows it.
INLINE_TAGS = frozenset(
    "a abbr acronym b bdi bdo big cite code data del dfn em font i ins kbd mark q s samp small span "
    "strike strong sub sup time tt u var wbr".split()
)
BINARY_MAGIC = (b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"%PDF", b"PK\x03\x04", b"\x1f\x8b", b"RIFF", b"\x00\x00\x01\x00")
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_SPACES = re.compile(r"\s+")
MAX_ANCHOR_TEXT = 1000


@dataclass(frozen=True)
class Link:
    """One `<a href>` of a page: where it points (or why it is skipped) and the words around it."""

    href: str
    target_url: str | None
    skip_reason: str | None
    anchor_text: str
    before: list[str]
    anchor: list[str]
    after: list[str]


@dataclass(frozen=True)
class Page:
    """What extraction keeps of one HTML page; `words` is empty unless content words were asked for."""

    title: str
    title_words: list[str]
    links: list[Link]
    words: list[str]
    encoding: str


def sniff_skip_reason(body: bytes) -> str | None:
    """`empty_body` or `binary_body` for bodies that are not HTML whatever their Content-Type says."""
    if not body.strip():
        return "empty_body"
    head = body[:1024]
    if head.startswith(UTF16_BOMS):
        return None
    if head.startswith(BINARY_MAGIC) or b"\x00" in head:
        return "binary_body"
    return None


def decode_html(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decode by BOM, HTTP charset, then <meta> charset (w3lib); a body that is not valid in a declared
    UTF-8 is re-read as windows-1252, the usual mislabelled Latin-1 page."""
    from w3lib.encoding import html_to_unicode

    encoding, text = html_to_unicode(content_type, body)
    if "\ufffd" in text and encoding.replace("-", "").lower() in ("utf8", "utf_8"):
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return body.decode("cp1252", errors="replace"), "cp1252"
    return text, encoding


def parse_page(
    body: bytes,
    url: str,
    content_type: str | None = None,
    window: int = 8,
    url_options: urls.UrlOptions = urls.UrlOptions(),
    content: bool = False,
) -> Page:
    """Parse one page: title, every link with its window of `window` words each side, content words."""
    text, encoding = decode_html(body, content_type)
    root = _parse(text)
    base = _base_url(root, url)
    flow, spans = _linearize(root)
    starts, words = _tokenize(flow)
    links = [_link(href, start, end, flow, starts, words, window, base, url_options) for href, start, end in spans]
    title = _title(root)
    return Page(title, _words(title), links, words if content else [], encoding)


def _parse(text: str) -> etree._Element:
    text = _XML_DECL.sub("", text, count=1)
    parser = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, huge_tree=True)
    try:
        return lxml.html.document_fromstring(text, parser=parser)
    except (etree.ParserError, ValueError):
        # lxml refuses documents with no elements at all; treat them as plain text.
        return lxml.html.document_fromstring(f"<html><body><p>{_escape(text)}</p></body></html>")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


def _base_url(root: etree._Element, url: str) -> str:
    for base in root.iter("base"):
        href = base.get("href")
        if href and href.strip():
            try:
                return urls.resolve(href, url) or url
            except urls.UrlError:
                return url
    return url


def _title(root: etree._Element) -> str:
    for title in root.iter("title"):
        return _SPACES.sub(" ", title.text_content()).strip()
    return ""


def _words(text: str) -> list[str]:
    return [m.group().lower() for m in WORD_RE.finditer(text)]


def _linearize(root: etree._Element) -> tuple[str, list[tuple[str, int, int]]]:
    """Lay out the visible text in reading order; return it with the character span of every link."""
    pieces: list[str] = []
    size = 0
    spans: list[tuple[str, int, int]] = []
    open_links: dict[int, tuple[str, int]] = {}
    stack: list[tuple[etree._Element, bool]] = [(root, False)]
    while stack:
        el, closing = stack.pop()
        tag = el.tag if isinstance(el.tag, str) else ""
        chunks: list[str] = []
        if closing:
            if id(el) in open_links:
                href, start = open_links.pop(id(el))
                spans.append((href, start, size))
            if tag not in INLINE_TAGS:
                chunks.append(" ")
            if el.tail:
                chunks.append(el.tail)
        else:
            stack.append((el, True))
            if tag and tag not in DROPPED_TAGS:
                if tag not in INLINE_TAGS:
                    chunks.append(" ")
                if tag == "a" and el.get("href") is not None:
                    open_links[id(el)] = (el.get("href"), size + 1)
                    chunks.append(" ")
                elif tag == "img" and el.get("alt"):
                    chunks.append(f" {el.get('alt')} ")
                if el.text:
                    chunks.append(el.text)
                stack.extend((child, False) for child in reversed(el))
        for chunk in chunks:
            pieces.append(chunk)
            size += len(chunk)
    spans.sort(key=lambda span: span[1])
    return "".join(pieces), spans


def _tokenize(flow: str) -> tuple[list[int], list[str]]:
    starts: list[int] = []
    words: list[str] = []
    for m in WORD_RE.finditer(flow):
        starts.append(m.start())
        words.append(m.group().lower())
    return starts, words


def _link(
    href: str,
    start: int,
    end: int,
    flow: str,
    starts: list[int],
    words: list[str],
    window: int,
    base: str,
    url_options: urls.UrlOptions,
) -> Link:
    first, stop = bisect_left(starts, start), bisect_left(starts, end)
    anchor_text = _SPACES.sub(" ", flow[start:end]).strip()[:MAX_ANCHOR_TEXT]
    target, reason = _target(href, base, url_options)
    return Link(
        href=href,
        target_url=target,
        skip_reason=reason,
        anchor_text=anchor_text,
        before=words[max(0, first - window) : first],
        anchor=words[first:stop],
        after=words[stop : stop + window],
    )


def _target(href: str, base: str, url_options: urls.UrlOptions) -> tuple[str | None, str | None]:
    kind = urls.link_kind(href)
    if kind != "web":
        return None, kind
    try:
        target = urls.resolve(href, base, url_options)
    except urls.UrlError:
        return None, "invalid_url"
    return (target, None) if target else (None, "other_scheme")
