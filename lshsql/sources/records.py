"""What a reader yields: a `Record` (a page to parse, or the reason it is skipped), and the rules all
readers share: which HTTP responses are pages, where a redirect points, text Arrow can store."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

HTML_TYPES = ("text/html", "application/xhtml+xml")
# Statuses whose Location header says where the URL's content is: the record is no page (`http_status`),
# but extraction keeps its target as pages.redirect_url, and url_aliases follows it.
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
SURROGATES = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Record:
    """One record read from an input; `skip_reason` is set when it cannot be used, else `body` holds it."""

    url: str | None
    record_type: str
    source_file: str
    source_offset: int
    warc_date: str | None = None
    status: int | None = None
    content_type: str | None = None
    n_bytes: int = 0
    body: bytes | None = None
    skip_reason: str | None = None
    location: str | None = None  # Location header (as written) of a redirect (REDIRECT_STATUSES)


def redirect_location(status: int | None, location: object) -> str | None:
    """The Location of a redirect response, None for other statuses or a missing or blank header."""
    if status in REDIRECT_STATUSES and isinstance(location, str) and location.strip():
        return location
    return None


def http_skip_reason(status: int | None, content_type: str | None) -> str | None:
    """Why an HTTP response is not used: `http_status` unless 200, `not_html` unless an HTML type."""
    if status != 200:
        return "http_status"
    media = (content_type or "").split(";")[0].strip().lower()
    if media and media not in HTML_TYPES:
        return "not_html"
    return None


def clean_text(text: str) -> str:
    """text with each lone surrogate, legal in JSON but not encodable as UTF-8 (Arrow refuses it),
    replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATES.sub("\ufffd", text)
    return text


def path_text(path: str) -> str:
    """A file path as UTF-8 text for the source_file column: bytes of a name that are not UTF-8 (which
    Python holds as lone surrogates, refused by Arrow) written as \\xNN."""
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return clean_text(path)
