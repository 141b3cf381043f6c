"""Stage `extract`: crawl -> DIR/pages.parquet, DIR/links.parquet, DIR/fragments/bucket=<i>/data.parquet.

The main process reads records (sources.py) and hands batches of pages to a pool of worker processes,
which parse them (anchors.py) and return Arrow batches; the main process streams those to intermediate
Parquet. DuckDB then resolves duplicate captures and writes the final, ordered tables (sql/01..05), so
the outputs are byte-identical whatever the number of workers.

With engine="spark" the input files are spread over Spark's executors instead, one task per file
(`parse_file`, the same reading and parsing), each writing its intermediate Parquet to the work folder,
and Spark runs sql/01..05: the same rows as DuckDB writes.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shutil
import signal
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cache, partial
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from lshsql import manifest, schemas, sqlfiles, workdir
from lshsql.engines import duckdb as db
from lshsql.engines.base import ENGINES, Engine, open_engine
from lshsql.errors import InputError, ParamError
from lshsql.sources import urls
from lshsql.sources.anchors import parse_page, sniff_skip_reason
from lshsql.sources.readers import Record, Source, iter_records, path_text, resolve_sources
from lshsql.sources.text import LANGUAGES, SurfaceForms, TextOptions, make_normalizer

RAW_TABLES = ("pages", "links", "fragments", "surface_forms")
# Per page whose <a href> went over --max-links: how many were not extracted (read before the raw tables
# are removed, for the summary and the manifest; no final table).
OVER_CAP_TABLE = "links_over_cap"
OVER_CAP_SCHEMA = pa.schema([("record_id", pa.int64()), ("links_over_cap", pa.int64())])
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ExtractParams:
    """What `extract` keeps of a crawl. Defaults follow Haveliwala et al. (2000): 8 words each side."""

    window: int = 8
    language: str = "en"
    stem: bool = True
    stopwords: bool = True
    extra_stopwords: frozenset[str] = frozenset()
    content: bool = False
    buckets: int = 16
    sort_query: bool = False
    strip_tracking: bool = False
    max_page_bytes: int = 32 * 2**20
    max_links_per_page: int = 10_000  # a page's <a href> after these are counted, not extracted
    base_url: str | None = None
    batch_records: int = 128

    def __post_init__(self) -> None:
        checks = [
            (self.window >= 0, f"window must be >= 0, got {self.window}"),
            (
                self.language in LANGUAGES,
                f"unknown language '{self.language}' (choose {', '.join(LANGUAGES)})",
            ),
            (1 <= self.buckets <= 4096, f"buckets must be in 1..4096, got {self.buckets}"),
            (self.max_page_bytes > 0, "max page size must be positive"),
            (
                self.max_links_per_page > 0,
                f"max links per page must be positive, got {self.max_links_per_page}",
            ),
            (self.batch_records > 0, "batch size must be positive"),
        ]
        for ok, message in checks:
            if not ok:
                raise ParamError(message)

    def text_options(self) -> TextOptions:
        return TextOptions(self.language, self.stem, self.stopwords, self.extra_stopwords)

    def url_options(self) -> urls.UrlOptions:
        strip = urls.TRACKING_PARAMS if self.strip_tracking else frozenset()
        return urls.UrlOptions(sort_query=self.sort_query, strip_params=strip)

    def to_json(self) -> dict:
        data = asdict(self)
        words = sorted(self.extra_stopwords)
        data["extra_stopwords"] = {
            "n": len(words),
            "sha256": hashlib.sha256("\n".join(words).encode()).hexdigest(),
        }
        return data


@dataclass(frozen=True)
class ExtractSummary:
    """Counts of one extraction: every record read is a used page or a skip with its reason."""

    work: Path
    records_read: int
    pages_used: int
    skipped: dict[str, int]
    html_bytes: int
    links: int
    links_internal: int
    links_external: int
    links_skipped: dict[str, int]
    fragments: dict[str, int]
    urls_described: int
    aliases: dict[str, int] = field(default_factory=dict)  # url_aliases rows by kind
    links_collapsed: int = 0  # links whose target is an alias
    links_over_cap: int = 0  # <a href> of used pages past --max-links, not extracted
    pages_over_cap: int = 0  # used pages that had them
    seconds: float = 0.0
    files: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The summary `lshsql extract` prints."""
        mb = self.html_bytes / 1e6
        rate = mb / self.seconds if self.seconds else 0.0
        over_cap = (
            f"  links over --max-links: {self.links_over_cap} on {self.pages_over_cap} pages, not extracted"
        )
        return [
            f"files read:      {len(self.files)}",
            f"records read:    {self.records_read} = {self.pages_used} pages used + "
            f"{sum(self.skipped.values())} skipped",
            *(f"  skipped {reason}: {n}" for reason, n in sorted(self.skipped.items())),
            f"links:           {self.links} ({self.links_internal} internal, {self.links_external} external, "
            f"{sum(self.links_skipped.values())} not followable)",
            *(f"  link skipped {reason}: {n}" for reason, n in sorted(self.links_skipped.items())),
            *([over_cap] if self.links_over_cap else []),
            "fragments:       " + ", ".join(f"{n} {kind}" for kind, n in sorted(self.fragments.items())),
            f"URLs described:  {self.urls_described}",
            f"URL aliases:     {sum(self.aliases.values())} ("
            + ", ".join(f"{self.aliases.get(kind, 0)} {kind}" for kind in ("redirect", "canonical"))
            + f"), {self.links_collapsed} links collapsed",
            f"time:            {self.seconds:.2f} s, {mb:.1f} MB of HTML, {rate:.1f} MB/s",
            f"output:          {self.work}/pages.parquet, links.parquet, fragments/, url_aliases.parquet",
        ]


def extract(
    crawl: list[str],
    work: str | Path,
    params: ExtractParams = ExtractParams(),
    resources: db.Resources | None = None,
    progress: Progress | None = None,
    engine: str | Engine = "duckdb",
    spark_master: str = "local[*]",
    spark_conf: dict[str, str] | None = None,
) -> ExtractSummary:
    """Extract anchor-window fragments, links and pages from crawls into `work`.

    Args:
        crawl: WARC/ARC files, folders of them, globs, JSON Lines files, or a folder of .html pages.
        work: output folder (created).
        params: what to extract; resources: DuckDB memory/threads and worker processes.
        progress: called with (records read, HTML bytes read) after each batch (not on Spark).
        engine: "duckdb" (worker processes here), "spark" (one Spark task per input file; the files and
            the work folder must be at the same paths on every executor), or an open SparkEngine.
        spark_master, spark_conf: for engine="spark", as in `pipeline.run`.

    Example:
        >>> summary = extract(["examples/crawl.warc.gz"], "work")  # doctest: +SKIP
        >>> summary.pages_used  # doctest: +SKIP
    """
    _on_spark(engine)  # an unknown engine is refused before the folder is made
    with workdir.writing(work):
        manifest.set_aside_if_damaged(work)  # a new extraction: the stages after it rerun anyway
        return _extract(crawl, Path(work), params, resources, progress, engine, spark_master, spark_conf)


def _extract(
    crawl: list[str],
    work: Path,
    params: ExtractParams,
    resources: db.Resources | None,
    progress: Progress | None,
    engine: str | Engine,
    spark_master: str,
    spark_conf: dict[str, str] | None,
) -> ExtractSummary:
    started = time.perf_counter()
    on_spark = _on_spark(engine)
    sources = resolve_sources(crawl, params.base_url)
    resources = db.for_work(work, resources)
    with workdir.scratch(work, "extract") as (raw_dir, staged):
        if not on_spark:  # worker processes first: no DuckDB threads alive when they fork
            n_read = _parse_all(sources, params, resources.threads, raw_dir, progress)
        with open_engine(engine, resources, spark_master, spark_conf) as stage_engine:
            if on_spark:
                n_read = _parse_on_spark(stage_engine.spark, sources, params, raw_dir)
            if n_read == 0:
                raise InputError(f"empty crawl: no records in {', '.join(s.path for s in sources)}")
            _finalize(stage_engine, raw_dir, staged, params.buckets)
        with db.connect(resources) as con:
            summary = _count(con, staged)
            over_cap = _links_over_cap(con, raw_dir, staged)
        summary = ExtractSummary(
            **{
                **summary.__dict__,
                **over_cap,
                "work": work,
                "seconds": time.perf_counter() - started,
                "files": [s.path for s in sources],
            }
        )
        _record(work, staged, sources, params, summary)
    if summary.pages_used == 0:
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(summary.skipped.items()))
        raise InputError(f"no usable HTML page among {summary.records_read} records ({reasons})")
    return summary


# --- reading and parsing ----------------------------------------------------------------------------


def _parse_all(
    sources: list[Source], params: ExtractParams, workers: int, raw_dir: Path, progress: Progress | None
) -> int:
    """Parse every record into the raw tables; returns the number of records read."""
    return _write_raw(list(enumerate(sources)), params, workers, raw_dir, progress)


def _links_over_cap(con, raw_dir: Path, work: Path) -> dict[str, int]:
    """The links_over_cap and pages_over_cap counts: <a href> past --max-links on the pages used (a capture
    skipped as duplicate_url is not counted)."""
    files = sorted(str(p) for p in raw_dir.glob(f"**/{OVER_CAP_TABLE}.parquet"))
    if not files:
        return {"links_over_cap": 0, "pages_over_cap": 0}
    links, pages = con.execute(
        "select coalesce(sum(capped.links_over_cap), 0), count(*) from read_parquet($capped) as capped "
        "semi join (select record_id from read_parquet($pages) where skip_reason is null) as used "
        "on capped.record_id = used.record_id",
        {"capped": files, "pages": str(work / "pages.parquet")},
    ).fetchall()[0]
    return {"links_over_cap": int(links), "pages_over_cap": int(pages)}


def _write_raw(
    sources: list[tuple[int, Source]],
    params: ExtractParams,
    workers: int,
    raw_dir: Path,
    progress: Progress | None = None,
) -> int:
    return write_raw_tables(
        _batches(sources, params),
        partial(parse_batch, params=params),
        partial(_skipped_rows, url_options=params.url_options()),
        lambda record: len(record.body),
        {**{t: schemas.raw_schema(t) for t in RAW_TABLES}, OVER_CAP_TABLE: OVER_CAP_SCHEMA},
        raw_dir,
        workers,
        progress,
    )


def write_raw_tables(
    batches: Iterator[tuple[list, list]],
    parse: Callable[[list], tuple[pa.RecordBatch, ...]],
    skipped_rows: Callable[[list], tuple[pa.RecordBatch, ...]],
    size_of: Callable[[object], int],
    tables: dict[str, pa.Schema],
    raw_dir: Path,
    workers: int,
    progress: Progress | None,
) -> int:
    """The loop extract and ingest share: batches of (records to parse, records skipped) are parsed by a
    pool of worker processes (at most 2 batches per worker in flight, so memory stays bounded) and their
    rows streamed, in input order, to raw_dir/<table>.parquet; returns the number of records read. `parse`
    must be picklable (a module-level function or a partial of one)."""
    writers = {t: pq.ParquetWriter(raw_dir / f"{t}.parquet", schema) for t, schema in tables.items()}
    pool = (
        ProcessPoolExecutor(workers, initializer=die_with_parent, initargs=(os.getpid(),))
        if workers > 1
        else None
    )
    pending: deque[Future | tuple] = deque()
    n_read = n_size = 0

    def write(batches: tuple[pa.RecordBatch, ...]) -> None:
        for table, batch in zip(tables, batches, strict=True):
            if batch.num_rows:
                writers[table].write_batch(batch)

    try:
        for batch, skipped in batches:
            n_read += len(batch) + len(skipped)
            n_size += sum(size_of(record) for _, record in batch)
            if skipped:
                write(skipped_rows(skipped))
            if batch:
                pending.append(pool.submit(parse, batch) if pool else parse(batch))
            while len(pending) > 2 * workers:
                write(_result(pending.popleft()))
            if progress:
                progress(n_read, n_size)
        while pending:
            write(_result(pending.popleft()))
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
        for writer in writers.values():
            writer.close()
    return n_read


def die_with_parent(parent: int) -> None:
    """In a worker process: be killed when the main process dies, by any signal (kill -9 too), rather
    than parse on for nobody. Linux's PR_SET_PDEATHSIG; elsewhere workers end when their queue closes."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)


PR_SET_PDEATHSIG = 1


def _result(item: Future | tuple) -> tuple:
    return item.result() if isinstance(item, Future) else item


def _batches(sources: list[tuple[int, Source]], params: ExtractParams) -> Iterator[tuple[list, list]]:
    """Group records into (pages to parse, records skipped while reading), each with its record_id: the
    file's number in the whole input (high 32 bits) and the record's number in its file."""
    batch: list[tuple[int, Record]] = []
    skipped: list[tuple[int, Record]] = []
    size = 0
    for file_no, source in sources:
        for record_no, record in enumerate(iter_records(source, params.max_page_bytes)):
            item = ((file_no << 32) | record_no, record)
            if record.skip_reason:
                skipped.append(item)
            else:
                batch.append(item)
                size += len(record.body)
            if len(batch) >= params.batch_records or size >= 64 * 2**20 or len(skipped) >= 4096:
                yield batch, skipped
                batch, skipped, size = [], [], 0
    if batch or skipped:
        yield batch, skipped


def _on_spark(engine: str | Engine) -> bool:
    """Whether `engine` (a name, or an open SparkEngine) parses on Spark. An open DuckDBEngine is refused:
    the worker processes must fork before any DuckDB connection exists, and the final tables would replace
    the views of the caller's connection."""
    if isinstance(engine, str):
        if engine not in ENGINES:
            raise ParamError(f"unknown engine '{engine}' (engines: {', '.join(ENGINES)})")
        return engine == "spark"
    if engine.name != "spark":
        raise ParamError("extract opens its own DuckDB connection: pass engine='duckdb', not a connection")
    return True


def _parse_on_spark(spark, sources: list[Source], params: ExtractParams, raw_dir: Path) -> int:
    """Parse the files on Spark's executors, one task per file (`parse_file`); the records read."""
    from lshsql.engines.spark import spark_call, version

    if version(spark) < (4, 1):  # before parsing a crawl for nothing
        raise ParamError(
            f"extraction on Spark needs Spark 4.1 or later (sql/04's WITH RECURSIVE); this is {spark.version}"
        )
    tasks = list(enumerate(sources))
    job = spark.sparkContext.parallelize(tasks, numSlices=len(tasks))
    # an executor's working directory is not ours: relative input paths are read from ours (and recorded
    # as given, as the worker processes record them)
    task = partial(parse_file, params=params, raw_dir=str(raw_dir.resolve()), cwd=os.getcwd())
    job = job.map(task)
    results = spark_call("extract", job.collect)
    errors = [error for _, error in results if error]
    if errors:
        raise InputError(errors[0] + (f" (and {len(errors) - 1} more files)" if len(errors) > 1 else ""))
    return sum(n for n, _ in results)


def parse_file(
    task: tuple[int, Source], params: ExtractParams, raw_dir: str, cwd: str
) -> tuple[int, str | None]:
    """One Spark task: read and parse the file `task` = (its number, source) into raw_dir/file-<number>/,
    as the worker processes do, a relative path from the driver's working directory `cwd`; returns
    (records read, None) or (0, the one-line error of a bad file)."""
    file_no, source = task
    out = Path(raw_dir) / f"file-{file_no:06d}"
    try:
        out.mkdir(parents=True, exist_ok=True)
        if os.path.isabs(source.path):
            return _write_raw([task], params, 1, out), None
        if not os.path.isdir(cwd):
            return 0, (
                f"{source.path}: a relative path, and the directory it is relative to ({cwd}) is not on "
                "this executor: give the crawl's absolute path on the shared file system"
            )
        with contextlib.chdir(cwd):
            return _write_raw([task], params, 1, out), None
    except (InputError, ParamError) as e:
        return 0, str(e)
    except OSError as e:
        return 0, f"{e.filename or source.path}: {e.strerror or e}"


def _skipped_rows(
    items: list[tuple[int, Record]], url_options: urls.UrlOptions
) -> tuple[pa.RecordBatch, ...]:
    pages = _Rows("pages")
    for record_id, record in items:
        url = _canonical_or_raw(record.url, url_options)
        redirect = _redirect_url(record, url_options)
        pages.add_page(record_id, record, url, record.skip_reason, redirect_url=redirect)
    no_links = (_Rows("links").batch(), _Rows("fragments").batch(), surface_batch(None))
    return pages.batch(), *no_links, pa.RecordBatch.from_pylist([], schema=OVER_CAP_SCHEMA)


def parse_batch(items: list[tuple[int, Record]], params: ExtractParams) -> tuple[pa.RecordBatch, ...]:
    """Parse a batch of pages (runs in a worker process); returns raw pages, links, fragments, the
    batch's surface forms (how often each word was normalized into each term) and the pages' links over
    params.max_links_per_page."""
    normalize = SurfaceForms(params.text_options())
    url_options = params.url_options()
    pages, links, fragments = _Rows("pages"), _Rows("links"), _Rows("fragments")
    over_cap: dict[str, list[int]] = {"record_id": [], "links_over_cap": []}
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
            )
        except Exception:  # noqa: BLE001 - one unparseable page must not stop a crawl; it is counted
            pages.add_page(record_id, record, url, "parse_error")
            continue
        n_out = _add_links(links, fragments, record_id, url, page.links, normalize, params.buckets)
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
    return pages.batch(), links.batch(), fragments.batch(), surface_batch(normalize), over_cap_batch


def surface_batch(forms: SurfaceForms | None) -> pa.RecordBatch:
    """The (term, word, n) rows a batch's SurfaceForms counted, as raw surface_forms (none for None)."""
    rows = forms.rows() if forms is not None else []
    columns = [list(column) for column in zip(*rows, strict=True)] if rows else [[], [], []]
    return pa.RecordBatch.from_arrays(columns, schema=schemas.raw_schema("surface_forms"))


def _add_links(
    links: _Rows,
    fragments: _Rows,
    record_id: int,
    url: str,
    page_links: list,
    normalize: Callable[[list[str]], list[str]],
    buckets: int,
) -> int:
    n_out = 0
    for position, link in enumerate(page_links):
        internal = None
        if link.target_url:
            n_out += 1
            internal = urls.is_internal(url, link.target_url)
            terms = normalize(link.before + link.anchor + link.after)
            fragments.add_fragment(record_id, link.target_url, "anchor", url, position, terms, buckets)
        links.add(
            record_id=record_id,
            source_url=url,
            position=position,
            href=link.href,
            target_url=link.target_url,
            is_internal=internal,
            anchor_text=link.anchor_text,
            skip_reason=link.skip_reason,
        )
    return n_out


@cache
def _normalizer(options: TextOptions) -> Callable[[list[str]], list[str]]:
    return make_normalizer(options)


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


class _Rows:
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
    ) -> None:
        self.add(
            record_id=record_id,
            url=url,
            bucket=bucket_of(url, buckets),
            kind=kind,
            source_url=source_url,
            position=position,
            terms=terms,
        )

    def batch(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict(self.columns, schema=self.schema)


# --- finishing: sql/01..05 on the engine ---------------------------------------------------------


def _finalize(engine: Engine, raw_dir: Path, work: Path, buckets: int) -> None:
    """Resolve duplicate captures and write the ordered final tables (on either engine)."""
    engine.register({f"{t}_raw": sorted(str(p) for p in raw_dir.glob(f"**/{t}.parquet")) for t in RAW_TABLES})
    engine.materialize(sqlfiles.load("01_pages.sql"), {}, work / "pages.parquet")
    engine.register({"pages": str(work / "pages.parquet")})
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


def _count(con, work: Path) -> ExtractSummary:
    pages = con.execute(
        "select skip_reason, count(*), sum(n_bytes) from read_parquet($p) group by all",
        {"p": str(work / "pages.parquet")},
    ).fetchall()
    links = con.execute(
        "select skip_reason, is_internal, count(*) from read_parquet($p) group by all",
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
    link_counts = Counter({(reason, internal): n for reason, internal, n in links})
    return ExtractSummary(
        work=work,
        records_read=sum(n for _, n, _ in pages),
        pages_used=sum(n for n, _ in used),
        skipped=skipped,
        html_bytes=int(sum(size or 0 for _, size in used)),
        links=sum(link_counts.values()),
        links_internal=link_counts[(None, True)],
        links_external=link_counts[(None, False)],
        links_skipped={reason: n for (reason, _), n in link_counts.items() if reason},
        fragments=dict(fragments),
        urls_described=n_urls,
        aliases={kind: n for kind, n, _ in aliases},
        links_collapsed=int(sum(n for _, _, n in aliases)),
    )


def _inputs(sources: list[Source]) -> list[dict]:
    inputs = []
    for source in sources:
        stat = Path(source.path).stat()
        inputs.append(
            {"path": source.path, "kind": source.kind, "bytes": stat.st_size, "mtime": stat.st_mtime}
        )
    return inputs


def fingerprint(sources: list[Source], params: ExtractParams) -> str:
    """What the extract output depends on: the parameters and each input's path, size and mtime."""
    data = {"params": params.to_json(), "inputs": _inputs(sources)}
    return manifest.fingerprint(data)


def extract_if_changed(
    crawl: list[str],
    work: str | Path,
    params: ExtractParams = ExtractParams(),
    resources: db.Resources | None = None,
    progress: Progress | None = None,
    force: bool = False,
    **engine_options,
) -> ExtractSummary | None:
    """Run `extract` unless the work folder already holds it for the same inputs and parameters (whichever
    engine wrote it: both write the same rows). `engine_options`: engine, spark_master, spark_conf."""
    with workdir.writing(work):
        current = fingerprint(resolve_sources(crawl, params.base_url), params)
        if workdir.extraction_up_to_date(Path(work), current, workdir.EXTRACT_TABLES, force):
            return None
        return extract(crawl, work, params, resources, progress, **engine_options)


def _record(
    work: Path, staged: Path, sources: list[Source], params: ExtractParams, summary: ExtractSummary
) -> None:
    """Switch the staged tables in and record the manifest's extract entry (with every file's size)."""
    counts = {k: v for k, v in summary.__dict__.items() if k not in ("work", "files", "seconds")}
    entry = {
        "fingerprint": fingerprint(sources, params),
        "params": params.to_json(),
        "extra_stopword_words": sorted(params.extra_stopwords),  # params keep a digest; run reuses them
        "inputs": _inputs(sources),
        "counts": counts,
        "seconds": round(summary.seconds, 3),
    }
    workdir.publish_extraction(work, staged, workdir.EXTRACT_TABLES, entry)
