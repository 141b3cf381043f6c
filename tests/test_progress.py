"""What commands show while they work, as a user sees it: in a pseudo-terminal (a live display with bytes
of the input read, records per second and time left, each stage's time), through a pipe (the plain lines
scripts read, no escape codes), with --quiet (nothing); and the stage events the pipeline reports."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lshsql import progress
from lshsql.params import Params
from lshsql.pipeline import STAGE_NAMES, run
from tests.conftest import REPO, write_warc

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def in_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """`lshsql ARGS` with its standard streams on a pseudo-terminal 120 columns wide: exit code, output."""
    main, sub = pty.openpty()
    fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    command = [sys.executable, "-m", "lshsql", *args]
    process = subprocess.Popen(command, stdin=sub, stdout=sub, stderr=sub, cwd=cwd, env=env)
    os.close(sub)
    chunks = []
    while True:
        try:
            data = os.read(main, 1 << 16)
        except OSError:  # EIO: the command closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main)
    return process.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def crawl(tmp_path_factory, small_site) -> Path:
    return write_warc(tmp_path_factory.mktemp("progress") / "site.warc.gz", small_site * 3)


@pytest.fixture(scope="module")
def small_site():
    from tests.conftest import html_response

    words = ["apple banana cherry", "delta echo foxtrot", "golf hotel india"]
    return [
        html_response(
            f"https://site.example/{i}.html",
            f"<html><head><title>page {i}</title></head><body><p>{words[i]} "
            f'<a href="https://site.example/{(i + 1) % 3}.html">{words[(i + 1) % 3]}</a></p></body></html>',
        )
        for i in range(3)
    ]


def test_a_terminal_gets_a_live_display_with_bytes_rates_and_stage_times(crawl, tmp_path):
    code, output = in_terminal(["run", str(crawl), "--work", str(tmp_path / "w"), "--threads", "1"], tmp_path)
    assert code == 0, output
    assert "\x1b[" in output  # drawn and redrawn in place
    text = ANSI.sub("", output).replace("\r", "\n")
    assert re.search(r"reading .*\d+% of [\d.]+ MB, \d+ s left; \d+ records, [\d,]+/s", text)
    for name in STAGE_NAMES:
        assert re.search(rf"\b{name}\s+\S*\s*\d+:\d\d:\d\d\s+\d+\.\d\d s", text), name
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert re.fullmatch(r"total time \(extraction and stages\): \d+\.\d\d s", lines[-1])
    assert any(re.fullmatch(r"time: \d+\.\d\d s", line) for line in lines)


@pytest.mark.slow
def test_a_pipe_gets_the_plain_lines_and_no_escape_codes(crawl, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [
        sys.executable,
        "-m",
        "lshsql",
        "run",
        str(crawl),
        "--work",
        str(tmp_path / "w"),
        "--threads",
        "1",
    ]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stderr + result.stdout
    assert [line for line in result.stderr.splitlines() if line.endswith(" ...")] == [
        f"  {name} ..." for name in STAGE_NAMES
    ]
    assert result.stdout.splitlines()[0].split() == ["stage", "rows", "seconds"]
    assert result.stdout.splitlines()[-1].startswith("total time (extraction and stages): ")


@pytest.mark.slow
def test_quiet_shows_nothing_in_a_terminal_either(crawl, tmp_path):
    args = ["run", str(crawl), "--work", str(tmp_path / "w"), "--threads", "1", "--quiet"]
    code, output = in_terminal(args, tmp_path)
    assert code == 0, output
    text = ANSI.sub("", output)
    assert "reading" not in text and " ..." not in text
    assert "stage" in text and "total time" in text  # the summary, on standard output


class Recorder:
    def __init__(self):
        self.events: list[tuple] = []

    def stage_started(self, name):
        self.events.append(("started", name))

    def stage_step(self, what, done, total):
        self.events.append(("step", what, done, total))

    def stage_finished(self, name, seconds, skipped):
        self.events.append(("finished", name, skipped))


def test_the_pipeline_reports_each_stage_and_the_center_rounds(tmp_path):
    bags = tmp_path / "bags.parquet"
    terms = [f"t{i}" for i in range(30)]
    rows = [(f"u{d}", t) for d in range(6) for t in terms[d % 2 :: 1][:20]]
    pq.write_table(pa.table({"url": [u for u, _ in rows], "term": [t for _, t in rows]}), bags)
    recorder = Recorder()
    with progress.showing(recorder):
        run(tmp_path / "w", Params(threshold=0.5), bags=bags)
    started = [e[1] for e in recorder.events if e[0] == "started"]
    finished = [e[1] for e in recorder.events if e[0] == "finished"]
    assert started == finished == list(STAGE_NAMES)
    rounds = [e for e in recorder.events if e[0] == "step"]
    assert rounds and rounds[0] == ("step", "round", 1, None)
    assert recorder.events.index(rounds[0]) > recorder.events.index(("started", "clusters"))
    with progress.showing(recorder):  # again: every stage up to date
        recorder.events.clear()
        run(tmp_path / "w", Params(threshold=0.5), bags=bags)
    assert recorder.events == [("finished", name, True) for name in STAGE_NAMES]


def test_batches_show_as_done_of_total_and_reading_draws_without_a_thread():
    import threading

    from rich.console import Console

    from lshsql.cli import progress as shown

    out = io.StringIO()
    display = shown._Display(Console(file=out, force_terminal=True, width=120))
    before = threading.active_count()
    show = display.reading("MB of HTML")
    show(10, 2_000_000, 500_000, 1_000_000)
    assert threading.active_count() == before  # extraction forks its workers while it reads
    assert re.search(r"reading .*50% of 1\.0 MB, \d+ s left; 10 records", ANSI.sub("", out.getvalue()))
    with progress.showing(display):
        progress.stage_started("buckets")
        progress.step("batch", 2, 3)
        display.bar.refresh()
        assert re.search(r"buckets .*batch 2 of 3", ANSI.sub("", out.getvalue()))
        progress.stage_finished("buckets", 1.5)
        display.bar.refresh()
    display.close()
    assert re.search(r"buckets .*1\.50 s", ANSI.sub("", out.getvalue()))


@pytest.mark.parametrize("width", [60, 80])
def test_a_narrow_terminal_cuts_the_detail_and_keeps_the_name_bar_and_clock(width):
    from rich.console import Console

    from lshsql.cli import progress as shown

    out = io.StringIO()
    display = shown._Display(Console(file=out, force_terminal=True, width=width))
    show = display.reading("MB of HTML")
    show(123_456, 58_900_000, 50_000_000, 145_300_000)
    display.close()
    drawn = [line for line in re.split(r"[\r\n]", ANSI.sub("", out.getvalue())) if "of 145.3 MB" in line]
    assert drawn
    for line in drawn:
        assert len(line) <= width
        assert re.match(r"^. reading {8}.{12} \d:\d\d:\d\d 34% of 145\.3 MB, .*…$", line), line
