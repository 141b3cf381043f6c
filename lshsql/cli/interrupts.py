"""Ctrl-C while DuckDB runs a query. DuckDB 2.0 does not look at signals while a query runs, and Python runs
its SIGINT handler only when the main thread is back in Python, so a long query would run on to its end.
The C-level handler writes each signal to a wakeup pipe at once; a thread reading it interrupts every open
connection (engines/duckdb.interrupt_all), and the query fails, after which KeyboardInterrupt comes as
usual. `pressed` tells the error boundary that a failure was the user's Ctrl-C."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

pressed = threading.Event()
_watching = False


def watch() -> None:
    """From now on, SIGINT also interrupts the DuckDB queries of this process. Once a process, from the main
    thread only (signals are set there), and where no one else holds the wakeup pipe (an asyncio loop)."""
    global _watching
    if _watching or threading.current_thread() is not threading.main_thread():
        return
    read, write = os.pipe()
    os.set_blocking(write, False)  # the signal handler must never wait
    previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    if previous != -1:  # someone else's: leave it to them
        signal.set_wakeup_fd(previous)
        os.close(read)
        os.close(write)
        return
    _watching = True
    threading.Thread(target=_relay, args=(read,), name="lshsql-interrupts", daemon=True).start()


def _relay(read: int) -> None:
    while data := os.read(read, 64):
        if signal.SIGINT in data:
            pressed.set()
            engine = sys.modules.get("lshsql.engines.duckdb")  # none imported: no connection to stop
            if engine is not None:
                with contextlib.suppress(Exception):
                    engine.interrupt_all()
