"""A batch of crawl records -> raw rows, what a worker process runs for extract: each page parsed
(anchors.py) into its links, anchor-window and title fragments; each record skipped while reading as a
page row with its reason."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from lshsql import urls
from lshsql.sources.anchors import Page, block_seed, parse_page, sniff_skip_reason
from lshsql.sources.batches import Rows, surface_batch
from lshsql.sources.records import Record
from lshsql.sources.text import SurfaceForms

if TYPE_CHECKING:
    from lshsql.sources.extract import ExtractParams

# Per page whose <a href> went over --max-links: how many were not extracted (read before the raw tables
# are removed, for the summary and the manifest; no final table).
OVER_CAP_TABLE = "links_over_cap"
OVER_CAP_SCHEMA = pa.schema([("record_id", pa.int64()), ("links_over_cap", pa.int64())])
# Per page, the distinct keys of its text blocks with the key of its host (anchors.block_seed): what
# template detection counts (sources/templates.py; no final table).
PAGE_BLOCKS_TABLE = "page_blocks"
PAGE_BLOCKS_SCHEMA = pa.schema([("record_id", pa.int64()), ("host_key", pa.int64()), ("block", pa.int64())])


def skipped_rows(items: list[tuple[int, Record]], url_options: urls.UrlOptions) -> tuple[pa.RecordBatch, ...]:
    """Rows of records skipped while reading: a page row each, with its skip reason, its URL canonicalized
    where it can be and a redirect's target; no links, fragments or surface forms."""
    pages = Rows("pages")
    for record_id, record in items:
        url = _canonical_or_raw(record.url, url_options)
        redirect = _redirect_url(record, url_options)
        pages.add_page(record_id, record, url, record.skip_reason, redirect_url=redirect)
    no_links = (Rows("links").batch(), Rows("fragments").batch(), surface_batch(None))
    no_blocks = pa.RecordBatch.from_pylist([], schema=PAGE_BLOCKS_SCHEMA)
    return pages.batch(), *no_links, pa.RecordBatch.from_pylist([], schema=OVER_CAP_SCHEMA), no_blocks


def parse_batch(items: list[tuple[int, Record]], params: ExtractParams) -> tuple[pa.RecordBatch, ...]:
    """Parse a batch of pages (runs in a worker process); returns raw pages, links, fragments, the
    batch's surface forms (how often each word was normalized into each term), the pages' links over
    params.max_links_per_page and their text blocks."""
    normalize = SurfaceForms(params.text_options())
    url_options = params.url_options()
    pages, links, fragments = Rows("pages"), Rows("links"), Rows("fragments")
    over_cap: dict[str, list[int]] = {"record_id": [], "links_over_cap": []}
    page_blocks: dict[str, list[int]] = {"record_id": [], "host_key": [], "block": []}
    for record_id, record in items:
        try:
            url = urls.canonicalize(record.url.strip("<> "), url_options)
        except (urls.UrlError, AttributeError):
            pages.add_page(record_id, record, record.url, "invalid_url")
            continue
        reason = sniff_skip_reason(record.body)
        if reason:
            pages.add_page(record_id, record, url, reason)
            continue
        try:
            page = parse_page(
                record.body,
                url,
                record.content_type,
                params.window,
                url_options,
                params.content,
                params.max_links_per_page,
                params.window_blocks,
            )
        except Exception:  # noqa: BLE001 - one unparseable page must not stop a crawl; it is counted
            pages.add_page(record_id, record, url, "parse_error")
            continue
        n_out = _add_links(links, fragments, record_id, url, page, normalize, params.buckets)
        if page.blocks:
            host_key = _signed(block_seed(url))
            page_blocks["record_id"].extend([record_id] * len(page.blocks))
            page_blocks["host_key"].extend([host_key] * len(page.blocks))
            page_blocks["block"].extend(page.blocks)
        if page.links_over_cap:
            over_cap["record_id"].append(record_id)
            over_cap["links_over_cap"].append(page.links_over_cap)
        pages.add_page(
            record_id, record, url, None, page.title, page.encoding, n_out, canonical_url=page.canonical_url
        )
        fragments.add_fragment(record_id, url, "title", url, 0, normalize(page.title_words), params.buckets)
        if params.content:
            fragments.add_fragment(record_id, url, "content", url, 0, normalize(page.words), params.buckets)
    over_cap_batch = pa.RecordBatch.from_pydict(over_cap, schema=OVER_CAP_SCHEMA)
    blocks_batch = pa.RecordBatch.from_pydict(page_blocks, schema=PAGE_BLOCKS_SCHEMA)
    return (
        pages.batch(),
        links.batch(),
        fragments.batch(),
        surface_batch(normalize),
        over_cap_batch,
        blocks_batch,
    )


def _signed(value: int) -> int:
    return value - 2**64 if value >= 2**63 else value


def _add_links(
    links: Rows,
    fragments: Rows,
    record_id: int,
    url: str,
    page: Page,
    normalize: SurfaceForms,
    buckets: int,
) -> int:
    n_out = 0
    windows = sorted((link.span[0], link.span[3]) for link in page.links if link.target_url)
    flow = normalize.flow(page.flow_words, page.flow_keys, windows)
    for position, link in enumerate(page.links):
        internal = None
        if link.target_url:
            n_out += 1
            internal = urls.is_internal(url, link.target_url)
            terms, blocks, anchor_from, anchor_to = normalize.span(flow, *link.span)
            fragments.add_fragment(
                record_id,
                link.target_url,
                "anchor",
                url,
                position,
                terms,
                buckets,
                blocks=blocks,
                block=link.block,
                anchor_terms=(anchor_from, anchor_to),
            )
        links.add(
            record_id=record_id,
            source_url=url,
            position=position,
            href=link.href,
            target_url=link.target_url,
            is_internal=internal,
            anchor_text=link.anchor_text,
            skip_reason=link.skip_reason,
            block=link.block,
        )
    return n_out


def _canonical_or_raw(url: str | None, url_options: urls.UrlOptions) -> str | None:
    if url is None:
        return None
    try:
        return urls.canonicalize(url.strip("<> "), url_options)
    except urls.UrlError:
        return url


def _redirect_url(record: Record, url_options: urls.UrlOptions) -> str | None:
    """Where a redirect record points: its Location resolved against its URL and canonicalized like a link
    target; None for other records, or when either URL cannot be canonicalized."""
    if record.location is None or record.url is None:
        return None
    try:
        url = urls.canonicalize(record.url.strip("<> "), url_options)
        return urls.resolve(record.location, url, url_options)
    except urls.UrlError:
        return None
