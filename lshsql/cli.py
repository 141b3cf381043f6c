"""The `lshsql` command: a thin typer layer over the Python API, with one error boundary."""

from __future__ import annotations

import csv
import json
import math
import os
import re
import sys
import textwrap
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from lshsql.errors import InputError, LshsqlError


class _Commands(TyperGroup):
    """The command group, turning an EOFError (a reader at a cut file) into a one-line InputError: click
    would otherwise print a bare 'Aborted!'."""

    def invoke(self, ctx: typer.Context) -> object:
        try:
            return super().invoke(ctx)
        except EOFError as e:
            raise InputError(f"unexpected end of input (a cut file?): {e}") from e


app = typer.Typer(
    cls=_Commands,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,
    help="Find related and near-duplicate pages in a web crawl and group them into clusters.",
)

# --- options shared by several commands -------------------------------------------------------------
Work = Annotated[Path, typer.Option("--work", "-w", help="Work folder holding every stage's output.")]
Threads = Annotated[
    int | None, typer.Option("--threads", help="Worker processes and DuckDB threads [default: all cores].")
]
MemoryLimit = Annotated[
    str | None, typer.Option("--memory-limit", help="DuckDB memory limit, e.g. 4GB [default: half the RAM].")
]
MaxSpill = Annotated[
    str | None,
    typer.Option(
        "--max-spill",
        help="Most DuckDB may spill to WORK/tmp/duckdb, e.g. 50GB; over it the stage stops with an error "
        "[default: DuckDB's, 90% of the free disk].",
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")]
EngineName = Annotated[
    str, typer.Option("--engine", help="duckdb or spark: the engine that runs the stage SQL (same rows).")
]
SparkMaster = Annotated[
    str, typer.Option("--spark-master", help="Spark master URL for --engine spark, e.g. spark://host:7077.")
]
SparkConf = Annotated[
    list[str] | None,
    typer.Option("--spark-conf", help="A Spark setting KEY=VALUE for --engine spark (repeatable)."),
]
Force = Annotated[bool, typer.Option("--force", help="Rerun stages even when they are up to date.")]
Crawl = Annotated[
    list[str] | None,
    typer.Argument(
        help="WARC/ARC files, folders or globs; JSON Lines (url, html); or a folder of .html files."
    ),
]
Window = Annotated[int, typer.Option(help="Words taken before and after each link.")]
Language = Annotated[str, typer.Option(help="Stopwords and stemmer: en (Porter) or ru (Snowball).")]
Stem = Annotated[bool, typer.Option("--stem/--no-stem", help="Stem words.")]
Stopwords = Annotated[bool, typer.Option("--stopwords/--no-stopwords", help="Drop stopwords.")]
ExtraStopwords = Annotated[
    Path | None, typer.Option(help="File of extra stopwords, one per line ('#' comments).")
]
Content = Annotated[bool, typer.Option(help="Also keep each page's own words (kind 'content').")]
Buckets = Annotated[int, typer.Option(help="M on-disk buckets of fragments, by hash of the URL.")]
BaseUrl = Annotated[
    str | None, typer.Option(help="For a folder of .html files without manifest.jsonl: URL of the folder.")
]
SortQuery = Annotated[bool, typer.Option(help="Sort query parameters when canonicalizing URLs.")]
StripTracking = Annotated[
    bool, typer.Option(help="Remove tracking parameters (utm_*, gclid, ...) from URLs.")
]
MaxPageMb = Annotated[float, typer.Option(help="Skip pages larger than this (reason too_large).")]
MaxLinks = Annotated[
    int,
    typer.Option(
        "--max-links",
        help="Extract at most this many <a href> of a page (default 10000); the summary counts the others.",
    ),
]

Bags = Annotated[
    Path | None, typer.Option(help="Start from a Parquet table of bags (url, term, optional weight).")
]
Threshold = Annotated[float | None, typer.Option(help="Keep pairs agreeing on this fraction of min-hashes.")]
Recall = Annotated[
    float | None,
    typer.Option(help="Chance the planner's tables find a pair right at the threshold (less: fewer) [0.95]."),
]
Weighting = Annotated[str | None, typer.Option(help="tfidf, tf or none (sets; or the bags' own weights).")]
Unit = Annotated[
    str | None, typer.Option(help="What a bag describes: url, host or domain (registered domain) [url].")
]
Aliases = Annotated[
    bool | None,
    typer.Option(
        "--aliases/--no-aliases", help="Fragments of redirects and rel=canonical aliases describe the target."
    ),
]
MinDf = Annotated[int | None, typer.Option(help="Drop terms in fewer URLs [default: 2; 1 with --bags].")]
MaxDf = Annotated[
    float | None, typer.Option(help="Drop terms in more than this fraction of URLs [0.5; 1.0].")
]
Scale = Annotated[float | None, typer.Option(help="tfidf/tf bags are scaled to sum to this [100].")]
NumPerm = Annotated[int | None, typer.Option(help="m, min-hashes per URL [80].")]
SigBytes = Annotated[
    int | None, typer.Option("--signature-bytes", help="Bytes kept per min-hash: 4 or 3 [4].")
]
K = Annotated[int | None, typer.Option("-k", help="Min-hashes per LSH table [planner's choice].")]
L = Annotated[int | None, typer.Option("-l", help="LSH tables [planner's choice].")]
Banding = Annotated[
    bool | None, typer.Option("--banding/--random-tables", help="b bands of r rows (k=r, l=b).")
]
Seed = Annotated[int | None, typer.Option(help="Seed of the hash family and LSH tables [1].")]
MaxBucket = Annotated[int | None, typer.Option(help="Bucket size above which pairs are capped [1000].")]
Verify = Annotated[
    bool | None, typer.Option("--verify/--no-verify", help="Add exact weighted Jaccard to pairs.")
]
Clustering = Annotated[str | None, typer.Option(help="center (the paper's CENTER) or components.")]

OUTPUT_FORMATS = ("table", "csv", "json")


def _output_format(value: str) -> str:
    """Check --format as it is parsed, so a typo stops the command before it runs or writes anything."""
    from lshsql.errors import ParamError

    if value not in OUTPUT_FORMATS:
        raise ParamError(f"--format must be table, csv or json, got '{value}'")
    return value


OutputFormat = Annotated[
    str,
    typer.Option(
        help="table, csv or json (JSON Lines: one object per row; NaN and infinities as null).",
        callback=_output_format,
    ),
]


def main() -> None:
    """Entry point: run the app; domain errors become one line `lshsql: error: ...` and an exit code."""
    try:
        app(standalone_mode=True)
    except LshsqlError as e:
        if os.environ.get("LSHSQL_DEBUG"):
            raise
        typer.echo(f"lshsql: error: {' '.join(_printable(str(e), lines=False).split())}", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        typer.echo("lshsql: error: interrupted", err=True)
        sys.exit(130)
    except OSError as e:  # the machine's, not the input's: a full disk, a folder that cannot be written
        if os.environ.get("LSHSQL_DEBUG"):
            raise
        where = f"{e.filename}: " if e.filename else ""
        typer.echo(f"lshsql: error: {where}{e.strerror or e}", err=True)
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 - the one boundary: no traceback reaches a user
        if os.environ.get("LSHSQL_DEBUG") or type(e).__module__.split(".")[0] not in ("duckdb", "_duckdb"):
            raise
        from lshsql.engines.duckdb import error_message

        typer.echo(f"lshsql: error: DuckDB: {error_message(e)}", err=True)
        sys.exit(3)


def _version(value: bool) -> None:
    if value:
        from lshsql import __version__

        typer.echo(f"lshsql {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Find related and near-duplicate pages in a web crawl and group them into clusters."""


# --- helpers ----------------------------------------------------------------------------------------


def _resources(work: Path, threads: int | None, memory_limit: str | None, max_spill: str | None):
    from lshsql.engines.duckdb import Resources, spill_directory

    kwargs = {"temp_directory": spill_directory(work), "max_spill": max_spill}
    if threads is not None:
        kwargs["threads"] = threads
    if memory_limit is not None:
        kwargs["memory_limit"] = memory_limit
    return Resources(**kwargs)


def _say(quiet: bool):
    return None if quiet else (lambda line: typer.echo(line, err=True))


def _progress(quiet: bool, what: str = "MB of HTML"):
    if quiet:
        return None
    last = [0.0]

    def show(records: int, n_bytes: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 2.0:
            last[0] = now
            typer.echo(f"  ... {records} records read, {n_bytes / 1e6:.1f} {what}", err=True)

    return show


def _stopword_file(path: Path | None) -> frozenset[str]:
    """The words of --extra-stopwords FILE (none without it); a bad file is a one-line InputError."""
    from lshsql.errors import InputError
    from lshsql.sources import text

    if path is None:
        return frozenset()
    try:
        return text.read_stopword_file(path)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: {e}") from None


def _extract_params(**options):
    from lshsql.sources.extract import ExtractParams

    extra = _stopword_file(options.pop("extra_stopwords"))
    options["max_page_bytes"] = int(options.pop("max_page_mb") * 2**20)
    return ExtractParams(extra_stopwords=extra, **options)


def _kept_extract_params(work: Path, given: dict):
    """Extraction options of `run CRAWL`: those given now, else those of the folder's last extraction (as
    stage parameters are kept), else extract's defaults (window 8, language en, 16 buckets, 32 MB pages,
    10,000 links a page)."""
    from dataclasses import fields

    from lshsql import manifest
    from lshsql.sources.extract import ExtractParams

    entry = manifest.read(work)["stages"].get("extract", {})
    if entry.get("kind") == "documents":  # made by ingest, whose options are not extract's
        entry = {}
    kept = {f.name for f in fields(ExtractParams)} - {"extra_stopwords", "batch_records"}
    options = {name: value for name, value in entry.get("params", {}).items() if name in kept}
    options |= {name: value for name, value in given.items() if name in kept and value is not None}
    if given["max_page_mb"] is not None:
        options["max_page_bytes"] = int(given["max_page_mb"] * 2**20)
    extra = given["extra_stopwords"]
    words = _stopword_file(extra) if extra is not None else frozenset(entry.get("extra_stopword_words", ()))
    return ExtractParams(extra_stopwords=words, **options)


PIPELINE_OPTIONS = (
    "unit", "aliases", "threshold", "recall", "weighting", "min_df", "max_df", "scale", "num_perm",
    "signature_bytes", "k", "l", "banding", "seed", "max_bucket", "verify", "clustering",
)  # fmt: skip


def _pipeline_options(arguments: dict) -> dict:
    """The stage parameters among a command's arguments (typer needs them spelled out in each signature)."""
    return {name: arguments[name] for name in PIPELINE_OPTIONS}


def _params(work: Path, given: dict):
    """Stage parameters: the ones given now, else the ones the last run in `work` was asked for."""
    from lshsql import manifest
    from lshsql.errors import ParamError
    from lshsql.params import Params

    saved = manifest.read(work).get("requested_params", {})
    given = {k: v for k, v in given.items() if v is not None}
    if "recall" in given and "k" in given and "l" in given:
        raise ParamError("--recall is the planner's: give it or both -k and -l, not all three")
    if any(name in given and given[name] != saved.get(name) for name in ("threshold", "recall")):
        saved = {k: v for k, v in saved.items() if k not in ("k", "l")}  # let the planner choose again
    return Params(**{**saved, **given})


def _json_value(value: object) -> object:
    """`value` as JSON can hold it: NaN and infinities (which json.dumps writes as invalid NaN/Infinity
    tokens, as DuckDB's to_json does) become null, also inside lists and structs; map keys become strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def _printable(text: str, lines: bool = True) -> str:
    """Text as the terminal should show it: control characters (escape sequences a crawled title may
    carry, tabs; with lines=False newlines too, for a table cell) as spaces, so no page can move the
    cursor, retitle the window or hide a row."""
    return (_CONTROL_BUT_NEWLINE if lines else _CONTROL).sub(" ", text)


def _print_table(table, fmt: str = "table", wrap_last: bool = False) -> None:
    """Print a Table as aligned text (cells cut at 100 characters, or with `wrap_last` the last column
    wrapped onto more lines), as CSV, or as JSON Lines (one object per row, column names as keys)."""
    if fmt == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(table.columns)
        writer.writerows(table.rows)
    elif fmt == "json":
        for row in table.rows:
            record = {name: _json_value(v) for name, v in zip(table.columns, row, strict=True)}
            typer.echo(json.dumps(record, default=str, ensure_ascii=False, allow_nan=False))
    else:
        cells = [
            table.columns,
            *[["" if v is None else _printable(str(v), lines=False) for v in row] for row in table.rows],
        ]
        widths = [min(max(len(row[i]) for row in cells), 100) for i in range(len(table.columns))]
        indent = " " * (sum(widths[:-1]) + 2 * (len(widths) - 1))
        for n, row in enumerate(cells):
            last = textwrap.wrap(row[-1], 100, break_on_hyphens=False) if wrap_last and row[-1] else [row[-1]]
            line = "  ".join(v[:100].ljust(w) for v, w in zip([*row[:-1], last[0]], widths, strict=True))
            typer.echo(line.rstrip())
            for more in last[1:]:
                typer.echo(indent + more)
            if n == 0:
                typer.echo("  ".join("-" * w for w in widths))


# --- commands ---------------------------------------------------------------------------------------


@app.command()
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
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    engine: EngineName = "duckdb",
    spark_master: SparkMaster = "local[*]",
    spark_conf: SparkConf = None,
    quiet: Quiet = False,
) -> None:
    """Extract anchor-window fragments, links and pages from a crawl into the work folder. With
    --engine spark, one Spark task per input file parses it, and Spark writes the same tables.

    Example: lshsql extract examples/crawl.warc.gz --work work
    """
    from lshsql.sources.extract import extract as run_extract

    params = _extract_params(
        window=window,
        language=language,
        stem=stem,
        stopwords=stopwords,
        extra_stopwords=extra_stopwords,
        content=content,
        buckets=buckets,
        sort_query=sort_query,
        strip_tracking=strip_tracking,
        max_page_mb=max_page_mb,
        max_links_per_page=max_links_per_page,
        base_url=base_url,
    )
    summary = run_extract(
        crawl,
        work,
        params,
        _resources(work, threads, memory_limit, max_spill),
        _progress(quiet),
        **_engine_options(engine, spark_master, spark_conf),
    )
    for line in summary.lines():
        typer.echo(line)


@app.command()
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
        bool, typer.Option("--force", help="Ingest even when the work folder is up to date.")
    ] = False,
    quiet: Quiet = False,
) -> None:
    """Turn plain documents into the work folder's pages, fragments and labels, like extract does for a
    crawl; then `lshsql run --work DIR` clusters them. Skipped when up to date (--force re-reads).

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
        extra_stopwords=_stopword_file(extra_stopwords),
        buckets=buckets,
    )
    resources = _resources(work, threads, memory_limit, max_spill)
    summary = ingest_if_changed(
        docs, work, params, resources, _progress(quiet, "M characters of text"), force
    )
    if summary is None:
        typer.echo(f"up to date: {work} holds these documents with these options (--force re-reads them)")
        return
    for line in summary.lines():
        typer.echo(line)


def _engine_options(engine: str = "duckdb", spark_master: str | None = None, spark_conf=None) -> dict:
    """--engine, --spark-master and --spark-conf as keyword arguments of the API (run, extract, hierarchy);
    ParamError for an unknown engine, or Spark options without --engine spark."""
    from lshsql.engines.base import ENGINES, parse_conf
    from lshsql.errors import ParamError

    if engine not in ENGINES:
        raise ParamError(f"--engine must be one of {', '.join(ENGINES)}, got '{engine}'")
    options = {
        "engine": engine,
        "spark_master": spark_master or "local[*]",
        "spark_conf": parse_conf(spark_conf),
    }
    if engine != "spark" and (options["spark_conf"] or options["spark_master"] != "local[*]"):
        raise ParamError("--spark-master and --spark-conf need --engine spark")
    return options


def _run(
    stage_name: str | None,
    crawl,
    work,
    bags,
    given: dict,
    extract_options: dict,
    threads,
    memory_limit,
    max_spill,
    force: bool,
    quiet: bool,
    spark: dict | None = None,
) -> None:
    from lshsql.errors import ParamError
    from lshsql.pipeline import run

    if crawl and bags:
        raise ParamError("give a crawl or --bags, not both")
    from lshsql import manifest, workdir
    from lshsql.engines.base import open_engine

    options = _engine_options(**(spark or {}))
    resources = _resources(work, threads, memory_limit, max_spill)
    # one Spark session for extraction and the stages (DuckDB opens a connection for each)
    spark_session = (
        open_engine(options["engine"], resources, options["spark_master"], options["spark_conf"])
        if options["engine"] == "spark"
        else nullcontext()
    )
    with workdir.writing(work), spark_session as shared:
        if force:
            manifest.set_aside_if_damaged(work)
        if shared:
            options["engine"] = shared
        if crawl:
            from lshsql.sources.extract import (
                extract_if_changed,  # lxml, warcio, w3lib: only when there is a crawl
            )

            params = _kept_extract_params(work, extract_options)
            summary = extract_if_changed(crawl, work, params, resources, _progress(quiet), force, **options)
            if summary and not quiet:
                typer.echo("\n".join(summary.lines()), err=True)
        only = (stage_name,) if stage_name else None
        result = run(
            work,
            _params(work, given),
            bags=bags,
            resources=resources,
            force=force,
            only=only,
            log=_say(quiet),
            **options,
        )
    for line in result.lines():
        typer.echo(line)
    p = result.params
    typer.echo(
        f"k={p.k} l={p.l} m={p.num_perm} threshold={p.threshold}  ->  {work}/pairs.parquet, clusters.parquet"
    )


@app.command()
def run(
    crawl: Crawl = None,
    work: Work = Path("work"),
    bags: Bags = None,
    unit: Unit = None,
    aliases: Aliases = None,
    threshold: Threshold = None,
    recall: Recall = None,
    weighting: Weighting = None,
    min_df: MinDf = None,
    max_df: MaxDf = None,
    scale: Scale = None,
    num_perm: NumPerm = None,
    signature_bytes: SigBytes = None,
    k: K = None,
    l: L = None,  # noqa: E741
    banding: Banding = None,
    seed: Seed = None,
    max_bucket: MaxBucket = None,
    verify: Verify = None,
    clustering: Clustering = None,
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
    --stopwords, --buckets 16, --max-page-mb 32, --max-links 10000). With --threshold and no -k/-l the
    planner chooses k and l.

    Example: lshsql run examples/crawl.warc.gz --work work --threshold 0.3
    """
    given = _pipeline_options(locals())
    extract_options = dict(
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
    )
    spark = {"engine": engine, "spark_master": spark_master, "spark_conf": spark_conf}
    _run(
        None, crawl, work, bags, given, extract_options, threads, memory_limit, max_spill, force, quiet, spark
    )


@app.command()
def stage(
    name: Annotated[str, typer.Argument(help="The stage to run on the tables already in the work folder.")],
    work: Work = Path("work"),
    bags: Bags = None,
    unit: Unit = None,
    aliases: Aliases = None,
    threshold: Threshold = None,
    recall: Recall = None,
    weighting: Weighting = None,
    min_df: MinDf = None,
    max_df: MaxDf = None,
    scale: Scale = None,
    num_perm: NumPerm = None,
    signature_bytes: SigBytes = None,
    k: K = None,
    l: L = None,  # noqa: E741
    banding: Banding = None,
    seed: Seed = None,
    max_bucket: MaxBucket = None,
    verify: Verify = None,
    clustering: Clustering = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    engine: EngineName = "duckdb",
    spark_master: SparkMaster = "local[*]",
    spark_conf: SparkConf = None,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """Run one stage (term_counts, urls, terms, bags, element_hashes, signatures, buckets, candidates,
    bucket_sizes, pairs, clusters, cluster_labels) on the tables in the work folder: earlier stages'
    outputs, or your own Parquet of the documented schema put at DIR/<table>.parquet. Skipped when up to
    date (--force reruns it).

    Example: lshsql stage pairs --work work --threshold 0.4
    """
    from lshsql.errors import ParamError
    from lshsql.pipeline import STAGE_NAMES

    if name not in STAGE_NAMES:
        raise ParamError(f"unknown stage '{name}' (stages: {', '.join(STAGE_NAMES)})")
    given = _pipeline_options(locals())
    spark = {"engine": engine, "spark_master": spark_master, "spark_conf": spark_conf}
    _run(name, None, work, bags, given, {}, threads, memory_limit, max_spill, force, quiet, spark)


@app.command()
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


@app.command()
def related(
    url: Annotated[str, typer.Argument(help="A URL described in the work folder.")],
    work: Work = Path("work"),
    limit: Annotated[int, typer.Option(help="How many related URLs.")] = 20,
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """What's Related: the URLs paired with URL, most similar first.

    Example: lshsql related https://docs.python.example/3.11/library/index.html --work work
    """
    from lshsql.tools.explore import related as find_related

    _print_table(find_related(work, url, limit, _resources(work, threads, memory_limit, max_spill)), format)


@app.command()
def clusters(
    work: Work = Path("work"),
    limit: Annotated[int, typer.Option(help="How many clusters, largest first.")] = 10,
    members: Annotated[int, typer.Option(help="Members shown per cluster.")] = 5,
    terms: Annotated[int, typer.Option(help="Top terms shown per cluster, as readable words (<= 10).")] = 8,
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """The largest clusters with their first members and top terms (cluster_labels: the heaviest terms by
    summed TF-IDF, each shown as the word most often written for it).

    Example: lshsql clusters --work work --limit 5
    """
    from lshsql.tools.explore import top_clusters

    resources = _resources(work, threads, memory_limit, max_spill)
    _print_table(top_clusters(work, limit, members, terms, resources), format)


@app.command()
def query(
    sql: Annotated[
        str, typer.Argument(help="SQL over pages, links, fragments, urls, bags, pairs, clusters, ...")
    ],
    work: Work = Path("work"),
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Ad-hoc SQL over the work folder's tables, with DuckDB's resources set as for `run`.

    Example: lshsql query "select size, count(*) from clusters group by 1 order by 1" --work work
    """
    from lshsql.tools.explore import query as run_query

    _print_table(run_query(work, sql, _resources(work, threads, memory_limit, max_spill)), format)


@app.command()
def info(
    work: Work = Path("work"),
    format: OutputFormat = "table",
) -> None:
    """Counts, parameters and per-stage timings of the run in the work folder (the paper's Table 1).

    Example: lshsql info --work work
    """
    from lshsql.tools.explore import info as run_info

    _print_table(run_info(work), format, wrap_last=True)


@app.command()
def plan(
    threshold: Annotated[float, typer.Option(help="The similarity pairs must reach.")] = 0.5,
    recall: Annotated[
        float, typer.Option(help="Probability wanted of finding a pair right at the threshold.")
    ] = 0.95,
    num_perm: Annotated[int, typer.Option(help="m, min-hashes per URL.")] = 80,
    banding: Annotated[bool, typer.Option("--banding/--random-tables", help="b bands of r rows.")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the LSH tables (for the bucket prediction).")] = 1,
    work: Annotated[
        Path | None,
        typer.Option("--work", "-w", help="A work folder with signatures: predict from its data."),
    ] = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Choose k and l for a threshold and show why: the S-curve, the options, and with --work the candidate
    pairs and biggest buckets expected on that data. `run` makes the same choice when -k/-l are not given.

    Example: lshsql plan --threshold 0.8 --work work
    """
    from lshsql.lsh.plan import plan as make_plan

    resources = _resources(work, threads, memory_limit, max_spill) if work is not None else None
    for line in make_plan(threshold, num_perm, recall, banding, work, resources, seed).lines():
        typer.echo(line)


@app.command()
def explain(
    u: Annotated[str, typer.Argument(help="A URL described in the work folder.")],
    v: Annotated[str | None, typer.Argument(help="A second URL: explain the pair.")] = None,
    work: Work = Path("work"),
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Why two URLs were paired or not (estimate, exact similarity, colliding LSH tables, shared terms, anchor
    phrases), or, for one URL, its bag, cluster and anchor phrases.

    Example: lshsql explain https://docs.python.example/3.11/index.html https://www.python.org/ --work work
    """
    from lshsql.tools import explain as why

    resources = _resources(work, threads, memory_limit, max_spill)
    if v:
        lines = why.pair_lines(why.explain_pair(work, u, v, resources))
    else:
        lines = why.url_lines(why.explain_url(work, u, resources))
    for line in lines:
        typer.echo(_printable(line))


@app.command(name="eval")
def eval_(
    work: Work = Path("work"),
    threshold: Annotated[
        float | None, typer.Option(help="Similarity of the truth [default: the run's].")
    ] = None,
    labels: Annotated[
        Path | None, typer.Option(help="Parquet or CSV with url,label: score the clusters.")
    ] = None,
    sample: Annotated[int, typer.Option(help="URLs whose 10 nearest neighbours are checked.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed of that sample.")] = 1,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Measure the run against the exact answer: recall and precision of pairs and candidates, the exact
    similarity of what was missed or wrongly kept, nearest-neighbour overlap, and cluster quality with labels.
    Written to DIR/eval/ (Parquet and eval.json).

    Example: lshsql eval --work work --labels labels.csv
    """
    from lshsql.tools.evaluate import evaluate, summary_lines

    result = evaluate(
        work, threshold, labels, sample, seed, _resources(work, threads, memory_limit, max_spill)
    )
    for line in summary_lines(result):
        typer.echo(line)


@app.command()
def hierarchy(
    work: Work = Path("work"),
    threshold: Annotated[
        float, typer.Option(help="t: a pair of clusters merges when two of their documents reach it.")
    ] = 0.3,
    r_start: Annotated[int, typer.Option(help="Band size (rows) of the first level.")] = 20,
    r_min: Annotated[int, typer.Option(help="Band size of the last level.")] = 2,
    delta: Annotated[int, typer.Option(help="The band size shrinks by this from level to level.")] = 2,
    level_thresholds: Annotated[
        bool,
        typer.Option(
            "--level-thresholds/--one-threshold",
            help="A level of b bands of r rows merges pairs >= max(t, (1/b)^(1/r)); the last takes all >= t.",
        ),
    ] = True,
    method: Annotated[
        str, typer.Option(help="lsh, or exact: single link over every exact pair >= t (small corpora).")
    ] = "lsh",
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify", help="Merge by exact weighted Jaccard, not the estimate.")
    ] = True,
    max_bucket: Annotated[int, typer.Option(help="Clusters per bucket above which pairs are capped.")] = 1000,
    weighting: Weighting = None,
    min_df: MinDf = None,
    max_df: MaxDf = None,
    scale: Scale = None,
    num_perm: NumPerm = None,
    seed: Seed = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    engine: EngineName = "duckdb",
    spark_master: SparkMaster = "local[*]",
    spark_conf: SparkConf = None,
    quiet: Quiet = False,
) -> None:
    """Hierarchical single-link clustering by LSH with a shrinking band size: levels r = r_start,
    r_start - delta, ... >= r_min; pairs of different clusters sharing a band of r rows and reaching t merge.
    Runs the stages up to signatures first when needed. Writes DIR/merges.parquet and
    DIR/cluster_tree.parquet; `lshsql cut` turns the tree into flat clusters.

    Example: lshsql hierarchy --work work/reuters --threshold 0.3
    """
    from lshsql.tools.hierarchy import HierarchyParams
    from lshsql.tools.hierarchy import hierarchy as build

    given = {"weighting": weighting, "min_df": min_df, "max_df": max_df, "scale": scale}
    given |= {"num_perm": num_perm, "seed": seed}
    params = HierarchyParams(threshold, r_start, r_min, delta, method, verify, max_bucket, level_thresholds)
    summary = build(
        work,
        params,
        _params(work, given),
        _resources(work, threads, memory_limit, max_spill),
        log=_say(quiet),
        **_engine_options(engine, spark_master, spark_conf),
    )
    for line in summary.lines():
        typer.echo(line)


@app.command()
def cut(
    threshold: Annotated[float, typer.Option(help="Similarity at which to cut the cluster tree.")],
    work: Work = Path("work"),
    labels: Annotated[
        Path | None, typer.Option(help="Parquet or CSV with url,label: score the flat clusters.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Where to write [default: DIR/cut.parquet].")] = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Flat clusters from the cluster tree of `lshsql hierarchy`: the single-link clusters at a similarity
    threshold (one query, sql/85_cut.sql), with the clusters table's columns.

    Example: lshsql cut --threshold 0.6 --work work/reuters --labels work/reuters/labels.parquet
    """
    from lshsql.tools.evaluate import quality_lines, score_clusters
    from lshsql.tools.hierarchy import cut as make_cut

    if labels is not None and not labels.is_file():  # before the cut is written, not after
        from lshsql.errors import InputError

        raise InputError(f"{labels}: no such file")
    resources = _resources(work, threads, memory_limit, max_spill)
    path, counts = make_cut(work, threshold, resources, out)
    typer.echo(
        f"{counts['clusters']:,} clusters of {counts['rows']:,} URLs at similarity {threshold:g} "
        f"(largest {counts['largest_cluster']:,}, {counts['singletons']:,} singletons)  ->  {path}"
    )
    if labels is not None:
        for line in quality_lines(score_clusters(path, labels, resources)):
            typer.echo(line)


@app.command()
def environment(
    site: Annotated[str, typer.Argument(help="A host (docs.python.org) or registered domain (python.org).")],
    work: Work = Path("work"),
    threshold: Annotated[float, typer.Option(help="Similarity at which two domains' bags pair.")] = 0.2,
    clustering: Annotated[str, typer.Option(help="center or components.")] = "center",
    members: Annotated[int, typer.Option(help="Domains shown per cluster.")] = 8,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    quiet: Quiet = False,
) -> None:
    """The external web environment of a site: the domains it links to and those citing it, with counts of
    links and pages, clustered by the anchor text the whole crawl uses for them (one bag per registered
    domain) and labelled by their heaviest terms. Written to DIR/environment/SITE/.

    Example: lshsql environment docs.python.example --work work/crawl
    """
    from lshsql.params import Params
    from lshsql.tools.environment import environment as describe

    params = Params(threshold=threshold, clustering=clustering)
    result = describe(work, site, params, _resources(work, threads, memory_limit, max_spill), log=_say(quiet))
    for line in result.lines(members):
        typer.echo(line)


@app.command()
def report(
    work: Work = Path("work"),
    out: Annotated[
        Path | None, typer.Option(help="Where to write the HTML [default: DIR/report.html].")
    ] = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Write one self-contained HTML report of the run: S-curve, similarities, cluster sizes, Table 1,
    the largest clusters, and eval figures when present.

    Example: lshsql report --work work
    """
    from lshsql.tools.report import write_report

    typer.echo(str(write_report(work, out, _resources(work, threads, memory_limit, max_spill))))


ClusterSource = Annotated[
    str, typer.Option("--from", help="clusters (DIR/clusters.parquet) or cut (DIR/cut.parquet, lshsql cut).")
]


def _from_cut(source: str) -> bool:
    from lshsql.errors import ParamError

    if source not in ("clusters", "cut"):
        raise ParamError(f"--from must be clusters or cut, got '{source}'")
    return source == "cut"


@app.command()
def show(
    cluster: Annotated[
        str, typer.Argument(help="A cluster: its center_id, the URL of its center or a member.")
    ],
    work: Work = Path("work"),
    from_: ClusterSource = "clusters",
    limit: Annotated[int | None, typer.Option(help="Members shown (in URL order) [all].")] = None,
    html: Annotated[
        str | None,
        typer.Option(help="Print the stored HTML of this member, read back from its crawl file, instead."),
    ] = None,
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """A cluster's members with their titles, in-degrees and the crawl file and offset each page was read
    from; with --html URL, that member's page as stored in the crawl (printed as is).

    Example: lshsql show https://docs.python.example/3.11/index.html --work work
    """
    from lshsql.tools import show as shown

    from_cut = _from_cut(from_)
    resources = _resources(work, threads, memory_limit, max_spill)
    if html is not None:
        sys.stdout.write(shown.stored_html(work, html, cluster, from_cut, resources))
        sys.stdout.flush()
        return
    table = shown.cluster_members(work, cluster, from_cut, limit, resources)
    if format != "table":
        _print_table(table, format)
        return
    typer.echo(_printable(shown.heading(table, work, from_cut, resources)))
    _print_table(type(table)(table.columns[2:], [row[2:] for row in table.rows]), format)


@app.command()
def mirrors(
    work: Work = Path("work"),
    from_: ClusterSource = "clusters",
    min_shared: Annotated[
        int, typer.Option(help="Keep pairs of hosts sharing at least this many clusters of size >= 2.")
    ] = 2,
    min_jaccard: Annotated[
        float, typer.Option(help="Print the pairs whose cluster sets have at least this Jaccard.")
    ] = 0.5,
    limit: Annotated[int | None, typer.Option(help="Pairs printed [all].")] = None,
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Host mirrors: page clusters aggregated to pairs of hosts (shared clusters, Jaccard of the hosts'
    cluster sets). Writes every pair sharing --min-shared clusters to DIR/mirrors.parquet and prints the
    likely mirrors, the pairs with Jaccard >= --min-jaccard.

    Example: lshsql mirrors --work work --min-shared 2 --min-jaccard 0.5
    """
    from lshsql.tools.mirrors import likely_mirrors
    from lshsql.tools.mirrors import mirrors as find_mirrors

    resources = _resources(work, threads, memory_limit, max_spill)
    path, counts = find_mirrors(work, _from_cut(from_), min_shared, resources)
    table = likely_mirrors(work, min_jaccard, limit, resources)
    summary = (
        f"{counts['rows']:,} pairs of hosts share >= {min_shared} clusters  ->  {path}; "
        f"{len(table.rows):,}{' shown' if limit is not None else ''} with Jaccard >= {min_jaccard:g}"
    )
    typer.echo(summary, err=format != "table")
    _print_table(table, format)


if __name__ == "__main__":
    main()
