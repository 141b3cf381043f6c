"""The text of a member: its stored page read back from the crawl (the WARC record at its offset), or the
document as ingested or deduplicated, read back from its input file. Nothing is kept in memory between
requests; each read seeks to the one record it needs."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from lshsql import manifest
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, one_line
from lshsql.sources.documents import reuters_document
from lshsql.sources.jsonl import is_gzip
from lshsql.tools import dedup_explain
from lshsql.tools.show import StoredPage, read_stored, url_options

SNIPPET = 280
# Read the text of these elements as words a reader does not see.
HIDDEN = ("script", "style", "noscript", "template", "head")
# Elements that break a line where they start and end: their words do not run into their neighbours'.
BLOCKS = frozenset(
    (
        "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption", "figure",
        "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p",
        "pre", "section", "table", "td", "th", "tr", "ul",
    )
)  # fmt: skip
_REUTERS_CLOSE = b"</REUTERS>"


@dataclass(frozen=True)
class Source:
    """Where a member's text is: a pages row (for a dedup folder, its documents row, record_type 'dedup')."""

    url: str
    record_type: str
    content_type: str | None
    source_file: str
    source_offset: int
    url_id: int | None = None


def read_text(work: Path, source: Source, resources: db.Resources) -> str:
    """The visible text of a member, whitespace collapsed; an InputError says why it cannot be read."""
    if source.record_type == "dedup":
        params = manifest.read(work)["dedup"]["params"]
        where = [(source.url_id or 0, source.source_file, source.source_offset)]
        texts = dedup_explain.document_texts(where, params, resources)
        if not texts:
            raise InputError(f"{source.source_file}: the input file is gone; no text to show")
        return _collapse(next(iter(texts.values())) or "")
    if source.record_type in ("document", "reuters"):
        return _collapse(_document_text(work, source))
    page = StoredPage(
        source.url, source.record_type, source.content_type, source.source_file, source.source_offset
    )
    return html_text(read_stored(page, url_options(work)))


def read_texts(work: Path, sources: list[Source], resources: db.Resources) -> dict[str, str | InputError]:
    """read_text of several members, by URL, an error in place of a text that cannot be read; a dedup's
    documents are read in one pass over each input file."""
    found: dict[str, str | InputError] = {}
    dedup = [s for s in sources if s.record_type == "dedup"]
    if dedup:
        params = manifest.read(work)["dedup"]["params"]
        where = [(i, s.source_file, s.source_offset) for i, s in enumerate(dedup)]
        texts = dedup_explain.document_texts(where, params, resources)
        for i, source in enumerate(dedup):
            gone = InputError(f"{source.source_file}: the input file is gone; no text to show")
            found[source.url] = _collapse(texts[i] or "") if i in texts else gone
    for source in sources:
        if source.record_type != "dedup":
            try:
                found[source.url] = read_text(work, source, resources)
            except InputError as e:
                found[source.url] = e
    return found


def snippet(text: str, length: int = SNIPPET) -> str:
    """The start of a text, cut at a word boundary, with an ellipsis when cut."""
    if len(text) <= length:
        return text
    cut = text.rfind(" ", 0, length)
    return text[: cut if cut > length // 2 else length] + " ..."


def html_text(html: str) -> str:
    """What a reader sees of an HTML page: its text without scripts, styles and the head, collapsed."""
    import lxml.html
    from lxml import etree

    if not html.strip():
        return ""
    try:
        root = lxml.html.document_fromstring(html.encode("utf-8"))
    except (etree.ParserError, ValueError):
        return ""
    etree.strip_elements(root, *HIDDEN, with_tail=False)
    etree.strip_elements(root, etree.Comment, with_tail=False)
    for element in root.iter(*BLOCKS):
        element.text, element.tail = " " + (element.text or ""), " " + (element.tail or "")
    return _collapse(root.text_content())


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _document_text(work: Path, source: Source) -> str:
    """A document of `lshsql ingest`, read again at its offset (a line of JSON Lines, a <REUTERS> element,
    a row of Parquet)."""
    path = Path(source.source_file)
    if not path.is_file():
        raise InputError(f"{source.source_file}: source file of {source.url} moved or missing")
    params = manifest.read(work)["stages"].get("extract", {}).get("params", {})
    text_column = params.get("text_column") or "text"
    try:
        if source.record_type == "reuters":
            return _reuters_text(path, source.source_offset)
        if re.search(r"\.(parquet|pq)$", path.name):
            return _parquet_text(path, source.source_offset, text_column)
        opener = gzip.open if is_gzip(str(path)) else open
        with opener(path, "rb") as f:
            f.seek(source.source_offset)
            obj = json.loads(f.readline())
    except (OSError, EOFError, ValueError, zlib.error) as e:
        raise InputError(f"{source.source_file}: cannot read {source.url}: {one_line(e, 200)}") from None
    text = obj.get(text_column) if isinstance(obj, dict) else None
    return text if isinstance(text, str) else ""


def _reuters_text(path: Path, offset: int) -> str:
    raw = b""
    with open(path, "rb") as f:
        f.seek(offset)
        while _REUTERS_CLOSE not in raw and (chunk := f.read(1 << 16)):
            raw += chunk
    end = raw.find(_REUTERS_CLOSE)
    document = reuters_document(raw if end < 0 else raw[: end + len(_REUTERS_CLOSE)], str(path), offset)
    return " ".join(part for part in (document.title, document.text) if part)


def _parquet_text(path: Path, row: int, text_column: str) -> str:
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    start = 0
    for group in range(parquet.num_row_groups):
        rows = parquet.metadata.row_group(group).num_rows
        if start <= row < start + rows:
            value = parquet.read_row_group(group, columns=[text_column]).column(0)[row - start].as_py()
            return value if isinstance(value, str) else ""
        start += rows
    return ""
