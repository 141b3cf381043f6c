"""Parquet schemas of every table lshsql writes, with a line of documentation per column.

These are the contracts between stages (and with users who bring their own tables); the README's schema
section is generated from the same docs.
"""

from __future__ import annotations

import pyarrow as pa

COLUMNS: dict[str, list[tuple[str, pa.DataType, str]]] = {
    "pages": [
        ("record_id", pa.int64(), "input order: file number * 2^32 + record number in the file"),
        (
            "url",
            pa.string(),
            "canonical URL of the record (raw WARC-Target-URI if it cannot be canonicalized)",
        ),
        ("record_type", pa.string(), "WARC record type (response, request, revisit, ...), 'file' or 'jsonl'"),
        ("warc_date", pa.timestamp("us", tz="UTC"), "capture time (WARC-Date), null if absent"),
        ("status", pa.int32(), "HTTP status code"),
        ("content_type", pa.string(), "HTTP Content-Type header"),
        ("encoding", pa.string(), "character encoding the HTML was decoded with"),
        ("n_bytes", pa.int64(), "bytes of the (decoded) HTTP body"),
        ("title", pa.string(), "text of <title>, whitespace collapsed"),
        ("n_out_links", pa.int32(), "number of followable links (<a href> with a web target) on the page"),
        ("source_file", pa.string(), "file the record was read from"),
        (
            "source_offset",
            pa.int64(),
            "byte offset of the record in source_file (decompressed stream for "
            "single-member gzip files; line offset for JSON Lines)",
        ),
        ("skip_reason", pa.string(), "why the record is not used; null for a used page"),
    ],
    "links": [
        ("source_url", pa.string(), "canonical URL of the page the link is on"),
        ("position", pa.int32(), "0-based position of the link among the page's <a href> elements"),
        ("href", pa.string(), "the href attribute as written"),
        ("target_url", pa.string(), "canonical absolute target (after <base href>); null when skipped"),
        ("is_internal", pa.bool_(), "target has the same registered domain as the source"),
        (
            "anchor_text",
            pa.string(),
            "text of the anchor (with alt text of images in it), whitespace collapsed",
        ),
        (
            "skip_reason",
            pa.string(),
            "why the link gives no fragment (javascript, mailto, ...); null if used",
        ),
    ],
    "fragments": [
        ("url", pa.string(), "the URL described: the link target, or the page itself for title/content"),
        ("bucket", pa.int32(), "xxh64(url) mod M; stored as the folder name fragments/bucket=<i>/"),
        ("kind", pa.string(), "'anchor' (anchor text + window), 'title' or 'content'"),
        ("source_url", pa.string(), "the page the words come from"),
        ("position", pa.int32(), "position of the link on source_url (0 for title and content rows)"),
        ("terms", pa.list_(pa.string()), "normalized words (lowercased, stopwords removed, stemmed)"),
    ],
}

RAW_EXTRA = ("record_id", pa.int64(), "input order of the page the row comes from")


def schema(table: str) -> pa.Schema:
    """The Arrow schema of a table lshsql writes."""
    return pa.schema([(name, dtype) for name, dtype, _ in COLUMNS[table]])


def raw_schema(table: str) -> pa.Schema:
    """Schema of the intermediate rows extraction workers produce, before duplicates are resolved."""
    columns = COLUMNS[table]
    if table != "pages":
        columns = [RAW_EXTRA, *columns]
    return pa.schema([(name, dtype) for name, dtype, _ in columns])


def markdown(table: str) -> str:
    """A markdown table of the columns, for the README."""
    rows = [f"| `{name}` | {dtype} | {doc} |" for name, dtype, doc in COLUMNS[table]]
    return "\n".join(["| column | type | meaning |", "|---|---|---|", *rows])
