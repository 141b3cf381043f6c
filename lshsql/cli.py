"""The `lshsql` command: a thin typer layer over the Python API, with one error boundary."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from lshsql.errors import LshsqlError

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,
    help="Find related and near-duplicate pages in a web crawl and group them into clusters.",
)

Work = Annotated[Path, typer.Option("--work", "-w", help="Work folder holding every stage's output.")]
Threads = Annotated[
    int | None, typer.Option("--threads", help="Worker processes and DuckDB threads [default: all cores].")
]
MemoryLimit = Annotated[
    str | None, typer.Option("--memory-limit", help="DuckDB memory limit, e.g. 4GB [default: half the RAM].")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")]


def main() -> None:
    """Entry point: run the app; domain errors become one line `lshsql: error: ...` and an exit code."""
    try:
        app(standalone_mode=True)
    except LshsqlError as e:
        if os.environ.get("LSHSQL_DEBUG"):
            raise
        typer.echo(f"lshsql: error: {e}", err=True)
        sys.exit(e.exit_code)
    except Exception as e:  # noqa: BLE001 - the one boundary: no traceback reaches a user
        if os.environ.get("LSHSQL_DEBUG") or type(e).__module__.split(".")[0] not in ("duckdb", "_duckdb"):
            raise
        typer.echo(f"lshsql: error: DuckDB: {' '.join(str(e).split())}", err=True)
        sys.exit(3)
    except KeyboardInterrupt:
        typer.echo("lshsql: error: interrupted", err=True)
        sys.exit(130)


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


def _resources(work: Path, threads: int | None, memory_limit: str | None):
    from lshsql.db import Resources

    kwargs = {"temp_directory": str(work / "tmp" / "duckdb")}
    if threads is not None:
        kwargs["threads"] = threads
    if memory_limit is not None:
        kwargs["memory_limit"] = memory_limit
    return Resources(**kwargs)


def _progress(quiet: bool):
    if quiet:
        return None
    last = [0.0]

    def show(records: int, n_bytes: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 2.0:
            last[0] = now
            typer.echo(f"  ... {records} records read, {n_bytes / 1e6:.1f} MB of HTML", err=True)

    return show


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
    window: Annotated[int, typer.Option(help="Words taken before and after each link.")] = 8,
    language: Annotated[
        str, typer.Option(help="Stopwords and stemmer: en (Porter) or ru (Snowball).")
    ] = "en",
    stem: Annotated[bool, typer.Option("--stem/--no-stem", help="Stem words.")] = True,
    stopwords: Annotated[bool, typer.Option("--stopwords/--no-stopwords", help="Drop stopwords.")] = True,
    extra_stopwords: Annotated[
        Path | None, typer.Option(help="File of extra stopwords, one per line ('#' comments).")
    ] = None,
    content: Annotated[bool, typer.Option(help="Also keep each page's own words (kind 'content').")] = False,
    buckets: Annotated[int, typer.Option(help="M on-disk buckets of fragments, by hash of the URL.")] = 16,
    base_url: Annotated[
        str | None,
        typer.Option(help="For a folder of .html files without manifest.jsonl: URL of the folder."),
    ] = None,
    sort_query: Annotated[bool, typer.Option(help="Sort query parameters when canonicalizing URLs.")] = False,
    strip_tracking: Annotated[
        bool, typer.Option(help="Remove tracking parameters (utm_*, gclid, fbclid, ...) from URLs.")
    ] = False,
    max_page_mb: Annotated[
        float, typer.Option(help="Skip pages larger than this (reason too_large).")
    ] = 32.0,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    quiet: Quiet = False,
) -> None:
    """Extract anchor-window fragments, links and pages from a crawl into the work folder.

    Example: lshsql extract examples/crawl.warc.gz --work work
    """
    from lshsql import text
    from lshsql.extract import ExtractParams
    from lshsql.extract import extract as run_extract

    extra = frozenset()
    if extra_stopwords is not None:
        try:
            extra = text.read_stopword_file(extra_stopwords)
        except (OSError, ValueError) as e:
            raise _input_error(f"{extra_stopwords}: {e}") from None
    params = ExtractParams(
        window=window,
        language=language,
        stem=stem,
        stopwords=stopwords,
        extra_stopwords=extra,
        content=content,
        buckets=buckets,
        sort_query=sort_query,
        strip_tracking=strip_tracking,
        max_page_bytes=int(max_page_mb * 2**20),
        base_url=base_url,
    )
    summary = run_extract(crawl, work, params, _resources(work, threads, memory_limit), _progress(quiet))
    for line in summary.lines():
        typer.echo(line)


def _input_error(message: str) -> LshsqlError:
    from lshsql.errors import InputError

    return InputError(message)


if __name__ == "__main__":
    main()
