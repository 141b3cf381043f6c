"""Stage `ingest`: plain documents -> the work-folder tables `extract` writes, plus DIR/labels.parquet.

Documents (JSON Lines, Parquet, Reuters-21578 SGML; documents.py) take the place of pages: a document's id
is its url, its text one 'content' fragment and its title one 'title' fragment, so `lshsql run --work DIR`
works unchanged afterwards. The machinery is extract's (workers.py, batches.py, final_tables.py): worker
processes normalize batches into raw Parquet, then sql/01..03 resolve duplicate ids like duplicate URLs
and write ordered, byte-identical tables.

Each input's raw tables are kept in DIR/parsed (parsed.py), as extract keeps a crawl file's: a later ingest
reads only the inputs that are new or changed. With --limit an input's rows depend on the documents used
before it, so that count is part of its key.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import pyarrow as pa

from lshsql import manifest, schemas, workdir
from lshsql.engines import duckdb as db
from lshsql.engines.base import open_engine
from lshsql.errors import InputError, ParamError
from lshsql.sources import parsed
from lshsql.sources.batches import RAW_TABLES, Rows, grouped, numbered, surface_batch
from lshsql.sources.documents import (
    FORMATS,
    DocSource,
    Document,
    iter_documents,
    missing_columns_hint,
    resolve_documents,
)
from lshsql.sources.final_tables import (
    bytes_read_now,
    count_rows,
    finalize,
    input_files,
    publish,
    require_usable,
    time_line,
)
from lshsql.sources.records import path_text
from lshsql.sources.text import LANGUAGES, SurfaceForms, TextOptions, words
from lshsql.sources.workers import Progress, write_raw_tables

TABLES = (*RAW_TABLES, "labels")
LABELS_RAW = pa.schema([("record_id", pa.int64()), ("url", pa.string()), ("label", pa.string())])
LABELS_SQL = """
copy (
    select labels_raw.url, labels_raw.label
    from read_parquet($raw) as labels_raw
    inner join read_parquet($pages) as pages on labels_raw.record_id = pages.record_id
    where pages.skip_reason is null
    order by labels_raw.url, labels_raw.label
) to $out (format parquet, compression zstd)
"""


@dataclass(frozen=True)
class IngestParams:
    """How `ingest` reads documents and turns their words into terms (the same text options as extract)."""

    format: str = "auto"
    id_column: str = "id"
    text_column: str = "text"
    shingle: int | None = None
    limit: int | None = None
    require_label: bool = False
    language: str = "en"
    stem: bool = True
    stopwords: bool = True
    extra_stopwords: frozenset[str] = frozenset()
    buckets: int = 16
    batch_records: int = 256

    def __post_init__(self) -> None:
        """Raise ParamError with a one-line message for the first bad parameter."""
        checks = [
            (self.format in FORMATS, f"unknown format '{self.format}' (choose {', '.join(FORMATS)})"),
            (bool(self.id_column) and bool(self.text_column), "id and text columns must be named"),
            (self.id_column != self.text_column, f"id and text column are both '{self.id_column}'"),
            (self.shingle is None or _whole(self.shingle, 1), f"shingle must be >= 1, got {self.shingle}"),
            (self.limit is None or _whole(self.limit, 1), f"limit must be >= 1, got {self.limit}"),
            (
                self.language in LANGUAGES,
                f"unknown language '{self.language}' (choose {', '.join(LANGUAGES)})",
            ),
            (1 <= self.buckets <= 4096, f"buckets must be in 1..4096, got {self.buckets}"),
            (self.batch_records > 0, "batch size must be positive"),
        ]
        for ok, message in checks:
            if not ok:
                raise ParamError(message)

    def text_options(self) -> TextOptions:
        """The normalization extract would use with the same options."""
        return TextOptions(self.language, self.stem, self.stopwords, self.extra_stopwords)

    def to_json(self) -> dict:
        """Parameters for the manifest (the extra stopwords as count and digest)."""
        data = asdict(self)
        stop = sorted(self.extra_stopwords)
        data["extra_stopwords"] = {
            "n": len(stop),
            "sha256": hashlib.sha256("\n".join(stop).encode()).hexdigest(),
        }
        return data


def _whole(value: object, least: int) -> bool:
    """value is an int (not a bool) of at least `least`."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


@dataclass(frozen=True)
class IngestSummary:
    """Counts of one ingest: every record read is a used document or a skip with its reason."""

    work: Path
    records_read: int
    pages_used: int  # documents used; named as in extract's summary so `lshsql info` reads it
    skipped: dict[str, int]
    text_bytes: int
    fragments: dict[str, int]
    urls_described: int
    labels: int
    labelled_documents: int
    distinct_labels: int
    seconds: float = 0.0
    files: list[str] = field(default_factory=list)
    files_read: int = 0  # inputs read by this ingest
    files_reused: int = 0  # inputs whose kept raw tables (DIR/parsed) were used instead
    text_bytes_read: int | None = None  # the text read now, when not text_bytes: inputs reused, ids replaced

    def lines(self) -> list[str]:
        """The summary `lshsql ingest` prints."""
        return [
            f"files read:      {len(self.files)}"
            + (f" ({self.files_read} read, {self.files_reused} reused)" if self.files_reused else ""),
            f"records read:    {self.records_read} = {self.pages_used} documents used + "
            f"{sum(self.skipped.values())} skipped",
            *(f"  skipped {reason}: {n}" for reason, n in sorted(self.skipped.items())),
            "fragments:       " + ", ".join(f"{n} {kind}" for kind, n in sorted(self.fragments.items())),
            f"labels:          {self.labels} rows, {self.distinct_labels} distinct, "
            f"on {self.labelled_documents} documents",
            f"URLs described:  {self.urls_described}",
            time_line(self.seconds, self.text_bytes, self.text_bytes_read, "text"),
            f"output:          {self.work}/pages.parquet, links.parquet, fragments/, labels.parquet",
        ]


def ingest(
    paths: list | str | Path | object,
    work: str | Path,
    params: IngestParams = IngestParams(),
    resources: db.Resources | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> IngestSummary:
    """Turn documents into `work`'s pages, (empty) links, fragments and labels tables, reading only the
    inputs whose raw tables the folder does not keep (DIR/parsed).

    Args:
        paths: JSON Lines / Parquet files (id, text, optional title, label or labels), Reuters-21578 .sgm
            files, folders of them or globs; or in-memory tables with those columns (a pyarrow.Table, a
            pandas DataFrame without its index, a polars DataFrame), one or in the list, each read like a
            Parquet file (pages.source_file names it, e.g. '<pandas.DataFrame #1>'; source_offset is
            the row number).
        work: output folder (created).
        params: how to read and normalize; resources: DuckDB memory/threads and worker processes.
        progress: called with (records read, characters of text read) after each batch.
        force: read every input again, even those whose raw tables the folder keeps.

    Example:
        >>> summary = ingest(["docs.jsonl"], "work")  # doctest: +SKIP
        >>> summary = ingest(pandas.DataFrame({"id": [1, 2], "text": ["a b", "a c"]}), "w")  # doctest: +SKIP
        >>> summary.pages_used  # doctest: +SKIP
    """
    started = time.perf_counter()
    with workdir.writing(work):
        return _ingest(_sources(paths, params), Path(work), params, resources, progress, started, force)


def _sources(paths: list | str | Path | object, params: IngestParams) -> list[DocSource]:
    return resolve_documents(paths, params.format, (params.id_column, params.text_column))


def _ingest(
    sources: list[DocSource],
    work: Path,
    params: IngestParams,
    resources: db.Resources | None,
    progress: Progress | None,
    started: float,
    force: bool,
) -> IngestSummary:
    resources = db.for_work(work, resources)
    # the inputs before they are read: a file that grows while it is read is read again next time
    recorded = {"fingerprint": fingerprint(sources, params), "files": input_files(sources)}
    inputs = parsed.Inputs.of(sources, params.to_json(), params.limit)
    kept = {} if force else parsed.whole_entries(work, inputs)
    with workdir.scratch(work, "ingest") as (raw_dir, staged):
        used = {file_no: int(entry["used"]) for file_no, (_, entry) in kept.items()}
        n_read = _normalize_all(sources, used, params, resources.threads, raw_dir, progress)
        keys, n_kept = parsed.keep_and_use(work, raw_dir, inputs, kept)
        if n_read + n_kept == 0:
            raise InputError(f"no documents: no records in {', '.join(s.path for s in sources)}")
        read_now = [file_no for file_no in range(len(sources)) if file_no not in kept] if kept else None
        summary = _finish(staged, sources, work, params, resources, raw_dir, started, read_now)
        hint = partial(missing_columns_hint, sources, params.id_column, params.text_column)
        require_usable(summary, "document", hint)
        _record(work, staged, recorded, params, summary)
    parsed.prune(work, keys)
    return summary


def _finish(
    staged: Path,
    sources: list[DocSource],
    work: Path,
    params: IngestParams,
    resources: db.Resources,
    raw_dir: Path,
    started: float,
    read_now: list[int] | None,
) -> IngestSummary:
    """Write the final tables into `staged` from the raw tables of every input, and count them; read_now:
    the numbers of the inputs read now when others were reused (None: all were read)."""
    with open_engine("duckdb", resources) as engine:
        finalize(engine, raw_dir, staged, params.buckets)
        counts = count_rows(engine.con, staged)
        labels = _write_labels(engine.con, raw_dir, staged)
        bytes_now = bytes_read_now(engine.con, staged, read_now, counts["html_bytes"])
    return IngestSummary(
        work=work,
        records_read=counts["records_read"],
        pages_used=counts["pages_used"],
        skipped=counts["skipped"],
        text_bytes=counts["html_bytes"],
        fragments=counts["fragments"],
        urls_described=counts["urls_described"],
        labels=labels[0],
        labelled_documents=labels[1],
        distinct_labels=labels[2],
        seconds=time.perf_counter() - started,
        files=[s.path for s in sources],
        files_read=len(sources) if read_now is None else len(read_now),
        files_reused=0 if read_now is None else len(sources) - len(read_now),
        text_bytes_read=bytes_now,
    )


def ingest_if_changed(
    paths: list | str | Path | object,
    work: str | Path,
    params: IngestParams = IngestParams(),
    resources: db.Resources | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> IngestSummary | None:
    """Run `ingest` unless the work folder already holds it for the same inputs and parameters (for an
    in-memory table: the same rows, by their digest); `force` reads every input again."""
    started = time.perf_counter()
    with workdir.writing(work):
        sources = _sources(paths, params)  # once: an in-memory table is digested as it is resolved
        current = fingerprint(sources, params)
        if workdir.extraction_up_to_date(Path(work), current, workdir.INGEST_TABLES, force):
            return None
        return _ingest(sources, Path(work), params, resources, progress, started, force)


# --- reading and normalizing ------------------------------------------------------------------------


def _normalize_all(
    sources: list[DocSource],
    kept: dict[int, int],
    params: IngestParams,
    workers: int,
    raw_dir: Path,
    progress: Progress | None,
) -> int:
    """Normalize the documents of the inputs not kept (`kept`: position -> documents used) into
    raw_dir/file-<n>/ (workers in parallel); returns the records read."""
    if len(kept) == len(sources):
        return 0
    return write_raw_tables(
        _batches(sources, kept, params),
        partial(normalize_batch, params=params),
        _skipped_rows,
        lambda doc: len(doc.text or ""),
        {t: LABELS_RAW if t == "labels" else schemas.raw_schema(t) for t in TABLES},
        raw_dir,
        workers,
        progress,
        by_file=True,
    )


def _batches(
    sources: list[DocSource], kept: dict[int, int], params: IngestParams
) -> Iterator[tuple[list, list]]:
    """Group the records of the inputs not kept into (documents to normalize, documents skipped), each with
    its record_id (batches.numbered); a batch holds one input's records, at most params.batch_records
    documents and 32 Mi characters of text."""
    used = [0]  # documents used before the next one, the kept inputs' too: what --limit counts
    for file_no, source in enumerate(sources):
        if file_no in kept:
            used[0] += kept[file_no]
        else:
            items = _sized(file_no, source, params, used)
            yield from grouped(items, params.batch_records, 32 * 2**20)


def _sized(
    file_no: int, source: DocSource, params: IngestParams, used: list[int]
) -> Iterator[tuple[tuple, int | None]]:
    """Each document of one input as (record_id, document) with its characters of text, or, skipped, as
    (record_id, document without its text, n_bytes) with None. The limit and --require-label are applied
    here, in input order, so the choice does not depend on the workers; `used` counts the documents used."""
    read = partial(iter_documents, id_column=params.id_column, text_column=params.text_column)
    for record_id, doc in numbered([(file_no, source)], read):
        reason = doc.skip_reason
        if reason is None and params.require_label and not doc.labels:
            reason = "no_label"
        elif reason is None and params.limit is not None and used[0] >= params.limit:
            reason = "over_limit"
        if reason:
            yield (record_id, replace(doc, text=None, skip_reason=reason), _n_bytes(doc)), None
        else:
            used[0] += 1
            yield (record_id, doc), len(doc.text or "")


def _n_bytes(doc: Document) -> int:
    return len(doc.text.encode("utf-8")) if doc.text else 0


def _skipped_rows(items: list[tuple[int, Document, int]]) -> tuple[pa.RecordBatch, ...]:
    pages = Rows("pages")
    for record_id, doc, n_bytes in items:
        _add_page(pages, record_id, doc, n_bytes)
    empty = (Rows("links").batch(), Rows("fragments").batch(), surface_batch(None), _labels_batch([]))
    return pages.batch(), *empty


def normalize_batch(items: list[tuple[int, Document]], params: IngestParams) -> tuple[pa.RecordBatch, ...]:
    """Terms of a batch of documents (in a worker process): raw pages, links (none), fragments, surface
    forms (how often each word, or shingle of words, was normalized into each term) and labels."""
    normalize = SurfaceForms(params.text_options())
    pages, fragments = Rows("pages"), Rows("fragments")
    labels: list[tuple[int, str, str]] = []
    for record_id, doc in items:
        _add_page(pages, record_id, doc, _n_bytes(doc))
        for kind, text in (("content", doc.text), ("title", doc.title)):
            if text:
                if params.shingle:
                    terms = normalize.shingles(words(text), params.shingle)
                else:
                    terms = normalize(words(text))
                fragments.add_fragment(record_id, doc.id, kind, doc.id, 0, terms, params.buckets)
        labels.extend((record_id, doc.id, label) for label in doc.labels)
    surface = surface_batch(normalize)
    return pages.batch(), Rows("links").batch(), fragments.batch(), surface, _labels_batch(labels)


def _add_page(pages: Rows, record_id: int, doc: Document, n_bytes: int) -> None:
    pages.add(
        record_id=record_id,
        url=doc.id,
        record_type=doc.record_type,
        warc_date=None,
        status=None,
        content_type=None,
        encoding=doc.encoding,
        n_bytes=n_bytes,
        title=doc.title,
        n_out_links=None,
        source_file=path_text(doc.source_file),
        source_offset=doc.source_offset,
        skip_reason=doc.skip_reason,
        redirect_url=None,  # documents are no crawl: no redirects, no canonical links, no url_aliases
        canonical_url=None,
    )


def _labels_batch(rows: list[tuple[int, str, str]]) -> pa.RecordBatch:
    columns = [list(column) for column in zip(*rows, strict=True)] if rows else [[], [], []]
    return pa.RecordBatch.from_arrays(columns, schema=LABELS_RAW)


# --- finishing ----------------------------------------------------------------------------------------


def _write_labels(con, raw_dir: Path, work: Path) -> tuple[int, int, int]:
    """DIR/labels.parquet of the used documents (duplicate ids resolved); (rows, documents, distinct)."""
    out = work / "labels.parquet"
    raw = sorted(str(path) for path in raw_dir.glob("**/labels.parquet"))
    params = {"raw": raw, "pages": str(work / "pages.parquet"), "out": str(out)}
    con.execute(LABELS_SQL, params).fetchall()
    schemas.validate(out, "labels")
    query = "select count(*), count(distinct url), count(distinct label) from read_parquet($p)"
    rows, documents, distinct = con.execute(query, {"p": str(out)}).fetchall()[0]
    return rows, documents, distinct


def fingerprint(sources: list[DocSource], params: IngestParams) -> str:
    """What the ingest output depends on: the parameters and each input's path, format, size, mtime and the
    xxh3 of its first and last MiB (an in-memory table's rows and digest): the rule of a kept input's key."""
    edges = [parsed.content_edges(source) for source in sources]
    data = {"kind": "documents", "params": params.to_json(), "inputs": input_files(sources), "edges": edges}
    return manifest.fingerprint(data)


def _record(work: Path, staged: Path, recorded: dict, params: IngestParams, summary: IngestSummary) -> None:
    """Switch the staged tables in; the manifest's 'extract' entry, as extract writes it, marked kind
    'documents', and whether its terms are shingles (`run` then keeps the sets whole: no min_df, max_df);
    the fingerprint and input files as they were before the ingest read them (`recorded`)."""
    entry = {
        "fingerprint": recorded["fingerprint"],
        "kind": "documents",
        "shingled": params.shingle is not None,
        "params": params.to_json(),
    }
    publish(work, staged, workdir.INGEST_TABLES, entry, recorded["files"], summary)
