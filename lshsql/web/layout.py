"""The page shell every page of `lshsql serve` shares: inline CSS (nothing is loaded from the network),
escaping, links between the pages, a pager, and reading the query string.

Everything a page shows from the work folder passes through `esc` or `href`: titles, URLs and text come
from crawled pages and documents, which anyone may have written.
"""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

from lshsql import __version__

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #222;
       max-width: 1200px; margin: 0 auto; padding: 1em 2em 4em; line-height: 1.4; background: #fff; }
header { display: flex; gap: 1.5em; align-items: baseline; border-bottom: 1px solid #ddd;
         padding-bottom: 0.5em; margin-bottom: 1em; flex-wrap: wrap; }
header .brand { font-weight: 600; font-size: 1.15em; color: #222; text-decoration: none; }
header .work { color: #666; font-size: 0.9em; }
h1 { font-size: 1.4em; margin: 0.4em 0; overflow-wrap: anywhere; }
h2 { font-size: 1.15em; margin-top: 1.8em; border-bottom: 1px solid #eee; }
a { color: #1d4f8a; text-decoration: none; } a:hover { text-decoration: underline; }
form.filters { display: flex; gap: 0.8em; flex-wrap: wrap; align-items: center; margin: 0.6em 0 1em;
               padding: 0.6em 0.8em; background: #f3f5f8; border-radius: 4px; }
form.filters input[type=search] { width: 22em; padding: 0.25em 0.4em; }
form.filters input[type=number] { width: 5em; }
table { border-collapse: collapse; font-size: 0.92em; margin: 0.6em 0; width: 100%; }
th, td { border: 1px solid #d6d6d6; padding: 0.3em 0.5em; vertical-align: top; text-align: left; }
th { background: #f3f5f8; }
tr:nth-child(even) td { background: #fafafa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; width: 1%; }
td.url, span.url { overflow-wrap: anywhere; }
.title { font-weight: 500; }
.muted, .snippet { color: #666; font-size: 0.9em; }
.terms { color: #3b6ea8; }
.pager { margin: 1em 0; display: flex; gap: 1em; align-items: center; }
.note { color: #777; font-style: italic; }
.error { color: #a33; }
.notice { background: #fff6d5; padding: 0.4em 0.6em; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2em 1em; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
.side { border: 1px solid #ddd; padding: 0.6em 0.8em; font-size: 0.92em; overflow-wrap: anywhere; }
del { background: #fbd9d3; text-decoration: none; } ins { background: #cdeccd; text-decoration: none; }
"""


def esc(value: object) -> str:
    """Text from the work folder as HTML text (quotes too, so it may stand in an attribute)."""
    return escape("" if value is None else str(value), quote=True)


def href(path: str, **query: object) -> str:
    """An escaped link target within the site: `path` and its query string (None values left out)."""
    given = {k: v for k, v in query.items() if v is not None and v != ""}
    return esc(path + ("?" + urlencode(given) if given else ""))


def url_page(url: str) -> str:
    return href("/url", u=url)


def cluster_page(cluster_id: int) -> str:
    """A cluster's page, by its stable cluster_id: a link kept from an earlier run opens the same cluster."""
    return href(f"/cluster/{int(cluster_id)}")


def live_link(url: str) -> str:
    """A link to the live page, only for http(s) URLs, with rel=nofollow noreferrer."""
    if url.startswith(("http://", "https://")):
        return f'<a href="{esc(url)}" rel="nofollow noreferrer" class="muted">live</a>'
    return ""


def number(value: float | None, digits: int = 3) -> str:
    return "&ndash;" if value is None else f"{value:.{digits}f}"


def page(title: str, body: str, work_name: str) -> str:
    """A whole HTML page: the shared header with the search box, then `body` (already HTML)."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{esc(title)} &middot; lshsql</title>
<style>{CSS}</style>
</head>
<body>
<header><a class="brand" href="/">lshsql serve</a><span class="work">{esc(work_name)}</span>
<form action="/" method="get"><input type="search" name="q" placeholder="word, URL or host"
aria-label="search"> <button>Search</button></form></header>
{body}
<footer class="muted"><p>lshsql {esc(__version__)}</p></footer>
</body>
</html>
"""


def pager(path: str, query: dict[str, object], offset: int, limit: int, shown: int, total: int) -> str:
    """Previous and next links of a paged list, keeping the other parameters."""
    parts = []
    if offset > 0:
        parts.append(f'<a href="{href(path, **(query | {"offset": max(0, offset - limit)}))}">previous</a>')
    first = offset + 1 if shown else offset
    parts.append(f'<span class="muted">{first:,}&ndash;{offset + shown:,} of {total:,}</span>')
    if offset + shown < total:
        parts.append(f'<a href="{href(path, **(query | {"offset": offset + limit}))}">next</a>')
    return '<div class="pager">' + " ".join(parts) + "</div>"


class BadRequest(Exception):
    """A parameter that cannot be used: answered with status 400 and a page saying which."""


class NotFound(Exception):
    """An unknown cluster, URL or path: answered with status 404 and a page saying what."""


def one(query: dict[str, list[str]], name: str, default: str = "") -> str:
    """A query-string parameter's last value, stripped."""
    values = query.get(name)
    return values[-1].strip() if values else default


def integer(query: dict[str, list[str]], name: str, default: int, low: int, high: int) -> int:
    """A whole-number parameter in [low, high]; BadRequest otherwise."""
    text = one(query, name)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadRequest(f"{name} must be a whole number, got {text!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"{name} must be between {low} and {high}, got {value}")
    return value


def flag(query: dict[str, list[str]], name: str) -> bool:
    text = one(query, name).lower()
    if text in ("", "0", "off", "false", "no"):
        return False
    if text in ("1", "on", "true", "yes"):
        return True
    raise BadRequest(f"{name} must be 1 or 0, got {text!r}")
