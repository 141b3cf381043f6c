"""Site templates out of anchor windows: once every page is read, the text blocks that repeat on a large share
of a host's pages (sql/02_template_blocks.sql) are template, and their words are taken out of the anchor
fragments.

Modes (`--templates`): "filter" takes every template word out and keeps the rest of each window, so a "Next"
link in a nav bar is still described by the chapter title beside it; a template link keeps its own anchor
text only when its block's links all point to one URL (a site-wide "Home" names that page; a "Next" or "Show
source" on every page names none of its many targets). "cut" also stops each window at the nearest template
word on either side and gives a template link that does not name one URL no fragment. "keep" leaves the
paper's windows (template links are still flagged in links.parquet). bench/RESULTS.md ("Chapters") has
what each gives on two documentation sites.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lshsql import schemas, sqlfiles
from lshsql.engines.arrays import boolean_values, integer_values
from lshsql.engines.base import Engine
from lshsql.sources.parse import PAGE_BLOCKS_SCHEMA, PAGE_BLOCKS_TABLE

MODES = ("cut", "filter", "keep")
MIN_PAGES = 3  # a block on fewer of its host's pages is never template, whatever the share


def detect(engine: Engine, raw_dir: Path, share: float) -> Path:
    """Write raw_dir/template_blocks.parquet (block, pages, targets) from the raw page blocks and links and
    the final pages (registered as `pages`); returns its path, registered as `template_blocks`."""
    files = sorted(str(p) for p in raw_dir.glob(f"**/{PAGE_BLOCKS_TABLE}.parquet"))
    if not files:  # ingest: documents have no blocks
        empty = raw_dir / f"{PAGE_BLOCKS_TABLE}.parquet"
        pq.write_table(pa.table({"record_id": [], "host_key": [], "block": []}, PAGE_BLOCKS_SCHEMA), empty)
        files = [str(empty)]
    engine.register({"page_blocks_raw": files})
    out = raw_dir / "template_blocks.parquet"
    params = {"share": float(share), "min_pages": MIN_PAGES}
    engine.materialize(sqlfiles.load("02_template_blocks.sql"), params, out)
    engine.register({"template_blocks": str(out)})
    return out


def trim_fragments(raw_dir: Path, template_blocks: Path, mode: str) -> list[str]:
    """Cut every raw anchor fragment under raw_dir by the template blocks, a batch at a time, into a
    fragments-cut.parquet beside each fragments.parquet (removed); returns the raw fragment files to read."""
    files = sorted(raw_dir.glob("**/fragments.parquet"))
    table = schemas.read(template_blocks, columns=["block", "targets"])
    if mode == "keep" or table.num_rows == 0:
        return [str(path) for path in files]
    block, targets = (integer_values(table.column(name))[0] for name in ("block", "targets"))
    blocks, named = np.sort(block), np.sort(block[targets == 1])
    cut = []
    for path in files:
        cut.append(path.with_name("fragments-cut.parquet"))
        source = schemas.streamed(path)
        with pq.ParquetWriter(cut[-1], source.schema_arrow) as writer:
            for batch in source.iter_batches():
                writer.write_batch(trim_batch(batch, blocks, named, mode == "filter"))
        path.unlink()
    return [str(path) for path in cut]


def trim_batch(
    batch: pa.RecordBatch, template_blocks: np.ndarray, naming: np.ndarray, across: bool = False
) -> pa.RecordBatch:
    """The batch's fragments with their anchor windows cut by `template_blocks` (sorted keys): the terms from
    just after the last template term before the anchor to just before the first template term after it; a
    template link's fragment keeps its anchor's terms when its block is one of `naming` (sorted), else it is
    left out. With `across`, windows are not cut: every template term goes and the rest stays, a template
    link's row too. Rows that are not anchors (no blocks) pass unchanged."""
    terms, blocks, link_blocks = batch.column("terms"), batch.column("blocks"), batch.column("block")
    n = batch.num_rows
    lengths = _numpy(pc.fill_null(pc.list_value_length(terms), 0)).astype(np.int64)
    row = np.repeat(np.arange(n), lengths)  # the row of each term
    pos = np.arange(len(row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # its place in the row
    anchor = _numpy(pc.is_valid(blocks))
    template = np.zeros(len(row), dtype=np.bool_)  # blocks are aligned with the terms of anchor rows
    template[anchor[row]] = _member(_numpy(pc.list_flatten(blocks)), template_blocks)
    link_keys = _numpy(pc.fill_null(link_blocks, 0))
    link_template = _member(link_keys, template_blocks) & _numpy(pc.is_valid(link_blocks)) & anchor
    names = _member(link_keys, naming)
    first = _numpy(pc.fill_null(batch.column("anchor_from"), 0)).astype(np.int64)[row]
    stop = _numpy(pc.fill_null(batch.column("anchor_to"), 0)).astype(np.int64)[row]
    in_anchor = (pos >= first) & (pos < stop)
    keep_row = np.ones(n, dtype=np.bool_)
    if across:
        keep_term = ~template | (in_anchor & ~(link_template & ~names)[row])
    else:
        low = np.full(n, -1, dtype=np.int64)  # the last template term before the anchor
        np.maximum.at(low, row, np.where(template & (pos < first), pos, -1))
        high = lengths.copy()  # the first template term after it
        np.minimum.at(high, row, np.where(template & (pos >= stop), pos, lengths[row]))
        window = (pos > low[row]) & (pos < high[row])
        keep_term = np.where(link_template[row], in_anchor, window) | ~anchor[row]
        keep_row = ~link_template | names
    kept = np.bincount(row, weights=keep_term, minlength=n).astype(np.int64)
    offsets = pa.array(np.concatenate([[0], np.cumsum(kept)]).astype(np.int32))
    values = pc.filter(pc.list_flatten(terms), pa.array(keep_term))
    new_terms = pa.ListArray.from_arrays(offsets, values, type=terms.type)
    columns = [new_terms if name == "terms" else batch.column(name) for name in batch.schema.names]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema).filter(pa.array(keep_row))


def _numpy(array: pa.Array) -> np.ndarray:
    """An integer or boolean array without nulls as numpy (engines/arrays.py: not through pandas)."""
    return boolean_values(array) if pa.types.is_boolean(array.type) else integer_values(array)[0]


def _member(values: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """values[i] in sorted_keys, for each i."""
    if len(sorted_keys) == 0:
        return np.zeros(len(values), dtype=np.bool_)
    at = np.searchsorted(sorted_keys, values)
    at[at == len(sorted_keys)] = 0
    return sorted_keys[at] == values
