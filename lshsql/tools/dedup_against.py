"""`lshsql dedup --against FOLDER`: an earlier dedup's kept documents, checked to be judged as this run
will be, and their sets and signatures taken over rather than computed again."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lshsql import manifest
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.sources.corpus import arrow_batches

if TYPE_CHECKING:
    from lshsql.tools.dedup import DedupParams
    from lshsql.tools.dedup_read import Writers

# The earlier dedup's kept documents (its own earlier ones first), renumbered 1 .. kept in their order.
_EARLIER_KEPT = """
with kept as (
    select url_id, row, id, source as source_path from read_parquet($documents) where earlier
    union all
    select documents.url_id, duplicates.row, duplicates.id, documents.source as source_path
    from read_parquet($duplicates) as duplicates
    inner join read_parquet($documents) as documents on duplicates.url = documents.url
    where duplicates.reason = 'kept'
)
select
    row_number() over (order by kept.url_id) as url_id,
    kept.url_id as earlier_url_id,
    kept.row,
    kept.id,
    kept.source_path
from kept
"""


def earlier_index(folder: Path, params: DedupParams) -> dict:
    """What `--against FOLDER` reads: an earlier dedup's kept documents, checked to be shingled, signed
    and judged as this run will be. The folder is only read."""
    entry = manifest.read(folder).get("dedup") if folder.is_dir() else None
    tables = ("documents", "duplicates", "bags", "signatures")
    if not entry or "stats" not in entry or not all((folder / f"{t}.parquet").exists() for t in tables):
        raise InputError(f"{folder}: not the work folder of a finished `lshsql dedup`")
    theirs, ours = entry["index"], params.index_key()
    for key in ("shingle", "chars", "threshold", "num_perm", "seed"):
        if theirs.get(key) != ours[key]:
            option = "--" + ("char-shingle" if key == "chars" else key.replace("_", "-"))
            raise ParamError(
                f"{folder} was deduplicated with {option} {theirs.get(key)}, this run has {ours[key]}: "
                "give the same"
            )
    if theirs.get("probe") != ours["probe"]:
        raise InputError(
            f"{folder}: its shingles were hashed differently (another lshsql version): dedup it again"
        )
    values = {
        "documents": str(folder / "documents.parquet"),
        "duplicates": str(folder / "duplicates.parquet"),
    }
    with db.connect(db.Resources(threads=1)) as con:
        (kept,) = con.execute(f"select count(*) from ({_EARLIER_KEPT})", values).fetchall()[0]
    return {"folder": folder, "kept": kept, "values": values}


def register_earlier_kept(con, earlier: dict | None) -> None:
    """The table earlier_kept(url_id, earlier_url_id, row, id, source_path); empty without --against."""
    if earlier:
        con.execute(f"create temp table earlier_kept as {_EARLIER_KEPT}", earlier["values"])
    else:
        con.execute(
            "create temp table earlier_kept (url_id bigint, earlier_url_id bigint, row bigint, "
            "id varchar, source_path varchar)"
        )


def copy_earlier_sets(earlier: dict, writers: Writers, resources: db.Resources) -> None:
    """The bags rows and signatures of the earlier corpus's kept documents under url_ids 1 .. kept: read,
    not computed again."""
    folder = earlier["folder"]
    with db.connect(resources) as con:
        con.execute("set preserve_insertion_order = true")
        register_earlier_kept(con, earlier)
        for table, writer, schema, order in (
            ("bags", writers.bags, writers.bags_schema, "url_id, term_hash"),
            ("signatures", writers.signatures, writers.signatures_schema, "url_id"),
        ):
            query = (
                "select earlier_kept.url_id, t.* exclude (url_id) from read_parquet($t) as t "
                f"inner join earlier_kept on t.url_id = earlier_kept.earlier_url_id order by {order}"
            )  # order is a constant of this module
            for batch in arrow_batches(con, query, {"t": str(folder / f"{table}.parquet")}, 65536):
                writer.write_batch(batch.cast(schema))
