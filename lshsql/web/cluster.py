"""`/cluster/<cluster_id>`: every member of a cluster, the center first and then by similarity to it, with
title, host, in-degree, a snippet of its stored page or document, and how chained the cluster is (its
least similar member pair)."""

from __future__ import annotations

from lshsql.errors import InputError
from lshsql.tools.changes import ended, successor
from lshsql.web import layout, text
from lshsql.web.layout import NotFound, esc
from lshsql.web.site import Site, connect

MEMBERS_SHOWN = 20  # each member shown reads its record for the snippet
TERMS = 10


def render(site: Site, cluster_id: str, query: dict[str, list[str]]) -> tuple[str, str]:
    """The title and body of a cluster's page, named by its cluster_id (center_id in a folder made before
    cluster ids): the id that survives runs, so a kept link opens the same cluster after a rerun."""
    if not (cluster_id.isascii() and cluster_id.isdigit()) or len(cluster_id) > 18:
        raise NotFound(f"no cluster {cluster_id!r}: a cluster is named by its {site.cluster_key}")
    limit = layout.integer(query, "limit", MEMBERS_SHOWN, 1, layout.MAX_PAGE_SIZE)
    offset = layout.integer(query, "offset", 0, 0, 2**62)
    chaining = (
        "min_pair_similarity, min_pair_u, min_pair_v, pair_share"
        if site.has_chaining
        else "null, null, null, null"
    )
    with connect(site) as con:
        head, notice = _head(con, site.cluster_key, int(cluster_id), chaining), ""
        if not head and site.cluster_key == "cluster_id":
            head, notice = _moved_on(con, int(cluster_id), chaining)
        if not head:
            raise NotFound(f"no cluster {cluster_id}: no cluster has this {site.cluster_key}")
        center_id, center, size, least, least_u, least_v, share = head[0]
        members = con.execute(MEMBERS, {"id": center_id, "limit": limit, "offset": offset}).fetchall()
        words = [
            word
            for (word,) in con.execute(
                "select word from cluster_labels where center_id = $id and rank <= $n order by rank",
                {"id": center_id, "n": TERMS},
            ).fetchall()
        ]
    body = [
        *([f'<p class="notice">{esc(notice)}</p>'] if notice else []),
        f'<h1>Cluster of {size:,}: <a href="{layout.url_page(center)}">{esc(center)}</a></h1>',
        '<dl class="facts">',
        f'<dt>top terms</dt><dd class="terms">{esc(" ".join(words)) or "&ndash;"}</dd>',
    ]
    if least is not None:
        pairs = size * (size - 1) // 2
        body.append(
            f"<dt>least similar pair</dt><dd>{least:.3f}: "
            f'<a href="{layout.href("/pair", u=least_u, v=least_v)}">'
            f"{esc(least_u)} &middot; {esc(least_v)}</a>"
            f"</dd><dt>pair share</dt><dd>{share:.3f}: {round(share * pairs):,} of its {pairs:,} member "
            "pairs are pairs (1 for a clique, low for a chain)</dd>"
        )
    body.append("</dl>")
    body.append(_members_table(site, center, members, offset))
    body.append(
        layout.pager(
            f"/cluster/{int(cluster_id)}",
            {"limit": limit if limit != MEMBERS_SHOWN else None},
            offset,
            limit,
            len(members),
            size,
        )
    )
    return f"cluster {center}", "\n".join(body)


def _members_table(site: Site, center: str, members: list[tuple], offset: int) -> str:
    sources = [text.Source(row[0], *row[4:8]) for row in members if row[4] is not None]
    texts = text.read_texts(site.work, sources, site.resources)
    rows = []
    for rank, row in enumerate(members, offset + 1):
        url, is_center, similarity, title = row[:4]
        in_degree, host = row[8:]
        if url not in texts:
            shown = '<span class="note">not fetched: a link target only</span>'
        else:
            found = texts[url]
            shown = (
                f'<span class="error">{esc(found)}</span>'
                if isinstance(found, InputError)
                else esc(text.snippet(found))
            )
            shown += f' <a href="{layout.href("/capture", u=url)}">capture</a>'
        title_html = f'<span class="title">{esc(title)}</span><br>' if title else ""
        compare = (
            "center"
            if is_center
            else f'{layout.number(similarity)} <a href="{layout.href("/pair", u=center, v=url)}">why</a>'
            if similarity is not None
            else f'&ndash; <a href="{layout.href("/pair", u=center, v=url)}">compare</a>'
        )
        rows.append(
            f'<tr><td class="num">{rank:,}</td><td class="url">{title_html}'
            f'<a href="{layout.url_page(url)}">{esc(url)}</a> {layout.live_link(url)}</td>'
            f'<td>{esc(host)}</td><td class="num">{in_degree:,}</td><td class="num">{compare}</td>'
            f'<td class="snippet">{shown}</td></tr>'
        )
    header = (
        '<tr><th class="num">#</th><th>member</th><th>host</th><th class="num">in-degree</th>'
        '<th class="num">similarity to center</th><th>snippet</th></tr>'
    )
    return f"<table>\n<thead>{header}</thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody></table>"


MEMBERS = """
with members as (
    select url, url_id, is_center from clusters where center_id = $id
),
to_center as (
    select v_id as url_id, similarity from pairs where u_id = $id
    union all
    select u_id as url_id, similarity from pairs where v_id = $id
),
used as (
    select
        pages.url,
        arg_max(pages.title, pages.record_id) as title,
        arg_max(pages.record_type, pages.record_id) as record_type,
        arg_max(pages.content_type, pages.record_id) as content_type,
        arg_max(pages.source_file, pages.record_id) as source_file,
        arg_max(pages.source_offset, pages.record_id) as source_offset
    from pages semi join members on pages.url = members.url
    where pages.skip_reason is null
    group by pages.url
),
cited as (
    select links.target_url as url, count(*) as in_degree
    from links semi join members on links.target_url = members.url
    group by links.target_url
)
select
    members.url,
    members.is_center,
    to_center.similarity,
    used.title,
    used.record_type,
    used.content_type,
    used.source_file,
    used.source_offset,
    coalesce(cited.in_degree, 0) as in_degree,
    lower(regexp_extract(members.url, '^[A-Za-z][A-Za-z0-9+.-]*://([^/:?#@]+)', 1)) as host
from members
left join to_center on members.url_id = to_center.url_id
left join used on members.url = used.url
left join cited on members.url = cited.url
order by members.is_center desc, to_center.similarity desc nulls last, members.url
limit $limit offset $offset
"""


def _moved_on(con, cluster_id: int, chaining: str) -> tuple[list, str]:
    """For an id that ended: the head row of the cluster holding most of its members now, with a line
    saying so (a saved link still opens those pages); NotFound when it is gone."""
    end = ended(con, cluster_id)
    if end is None:
        return [], ""
    event, other, run = end
    now = successor(con, cluster_id) if event == "merged" else None
    if now is None:
        how = (
            f"merged into cluster {other} in run {run}, which ended since"
            if event == "merged"
            else (f"it ended in run {run}; none of its members is in one now")
        )
        raise NotFound(f"no cluster {cluster_id}: {how}")
    head = _head(con, "cluster_id", now, chaining)
    later = f", which is now cluster {now}" if now != other else ""
    notice = f"Cluster {cluster_id} merged into cluster {other} in run {run}{later}: this is cluster {now}."
    return head, notice


def _head(con, key: str, cluster_id: int, chaining: str) -> list:
    """The cluster's center row: center_id, center, size and its chaining columns (none when no cluster)."""
    query = f"select center_id, center, size, {chaining} from clusters where {key} = $id and is_center"
    return con.execute(query, {"id": cluster_id}).fetchall()
