"""Commands that run the SQL stages: `run` (every stage, extracting a crawl first when given one) and
`stage` (one stage). Their stage options are made from the Params dataclass (options.param_options)."""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from lshsql.cli.options import (
    Bags,
    BaseUrl,
    Buckets,
    Content,
    Crawl,
    EngineName,
    ExtraStopwords,
    Force,
    GivenParams,
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
    param_options,
    resources,
    stopword_file,
)
from lshsql.cli.output import echo_lines
from lshsql.cli.progress import shown


def _extract_options(given: dict) -> dict:
    """run's extraction options as extract_params_for takes them: the words of --extra-stopwords FILE,
    --max-page-mb in bytes; None is an option not given."""
    options = dict(given)
    path, mb = options.pop("extra_stopwords"), options.pop("max_page_mb")
    options["extra_stopwords"] = stopword_file(path) if path is not None else None
    options["max_page_bytes"] = int(mb * 2**20) if mb is not None else None
    return options


def _run(
    stage_name: str | None,
    crawl: list[str] | None,
    work: Path,
    bags: Path | None,
    given: dict,
    extract_given: dict,
    threads: int | None,
    memory_limit: str | None,
    max_spill: str | None,
    force: bool,
    quiet: bool,
    spark: dict,
) -> None:
    """The body of `run` and `stage`: extract the crawl when there is one (unless up to date), then run the
    stages (or one) with the options given and, for the others, those of the last run in `work`."""
    from lshsql.errors import ParamError
    from lshsql.pipeline import extract_params_for, params_for, run

    if crawl and bags:
        raise ParamError("give a crawl or --bags, not both")
    from lshsql import manifest, workdir
    from lshsql.engines.base import open_engine

    options = engine_options(**spark)
    resources_ = resources(work, threads, memory_limit, max_spill)
    # one Spark session for extraction and the stages (DuckDB opens a connection for each)
    spark_session = (
        open_engine(options["engine"], resources_, options["spark_master"], options["spark_conf"])
        if options["engine"] == "spark"
        else nullcontext()
    )
    started = time.perf_counter()
    with workdir.writing(work), spark_session as shared, shown(quiet) as display:
        if force:
            manifest.set_aside_if_damaged(work)
        if shared:
            options["engine"] = shared
        if crawl:
            from lshsql.sources.extract import (
                extract_if_changed,  # lxml, warcio, w3lib: only when there is a crawl
            )

            params = extract_params_for(work, **_extract_options(extract_given))
            reading = display.reading("MB of HTML")
            summary = extract_if_changed(crawl, work, params, resources_, reading, force, **options)
            display.pause()
            if summary and not quiet:
                typer.echo("\n".join(summary.lines()), err=True)
        only = (stage_name,) if stage_name else None
        result = run(
            work,
            params_for(work, **given),
            bags=bags,
            resources=resources_,
            force=force,
            only=only,
            log=display.log,
            **options,
        )
    echo_lines(result.lines())
    p = result.params
    typer.echo(
        f"k={p.k} l={p.l} m={p.num_perm} threshold={p.threshold}  ->  {work}/pairs.parquet, clusters.parquet"
    )
    if crawl:  # the run's own time is the table's last line
        typer.echo(f"total time (extraction and stages): {time.perf_counter() - started:.2f} s")


@param_options()
def run(
    crawl: Crawl = None,
    work: Work = Path("work"),
    bags: Bags = None,
    given: GivenParams = None,
    window: Window = None,
    language: Language = None,
    stem: Stem = None,
    stopwords: Stopwords = None,
    extra_stopwords: ExtraStopwords = None,
    content: Content = None,
    buckets: Buckets = None,
    base_url: BaseUrl = None,
    sort_query: SortQuery = None,
    strip_tracking: StripTracking = None,
    max_page_mb: MaxPageMb = None,
    max_links_per_page: MaxLinks = None,
    templates: Templates = None,
    template_share: TemplateShare = None,
    window_blocks: WindowBlocks = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    engine: EngineName = "duckdb",
    spark_master: SparkMaster = "local[*]",
    spark_conf: SparkConf = None,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Run every stage: crawl (or --bags) -> bags -> signatures -> buckets -> candidates -> pairs -> clusters.

    Only stages whose inputs or parameters changed are rerun; parameters not given keep the values of the
    last run in the work folder, the extraction options too (defaults: --window 8, --language en, --stem,
    --stopwords, --buckets 16, --max-page-mb 32, --max-links 10000, --templates filter,
    --template-share 0.5). With --threshold and no -k/-l the
    planner chooses k and l.

    Example: lshsql run examples/crawl.warc.gz --work work --threshold 0.3
    """
    extract_given = dict(
        window=window,
        language=language,
        stem=stem,
        stopwords=stopwords,
        extra_stopwords=extra_stopwords,
        content=content,
        buckets=buckets,
        base_url=base_url,
        sort_query=sort_query,
        strip_tracking=strip_tracking,
        max_page_mb=max_page_mb,
        max_links_per_page=max_links_per_page,
        templates=templates,
        template_share=template_share,
        window_blocks=window_blocks,
    )
    spark = {"engine": engine, "spark_master": spark_master, "spark_conf": spark_conf}
    _run(None, crawl, work, bags, given, extract_given, threads, memory_limit, max_spill, force, quiet, spark)


@param_options()
def stage(
    name: Annotated[str, typer.Argument(help="The stage to run on the tables already in the work folder.")],
    work: Work = Path("work"),
    bags: Bags = None,
    given: GivenParams = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    engine: EngineName = "duckdb",
    spark_master: SparkMaster = "local[*]",
    spark_conf: SparkConf = None,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Run one stage (term_counts, urls, terms, bags, signatures, buckets, candidates, bucket_sizes,
    pairs, clusters, cluster_labels) on the tables in the work folder: earlier stages'
    outputs, or your own Parquet of the documented schema put at DIR/<table>.parquet. Skipped when up to
    date (--force reruns it).

    Example: lshsql stage pairs --work work --threshold 0.4
    """
    from lshsql.errors import ParamError
    from lshsql.pipeline import STAGE_NAMES

    if name not in STAGE_NAMES:
        raise ParamError(f"unknown stage '{name}' (stages: {', '.join(STAGE_NAMES)})")
    spark = {"engine": engine, "spark_master": spark_master, "spark_conf": spark_conf}
    _run(name, None, work, bags, given, {}, threads, memory_limit, max_spill, force, quiet, spark)


def sql(
    name: Annotated[str, typer.Argument(help="The stage whose SQL to print.")],
    work: Work = Path("work"),
) -> None:
    """Print the exact SQL a stage ran in the work folder's last run (DIR/compiled/<stage>.sql): its file
    rendered, its inputs as views and its parameters as variables, runnable in the duckdb shell from the
    work folder unless its header says it needs lshsql's Python UDFs.

    Example: lshsql sql pairs --work work > pairs.sql && (cd work && duckdb < ../pairs.sql)
    """
    from lshsql.pipeline import compiled_sql

    typer.echo(compiled_sql(work, name), nl=False)
