"""Options shared by several commands, the stage options made from the Params dataclass, and what the
commands turn options into for the API (resources, engine options, progress output)."""

from __future__ import annotations

import functools
import inspect
import typing
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any

import typer

from lshsql.params import Params

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
Bags = Annotated[
    Path | None, typer.Option(help="Start from a Parquet table of bags (url, term, optional weight).")
]
ClusterSource = Annotated[
    str, typer.Option("--from", help="clusters (DIR/clusters.parquet) or cut (DIR/cut.parquet, lshsql cut).")
]

# --- extraction (extract, and run with a crawl; ingest shares the text options) ----------------------
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
Templates = Annotated[
    str,
    typer.Option(
        help="Site templates (text blocks repeated on a share of a host's pages): 'filter' drops their "
        "words from anchor windows; 'cut' also stops windows where a template block begins and drops the "
        "fragments of template links but those always pointing to one URL; 'keep' leaves the paper's windows."
    ),
]
TemplateShare = Annotated[
    float, typer.Option(help="A text block on at least this share of its host's pages (and 3) is template.")
]
WindowBlocks = Annotated[
    bool,
    typer.Option(
        "--window-blocks/--no-window-blocks",
        help="Stop anchor windows at the edges of the link's block (list item, table cell, paragraph).",
    ),
]

# --- stage options: one per Params field -------------------------------------------------------------
GivenParams = dict[str, Any] | None  # the placeholder parameter `given` that param_options replaces


def _param_option(name: str) -> inspect.Parameter:
    """The option of Params field `name`: its type (or None: not given, the last run's value is kept), its
    help with the field's default in place of {default}, and its flags (default --field-name)."""
    field = next(f for f in fields(Params) if f.name == name)
    kind = typing.get_type_hints(Params)[name]
    kind = next((t for t in typing.get_args(kind) if t is not type(None)), kind)  # int | None -> int
    shown = format(field.default, "g") if isinstance(field.default, float) else field.default
    option = typer.Option(*field.metadata["flags"], help=field.metadata["help"].format(default=shown))
    return inspect.Parameter(
        name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=Annotated[kind | None, option]
    )


def param_options(*names: str):
    """Decorate a command: its parameter `given` (a GivenParams placeholder) becomes one option per Params
    field (or the fields `names`), in Params order with the fields marked first=True before the others;
    the command is called with `given` = {field name: value or None}.

    Example: @param_options() def stage(name: str, work: Work, given: GivenParams = None, ...)
    """

    def decorate(command):
        chosen = [f for f in fields(Params) if not names or f.name in names]
        chosen.sort(key=lambda f: not f.metadata["first"])  # stable: Params order within each group
        added = [_param_option(f.name) for f in chosen]
        own = list(inspect.signature(command, eval_str=True).parameters.values())
        at = next(i for i, p in enumerate(own) if p.name == "given")
        signature = inspect.Signature([*own[:at], *added, *own[at + 1 :]])

        @functools.wraps(command)
        def with_params(**arguments):
            given = {p.name: arguments.pop(p.name) for p in added}
            return command(given=given, **arguments)

        with_params.__signature__ = signature
        with_params.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        return with_params

    return decorate


# --- options as the API takes them ---------------------------------------------------------------------


def resources(work: Path, threads: int | None, memory_limit: str | None, max_spill: str | None):
    """The DuckDB Resources of --threads, --memory-limit and --max-spill, spilling to WORK/tmp/duckdb."""
    from lshsql.engines.duckdb import Resources, spill_directory

    kwargs = {"temp_directory": spill_directory(work), "max_spill": max_spill}
    if threads is not None:
        kwargs["threads"] = threads
    if memory_limit is not None:
        kwargs["memory_limit"] = memory_limit
    return Resources(**kwargs)


def say(quiet: bool):
    """The log of a command: lines on standard error, or None with --quiet."""
    return None if quiet else (lambda line: typer.echo(line, err=True))


def stopword_file(path: Path | None) -> frozenset[str]:
    """The words of --extra-stopwords FILE (none without it); a bad file is a one-line InputError."""
    from lshsql.errors import InputError
    from lshsql.sources import text

    if path is None:
        return frozenset()
    try:
        return text.read_stopword_file(path)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: {e}") from None


def engine_options(engine: str = "duckdb", spark_master: str | None = None, spark_conf=None) -> dict:
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


def from_cut(source: str) -> bool:
    """--from: True for cut (DIR/cut.parquet), False for clusters; ParamError for anything else."""
    from lshsql.errors import ParamError

    if source not in ("clusters", "cut"):
        raise ParamError(f"--from must be clusters or cut, got '{source}'")
    return source == "cut"
