"""Ctrl-C as a terminal sends it (SIGINT to the command's process group): the command stops at once, in the
middle of a DuckDB query too, with one line and exit 130, and a run stopped in a stage goes on when the same
command is given again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from lshsql.cli import interrupts, main
from lshsql.errors import StageError
from lshsql.tools import explore
from tests.conftest import EXAMPLE_CRAWL

# about 10^10 rows to join and count: hours on two cores, so only an interrupt ends it in time
ENDLESS = "select count(*) from range(100000) a, range(100000) b where (a.range * b.range) % 7 = 3"


def _start(args: list[str]) -> subprocess.Popen:
    """`lshsql ARGS` in a session of its own, with SIGINT's default action (a test runner may ignore it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "lshsql", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for(condition, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the command never got there"
        time.sleep(0.05)


def _ctrl_c(process: subprocess.Popen) -> tuple[int, str]:
    os.killpg(process.pid, signal.SIGINT)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("Ctrl-C did not stop the command within a minute")
    return process.returncode, err


def test_ctrl_c_stops_a_long_query(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    process = _start(["query", ENDLESS, "--work", str(work), "--threads", "2"])
    spill = work / "tmp" / "duckdb" / str(process.pid)  # made as the command opens DuckDB
    _wait_for(spill.exists, process)
    time.sleep(0.5)  # into the query
    code, err = _ctrl_c(process)
    assert (code, err) == (130, "lshsql: error: interrupted\n")


def test_a_run_stopped_by_ctrl_c_goes_on_when_given_again(tmp_path, example_run):
    args = ["run", str(EXAMPLE_CRAWL), "--threads", "2", "--quiet"]
    process = _start([*args, "--work", str(tmp_path / "w")])
    manifest = tmp_path / "w" / "manifest.json"
    _wait_for(lambda: manifest.exists() and '"urls"' in manifest.read_text(), process)
    code, err = _ctrl_c(process)
    if code == 0:
        pytest.skip("the run ended before Ctrl-C reached it")
    assert (code, err) == (130, "lshsql: error: interrupted\n")
    again = subprocess.run(
        [sys.executable, "-m", "lshsql", *args, "--work", str(tmp_path / "w")],
        capture_output=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    for name in ("pairs.parquet", "clusters.parquet"):  # a fresh run's bytes, whatever its threads
        assert (tmp_path / "w" / name).read_bytes() == (example_run / name).read_bytes()


@pytest.mark.parametrize(
    ("error", "pressed", "expected"),
    [
        (KeyboardInterrupt(), False, (130, "lshsql: error: interrupted")),
        # a query DuckDB stopped fails as the stage's error: after Ctrl-C, it is the interrupt
        (
            StageError("sql/20_bags.sql: statement 0: INTERRUPT Error: Interrupted!"),
            True,
            (130, "lshsql: error: interrupted"),
        ),
        (StageError("a real failure"), False, (3, "lshsql: error: a real failure")),
    ],
)
def test_what_fails_after_ctrl_c_is_reported_as_interrupted(monkeypatch, capsys, error, pressed, expected):
    def info(work):
        raise error

    monkeypatch.setattr(explore, "info", info)
    monkeypatch.setattr(interrupts, "watch", lambda: None)
    event = threading.Event()
    if pressed:
        event.set()
    monkeypatch.setattr(interrupts, "pressed", event)
    monkeypatch.setattr(sys, "argv", ["lshsql", "info", "--work", "anywhere"])
    with pytest.raises(SystemExit) as exit:
        main()
    assert (exit.value.code, capsys.readouterr().err.strip()) == expected


def test_a_connection_closed_meanwhile_does_not_keep_the_others_running(tmp_path):
    # the relay lists the open connections, then interrupts each: one closed in between must not
    # leave the rest running
    from lshsql.engines import duckdb as db

    resources = db.Resources(memory_limit="1GB", threads=1)
    with db.connect(resources) as first, db.connect(resources) as second:
        first.close()
        failed = []

        def endless() -> None:
            try:
                second.execute(ENDLESS).fetchall()
            except db.duckdb.Error as e:
                failed.append(e)

        worker = threading.Thread(target=endless)
        worker.start()
        time.sleep(0.5)
        db.interrupt_all()
        worker.join(60)
        assert not worker.is_alive() and isinstance(failed[0], db.duckdb.InterruptException)
