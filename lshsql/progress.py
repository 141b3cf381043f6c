"""Progress of long steps for whoever shows it: the runner reports each stage's start and end, batched
stages their batches (buckets, pairs blocks) and rounds (CENTER, components). The CLI installs a display
(lshsql/cli/progress.py) around a command; without one, as from the Python API, reporting costs nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class Display(Protocol):
    """What a progress display is told."""

    def stage_started(self, name: str) -> None: ...
    def stage_step(self, what: str, done: int, total: int | None) -> None: ...
    def stage_finished(self, name: str, seconds: float, skipped: bool) -> None: ...


_display: ContextVar[Display | None] = ContextVar("lshsql_progress", default=None)


@contextmanager
def showing(display: Display | None) -> Iterator[None]:
    """Report to `display` (None: to nobody) within the block."""
    token = _display.set(display)
    try:
        yield
    finally:
        _display.reset(token)


def _report(call: Callable[[Display], None]) -> None:
    if (display := _display.get()) is not None:
        call(display)


def stage_started(name: str) -> None:
    _report(lambda d: d.stage_started(name))


def step(what: str, done: int, total: int | None = None) -> None:
    """The running stage finished `done` of its `total` batches (or rounds, total None: not known ahead)."""
    _report(lambda d: d.stage_step(what, done, total))


def stage_finished(name: str, seconds: float, skipped: bool = False) -> None:
    _report(lambda d: d.stage_finished(name, seconds, skipped))
