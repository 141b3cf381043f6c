"""Commands that fill a work folder from inputs: `extract` (a crawl) and `ingest` (plain documents)."""

from __future__ import annotations

from typing import Annotated

import typer

from lshsql.cli.options import (
    BaseUrl,
    Buckets,
    Content,
    EngineName,
    ExtraStopwords,
    Language,
    MaxLinks,
    MaxPageMb,
    MaxSpill,
    MemoryLimit,
    Quiet,
    SortQuery,
    SparkConf,
    SparkMaster,
    Stem,
    Stopwords,
    StripTracking,
    Templates,
    TemplateShare,
    Threads,
    Window,
    WindowBlocks,
    Work,
    engine_options,
    resources,
    stopword_file,
)
from lshsql.cli.output import echo_lines
from lshsql.cli.progress import shown


def extract(
    crawl: Annotated[
        list[str],
        typer.Argument(
            help="WARC/ARC files, folders or globs; JSON Lines (url, html); "
            "or a folder of .html files with manifest.jsonl."
        ),
    ],
    work: Work,
    window: Window = 8,
    language: Language = "en",
    stem: Stem = True,
    stopwords: Stopwords = True,
    extra_stopwords: ExtraStopwords = None,
    content: Content = False,
    buckets: Buckets = 16,
    base_url: BaseUrl = None,
    sort_query: SortQuery = False,
    strip_tracking: StripTracking = False,
    max_page_mb: MaxPageMb = 32.0,
    max_links_per_page: MaxLinks = 10_000,
    templates: Templates = "filter",
    template_share: TemplateShare = 0.5,
    window_blocks: WindowBlocks = False,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    engine: EngineName = "duckdb",
    spark_master: SparkMaster = "local[*]",
    spark_conf: SparkConf = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Parse every input again, even those the work folder keeps parsed (DIR/parsed)."
        ),
    ] = False,
    quiet: Quiet = False,
) -> None:
    """Extract anchor-window fragments, links and pages from a crawl into the work folder. With
    --engine spark, one Spark task per input file parses it, and Spark writes the same tables. Inputs
    parsed before (same file, same options) are not read again: their kept rows are used.

    Example: lshsql extract examples/crawl.warc.gz --work work
    """
    from lshsql.sources.extract import ExtractParams
    from lshsql.sources.extract import extract as run_extract

    params = ExtractParams(
        window=window,
        language=language,
        stem=stem,
        stopwords=stopwords,
        extra_stopwords=stopword_file(extra_stopwords),
        content=content,
        buckets=buckets,
        sort_query=sort_query,
        strip_tracking=strip_tracking,
        max_page_bytes=int(max_page_mb * 2**20),
        max_links_per_page=max_links_per_page,
        base_url=base_url,
        templates=templates,
        template_share=template_share,
        window_blocks=window_blocks,
    )
    with shown(quiet) as display:
        summary = run_extract(
            crawl,
            work,
            params,
            resources(work, threads, memory_limit, max_spill),
            display.reading("MB of HTML"),
            **engine_options(engine, spark_master, spark_conf),
            force=force,
        )
    echo_lines(summary.lines())


def ingest(
    docs: Annotated[
        list[str],
        typer.Argument(
            help="JSON Lines or Parquet files (id, text, optional title, label or labels), Reuters-21578 "
            ".sgm files, folders or globs."
        ),
    ],
    work: Work,
    format: Annotated[
        str, typer.Option(help="auto (from the first bytes), jsonl, parquet or reuters.")
    ] = "auto",
    id_column: Annotated[str, typer.Option(help="Column (or JSON key) of the document id.")] = "id",
    text_column: Annotated[str, typer.Option(help="Column (or JSON key) of the document text.")] = "text",
    shingle: Annotated[
        int | None, typer.Option(help="Terms are the W-word shingles of the normalized words [off: words].")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="Use only the first N usable documents (the rest: over_limit).")
    ] = None,
    require_label: Annotated[
        bool, typer.Option("--require-label", help="Skip documents without a label (reason no_label).")
    ] = False,
    language: Language = "en",
    stem: Stem = True,
    stopwords: Stopwords = True,
    extra_stopwords: ExtraStopwords = None,
    buckets: Buckets = 16,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Read every input again, even those whose rows the work folder keeps (DIR/parsed).",
        ),
    ] = False,
    quiet: Quiet = False,
) -> None:
    """Turn plain documents into the work folder's pages, fragments and labels, like extract does for a
    crawl; then `lshsql run --work DIR` clusters them. Skipped when up to date; reads only the inputs the
    folder does not keep from an earlier ingest (--force re-reads all).

    Example: lshsql ingest ../shared/data/reuters21578/ --work work/reuters --require-label
    """
    from lshsql.sources.ingest import IngestParams, ingest_if_changed

    params = IngestParams(
        format=format,
        id_column=id_column,
        text_column=text_column,
        shingle=shingle,
        limit=limit,
        require_label=require_label,
        language=language,
        stem=stem,
        stopwords=stopwords,
        extra_stopwords=stopword_file(extra_stopwords),
        buckets=buckets,
    )
    with shown(quiet) as display:
        summary = ingest_if_changed(
            docs,
            work,
            params,
            resources(work, threads, memory_limit, max_spill),
            display.reading("M characters of text"),
            force,
        )
    if summary is None:
        typer.echo(f"up to date: {work} holds these documents with these options (--force re-reads them)")
        return
    echo_lines(summary.lines())
