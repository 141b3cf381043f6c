"""`/url?u=URL`: What's Related for one URL (its pairs, most similar first, with the evidence that kept
each: agreeing min-hashes, LSH tables collided in, the heaviest shared terms), its cluster, the anchor
phrases other pages use for it, and `/capture?u=URL`: the stored page or document as text."""

from __future__ import annotations

import duckdb

from lshsql import manifest
from lshsql.errors import InputError
from lshsql.tools.explore import DOCUMENT_PAIRS, canonical, document_pairs
from lshsql.tools.show import StoredPage, read_stored, url_options
from lshsql.web import layout, text
from lshsql.web.layout import BadRequest, NotFound, esc
from lshsql.web.site import Site, connect

RELATED_SHOWN = 50
SHARED_TERMS = 5
ANCHORS = 5
RAW_SHOWN = 200_000  # characters of stored HTML shown on a capture page


def render(site: Site, query: dict[str, list[str]]) -> tuple[str, str]:
    """The title and body of a URL's page."""
    limit = layout.integer(query, "limit", RELATED_SHOWN, 1, layout.MAX_PAGE_SIZE)
    offset = layout.integer(query, "offset", 0, 0, 2**62)
    with connect(site) as con:
        url, url_id = _find(con, query)
        facts = con.execute(FACTS.format(key=site.cluster_key), {"url": url, "id": url_id}).fetchall()[0]
        pairs_of, values = _pairs_of(site, url_id)
        n_related = con.execute(f"select count(*) from ({pairs_of})", values).fetchone()[0]
        related = con.execute(_related(pairs_of), values | {"limit": limit, "offset": offset}).fetchall()
        shared = _shared_terms(con, url_id, [row[1] for row in related])
        anchors = _anchors(con, url)
    title, fetched, center, cluster_id, size, in_degree = facts
    num_perm = manifest.read(site.work).get("params", {}).get("num_perm")
    body = [
        f"<h1>{esc(title)}</h1>" if title else "",
        f'<p class="url"><b>{esc(url)}</b> {layout.live_link(url)}</p>',
    ]
    body.append('<dl class="facts">')
    body.append(
        "<dt>cluster</dt><dd>"
        + (
            "its own (no pair)"
            if size == 1
            else f'<a href="{layout.cluster_page(cluster_id)}">{size:,} URLs</a>, center '
            f'<a href="{layout.url_page(center)}">{esc(center)}</a>'
        )
        + "</dd>"
    )
    capture = f'<a href="{layout.href("/capture", u=url)}">stored capture</a>' if fetched else "not fetched"
    body.append(f"<dt>page</dt><dd>{capture}</dd><dt>in-degree</dt><dd>{in_degree:,} links to it</dd>")
    if anchors:
        phrases = "; ".join(f"{esc(phrase)} ({n:,})" for phrase, n in anchors)
        body.append(f"<dt>anchor phrases</dt><dd>{phrases}</dd>")
    body.append("</dl>")
    body.append(f"<h2>What's Related ({n_related:,} pairs)</h2>")
    if related:
        body.append(_related_table(url, related, shared, num_perm, offset))
        body.append(
            layout.pager(
                "/url",
                {"u": url, "limit": limit if limit != RELATED_SHOWN else None},
                offset,
                limit,
                len(related),
                n_related,
            )
        )
    else:
        body.append('<p class="note">No pair reached the threshold.</p>')
    return url, "\n".join(b for b in body if b)


def _find(con: duckdb.DuckDBPyConnection, query: dict[str, list[str]]) -> tuple[str, int]:
    given = layout.one(query, "u")
    if not given:
        raise BadRequest("give a URL: /url?u=URL")
    found = con.execute(
        "select url, url_id from urls where url in ($url, $canonical) order by url = $url desc limit 1",
        {"url": given, "canonical": canonical(given)},
    ).fetchall()  # explore.find_url's rule, with the url_id from the same scan
    if not found:
        raise NotFound(f"{given}: not described in this work folder (as given or canonicalized)")
    return found[0]


def _shared_terms(con: duckdb.DuckDBPyConnection, url_id: int, others: list[int]) -> dict[int, list[str]]:
    """The heaviest terms each related URL shares with this one, by min(weight, weight), as explain
    ranks them; none for a folder without terms (a dedup's shingles have no text)."""
    views = {name for (name,) in con.execute("select view_name from duckdb_views()").fetchall()}
    if not others or "terms" not in views or "bags" not in views:
        return {}
    return dict(con.execute(SHARED, {"id": url_id, "others": others, "n": SHARED_TERMS}).fetchall())


def _anchors(con: duckdb.DuckDBPyConnection, url: str) -> list[tuple[str, int]]:
    return con.execute(
        "select anchor_text, count(*) as n from links where target_url = $url and anchor_text <> '' "
        "group by anchor_text order by n desc, anchor_text limit $n",
        {"url": url, "n": ANCHORS},
    ).fetchall()


def _related_table(
    url: str, related: list[tuple], shared: dict[int, list[str]], num_perm: int | None, offset: int
) -> str:
    rows = []
    for rank, (other, other_id, similarity, n_agree, n_bands, same_cluster, title) in enumerate(
        related, offset + 1
    ):
        title_html = f'<span class="title">{esc(title)}</span><br>' if title else ""
        agree = f"{n_agree} of {num_perm}" if num_perm else f"{n_agree}"
        rows.append(
            f'<tr><td class="num">{rank:,}</td><td class="url">{title_html}'
            f'<a href="{layout.url_page(other)}">{esc(other)}</a></td>'
            f'<td class="num">{similarity:.3f}</td><td class="num">{agree}</td><td class="num">{n_bands}</td>'
            f"<td>{'yes' if same_cluster else 'no'}</td>"
            f'<td class="terms">{esc(" ".join(shared.get(other_id, [])))}</td>'
            f'<td><a href="{layout.href("/pair", u=url, v=other)}">why, side by side</a></td></tr>'
        )
    header = (
        '<tr><th class="num">#</th><th>related URL</th><th class="num">similarity</th>'
        '<th class="num">min-hashes agreeing</th><th class="num">LSH tables collided</th>'
        "<th>same cluster</th><th>heaviest shared terms</th><th></th></tr>"
    )
    return f"<table>\n<thead>{header}</thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody></table>"


def capture(site: Site, query: dict[str, list[str]]) -> tuple[str, str]:
    """The title and body of `/capture?u=URL`: the stored page's visible text and its HTML source as
    text (never as markup), or the document's text."""
    with connect(site) as con:
        url, _ = _find(con, query)
        rows = con.execute(
            "select title, record_type, content_type, source_file, source_offset from pages "
            "where url = $url and skip_reason is null order by record_id desc limit 1",
            {"url": url},
        ).fetchall()
    if not rows:
        raise NotFound(f"{url}: not fetched (a link target with no page stored); no capture")
    title, record_type, content_type, source_file, source_offset = rows[0]
    source = text.Source(url, record_type, content_type, source_file, source_offset)
    try:
        if record_type in ("dedup", "document", "reuters"):
            raw, shown = None, text.read_text(site.work, source, site.resources)
        else:
            stored = StoredPage(url, record_type, content_type, source_file, source_offset)
            raw = read_stored(stored, url_options(site.work))
            shown = text.html_text(raw)
    except InputError as e:
        raise NotFound(str(e)) from None
    body = [
        f"<h1>{esc(title) or esc(url)}</h1>",
        f'<p><a href="{layout.url_page(url)}">{esc(url)}</a> &middot; read from {esc(source_file)} at '
        f"{source_offset:,}</p>",
        f'<div class="side">{esc(shown) or "<span class=note>no visible text</span>"}</div>',
    ]
    if raw is not None:
        cut = " (cut)" if len(raw) > RAW_SHOWN else ""
        body.append(
            f"<details><summary>HTML source{cut}</summary><pre>{esc(raw[:RAW_SHOWN])}</pre></details>"
        )
    return f"capture of {url}", "\n".join(body)


FACTS = """
select
    (select arg_max(title, record_id) from pages where url = $url and skip_reason is null) as title,
    exists (select 1 from pages where url = $url and skip_reason is null) as fetched,
    clusters.center,
    clusters.{key},
    clusters.size,
    (select count(*) from links where target_url = $url) as in_degree
from clusters
where clusters.url_id = $id
"""

# A URL's pairs, the other URL first: two scans, since pairs are sorted by u_id, so that DuckDB skips the
# row groups of other u_ids in the first (one scan with `u_id = $id or v_id = $id` reads them all).
PAIRS_OF = """
select v as url, v_id as url_id, similarity, n_agree, n_bands from pairs where u_id = $id
union all
select u as url, u_id as url_id, similarity, n_agree, n_bands from pairs where v_id = $id
"""


def _pairs_of(site: Site, url_id: int) -> tuple[str, dict]:
    """The select of a URL's pairs and its values: PAIRS_OF, or in a dedup's folder with exact copies
    explore.DOCUMENT_PAIRS (a document's pairs through its shingle set)."""
    through_sets = document_pairs(site.work)
    if through_sets is None:
        return PAIRS_OF, {"id": url_id}
    return DOCUMENT_PAIRS, through_sets | {"id": url_id}


def _related(pairs_of: str) -> str:
    """A page of a URL's pairs (the select `pairs_of`), most similar first, with their cluster and title."""
    return f"""
with related as (
    select * from ({pairs_of})
    order by similarity desc, url
    limit $limit offset $offset
)
select
    related.url,
    related.url_id,
    related.similarity,
    related.n_agree,
    related.n_bands,
    clusters.center_id = (select center_id from clusters where url_id = $id) as same_cluster,
    (select arg_max(pages.title, pages.record_id) from pages
     where pages.url = related.url and pages.skip_reason is null) as title
from related
inner join clusters on related.url_id = clusters.url_id
order by related.similarity desc, related.url
"""


SHARED = """
with mine as (
    select term_hash, weight from bags where url_id = $id
),
shared as (
    select
        bags.url_id,
        terms.term,
        row_number() over (
            partition by bags.url_id order by least(bags.weight, mine.weight) desc, terms.term
        ) as rank
    from bags
    inner join mine on bags.term_hash = mine.term_hash
    inner join terms on bags.term_hash = terms.term_hash
    where list_contains($others, bags.url_id)
)
select url_id, list(term order by rank) from shared where rank <= $n group by url_id
"""
