"""`/`: the clusters, largest first, a page at a time, each with its size, top terms and center; a search
(`q`: a word of the clusters' labels, or text of a member's URL, host or title) and filters (fetched
pages only, minimum size, host). Only the clusters of the page shown are read into Python."""

from __future__ import annotations

import duckdb

from lshsql.tools.show import stored_pages
from lshsql.web import layout
from lshsql.web.layout import esc
from lshsql.web.site import Site, connect

TERMS = 8
URLS_FOUND = 20
# Each filter given adds one of these conditions (fixed SQL; the values are bound by name). A cluster's
# order is size, then center_id: the center's URL order, since url_ids follow the byte order of URLs, and an
# integer sorts far faster than a URL at a deep offset.
CONDITIONS = {
    "q": "clusters.center_id in (select center_id from searched)",
    "host": """clusters.center_id in (
        select clusters.center_id from clusters
        where starts_with(clusters.url, 'http://' || $host || '/')
            or starts_with(clusters.url, 'https://' || $host || '/')
    )""",
    "fetched": """clusters.center_id in (
        select clusters.center_id from clusters semi join pages
            on clusters.url = pages.url and pages.skip_reason is null
    )""",
}
# The members a search finds, made once per request: the clusters it matches and the URLs it lists come
# from the same scan, which keeps integers only (a search for "http" finds every URL). URLs are matched
# as typed (they are case-sensitive); titles and words ignore case.
SEARCH = """
create temp table found_urls as
select clusters.url_id, clusters.center_id, clusters.{key} as cluster_id, clusters.size
from clusters
where contains(clusters.url, $q)
    or clusters.url in (
        select pages.url from pages where pages.skip_reason is null and contains(lower(pages.title), $lower)
    )
"""
SEARCHED = """
create temp table searched as
select center_id from found_urls
union all
select center_id from cluster_labels where word = $lower or term = $lower
"""


def render(site: Site, query: dict[str, list[str]]) -> tuple[str, str]:
    """The title and body of the front page for the query string."""
    q = layout.one(query, "q")
    host = layout.one(query, "host").lower()
    fetched = layout.flag(query, "fetched")
    min_size = layout.integer(query, "min_size", 1, 1, 2**62)
    limit = layout.integer(query, "limit", layout.PAGE_SIZE, 1, layout.MAX_PAGE_SIZE)
    offset = layout.integer(query, "offset", 0, 0, 2**62)
    given = {"q": q, "host": host, "fetched": fetched}
    conditions = [CONDITIONS[name] for name, value in given.items() if value]
    where = " and ".join(["clusters.is_center", "clusters.size >= $min_size", *conditions])
    params: dict[str, object] = {"min_size": min_size} | ({"host": host} if host else {})
    chaining = "clusters.min_pair_similarity" if site.has_chaining else "cast(null as double)"
    with connect(site) as con:
        if q:
            con.execute(SEARCH.format(key=site.cluster_key), {"q": q, "lower": q.lower()}).fetchall()
            con.execute(SEARCHED, {"lower": q.lower()}).fetchall()
        total = con.execute(f"select count(*) from clusters where {where}", params).fetchone()[0]
        rows = con.execute(
            f"select clusters.center_id, clusters.center, clusters.size, {chaining}, "
            f"clusters.{site.cluster_key} from clusters "
            f"where {where} order by clusters.size desc, clusters.center_id limit $limit offset $offset",
            params | {"limit": limit, "offset": offset},
        ).fetchall()
        centers = [row[1] for row in rows]
        titles = _titles(con, centers)
        labels = _labels(con, [row[0] for row in rows])
        found = _urls_found(con) if q else []
    kept = {
        "q": q,
        "host": host,
        "fetched": int(fetched) or None,
        "min_size": min_size if min_size > 1 else None,
    }
    kept["limit"] = limit if limit != layout.PAGE_SIZE else None
    body = [_form(q, host, fetched, min_size), "<h1>Clusters</h1>"]
    if not rows:
        body.append('<p class="note">No cluster matches.</p>')
    else:
        body.append(_clusters_table(rows, titles, labels, offset))
    body.append(layout.pager("/", kept, offset, limit, len(rows), total))
    if q:
        body.append(_found_html(q, found))
    heading = f"clusters matching {q}" if q else "clusters"
    return heading, "\n".join(body)


def _titles(con: duckdb.DuckDBPyConnection, urls: list[str]) -> dict[str, str]:
    return {url: title for url, (title, _, _) in stored_pages(con, urls).items()}


def _labels(con: duckdb.DuckDBPyConnection, center_ids: list[int]) -> dict[int, list[str]]:
    if not center_ids:
        return {}
    return dict(
        con.execute(
            "select center_id, list(word order by rank) from cluster_labels "
            "where rank <= $n and list_contains($ids, center_id) group by center_id",
            {"ids": center_ids, "n": TERMS},
        ).fetchall()
    )


def _urls_found(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    """The first URLS_FOUND URLs the search found, in URL order, with their cluster_id, size and title."""
    first = con.execute(
        "select url_id, cluster_id, size from found_urls order by url_id limit $n", {"n": URLS_FOUND}
    ).fetchall()
    urls = dict(
        con.execute(
            "select url_id, url from urls where list_contains($ids, url_id)",
            {"ids": [row[0] for row in first]},
        ).fetchall()
    )
    first = [(urls[url_id], cluster_id, size) for url_id, cluster_id, size in first]
    titles = _titles(con, [url for url, _, _ in first])
    return [(url, cluster_id, size, titles.get(url)) for url, cluster_id, size in first]


def _form(q: str, host: str, fetched: bool, min_size: int) -> str:
    checked = " checked" if fetched else ""
    return f"""<form class="filters" action="/" method="get">
<label>search <input type="search" name="q" value="{esc(q)}" placeholder="word, URL or host"></label>
<label>host <input type="text" name="host" value="{esc(host)}" size="18"></label>
<label>min size <input type="number" name="min_size" min="1" value="{min_size}"></label>
<label><input type="checkbox" name="fetched" value="1"{checked}> with a fetched page</label>
<button>Filter</button> <a href="/">reset</a>
</form>"""


def _clusters_table(
    rows: list[tuple], titles: dict[str, str], labels: dict[int, list[str]], offset: int
) -> str:
    lines = []
    for rank, (center_id, center, size, least, cluster_id) in enumerate(rows, offset + 1):
        title = titles.get(center)
        title_html = f'<span class="title">{esc(title)}</span><br>' if title else ""
        words = " ".join(labels.get(center_id, []))
        lines.append(
            f'<tr><td class="num">{rank:,}</td><td class="num"><a href="{layout.cluster_page(cluster_id)}">'
            f"{size:,}</a></td>"
            f'<td class="url">{title_html}<a href="{layout.url_page(center)}">{esc(center)}</a></td>'
            f'<td class="terms">{esc(words)}</td><td class="num">{layout.number(least)}</td></tr>'
        )
    header = (
        '<tr><th class="num">#</th><th class="num">size</th><th>center</th><th>top terms</th>'
        '<th class="num">least similar pair</th></tr>'
    )
    return (
        f'<table class="clusters">\n<thead>{header}</thead>\n<tbody>\n'
        + "\n".join(lines)
        + "\n</tbody></table>"
    )


def _found_html(q: str, found: list[tuple]) -> str:
    if not found:
        return f'<h2>URLs</h2><p class="note">No URL or title holds {esc(q)}.</p>'
    items = "".join(
        f'<li><a href="{layout.url_page(url)}">{esc(url)}</a>'
        + (f' <span class="title">{esc(title)}</span>' if title else "")
        + f' <span class="muted">in <a href="{layout.cluster_page(cluster_id)}">a cluster of {size:,}</a>'
        + "</span></li>"
        for url, cluster_id, size, title in found
    )
    more = f" (the first {URLS_FOUND})" if len(found) == URLS_FOUND else ""
    return f"<h2>URLs holding &ldquo;{esc(q)}&rdquo;{more}</h2><ul>{items}</ul>"
