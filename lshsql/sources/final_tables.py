"""Raw Parquet -> the final work-folder tables, shared by extract and ingest: sql/01..05 resolve duplicate
captures and write ordered tables, their counts, and the manifest entry that switches them in."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from lshsql import schemas, sqlfiles, workdir
from lshsql.engines import duckdb as db
from lshsql.engines.base import Engine
from lshsql.errors import InputError
from lshsql.sources import templates as site_templates
from lshsql.sources.batches import RAW_TABLES


def finalize(
    engine: Engine,
    raw_dir: Path,
    work: Path,
    buckets: int,
    templates: str = "keep",
    template_share: float = 0.5,
) -> None:
    """Resolve duplicate captures, find the sites' template blocks and cut them out of the anchor windows
    (templates.py; `templates` is its mode), and write the ordered final tables (on either engine)."""
    engine.register({f"{t}_raw": sorted(str(p) for p in raw_dir.glob(f"**/{t}.parquet")) for t in RAW_TABLES})
    engine.materialize(sqlfiles.load("01_pages.sql"), {}, work / "pages.parquet")
    engine.register({"pages": str(work / "pages.parquet")})
    template_blocks = site_templates.detect(engine, raw_dir, template_share)
    engine.register({"fragments_raw": site_templates.trim_fragments(raw_dir, template_blocks, templates)})
    engine.materialize(sqlfiles.load("02_links.sql"), {}, work / "links.parquet")
    shutil.rmtree(work / "fragments", ignore_errors=True)
    engine.materialize_partitioned(
        sqlfiles.load("03_fragments.sql"), {}, work / "fragments", "bucket", buckets
    )
    engine.register({"links": str(work / "links.parquet")})
    engine.materialize(sqlfiles.load("04_url_aliases.sql"), {}, work / "url_aliases.parquet")
    engine.materialize(sqlfiles.load("05_surface_forms.sql"), {}, work / "surface_forms.parquet")
    for table in ("pages", "links", "url_aliases", "surface_forms"):
        schemas.validate(work / f"{table}.parquet", table)


def count_rows(con, work: Path) -> dict:
    """The counts of the final tables in `work`, as the fields of ExtractSummary of the same names: records
    read, used and skipped by reason, HTML bytes, links, fragments, URLs described, URL aliases."""
    pages = con.execute(
        "select skip_reason, count(*), sum(n_bytes) from read_parquet($p) group by all",
        {"p": str(work / "pages.parquet")},
    ).fetchall()
    links = con.execute(
        "select skip_reason, is_internal, count(*), count(*) filter (where is_template) "
        "from read_parquet($p) group by all",
        {"p": str(work / "links.parquet")},
    ).fetchall()
    fragment_files = workdir.fragment_files(work)
    fragments = con.execute(
        "select kind, count(*) from read_parquet($p) group by all", {"p": fragment_files}
    ).fetchall()
    n_urls = db.scalar(con, "select count(distinct url) from read_parquet($p)", {"p": fragment_files})
    aliases = con.execute(
        "select kind, count(*), sum(links_collapsed) from read_parquet($p) group by all order by kind",
        {"p": str(work / "url_aliases.parquet")},
    ).fetchall()
    skipped = {reason: n for reason, n, _ in pages if reason}
    used = [(n, size) for reason, n, size in pages if not reason]
    link_counts = Counter({(reason, internal): n for reason, internal, n, _ in links})
    return dict(
        records_read=sum(n for _, n, _ in pages),
        pages_used=sum(n for n, _ in used),
        skipped=skipped,
        html_bytes=int(sum(size or 0 for _, size in used)),
        links=sum(link_counts.values()),
        links_internal=link_counts[(None, True)],
        links_external=link_counts[(None, False)],
        links_skipped={reason: n for (reason, _), n in link_counts.items() if reason},
        links_template=sum(n for reason, _, _, n in links if not reason),
        fragments=dict(fragments),
        urls_described=n_urls,
        aliases={kind: n for kind, n, _ in aliases},
        links_collapsed=int(sum(n for _, _, n in aliases)),
    )


def bytes_read_now(con, work: Path, file_numbers: list[int] | None, used_bytes: int) -> int | None:
    """Bytes parsed by this extraction or ingest: the used pages, and the earlier captures of a URL that a
    later one replaced, of the inputs numbered `file_numbers` (a record_id's high 32 bits; None: every
    input), those it did not reuse from an earlier run. None when that is `used_bytes`, the bytes the
    tables hold: nothing was reused or replaced."""
    parsed = db.scalar(
        con,
        "select coalesce(sum(n_bytes), 0) from read_parquet($p) "
        "where (skip_reason is null or skip_reason = 'duplicate_url') "
        "and ($files is null or list_contains($files, record_id >> 32))",
        {"p": str(work / "pages.parquet"), "files": file_numbers},
    )
    return None if int(parsed) == used_bytes else int(parsed)


def time_line(seconds: float, total_bytes: int, bytes_now: int | None, what: str) -> str:
    """The summary's time line: the MB of `what` the tables hold and the rate at which they were read; when
    that is not what was read (bytes_now is not None: inputs reused, or captures a later one replaced),
    the rate is of the bytes read now."""
    read = total_bytes if bytes_now is None else bytes_now
    rate = read / 1e6 / seconds if seconds else 0.0
    now = "" if bytes_now is None else f" ({bytes_now / 1e6:.1f} MB read now)"
    return f"time:            {seconds:.2f} s, {total_bytes / 1e6:.1f} MB of {what}{now}, {rate:.1f} MB/s"


def input_files(sources: list) -> list[dict]:
    """Each input's path, kind (or format), size and mtime: what the fingerprint depends on; for an
    in-memory table (ingest's, documents.DocSource) its name, rows and digest instead."""
    inputs = []
    for source in sources:
        if getattr(source, "table", None) is not None:
            rows = source.table.num_rows
            inputs.append({"path": source.path, "kind": source.kind, "rows": rows, "sha256": source.digest})
            continue
        stat = Path(source.path).stat()
        inputs.append(
            {"path": source.path, "kind": source.kind, "bytes": stat.st_size, "mtime": stat.st_mtime}
        )
    return inputs


def publish(
    work: Path, staged: Path, tables: tuple[str, ...], entry: dict, inputs: list[dict], summary
) -> None:
    """Switch the staged tables in and record the manifest's extract entry: `entry` (the fingerprint and
    parameters), then every input file with its size, the summary's counts and its seconds."""
    counts = {k: v for k, v in summary.__dict__.items() if k not in ("work", "files", "seconds")}
    entry = {**entry, "inputs": inputs, "counts": counts, "seconds": round(summary.seconds, 3)}
    workdir.publish_extraction(work, staged, tables, entry)


def require_usable(summary, what: str, hint: Callable[[], str | None] = lambda: None) -> None:
    """Stop with one line when no record read was usable, with how many were skipped for each reason and
    what `hint` says (called only then) the input looks like. Called before the tables are switched in, so
    a failed extraction leaves nothing that a second try would take as up to date."""
    if summary.pages_used == 0:
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(summary.skipped.items()))
        more = hint()
        message = f"no usable {what} among {summary.records_read} records ({reasons})"
        raise InputError(message + (f": {more}" if more else ""))
