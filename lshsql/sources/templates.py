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
from numba import njit

from lshsql import sqlfiles
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
    table = pq.read_table(template_blocks, columns=["block", "targets"])
    if mode == "keep" or table.num_rows == 0:
        return [str(path) for path in files]
    blocks = np.sort(table.column("block").to_numpy())
    one_target = pc.filter(table.column("block"), pc.equal(table.column("targets"), 1)).to_numpy()
    named = np.sort(one_target)
    cut = []
    for path in files:
        cut.append(path.with_name("fragments-cut.parquet"))
        source = pq.ParquetFile(path)
        with pq.ParquetWriter(cut[-1], source.schema_arrow) as writer:
            for batch in source.iter_batches():
                writer.write_batch(trim_batch(batch, blocks, named, mode == "filter"))
        path.unlink()
    return [str(path) for path in cut]


def trim_batch(
    batch: pa.RecordBatch, template_blocks: np.ndarray, naming: np.ndarray, across: bool = False
) -> pa.RecordBatch:
    """The batch's fragments with their anchor windows cut by `template_blocks` (sorted keys); a template
    link's fragment keeps its anchor's terms when its block is one of `naming` (sorted), else it is left
    out. With `across`, windows are not cut: every template term goes and the rest stays, a template
    link's row too. Rows that are not anchors (no blocks) pass unchanged."""
    terms = batch.column("terms")
    blocks = batch.column("blocks")
    has_blocks = pc.invert(pc.is_null(blocks)).to_numpy(zero_copy_only=False)
    block_lengths = pc.fill_null(pc.list_value_length(blocks), 0).to_numpy(zero_copy_only=False)
    block_values = pc.list_flatten(blocks).to_numpy(zero_copy_only=False)
    block_offsets = np.concatenate([[0], np.cumsum(block_lengths)]).astype(np.int64)
    term_lengths = pc.fill_null(pc.list_value_length(terms), 0).to_numpy(zero_copy_only=False)
    term_offsets = np.concatenate([[0], np.cumsum(term_lengths)]).astype(np.int64)
    link_blocks = batch.column("block")
    link_keys = pc.fill_null(link_blocks, 0).to_numpy(zero_copy_only=False)
    link_template = _member(link_keys, template_blocks) & pc.is_valid(link_blocks).to_numpy(
        zero_copy_only=False
    )
    names_target = link_template & _member(link_keys, naming)
    keep_term, kept_lengths, keep_row = _cut(
        term_offsets,
        block_offsets,
        has_blocks,
        _member(block_values, template_blocks),
        pc.fill_null(batch.column("anchor_from"), 0).to_numpy(zero_copy_only=False).astype(np.int64),
        pc.fill_null(batch.column("anchor_to"), 0).to_numpy(zero_copy_only=False).astype(np.int64),
        link_template,
        names_target,
        across,
    )
    offsets = pa.array(np.concatenate([[0], np.cumsum(kept_lengths)]).astype(np.int32))
    values = pc.filter(pc.list_flatten(terms), pa.array(keep_term))
    new_terms = pa.ListArray.from_arrays(offsets, values, type=terms.type)
    columns = [new_terms if name == "terms" else batch.column(name) for name in batch.schema.names]
    trimmed = pa.RecordBatch.from_arrays(columns, schema=batch.schema)
    return trimmed.filter(pa.array(keep_row))


def _member(values: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """values[i] in sorted_keys, for each i."""
    if len(sorted_keys) == 0:
        return np.zeros(len(values), dtype=np.bool_)
    at = np.searchsorted(sorted_keys, values)
    at[at == len(sorted_keys)] = 0
    return sorted_keys[at] == values


@njit(cache=True, nogil=True)
def _cut(
    term_offsets, block_offsets, has_blocks, template, anchor_from, anchor_to, link_template, names, across
):
    """Which terms stay, how many of each row, and which rows stay: outside a template link, the terms from
    just after the last template term before the anchor to just before the first template term after it;
    of a template link, the anchor's terms where it names its one target, else nothing. With `across`:
    the terms that are not template, and the anchor's of a link that is not template or names its target."""
    n = has_blocks.shape[0]
    keep_term = np.ones(term_offsets[n], dtype=np.bool_)
    kept = np.empty(n, dtype=np.int64)
    keep_row = np.ones(n, dtype=np.bool_)
    for r in range(n):
        kept[r] = term_offsets[r + 1] - term_offsets[r]
        if not has_blocks[r]:
            continue
        start, stop = term_offsets[r], term_offsets[r + 1]
        base = block_offsets[r]
        low, high = anchor_from[r], anchor_to[r]
        if across:
            anchor_kept = not link_template[r] or names[r]
            n_kept = 0
            for i in range(stop - start):
                keep = not template[base + i] or (anchor_kept and low <= i < high)
                keep_term[start + i] = keep
                n_kept += keep
            kept[r] = n_kept
            continue
        if link_template[r]:
            if not names[r]:
                keep_row[r] = False
                continue
        else:
            while low > 0 and not template[base + low - 1]:
                low -= 1
            while high < stop - start and not template[base + high]:
                high += 1
        for i in range(stop - start):
            if i < low or i >= high:
                keep_term[start + i] = False
        kept[r] = high - low
    return keep_term, kept, keep_row
