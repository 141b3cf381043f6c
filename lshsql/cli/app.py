"""The typer app, its root options (--version) and the one error boundary, main()."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from lshsql.cli import interrupts
from lshsql.cli.output import printable
from lshsql.errors import InputError, Interrupted, LshsqlError, one_line

INTERRUPTED = "interrupted"


class _Commands(TyperGroup):
    """The command group, turning an EOFError (a reader at a cut file) into a one-line InputError: click
    would otherwise print a bare 'Aborted!'. Ctrl-C becomes Interrupted: typer would exit 130 without a
    word, and a query it stops fails with DuckDB's error (cli/interrupts.py)."""

    def invoke(self, ctx: typer.Context) -> object:
        try:
            return super().invoke(ctx)
        except EOFError as e:
            raise InputError(f"unexpected end of input (a cut file?): {e}") from e
        except (KeyboardInterrupt, Exception) as e:
            # after Ctrl-C, whatever failed failed because of it: a query DuckDB stopped (its error, or
            # that error as a stage's), or the KeyboardInterrupt itself
            if isinstance(e, KeyboardInterrupt) or interrupts.pressed.is_set():
                raise Interrupted(INTERRUPTED) from e
            raise


app = typer.Typer(
    cls=_Commands,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    add_completion=False,
    help="Find related and near-duplicate pages in a web crawl and group them into clusters.",
)


def main() -> None:
    """Entry point: run the app; domain errors become one line `lshsql: error: ...` and an exit code."""
    from lshsql.imports import only_lshsql_here

    only_lshsql_here()
    interrupts.watch()
    try:
        code = app(standalone_mode=False)  # click's own errors come here too, to be said in one line
    except typer.TyperException as e:  # typer's click: a wrong command, option or value; a missing file
        ctx = getattr(e, "ctx", None)
        where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        typer.echo(f"lshsql: error: {one_line(printable(e.format_message(), lines=False))}{where}", err=True)
        sys.exit(e.exit_code)
    except typer.Abort:
        typer.echo("lshsql: error: aborted", err=True)
        sys.exit(1)
    except LshsqlError as e:
        if os.environ.get("LSHSQL_DEBUG"):
            raise
        typer.echo(f"lshsql: error: {one_line(printable(str(e), lines=False))}", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:  # outside a command: while the arguments are read
        typer.echo(f"lshsql: error: {INTERRUPTED}", err=True)
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
    if code == 130:  # typer's Exit(130) for a Ctrl-C outside a command's own code (no command exits so)
        typer.echo(f"lshsql: error: {INTERRUPTED}", err=True)
    sys.exit(code if isinstance(code, int) else 0)  # typer.Exit's code; a command returns nothing


def _version(value: bool) -> None:
    if value:
        from lshsql import __version__

        typer.echo(f"lshsql {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Find related and near-duplicate pages in a web crawl and group them into clusters."""
    if ctx.invoked_subcommand is None:  # `lshsql` alone: the commands, as `lshsql --help` lists them
        typer.echo(ctx.get_help(), err=True)
        raise typer.Exit(2)
