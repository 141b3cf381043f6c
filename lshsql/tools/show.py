"""`lshsql show`: a cluster's members with their titles, in-degrees and where each page is stored, and a
member's HTML read back from its crawl file.

Every used page of pages.parquet keeps `source_file` and `source_offset`: for WARC and ARC files the byte
offset of the record (of its gzip member in a file gzipped per record; in the decompressed stream for a
file gzipped as one member), for JSON Lines the offset of the line (in the decompressed stream when
gzipped), for a folder of .html files the file itself. `stored_html` seeks there and reads the record again
as extraction did, so the text is the page as it was parsed.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from lshsql import manifest, urls
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError, one_line
from lshsql.sources.jsonl import is_gzip
from lshsql.tools.changes import ended_text
from lshsql.tools.explore import (
    canonical,
    cluster_key,
    clustering_path,
    fetch_arrow,
    find_url,
    has_chaining,
    open_work,
)

NOT_FETCHED = "(not fetched)"
# Records that share a page's URL without being a capture of it: they say nothing about the page.
NOT_CAPTURES = ("request", "warcinfo", "metadata", "duplicate_url")
DOCUMENT_TYPES = ("document", "reuters")
NO_LIMIT = 2**62


@dataclass(frozen=True)
class StoredPage:
    """Where a used page of pages.parquet was read from."""

    url: str
    record_type: str
    content_type: str | None
    source_file: str
    source_offset: int


def cluster_members(
    work: str | Path,
    cluster: str | int,
    from_cut: bool = False,
    limit: int | None = None,
    resources: db.Resources | None = None,
) -> pa.Table:
    """The members of a cluster in URL order: whether each is the center, whether its page was fetched,
    its title (NOT_FETCHED for a URL known only as a link target), its in-degree (links pointing to it)
    and the source_file and source_offset its page was read from. `cluster` is the cluster_id (an integer;
    center_id in a folder made before cluster ids), the center's URL or any member's URL; with from_cut the
    clusters are DIR/cut.parquet. Every row starts with the cluster's cluster_id, center_id and size.

    Example:
        >>> cluster_members("work/example", "https://www.python.org/").to_pylist()  # doctest: +SKIP
    """
    work = Path(work)
    if limit is not None and limit < 0:
        raise ParamError(f"limit must be >= 0, got {limit}")
    relation = _relation(work, from_cut)
    with open_work(work, resources) as con:
        _ensure_pages_and_links(con)
        center_id = _center_id(con, relation, cluster)
        return fetch_arrow(
            con,
            MEMBERS.format(relation=relation, key=cluster_key(con, relation)),
            {
                "center_id": center_id,
                "limit": NO_LIMIT if limit is None else limit,
                "not_fetched": NOT_FETCHED,
                "not_captures": list(NOT_CAPTURES),
            },
        )


def stored_pages(con: duckdb.DuckDBPyConnection, urls: list[str]) -> dict[str, tuple[str | None, str, int]]:
    """The title, source_file and source_offset of each of `urls` that has a used page (the latest
    capture), on a connection with the view pages; a URL known only as a link target is left out."""
    if not urls:
        return {}
    rows = con.execute(
        "select url, arg_max(title, record_id), arg_max(source_file, record_id), "
        "arg_max(source_offset, record_id) from pages where skip_reason is null "
        "and list_contains($urls, url) group by url",
        {"urls": urls},
    ).fetchall()
    return {url: (title, source_file, source_offset) for url, title, source_file, source_offset in rows}


def heading(
    table: pa.Table, work: str | Path, from_cut: bool = False, resources: db.Resources | None = None
) -> str:
    """One line naming the cluster of a `cluster_members` table: its cluster_id, size and center."""
    if not table.num_rows:
        return "no members shown"
    row = table.slice(0, 1).to_pylist()[0]
    with open_work(work, resources) as con:
        center = db.scalar(
            con,
            f"select center from {_relation(Path(work), from_cut)} where center_id = $id limit 1",
            {"id": row["center_id"]},
        )
    shown = f", {table.num_rows} shown" if table.num_rows < row["size"] else ""
    return f"cluster {row['cluster_id']}: {row['size']} URLs{shown}, center {center}"


def chaining(
    table: pa.Table, work: str | Path, from_cut: bool = False, resources: db.Resources | None = None
) -> str | None:
    """One line on how chained the cluster of a `cluster_members` table is: its pair_share and its least
    similar pair. None for a singleton, a cut, or clusters made before these columns."""
    if not table.num_rows or table["size"][0].as_py() < 2:
        return None
    with open_work(work, resources) as con:
        relation = _relation(Path(work), from_cut)
        if not has_chaining(con, relation):
            return None
        share, similarity, u, v = con.execute(
            f"select pair_share, min_pair_similarity, min_pair_u, min_pair_v from {relation} "
            "where center_id = $id limit 1",
            {"id": table["center_id"][0].as_py()},
        ).fetchone()
    size = table["size"][0].as_py()
    member_pairs = size * (size - 1) // 2
    held = round(share * member_pairs)
    return (
        f"pair_share {share:.3f}: {held} of its {member_pairs} member pairs are pairs; "
        f"least similar pair {similarity:.3f}: {u} {v}"
    )


def stored_html(
    work: str | Path,
    url: str,
    cluster: str | int | None = None,
    from_cut: bool = False,
    resources: db.Resources | None = None,
) -> str:
    """The stored HTML of a used page, read again from its crawl file at its source_offset and decoded as
    extraction decoded it (anchors.decode_html with the HTTP Content-Type); for JSON Lines the html
    field as written. With `cluster`, the URL must be one of its members.

    Example:
        >>> print(stored_html("work/example", "https://www.python.org/")[:80])  # doctest: +SKIP
    """
    work = Path(work)
    url = canonical(url)
    with open_work(work, resources) as con:
        if cluster is not None:
            relation = _relation(work, from_cut)
            center_id = _center_id(con, relation, cluster)
            member = db.scalar(
                con,
                f"select count(*) from {relation} where center_id = $id and url = $url",
                {"id": center_id, "url": url},
            )
            if not member:
                raise InputError(f"{url}: not a member of cluster {str(cluster).strip()}")
        page = _stored_page(con, url)
    return read_stored(page, url_options(work))


def read_stored(page: StoredPage, options: urls.UrlOptions | None = None) -> str:
    """The HTML of a page record, read from its source file at its offset (see the module docstring)."""
    if page.record_type in DOCUMENT_TYPES:
        raise InputError(f"{page.url}: a document from `lshsql ingest` has text, not stored HTML")
    path = Path(page.source_file)
    if not path.is_file():
        raise InputError(
            f"{page.source_file}: source file of {page.url} moved or missing (its path as given to extract)"
        )
    options = options or urls.UrlOptions()
    try:
        if page.record_type == "file":
            return _decode(path.read_bytes(), page.content_type)
        if page.record_type == "jsonl":
            return _jsonl_html(page, options)
        return _warc_html(page, options)
    except OSError as e:
        raise InputError(f"{page.source_file}: cannot read: {one_line(e)}") from None


# --- looking up ---------------------------------------------------------------------------------------


def _relation(work: Path, from_cut: bool) -> str:
    return clustering_path(work, from_cut).stem


def _center_id(con: duckdb.DuckDBPyConnection, relation: str, cluster: str | int) -> int:
    """The center_id of a cluster given by its cluster_id (see cluster_key), or by the URL of its center or
    of any member. An integer is never taken as a center_id where cluster ids exist: those shift between
    runs, and one could name another cluster than the user meant."""
    text = str(cluster).strip()
    member = find_url(con, text, relation)  # a member's URL (or document id, maybe a number) comes first
    if member is not None:
        return db.scalar(con, f"select center_id from {relation} where url = $url limit 1", {"url": member})
    key = cluster_key(con, relation)
    if text.isascii() and text.isdigit() and len(text) <= 18:
        found = con.execute(
            f"select center_id from {relation} where {key} = $id limit 1", {"id": int(text)}
        ).fetchall()
        if found:
            return found[0][0]
        ended = ended_text(con, int(text)) if relation == "clusters" else None
        if ended:
            raise InputError(f"{text}: {ended} (lshsql diff --run N lists a run's changes)")
    raise InputError(f"{text}: no such cluster (give a {key} or a member's URL of the {relation} table)")


def _ensure_pages_and_links(con: duckdb.DuckDBPyConnection) -> None:
    """Empty pages and links when the work folder has none (a run from --bags): no member is fetched."""
    views = {name for (name,) in con.execute("select view_name from duckdb_views()").fetchall()}
    if "pages" not in views:
        con.execute(
            "create temp table pages (record_id bigint, url varchar, record_type varchar, content_type "
            "varchar, title varchar, source_file varchar, source_offset bigint, skip_reason varchar)"
        ).fetchall()
    if "links" not in views:
        con.execute("create temp table links (source_url varchar, target_url varchar)").fetchall()


def _stored_page(con: duckdb.DuckDBPyConnection, url: str) -> StoredPage:
    if "pages" not in {name for (name,) in con.execute("select view_name from duckdb_views()").fetchall()}:
        raise InputError("no pages.parquet in this work folder (a run from --bags stores no pages)")
    rows = con.execute(
        "select url, record_type, content_type, source_file, source_offset from pages "
        "where url = $url and skip_reason is null order by record_id desc limit 1",
        {"url": url},
    ).fetchall()
    if not rows:
        skipped = con.execute(
            "select skip_reason from pages where url = $url and skip_reason not in "
            "('request', 'warcinfo', 'metadata') order by record_id desc limit 1",
            {"url": url},
        ).fetchall()
        if skipped:
            raise InputError(f"{url}: its record was not used ({skipped[0][0]}); no stored HTML")
        raise InputError(f"{url}: not fetched (a link target with no page in the crawl); no stored HTML")
    return StoredPage(*rows[0])


def url_options(work: Path) -> urls.UrlOptions:
    """The canonicalization options extraction used, to check that a record read back is the page's."""
    params = manifest.read(work)["stages"].get("extract", {}).get("params", {})
    strip = urls.TRACKING_PARAMS if params.get("strip_tracking") else frozenset()
    return urls.UrlOptions(sort_query=bool(params.get("sort_query")), strip_params=strip)


def _same_url(raw: str | None, url: str, options: urls.UrlOptions) -> bool:
    if raw is None:
        return False
    if raw == url:
        return True
    try:
        return urls.canonicalize(raw, options) == url
    except urls.UrlError:
        return False


# --- reading back -------------------------------------------------------------------------------------


def _decode(body: bytes, content_type: str | None) -> str:
    from lshsql.sources.anchors import decode_html

    return decode_html(body, content_type)[0]


def _jsonl_html(page: StoredPage, options: urls.UrlOptions) -> str:
    opener = gzip.open if is_gzip(page.source_file) else open
    try:
        with opener(page.source_file, "rb") as f:
            f.seek(page.source_offset)  # a gzip stream seeks forward by decompressing up to the offset
            line = f.readline()
        obj = json.loads(line)
    except (ValueError, EOFError, zlib.error):
        obj = None
    if not isinstance(obj, dict) or not _same_url(obj.get("url"), page.url, options) or "html" not in obj:
        raise _changed(page)
    return obj["html"]


def _warc_html(page: StoredPage, options: urls.UrlOptions) -> str:
    """The record at the offset: in the file as it is (plain, or a gzip member starting there), else in the
    decompressed stream of a file gzipped as one member. The record must be a capture of the page's URL."""
    path = Path(page.source_file)
    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
        f.seek(page.source_offset)
        member_here = f.read(2) == b"\x1f\x8b"
    openers = []
    if not gzipped or member_here:
        openers.append(open)
    if gzipped:
        openers.append(gzip.open)
    for opener in openers:
        found = _record_at(path, page.source_offset, opener)
        if found and _same_url(found[0], page.url, options):
            return _decode(found[2], found[1])
    raise _changed(page)


def _record_at(path: Path, offset: int, opener) -> tuple[str | None, str | None, bytes] | None:
    """(target URI, HTTP Content-Type, decoded HTTP body) of the response record at offset, or None."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed
    from warcio.statusandheaders import StatusAndHeadersParserException

    broken = (ArchiveLoadFailed, StatusAndHeadersParserException, OSError, EOFError, ValueError, zlib.error)
    try:
        with opener(path, "rb") as f:
            f.seek(offset)
            for record in ArchiveIterator(f, arc2warc=True):
                if record.rec_type != "response" or record.http_headers is None:
                    return None
                uri = record.rec_headers.get_header("WARC-Target-URI")
                content_type = record.http_headers.get_header("Content-Type")
                return uri, content_type, record.content_stream().read()
    except broken:
        return None
    return None


def _changed(page: StoredPage) -> InputError:
    return InputError(
        f"{page.source_file}: no record of {page.url} at offset {page.source_offset}; "
        "the file changed since extraction (run `lshsql extract` again)"
    )


MEMBERS = """
    with members as (
        select url, {key} as cluster_id, center_id, size, is_center from {relation}
        where center_id = $center_id
    ),
    used as (
        select pages.url, arg_max(pages.title, pages.record_id) as title,
               arg_max(pages.source_file, pages.record_id) as source_file,
               arg_max(pages.source_offset, pages.record_id) as source_offset
        from pages semi join members on pages.url = members.url
        where pages.skip_reason is null
        group by pages.url
    ),
    unused as (
        select pages.url, arg_max(pages.skip_reason, pages.record_id) as skip_reason
        from pages semi join members on pages.url = members.url
        where pages.skip_reason is not null and not list_contains($not_captures, pages.skip_reason)
        group by pages.url
    ),
    cited as (
        select links.target_url as url, count(*) as in_degree
        from links semi join members on links.target_url = members.url
        group by links.target_url
    )
    select
        members.cluster_id,
        members.center_id,
        members.size,
        members.url,
        members.is_center,
        used.url is not null as fetched,
        case
            when used.url is not null then used.title
            when unused.url is not null then '(not used: ' || unused.skip_reason || ')'
            else $not_fetched
        end as title,
        coalesce(cited.in_degree, 0) as in_degree,
        used.source_file,
        used.source_offset
    from members
    left join used on members.url = used.url
    left join unused on members.url = unused.url
    left join cited on members.url = cited.url
    order by members.url
    limit $limit
"""
