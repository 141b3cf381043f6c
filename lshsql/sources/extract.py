"""Stage `extract`: crawl -> DIR/pages.parquet, DIR/links.parquet, DIR/fragments/bucket=<i>/data.parquet.

The main process reads records (readers.py) and hands batches of pages to a pool of worker processes
(workers.py), which parse them (parse.py, anchors.py) and return Arrow batches; the main process streams
those to intermediate Parquet. DuckDB then resolves duplicate captures and writes the final, ordered tables
(sql/01..05, final_tables.py), so the outputs are byte-identical whatever the number of workers.

With engine="spark" the input files are spread over Spark's executors instead, one task per file
(`parse_file`, the same reading and parsing), each writing its intermediate Parquet to the work folder,
and Spark runs sql/01..05: the same rows as DuckDB writes.

Each file's intermediate Parquet is kept in DIR/parsed (parsed.py): a later extraction parses only the
files that are new or changed and runs sql/01..05 over the kept rows of the others.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from lshsql import manifest, schemas, urls, workdir
from lshsql.engines import duckdb as db
from lshsql.engines.base import ENGINES, Engine, open_engine
from lshsql.errors import InputError, ParamError
from lshsql.sources import parsed
from lshsql.sources.batches import RAW_TABLES, grouped, numbered
from lshsql.sources.final_tables import (
    bytes_read_now,
    count_rows,
    finalize,
    input_files,
    publish,
    require_usable,
    time_line,
)
from lshsql.sources.jsonl import first_object
from lshsql.sources.parse import (
    OVER_CAP_SCHEMA,
    OVER_CAP_TABLE,
    PAGE_BLOCKS_SCHEMA,
    PAGE_BLOCKS_TABLE,
    parse_batch,
    skipped_rows,
)
from lshsql.sources.readers import Source, iter_records, resolve_sources
from lshsql.sources.templates import MODES as TEMPLATE_MODES
from lshsql.sources.text import LANGUAGES, TextOptions
from lshsql.sources.workers import Progress, write_raw_tables


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
    templates: str = "filter"  # site template blocks out of anchor windows (templates.py MODES)
    template_share: float = 0.5  # a block on this share of its host's pages is template
    window_blocks: bool = False  # windows stop at the edges of their link's text blocks

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
            (
                self.templates in TEMPLATE_MODES,
                f"unknown templates mode '{self.templates}' (choose {', '.join(TEMPLATE_MODES)})",
            ),
            (
                0 < self.template_share <= 1,
                f"template share must be in (0, 1], got {self.template_share}",
            ),
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
    links_template: int = 0  # followable links in a template block of their site
    seconds: float = 0.0
    files: list[str] = field(default_factory=list)
    files_parsed: int = 0  # inputs read and parsed by this extraction
    files_reused: int = 0  # inputs whose kept raw tables (DIR/parsed) were used instead
    # the HTML parsed now, when not html_bytes: inputs reused, or captures a later one replaced
    html_bytes_parsed: int | None = None

    def lines(self) -> list[str]:
        """The summary `lshsql extract` prints."""
        over_cap = (
            f"  links over --max-links: {self.links_over_cap} on {self.pages_over_cap} pages, not extracted"
        )
        return [
            f"files read:      {len(self.files)}"
            + (f" ({self.files_parsed} parsed, {self.files_reused} reused)" if self.files_reused else ""),
            f"records read:    {self.records_read} = {self.pages_used} pages used + "
            f"{sum(self.skipped.values())} skipped",
            *(f"  skipped {reason}: {n}" for reason, n in sorted(self.skipped.items())),
            f"links:           {self.links} ({self.links_internal} internal, {self.links_external} external, "
            f"{sum(self.links_skipped.values())} not followable)",
            *(f"  link skipped {reason}: {n}" for reason, n in sorted(self.links_skipped.items())),
            *([over_cap] if self.links_over_cap else []),
            f"  template links: {self.links_template} (in blocks repeated on a site's pages), "
            f"{self.links_internal + self.links_external - self.fragments.get('anchor', 0)} of them "
            "without a fragment",
            "fragments:       " + ", ".join(f"{n} {kind}" for kind, n in sorted(self.fragments.items())),
            f"URLs described:  {self.urls_described}",
            f"URL aliases:     {sum(self.aliases.values())} ("
            + ", ".join(f"{self.aliases.get(kind, 0)} {kind}" for kind in ("redirect", "canonical"))
            + f"), {self.links_collapsed} links collapsed",
            time_line(self.seconds, self.html_bytes, self.html_bytes_parsed, "HTML"),
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
    force: bool = False,
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
        force: parse every input again, even those whose raw tables the folder keeps (DIR/parsed).

    Example:
        >>> summary = extract(["examples/crawl.warc.gz"], "work")  # doctest: +SKIP
        >>> summary.pages_used  # doctest: +SKIP
    """
    _on_spark(engine)  # an unknown engine is refused before the folder is made
    with workdir.writing(work):
        manifest.set_aside_if_damaged(work)  # a new extraction: the stages after it rerun anyway
        return _extract(
            crawl, Path(work), params, resources, progress, engine, spark_master, spark_conf, force
        )


def _extract(
    crawl: list[str],
    work: Path,
    params: ExtractParams,
    resources: db.Resources | None,
    progress: Progress | None,
    engine: str | Engine,
    spark_master: str,
    spark_conf: dict[str, str] | None,
    force: bool,
) -> ExtractSummary:
    started = time.perf_counter()
    on_spark = _on_spark(engine)
    sources = resolve_sources(crawl, params.base_url)
    resources = db.for_work(work, resources)
    # the inputs before they are read: a file that grows while it is parsed is read again next time
    recorded = {"fingerprint": fingerprint(sources, params), "files": input_files(sources)}
    inputs = parsed.Inputs.of(sources, _parse_options(params))
    kept = {} if force else parsed.whole_entries(work, inputs)
    todo = [(file_no, source) for file_no, source in enumerate(sources) if file_no not in kept]
    with workdir.scratch(work, "extract") as (raw_dir, staged):
        if not on_spark:  # worker processes first: no DuckDB threads alive when they fork
            n_read = _parse_all(todo, params, resources.threads, raw_dir, progress)
        with open_engine(engine, resources, spark_master, spark_conf) as stage_engine:
            if on_spark:
                n_read = _parse_on_spark(stage_engine.spark, todo, params, raw_dir)
            keys, n_kept = parsed.keep_and_use(work, raw_dir, inputs, kept)
            n_read += n_kept
            if n_read == 0:
                raise InputError(f"empty crawl: no records in {', '.join(s.path for s in sources)}")
            finalize(stage_engine, raw_dir, staged, params.buckets, params.templates, params.template_share)
        with db.connect(resources) as con:
            counts = count_rows(con, staged)
            over_cap = _links_over_cap(con, raw_dir, staged)
            read_now = [file_no for file_no, _ in todo] if kept else None
            parsed_now = bytes_read_now(con, staged, read_now, counts["html_bytes"])
        summary = ExtractSummary(
            work=work,
            **counts,
            **over_cap,
            seconds=time.perf_counter() - started,
            files=[s.path for s in sources],
            files_parsed=len(todo),
            files_reused=len(kept),
            html_bytes_parsed=parsed_now,
        )
        require_usable(summary, "HTML page", partial(documents_hint, sources))
        _record(work, staged, recorded, params, summary)
    parsed.prune(work, keys)
    return summary


# --- reading and parsing ----------------------------------------------------------------------------


def _parse_all(
    sources: list[tuple[int, Source]],
    params: ExtractParams,
    workers: int,
    raw_dir: Path,
    progress: Progress | None,
) -> int:
    """Parse every record of the (file number, source) inputs into raw_dir/file-<n>/; returns the number
    of records read."""
    if not sources:
        return 0
    return _write_raw(sources, params, workers, raw_dir, progress, by_file=True)


def _parse_options(params: ExtractParams) -> dict:
    """The options a file's raw rows depend on: all but those only sql/01..05 read (the templates), so
    trying another --template-share parses nothing again."""
    return {k: v for k, v in params.to_json().items() if k not in ("templates", "template_share")}


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
    by_file: bool = False,
) -> int:
    return write_raw_tables(
        _batches(sources, params),
        partial(parse_batch, params=params),
        partial(skipped_rows, url_options=params.url_options()),
        lambda record: len(record.body),
        {
            **{t: schemas.raw_schema(t) for t in RAW_TABLES},
            OVER_CAP_TABLE: OVER_CAP_SCHEMA,
            PAGE_BLOCKS_TABLE: PAGE_BLOCKS_SCHEMA,
        },
        raw_dir,
        workers,
        progress,
        _extent(sources) if progress else None,
        by_file,
    )


def _extent(sources: list[tuple[int, Source]]) -> tuple[Callable[[int, object], int], int] | None:
    """For progress: the input bytes read up to a record (the sizes of the files before its file, and its
    offset in it) and the bytes of all inputs; None when a source is a folder of pages or cannot be read."""
    if any(source.kind == "htmldir" for _, source in sources):
        return None
    before, total = {}, 0
    for file_no, source in sources:
        before[file_no] = total
        try:
            total += os.path.getsize(source.path)
        except OSError:  # the reader says what is wrong with it, in its own words
            return None
    return (lambda record_id, record: before[record_id >> 32] + record.source_offset), total


def _batches(sources: list[tuple[int, Source]], params: ExtractParams) -> Iterator[tuple[list, list]]:
    """Group records into (pages to parse, records skipped while reading), each with its record_id
    (batches.numbered); a batch holds one file's records, at most params.batch_records pages and 64 MiB
    of HTML."""
    for task in sources:
        records = numbered([task], lambda source: iter_records(source, params.max_page_bytes))
        items = ((item, None if item[1].skip_reason else len(item[1].body)) for item in records)
        yield from grouped(items, params.batch_records, 64 * 2**20)


def _on_spark(engine: str | Engine) -> bool:
    """Whether `engine` (a name, or an open SparkEngine) parses on Spark. An open DuckDBEngine is refused:
    the worker processes must fork before any DuckDB connection exists, and the final tables would replace
    the views of the caller's connection."""
    if isinstance(engine, str):
        if engine not in ENGINES:
            raise ParamError(f"unknown engine '{engine}' (engines: {', '.join(ENGINES)})")
        return engine == "spark"
    if not engine.parses_crawls:
        raise ParamError("extract opens its own DuckDB connection: pass engine='duckdb', not a connection")
    return True


def _parse_on_spark(spark, tasks: list[tuple[int, Source]], params: ExtractParams, raw_dir: Path) -> int:
    """Parse the (file number, source) inputs on Spark's executors, one task per file (`parse_file`); the
    records read."""
    from lshsql.engines.spark import spark_call, version

    if version(spark) < (4, 1):  # before parsing a crawl for nothing
        raise ParamError(
            f"extraction on Spark needs Spark 4.1 or later (sql/04's WITH RECURSIVE); this is {spark.version}"
        )
    if not tasks:
        return 0
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


def documents_hint(sources: list[Source]) -> str | None:
    """What to use instead when the first record of a JSON Lines input is a document (no url or html
    field, some text): `dedup` or `ingest`, not `extract`."""
    for source in sources:
        if source.kind != "jsonl":
            continue
        record = first_object(source.path)
        if record is None or "url" in record or "html" in record:
            continue
        if any(isinstance(value, str) for value in record.values()):
            fields = ", ".join(list(record)[:8]) + (", ..." if len(record) > 8 else "")
            return (
                f"{source.path} looks like documents (fields {fields}), not crawled pages (url, html): "
                "remove near-duplicates with `lshsql dedup`, or `lshsql ingest` them, then "
                "`lshsql run --work DIR`"
            )
    return None


def fingerprint(sources: list[Source], params: ExtractParams) -> str:
    """What the extract output depends on: the parameters and each input's path, size, mtime and the
    xxh3 of its first and last MiB (parsed.content_edges: the same rule as a kept parsed input's)."""
    edges = [parsed.content_edges(source) for source in sources]
    data = {"params": params.to_json(), "inputs": input_files(sources), "edges": edges}
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
    engine wrote it: both write the same rows); `force` extracts and parses every input again.
    `engine_options`: engine, spark_master, spark_conf."""
    with workdir.writing(work):
        current = fingerprint(resolve_sources(crawl, params.base_url), params)
        if workdir.extraction_up_to_date(Path(work), current, workdir.EXTRACT_TABLES, force):
            return None
        return extract(crawl, work, params, resources, progress, **engine_options, force=force)


def _record(work: Path, staged: Path, recorded: dict, params: ExtractParams, summary: ExtractSummary) -> None:
    """Switch the staged tables in and record the manifest's extract entry: the fingerprint and every
    file's size as they were before the extraction read them (`recorded`)."""
    entry = {
        "fingerprint": recorded["fingerprint"],
        "params": params.to_json(),
        "extra_stopword_words": sorted(params.extra_stopwords),  # params keep a digest; run reuses them
    }
    publish(work, staged, workdir.EXTRACT_TABLES, entry, recorded["files"], summary)
