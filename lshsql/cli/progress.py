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
    """The callbacks a command passes to the API: `log` for lines, `reading(what)` for a reader's progress."""

    log: Callable[[str], None] | None
    reading: Callable[[str], Callable[..., None] | None]


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
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from lshsql import progress

    bar = Progress(
        SpinnerColumn(finished_text=" "),
        TextColumn("{task.description:<14}"),
        BarColumn(bar_width=20),
        TimeElapsedColumn(),
        TextColumn("{task.fields[detail]}"),
        console=Console(stderr=True),
    )
    with bar, progress.showing(_Stages(bar)):
        try:
            yield Shown(None, lambda what: _Reading(bar, what))
        finally:
            _finish_open_tasks(bar)


def lines_every_2_seconds(what: str) -> Callable[..., None]:
    """A reader's progress as a line of records and bytes read every 2 seconds (standard error)."""
    last = [0.0]

    def show(records: int, n_bytes: int, *extent: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 2.0:
            last[0] = now
            typer.echo(f"  ... {records} records read, {n_bytes / 1e6:.1f} {what}", err=True)

    return show


class _Reading:
    """A reader's progress on the live display: input bytes read of the total when known, records/s."""

    def __init__(self, bar, what: str):
        self.bar, self.what, self.started = bar, what, time.monotonic()
        self.task = bar.add_task("reading", total=None, detail="")

    def __call__(self, records: int, n_bytes: int, position: int | None = None, total: int | None = None):
        elapsed = max(time.monotonic() - self.started, 1e-9)
        detail = f"{records:,} records, {records / elapsed:,.0f}/s, {n_bytes / 1e6:,.1f} {self.what}"
        if total and position:
            left = elapsed * (total - position) / position
            detail = f"{position / total:.0%} of {total / 1e6:,.1f} MB, {left:,.0f} s left; " + detail
        self.bar.update(self.task, completed=position or 0, total=total or None, detail=detail)


class _Stages:
    """lshsql.progress's stage events on the live display: a line per stage, its batches or rounds while it
    runs, its seconds when done."""

    def __init__(self, bar):
        self.bar, self.task = bar, None

    def stage_started(self, name: str) -> None:
        _finish_open_tasks(self.bar)  # the reading before the stages, if any
        self.task = self.bar.add_task(name, total=None, detail="")

    def stage_step(self, what: str, done: int, total: int | None) -> None:
        if self.task is not None:
            detail = f"{what} {done:,} of {total:,}" if total else f"{what} {done:,}"
            self.bar.update(self.task, completed=done, total=total, detail=detail)

    def stage_finished(self, name: str, seconds: float, skipped: bool) -> None:
        if skipped:
            self.bar.add_task(name, total=1, completed=1, detail="up to date")
            return
        if self.task is not None:
            self.bar.update(self.task, total=1, completed=1, detail=f"{seconds:.2f} s")
            self.bar.stop_task(self.task)
            self.task = None


def _finish_open_tasks(bar) -> None:
    """Stop the clocks and spinners of tasks still open (a reader whose last record ended before its
    file's last byte), so that only running work moves."""
    for task in bar.tasks:
        if not task.finished:
            bar.update(task.id, total=task.total or 1, completed=task.total or 1)
            bar.stop_task(task.id)
