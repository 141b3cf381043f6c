"""The report's clusters section: the largest clusters with their members' titles, links to where each
member's page is stored (or to `lshsql serve`'s pages when its address is given) and a filter box.

The filter is one inline script that hides the rows whose text lacks the words typed; it reads the
page's own text, so titles from untrusted pages reach it only as escaped HTML, never as script data.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from urllib.parse import quote, urlencode

from lshsql.engines import duckdb as db
from lshsql.errors import ParamError
from lshsql.tools import explore, show

CLUSTERS = 200  # caps the file's size whatever the number of URLs
MEMBERS = 10
TERMS = 8
FILTER_SCRIPT = """<script>
(function () {
  var box = document.getElementById("filter"), shown = document.getElementById("shown");
  var rows = document.querySelectorAll("#cluster-rows tr");
  function apply() {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean), n = 0;
    for (var i = 0; i < rows.length; i++) {
      var text = rows[i].textContent.toLowerCase();
      var hit = words.every(function (w) { return text.indexOf(w) >= 0; });
      rows[i].hidden = !hit;
      if (hit) n++;
    }
    shown.textContent = n + " of " + rows.length + " clusters shown";
  }
  box.addEventListener("input", apply);
  if (location.hash.indexOf("#q=") === 0) box.value = decodeURIComponent(location.hash.slice(3));
  apply();
})();
</script>"""


def serve_address(serve_url: str | None) -> str | None:
    """The address of a running `lshsql serve` (http or https), without its trailing slash."""
    if serve_url is None:
        return None
    if not serve_url.startswith(("http://", "https://")) or any(c in serve_url for c in "?#\"'<> "):
        raise ParamError(
            f"serve-url must be an http(s) address such as http://127.0.0.1:8000, got {serve_url!r}"
        )
    return serve_url.rstrip("/")


def clusters_html(work: Path, resources: db.Resources, serve: str | None, shingled: bool) -> str:
    """The filter box and the table of the CLUSTERS largest clusters, up to MEMBERS members each."""
    table = explore.top_clusters(work, limit=CLUSTERS, members=MEMBERS, terms=TERMS, resources=resources)
    rows = table.to_pylist()
    urls = sorted({m for row in rows for m in row["members"] or []} | {row["center"] for row in rows})
    with explore.open_work(work, resources) as con:
        pages = show.stored_pages(con, urls) if _has_pages(con) else {}
    body = "\n".join(_row(rank, row, pages, serve, shingled) for rank, row in enumerate(rows, 1))
    head = "".join(
        f"<th{' class=num' if i < 4 else ''}>{escape(h)}</th>"
        for i, h in enumerate(
            [
                "#",
                "size",
                "pair share",
                "min pair similarity",
                "center",
                "top terms",
                f"members (up to {MEMBERS})",
            ]
        )
    )
    box = (
        '<p><label>Filter: <input id="filter" type="search" size="40" '
        'placeholder="words of a title, URL or top term"></label> <span id="shown" class="note"></span></p>'
    )
    return (
        f'{box}\n<table class="clusters">\n<thead><tr>{head}</tr></thead>\n'
        f'<tbody id="cluster-rows">\n{body}\n</tbody>\n</table>\n{FILTER_SCRIPT}'
    )


def top_terms(words: list[str], shingled: bool, n: int = TERMS) -> list[str]:
    """A cluster's top terms as words: for shingled documents each label is a run of words ("court
    ruled monday"), so the words of the heaviest ones are listed once each, heaviest first."""
    if not shingled:
        return words
    seen: dict[str, None] = {}
    for label in words:
        for word in label.split():
            seen.setdefault(word, None)
    return list(seen)[:n]


def _has_pages(con) -> bool:
    return bool(con.execute("select count(*) from duckdb_views() where view_name = 'pages'").fetchone()[0])


def _row(rank: int, row: dict, pages: dict, serve: str | None, shingled: bool) -> str:
    center = row["center"]
    size = f"{row['size']:,}"
    if serve is not None:  # by cluster_id, which a later run keeps: the report's links outlive a rerun
        page = _serve_link(serve, f"/cluster/{int(row['cluster_id'])}")
        size = f'<a href="{page}">{size}</a>'
    members = "".join(f"<li>{_member(m, pages.get(m), serve)}</li>" for m in row["members"] or [])
    more = row["size"] - len(row["members"] or [])
    if more > 0:
        members += f'<li class="note">and {more:,} more</li>'
    cells = [
        f'<td class="num">{rank}</td>',
        f'<td class="num">{size}</td>',
        f'<td class="num">{_share(row["pair_share"])}</td>',
        f'<td class="num">{_share(row["min_pair_similarity"])}</td>',
        f'<td class="url">{_member(center, pages.get(center), serve)}</td>',
        f'<td class="terms">{escape(" ".join(top_terms(row["top_terms"] or [], shingled)))}</td>',
        f'<td class="url"><ul class="members">{members}</ul></td>',
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def _member(url: str, page: tuple | None, serve: str | None) -> str:
    """A member: its title (when fetched), its URL and where its stored page is: serve's URL and capture
    pages, or without serve the crawl file and offset `lshsql show --html URL` reads it from."""
    title = page[0] if page is not None else None
    text = f'<span class="title">{escape(title)}</span><br>' if title else ""
    if serve is not None:
        text = f'<a href="{_serve_link(serve, "/url", u=url)}">{text or escape(url)}</a>'
        text += f'<br><span class="link">{escape(url)}</span>' if title else ""
        if page is not None:
            text += f' <a class="where" href="{_serve_link(serve, "/capture", u=url)}">capture</a>'
        return text
    text += f'<span class="link">{escape(url)}</span>'
    if page is not None:
        text += f' <span class="where">{escape(Path(page[1]).name)} @ {int(page[2]):,}</span>'
    elif url.startswith(("http://", "https://")):  # not in the crawl: the live page is all there is
        live = escape(url, quote=True)
        text += f' <a class="where" href="{live}" rel="nofollow noreferrer">not fetched: live</a>'
    return text


def _serve_link(serve: str, path: str, **query: str) -> str:
    return escape(serve + quote(path) + ("?" + urlencode(query) if query else ""), quote=True)


def _share(value: float | None) -> str:
    """A chaining figure with 3 decimals; a dash when the clusters table has none (made before them)."""
    return "&ndash;" if value is None else f"{value:.3f}"
