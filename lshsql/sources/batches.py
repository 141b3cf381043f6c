"""Raw rows and their batching, shared by extract and ingest: records numbered by file and position,
grouped into (records to parse, records skipped while reading), and the column lists of the raw tables."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import TypeVar

import pyarrow as pa
import xxhash

from lshsql import schemas
from lshsql.sources.records import Record, path_text
from lshsql.sources.text import SurfaceForms

RAW_TABLES = ("pages", "links", "fragments", "surface_forms")
MAX_SKIPPED = 4096  # records skipped while reading, at most, in one batch

S = TypeVar("S")
R = TypeVar("R")


def numbered(sources: Iterable[tuple[int, S]], read: Callable[[S], Iterable[R]]) -> Iterator[tuple[int, R]]:
    """Each record `read` yields of each (file number, source), with its record_id: the file's number in
    the whole input (high 32 bits) and the record's number in its file."""
    for file_no, source in sources:
        for record_no, record in enumerate(read(source)):
            yield (file_no << 32) | record_no, record


def grouped(
    items: Iterable[tuple[object, int | None]], max_records: int, max_bytes: int
) -> Iterator[tuple[list, list]]:
    """Group (item, size) pairs into (items to parse, items skipped while reading): an item with a size is
    parsed, one with None is skipped. A group ends at max_records items to parse, max_bytes of their size
    or MAX_SKIPPED skipped items, so memory stays bounded."""
    batch: list = []
    skipped: list = []
    size = 0
    for item, n_bytes in items:
        if n_bytes is None:
            skipped.append(item)
        else:
            batch.append(item)
            size += n_bytes
        if len(batch) >= max_records or size >= max_bytes or len(skipped) >= MAX_SKIPPED:
            yield batch, skipped
            batch, skipped, size = [], [], 0
    if batch or skipped:
        yield batch, skipped


def surface_batch(forms: SurfaceForms | None) -> pa.RecordBatch:
    """The (term, word, n) rows a batch's SurfaceForms counted, as raw surface_forms (none for None)."""
    rows = forms.rows() if forms is not None else []
    columns = [list(column) for column in zip(*rows, strict=True)] if rows else [[], [], []]
    return pa.RecordBatch.from_arrays(columns, schema=schemas.raw_schema("surface_forms"))


def bucket_of(url: str, buckets: int) -> int:
    """The paper's on-disk bucket of a URL: xxh64 (seed 0) of its UTF-8 bytes, modulo M."""
    return xxhash.xxh64_intdigest(url.encode("utf-8")) % buckets


def parse_warc_date(value: str | None) -> datetime | None:
    """WARC-Date (ISO 8601, 'Z') or an ARC date (YYYYmmddHHMMSS) as an aware UTC datetime."""
    if not value:
        return None
    try:
        if value.isdigit():
            return datetime.strptime(value[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


class Rows:
    """Column lists for one raw table, turned into one Arrow batch."""

    def __init__(self, table: str) -> None:
        self.schema = schemas.raw_schema(table)
        self.columns: dict[str, list] = {name: [] for name in self.schema.names}

    def add(self, **row) -> None:
        for name, column in self.columns.items():
            column.append(row[name])

    def add_page(
        self,
        record_id: int,
        record: Record,
        url: str | None,
        reason: str | None,
        title: str | None = None,
        encoding: str | None = None,
        n_out_links: int | None = None,
        redirect_url: str | None = None,
        canonical_url: str | None = None,
    ) -> None:
        self.add(
            record_id=record_id,
            url=url,
            record_type=record.record_type,
            warc_date=parse_warc_date(record.warc_date),
            status=record.status,
            content_type=record.content_type,
            encoding=encoding,
            n_bytes=record.n_bytes,
            title=title,
            n_out_links=n_out_links,
            source_file=path_text(record.source_file),
            source_offset=record.source_offset,
            skip_reason=reason,
            redirect_url=redirect_url,
            canonical_url=canonical_url,
        )

    def add_fragment(
        self,
        record_id: int,
        url: str,
        kind: str,
        source_url: str,
        position: int,
        terms: list[str],
        buckets: int,
        blocks: list[int] | None = None,
        block: int | None = None,
        anchor_terms: tuple[int, int] | None = None,
    ) -> None:
        """A fragment row; an anchor's carries the key of its link's block, of each term's block and the
        span of its anchor's terms, for template detection."""
        self.add(
            record_id=record_id,
            url=url,
            bucket=bucket_of(url, buckets),
            kind=kind,
            source_url=source_url,
            position=position,
            terms=terms,
            block=block,
            blocks=blocks,
            anchor_from=anchor_terms[0] if anchor_terms else None,
            anchor_to=anchor_terms[1] if anchor_terms else None,
        )

    def batch(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict(self.columns, schema=self.schema)
