"""What a command shows while it works. On a terminal: a live display (rich) with the bytes read of the
input, records per second and time left, and each stage's elapsed time and batches. Elsewhere (a pipe, a
log file) the plain lines scripts already read; nothing with --quiet."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import typer


@dataclass
class Shown:
    """The callbacks a command passes to the API: `log` for lines, `reading(what)` for a reader's progress;
    `pause()` clears the live display before the command prints lines of its own in between."""

    log: Callable[[str], None] | None
    reading: Callable[[str], Callable[..., None] | None]
    pause: Callable[[], None] = lambda: None


@contextmanager
def shown(quiet: bool) -> Iterator[Shown]:
    """The progress display of a command, for the duration of the block."""
    if quiet:
        yield Shown(None, lambda what: None)
        return
    if not sys.stderr.isatty():
        yield Shown(lambda line: typer.echo(line, err=True), lines_every_2_seconds)
        return
    from rich.console import Console

    from lshsql import progress

    display = _Display(Console(stderr=True))
    with progress.showing(display):
        try:
            yield Shown(None, display.reading, display.close)
        finally:
            display.close()


def lines_every_2_seconds(what: str) -> Callable[..., None]:
    """A reader's progress as a line of records and bytes read every 2 seconds (standard error)."""
    last = [0.0]

    def show(records: int, n_bytes: int, *extent: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 2.0:
            last[0] = now
            typer.echo(f"  ... {records} records read, {n_bytes / 1e6:.1f} {what}", err=True)

    return show


class _Display:
    """The live display: a reader's bar first, then a line per stage. The reader's is drawn from its own
    callbacks, with no refresh thread, since extraction forks its worker processes while it reads (a fork
    must not copy a lock a drawing thread holds); the stages' lines redraw themselves, so a long stage's
    clock moves."""

    def __init__(self, console):
        self.console, self.bar, self.task = console, None, None

    def _bar(self, refreshing: bool):
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.table import Column

        if self.bar is not None and self.bar.live.auto_refresh == refreshing:
            return self.bar
        self.close()
        fixed = {"no_wrap": True, "overflow": "crop"}
        self.bar = Progress(
            SpinnerColumn(finished_text=" ", table_column=Column(width=1, **fixed)),
            TextColumn("{task.description:<14}", table_column=Column(width=14, **fixed)),
            BarColumn(bar_width=12, table_column=Column(width=12, **fixed)),
            TimeElapsedColumn(table_column=Column(width=7, **fixed)),
            # in a narrow terminal the detail is cut at its end, never the name, bar or clock before it
            TextColumn(
                "{task.fields[detail]}", table_column=Column(ratio=1, no_wrap=True, overflow="ellipsis")
            ),
            console=self.console,
            auto_refresh=refreshing,
            expand=True,  # the detail column takes the width left, so that it alone is cut
            redirect_stdout=False,  # the worker processes forked while it shows inherit no proxy of it
            redirect_stderr=False,
        )
        self.bar.start()
        return self.bar

    def close(self) -> None:
        if self.bar is not None:
            _finish_open_tasks(self.bar)
            self.bar.stop()
            self.bar = None

    def reading(self, what: str) -> Callable[..., None]:
        """The progress callback of a reader (records, bytes read[, input bytes read, input bytes])."""
        bar = self._bar(refreshing=False)
        task, started = bar.add_task("reading", total=None, detail=""), time.monotonic()

        def show(records: int, n_bytes: int, position: int | None = None, total: int | None = None) -> None:
            elapsed = max(time.monotonic() - started, 1e-9)
            detail = f"{records:,} records, {records / elapsed:,.0f}/s, {n_bytes / 1e6:,.1f} {what}"
            if total and position:
                left = elapsed * (total - position) / position
                detail = f"{position / total:.0%} of {total / 1e6:,.1f} MB, {left:,.0f} s left; " + detail
            bar.update(task, completed=position or 0, total=total or None, detail=detail)
            bar.refresh()

        return show

    def stage_started(self, name: str) -> None:
        bar = self._bar(refreshing=True)
        _finish_open_tasks(bar)
        self.task = bar.add_task(name, total=None, detail="")

    def stage_step(self, what: str, done: int, total: int | None) -> None:
        if self.task is not None and self.bar is not None:
            detail = f"{what} {done:,} of {total:,}" if total else f"{what} {done:,}"
            self.bar.update(self.task, completed=done, total=total, detail=detail)

    def stage_finished(self, name: str, seconds: float, skipped: bool) -> None:
        bar = self._bar(refreshing=True)
        if skipped:
            bar.add_task(name, total=1, completed=1, detail="up to date")
        elif self.task is not None:
            bar.update(self.task, total=1, completed=1, detail=f"{seconds:.2f} s")
            bar.stop_task(self.task)
        self.task = None


def _finish_open_tasks(bar) -> None:
    """Stop the clocks and spinners of tasks still open (a reader whose last record ended before its
    file's last byte), so that only running work moves."""
    for task in bar.tasks:
        if not task.finished:
            bar.update(task.id, total=task.total or 1, completed=task.total or 1)
            bar.stop_task(task.id)
