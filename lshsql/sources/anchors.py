"""HTML bytes -> title, links with their anchor windows, and content words (Haveliwala et al. 2000, sec. 2).

The page's text is laid out once in reading order (comments, script, style, noscript and template dropped;
image alt text kept where the image stands) and tokenized once; every `<a href>` marks a span of that token
stream, so its window is the W words before the span, the span itself and the W words after it. Block-level
elements cut the stream into text blocks, each with a key (a hash of its words, seeded by the host): a block
whose key repeats on many of a host's pages is template (sources/templates.py), and with `window_blocks` a
window stays inside the blocks of its link. Pure: no I/O, no stopwords or stemming (the caller normalizes
words into terms).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.html
import xxhash
from lxml import etree

from lshsql import urls
from lshsql.sources.text import WORD_RE
from lshsql.sources.text import words as words_of

DROPPED_TAGS = frozenset({"script", "style", "noscript", "template", "head", "iframe", "object", "svg"})
# Elements that do not break a word: "<b>data</b>base" reads as one word, like a browser shows it.
INLINE_TAGS = frozenset({
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i",
    "ins", "kbd", "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt",
    "u", "var", "wbr",
})  # fmt: skip
BINARY_MAGIC = (
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"%PDF",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"RIFF",
    b"\x00\x00\x01\x00",
)
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
# Tags kept when a page nesting too deep is parsed again (see _parse): what extraction reads, and the
# dropped elements; then, if those nest too deep, only tags that cannot nest.
FLATTER_TAGS = frozenset(
    {"html", "head", "body", "title", "base", "link", "meta", "a", "img", "script", "style"}
)
FLAT_TAGS = FLATTER_TAGS | DROPPED_TAGS
_TOO_DEEP = "Excessive depth"  # libxml2's message when it stops at its nesting limit
_TAG = re.compile(r"""</?([A-Za-z][^\s/>]*)(?:[^>"']|"[^"]*"|'[^']*')*>""")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_SPACES = re.compile(r"\s+")
_string_of = etree.XPath("string()", smart_strings=False)  # an element's text, what text_content() gives
MAX_ANCHOR_TEXT = 1000
DEFAULT_URL_OPTIONS = urls.UrlOptions()
# Link and block boundaries in the serialized text: private-use characters, removed from the input beforehand.
LINK_OPEN, LINK_CLOSE, BLOCK = "\ue000", "\ue001", "\ue002"
_MARKER_SET = frozenset((LINK_OPEN, LINK_CLOSE, BLOCK))
_LINKS = frozenset((LINK_OPEN, LINK_CLOSE))
_MARKERS = re.compile(f"([{LINK_OPEN}{LINK_CLOSE}{BLOCK}])")


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
    blocks: list[int] = ()  # key of the text block of each word of before + anchor + after
    block: int | None = None  # key of the text block the link starts in (None: a block with no words)
    # (low, first, stop, high): before, anchor and after as slices of Page.flow_words
    span: tuple[int, int, int, int] = (0, 0, 0, 0)


@dataclass(frozen=True)
class Page:
    """What extraction keeps of one HTML page; `words` is empty unless content words were asked for."""

    title: str
    title_words: list[str]
    links: list[Link]
    words: list[str]
    encoding: str
    canonical_url: str | None = None  # <link rel="canonical">, when valid and not the page's own URL
    links_over_cap: int = 0  # <a href> elements after the first max_links, not extracted
    blocks: list[int] = ()  # the distinct keys of the page's text blocks that hold words, sorted
    flow_words: list[str] = ()  # every word of the page in reading order, what Link.span indexes
    flow_keys: list[int] = ()  # the key of the text block of each of flow_words


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
    url_options: urls.UrlOptions = DEFAULT_URL_OPTIONS,
    content: bool = False,
    max_links: int | None = None,
    window_blocks: bool = False,
) -> Page:
    """Parse one page: title, every link with its window of `window` words each side, content words. With
    max_links, only the page's first max_links <a href> are links (their text stays in the windows), so
    a page's cost stays bounded; the others are counted in Page.links_over_cap. With window_blocks, a
    window stops at the edges of the text blocks its link starts and ends in."""
    text, encoding = decode_html(body, content_type)
    root = _parse(text)
    base = _base_url(root, url)
    title = _title(root)
    canonical = _canonical_url(root, url, base, url_options)  # before _linearize drops the head
    parts, spans, over_cap = _linearize(root, max_links)
    flow = _tokenize(parts, block_seed(url))
    links = [_link(href, i, j, parts, flow, window, window_blocks, base, url_options) for href, i, j in spans]
    blocks = sorted({key for key in flow.keys if key is not None})
    words = flow.words if content else []
    return Page(
        title, words_of(title), links, words, encoding, canonical, over_cap, blocks,
        flow_words=flow.words, flow_keys=flow.word_keys,
    )  # fmt: skip


def block_seed(url: str) -> int:
    """The seed of a page's block keys: its host's, so equal text on two sites is two blocks."""
    try:
        host = urls.host_of(url)
    except urls.UrlError:
        host = ""
    return xxhash.xxh64_intdigest(host.encode("utf-8"))


def block_key(words: list[str], seed: int) -> int:
    """A text block's key: xxh64 of its words, seeded by the host, as a signed 64-bit integer."""
    key = xxhash.xxh64_intdigest(" ".join(words).encode("utf-8"), seed)
    return key - 2**64 if key >= 2**63 else key


def _parse(text: str) -> etree._Element:
    """The page's tree. libxml2 stops parsing (and keeps no more of the page) where elements nest deeper
    than it allows (2,048 with huge_tree), as thousands of unclosed <font> tags do: such a page is parsed
    again with the other tags dropped, first all but FLAT_TAGS, then all but FLATTER_TAGS (nothing left
    nests), so every link after the deep part is read."""
    text = _XML_DECL.sub("", text, count=1)
    if LINK_OPEN in text or LINK_CLOSE in text or BLOCK in text:
        text = text.replace(LINK_OPEN, " ").replace(LINK_CLOSE, " ").replace(BLOCK, " ")
    root, too_deep = _parse_html(text)
    for kept in (FLAT_TAGS, FLATTER_TAGS):
        if not too_deep:
            break
        root, too_deep = _parse_html(_flatten(text, kept))
    return root


def _parse_html(text: str) -> tuple[etree._Element, bool]:
    """The tree of `text`, and whether libxml2 stopped at its nesting limit. lxml.etree's own parser, not
    lxml.html's: the same tree, without a Python class lookup for every element the walk touches."""
    parser = etree.HTMLParser(remove_comments=True, remove_pis=True, huge_tree=True)
    try:
        root = etree.fromstring(text, parser)
        if root is None:
            raise etree.ParserError("Document is empty")
    except (etree.ParserError, ValueError):
        # lxml refuses documents with no elements at all; treat them as plain text.
        return lxml.html.document_fromstring(f"<html><body><p>{_escape(text)}</p></body></html>"), False
    return root, any(_TOO_DEEP in error.message for error in parser.error_log)


def _flatten(text: str, kept: frozenset[str]) -> str:
    """`text` without comments and without the tags not in `kept`: an inline tag goes, a block tag leaves a
    space (words stay apart as in the full parse)."""

    def tag(match: re.Match) -> str:
        name = match[1].lower()
        return match[0] if name in kept else "" if name in INLINE_TAGS else " "

    return _TAG.sub(tag, _COMMENT.sub(" ", text))


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


def _canonical_url(root: etree._Element, url: str, base: str, url_options: urls.UrlOptions) -> str | None:
    """The target of the head's first `<link rel="canonical">` (rel tokens case-insensitive), resolved like
    a link and canonicalized; None when there is none, it is not a valid web URL, or it is the page itself."""
    head = root.find("head")
    if head is None:
        return None
    for link in head.iter("link"):
        if "canonical" in (link.get("rel") or "").lower().split():
            target, _ = _target(link.get("href") or "", base, url_options)
            return target if target != url else None
    return None


def _title(root: etree._Element) -> str:
    for title in root.iter("title"):
        return _SPACES.sub(" ", _string_of(title)).strip()
    return ""


def _linearize(
    root: etree._Element, max_links: int | None = None
) -> tuple[list[str], list[tuple[str, int, int]], int]:
    """Lay out the visible text in reading order as parts between link markers; return the parts, for
    every link (the first max_links), its href and the span of parts it covers, and the number of links
    over max_links (read as text only). lxml walks and serializes in C: links and the edges of block-level
    elements are marked with private-use characters, then the tree is read as text."""
    etree.strip_elements(root, *DROPPED_TAGS, with_tail=False)
    hrefs: list[str] = []
    over_cap = 0
    for el in root.iter():
        tag = el.tag
        if tag == "a":
            href = el.get("href")
            if href is None:
                continue
            if max_links is not None and len(hrefs) >= max_links:
                over_cap += 1
            else:
                hrefs.append(href)
                _mark_link(el)
        elif tag == "img":
            alt = el.get("alt")
            if alt:
                el.tail = f" {alt} {el.tail or ''}"
        elif tag not in INLINE_TAGS:  # the marker splits the text, so words on either side stay apart
            el.text = f"{BLOCK}{el.text or ''}"
            el.tail = f"{BLOCK}{el.tail or ''}"
    flow = etree.tostring(root, method="text", encoding="unicode", with_tail=False)
    parts = _MARKERS.split(flow)
    spans: list[tuple[str, int, int]] = []
    open_spans: list[int] = []
    for i, part in enumerate(parts):
        if part == LINK_OPEN:
            open_spans.append(len(spans))
            spans.append((hrefs[len(spans)], i, i))
        elif part == LINK_CLOSE and open_spans:
            j = open_spans.pop()
            spans[j] = (spans[j][0], spans[j][1], i)
    return parts, spans, over_cap


def _mark_link(el: etree._Element) -> None:
    el.text = f"{LINK_OPEN}{el.text or ''}"
    if len(el):
        last = el[-1]
        last.tail = f"{last.tail or ''}{LINK_CLOSE}"
    else:
        el.text = f"{el.text}{LINK_CLOSE}"


@dataclass(frozen=True)
class _Flow:
    """The page's words in reading order, cut into text blocks at the BLOCK markers."""

    words: list[str]
    offsets: list[int]  # offsets[i]: index of the first word of part i (one extra at the end)
    part_blocks: list[int]  # the block of each part
    starts: list[int]  # starts[b]: index of the first word of block b (one extra at the end)
    keys: list[int | None]  # key of each block; None for a block with no words
    word_keys: list[int]  # the key of the block of each word


def _tokenize(parts: list[str], seed: int) -> _Flow:
    """Words of every part, the block each part is in, and each block's first word and key."""
    offsets: list[int] = []
    part_blocks: list[int] = []
    starts = [0]
    words: list[str] = []
    findall = WORD_RE.findall
    for part in parts:
        offsets.append(len(words))
        if part == BLOCK:
            starts.append(len(words))
        elif part and not part.isspace() and part not in _MARKER_SET:
            words.extend(findall(part.lower()))
        part_blocks.append(len(starts) - 1)
    offsets.append(len(words))
    starts.append(len(words))
    keys = [block_key(words[a:b], seed) if b > a else None for a, b in zip(starts, starts[1:], strict=False)]
    word_keys: list[int] = []
    for key, a, b in zip(keys, starts, starts[1:], strict=False):
        word_keys.extend([key] * (b - a))
    return _Flow(words, offsets, part_blocks, starts, keys, word_keys)


def _link(
    href: str,
    first_part: int,
    close_part: int,
    parts: list[str],
    flow: _Flow,
    window: int,
    window_blocks: bool,
    base: str,
    url_options: urls.UrlOptions,
) -> Link:
    first, stop = flow.offsets[first_part], flow.offsets[close_part]
    low, high = max(0, first - window), stop + window
    open_block, close_block = flow.part_blocks[first_part], flow.part_blocks[close_part]
    if window_blocks:
        low, high = max(low, flow.starts[open_block]), min(high, flow.starts[close_block + 1])
    high = min(high, len(flow.words))
    anchor_text = _SPACES.sub(
        " ", "".join(" " if p == BLOCK else p for p in parts[first_part + 1 : close_part] if p not in _LINKS)
    )
    target, reason = _target(href, base, url_options)
    return Link(
        href=href,
        target_url=target,
        skip_reason=reason,
        anchor_text=anchor_text.strip()[:MAX_ANCHOR_TEXT],
        before=flow.words[low:first],
        anchor=flow.words[first:stop],
        after=flow.words[stop:high],
        blocks=flow.word_keys[low:high],
        block=flow.keys[open_block],
        span=(low, first, stop, high),
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
