"""The work folder under interruptions, a second writer, damage and leftovers: complete or absent outputs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from lshsql import manifest, sqlfiles, workdir
from lshsql.errors import InputError
from tests.conftest import EXAMPLE_CRAWL, copy_work, html_response, write_jsonl, write_table, write_warc

DOCS = Path(__file__).resolve().parent.parent / "fixtures" / "documents" / "docs.jsonl"


def cli_process(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real entry point in a subprocess, as a user runs it: for the tests of processes (a second
    writer); the others take `cli`, lshsql_command (in this process, and in its own in `make test-all`)."""
    return subprocess.run(
        [sys.executable, "-m", "lshsql", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def cli(lshsql_command):
    return lshsql_command


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lshsql: error: "), result.stderr
    return lines[0]


def digests(work: Path, pattern: str) -> dict[str, str]:
    return {
        p.relative_to(work).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(work.glob(pattern))
        if p.is_file()
    }


@pytest.fixture
def work(example_run: Path, tmp_path: Path) -> Path:
    """A copy of the example crawl's run (conftest.example_run) for each test."""
    return copy_work(example_run, tmp_path / "work")


def example_sample(path: Path, every: int = 6) -> Path:
    """Every 6th record of the example crawl (its warcinfo and 20 pages of its 4 sites), each record's gzip
    member copied as it is."""
    from warcio.archiveiterator import ArchiveIterator

    data = EXAMPLE_CRAWL.read_bytes()
    with open(EXAMPLE_CRAWL, "rb") as f:
        records = ArchiveIterator(f)
        offsets = [records.get_record_offset() for _ in records]
    members = [data[a:b] for a, b in zip(offsets, [*offsets[1:], len(data)], strict=True)]
    path.write_bytes(b"".join(members[::every]))
    return path


@pytest.fixture(
    scope="module",
    params=[pytest.param("sample"), pytest.param("example", marks=pytest.mark.slow)],
)
def crawl_run(request, tmp_path_factory) -> tuple[Path, Path]:
    """A crawl and its run, for the tests that extract it again: a sample of the example crawl in the
    everyday loop, the whole example crawl (conftest.example_run) in `make test-all` as well."""
    if request.param == "example":
        return EXAMPLE_CRAWL, request.getfixturevalue("example_run")
    from lshsql.engines import duckdb as db
    from lshsql.params import Params
    from lshsql.pipeline import run
    from lshsql.sources.extract import ExtractParams, extract

    root = tmp_path_factory.mktemp("sample")
    crawl, work = example_sample(root / "sample.warc.gz"), root / "work"
    resources = db.Resources(memory_limit="1GB", threads=1, temp_directory=db.spill_directory(work))
    extract([str(crawl)], work, ExtractParams(), resources)
    run(work, Params(), resources=resources)
    return crawl, work


@pytest.fixture
def rerun(crawl_run: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """(crawl, a copy of its run) for each test that extracts the crawl again."""
    crawl, run = crawl_run
    return crawl, copy_work(run, tmp_path / "work")


# --- 1. an extraction is switched in whole, and checked on every read ----------------------------------


def test_an_interrupted_reextraction_leaves_the_old_one_whole(rerun, monkeypatch):
    """Killed while writing fragments (here: an error after 3 of 16 buckets), a re-extraction changes
    nothing: the old tables and manifest entry stay, whole."""
    from lshsql.sources.extract import ExtractParams, extract

    crawl, work = rerun
    before = digests(work, "**/*.parquet")
    entry = manifest.read(work)["stages"]["extract"]
    write = sqlfiles.materialize_partitioned

    def cut_short(con, sql, params, out_dir, column, n):
        write(con, sql, params, out_dir, column, 3)
        raise KeyboardInterrupt

    monkeypatch.setattr(sqlfiles, "materialize_partitioned", cut_short)
    with pytest.raises(KeyboardInterrupt):
        extract([str(crawl)], work, ExtractParams(), workdir_resources(work))
    assert digests(work, "**/*.parquet") == before
    assert manifest.read(work)["stages"]["extract"] == entry
    assert not (work / "tmp" / "extraction").exists()


def workdir_resources(work: Path):
    from lshsql.engines import duckdb as db

    return db.Resources(memory_limit="1GB", threads=2, temp_directory=db.spill_directory(work))


def test_a_crash_while_switching_is_refused_then_mended(rerun, monkeypatch, cli):
    """A crash between moving the first new table in and recording the entry: readers refuse the folder
    (one line), and giving the crawl again extracts it again, to the same tables."""
    from lshsql.sources.extract import ExtractParams, extract

    crawl, work = rerun
    before = digests(work, "**/*.parquet")
    replace = os.replace
    moves = []

    def crash_on_second(src, dst):
        moves.append(dst)
        if len(moves) == 2:
            raise KeyboardInterrupt
        replace(src, dst)

    monkeypatch.setattr(workdir.os, "replace", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        extract([str(crawl)], work, ExtractParams(), workdir_resources(work))
    monkeypatch.undo()
    line = one_line_error(cli("run", "--work", str(work), "--no-aliases"))
    assert "extraction is incomplete (the last extraction was interrupted)" in line
    result = cli("run", str(crawl), "--work", str(work), "--quiet")
    assert result.returncode == 0, result.stderr
    after = digests(work, "**/*.parquet")
    assert {k: v for k, v in after.items() if k in before} == before


def test_a_missing_bucket_is_noticed(rerun, cli):
    """`rm -r fragments/bucket=3` once went unnoticed, and a later run clustered a part of the crawl."""
    crawl, work = rerun
    before = digests(work, "fragments/**/*.parquet")
    shutil.rmtree(work / "fragments" / "bucket=3")
    line = one_line_error(cli("run", "--work", str(work), "--no-aliases"))
    assert "fragments/bucket=3/data.parquet is missing" in line
    line = one_line_error(cli("query", "select count(*) from fragments", "--work", str(work)))
    assert "fragments/bucket=3/data.parquet is missing" in line
    result = cli("run", str(crawl), "--work", str(work), "--quiet")
    assert result.returncode == 0, result.stderr
    assert digests(work, "fragments/**/*.parquet") == before


def test_a_cut_fragment_file_is_noticed(work, cli):
    path = work / "fragments" / "bucket=0" / "data.parquet"
    path.write_bytes(path.read_bytes()[:-100])
    line = one_line_error(cli("run", "--work", str(work), "--no-aliases"))
    assert "fragments/bucket=0/data.parquet has" in line


def test_an_ingest_with_a_missing_bucket_is_ingested_again(tmp_path, cli):
    work = tmp_path / "work"
    assert cli("ingest", str(DOCS), "--work", str(work), "--quiet").returncode == 0
    before = digests(work, "fragments/**/*.parquet")
    shutil.rmtree(sorted((work / "fragments").iterdir())[0])
    result = cli("ingest", str(DOCS), "--work", str(work), "--quiet")
    assert result.returncode == 0, result.stderr
    assert "up to date" not in result.stdout
    assert digests(work, "fragments/**/*.parquet") == before
    assert "up to date" in cli("ingest", str(DOCS), "--work", str(work), "--quiet").stdout


@pytest.mark.slow  # processes started and killed: make test-all (CI) runs it
def test_kill_9_during_a_reextraction_keeps_the_folder_usable(rerun, cli):
    """A real kill -9 while the forced re-extraction writes: whatever moment it hits, the folder then gives
    the clusters it gave before, or says in one line that the crawl must be given again."""
    crawl, work = rerun
    before = digests(work, "clusters.parquet")
    process = subprocess.Popen(
        [sys.executable, "-m", "lshsql", "run", str(crawl), "--work", str(work), "--force", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        if (work / "tmp" / "extraction" / "fragments").exists():
            break
        time.sleep(0.005)
    process.kill()
    process.wait()
    result = cli("run", "--work", str(work), "--no-aliases", "--quiet")
    if result.returncode:
        assert "give the crawl (or documents) again" in one_line_error(result)
        result = cli("run", str(crawl), "--work", str(work), "--quiet")
        assert result.returncode == 0, result.stderr
    result = cli("run", str(crawl), "--work", str(work), "--aliases", "--quiet")
    assert result.returncode == 0, result.stderr
    assert digests(work, "clusters.parquet") == before


# --- 2. one writer per work folder --------------------------------------------------------------------


@pytest.mark.slow  # processes started and stopped: make test-all (CI) runs it
def test_a_second_writer_stops_at_once_and_readers_go_on(work):
    with workdir.writing(work):
        for command in (["run"], ["stage", "pairs"], ["ingest", str(DOCS)], ["extract", str(EXAMPLE_CRAWL)]):
            line = one_line_error(cli_process(*command, "--work", str(work)))
            assert f"{work}: another lshsql process (pid {os.getpid()}) is writing" in line
        for command in (["info"], ["query", "select count(*) from pairs"], ["clusters", "--limit", "1"]):
            result = cli_process(*command, "--work", str(work))
            assert result.returncode == 0, result.stderr


def test_the_lock_dies_with_its_process(tmp_path):
    work = tmp_path / "work"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom lshsql import workdir\n"
            f"with workdir.writing({str(work)!r}):\n    print('held', flush=True)\n    time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(InputError, match=f"pid {holder.pid}"), workdir.writing(work):
        pass
    holder.kill()
    holder.wait()
    with workdir.writing(work):  # no stale lock after kill -9
        pass


def test_a_damaged_manifest_is_one_line_and_force_mends_it(rerun, cli):
    crawl, work = rerun
    (work / "manifest.json").write_text('{"stages": {"extract": ', encoding="utf-8")
    for command in (["info"], ["run"], ["query", "select count(*) from pages"]):
        line = one_line_error(cli(*command, "--work", str(work)))
        assert "manifest.json is damaged" in line and "rerun with --force" in line
    result = cli("run", str(crawl), "--work", str(work), "--force", "--quiet")
    assert result.returncode == 0, result.stderr
    assert (work / "manifest.json.damaged").exists()
    assert json.loads((work / "manifest.json").read_text())["stages"]["clusters"]["rows"] > 0


# --- 5. leftovers of killed runs; workers die with their parent --------------------------------------


def test_a_writer_removes_what_killed_runs_left(tmp_path, cli):
    work = tmp_path / "work"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(dead.stdout)
    leftovers = [
        work / "tmp" / "extract" / "pages.parquet",
        work / "tmp" / "pairs_blocks" / "part-00000.parquet",
        work / "tmp" / "duckdb" / str(dead_pid) / "duckdb_temp_storage_S32K-0.tmp",
        work / "tmp" / "duckdb" / "duckdb_temp_storage_S32K-0.tmp",
        work / "tmp_pairs.parquet",
        work / "fragments" / "bucket=0" / "tmp_data.parquet",
        work / "manifest.json.123.tmp",
    ]
    kept = [
        work / "tmp" / "duckdb" / str(os.getpid()) / "spill.tmp",
        work / "pairs.parquet",
    ]  # a live reader's
    for path in leftovers + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    result = cli("ingest", str(DOCS), "--work", str(work), "--quiet")
    assert result.returncode == 0, result.stderr
    assert [p for p in leftovers if p.exists()] == []
    assert all(p.exists() for p in kept)


def descendants(pid: int) -> set[int]:
    children = {pid}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                children |= descendants(int(entry.name))
    return children


def kill_9_while_workers_run(command: list[str], timeout: float = 60) -> bool:
    """Start `command`, SIGKILL it as soon as it has worker processes (they live only while inputs are read
    or parsed), and wait for it; whether it had any before it ended or the timeout."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: set[int] = set()
    deadline = time.monotonic() + timeout
    while process.poll() is None and not workers and time.monotonic() < deadline:
        workers = descendants(process.pid) - {process.pid}
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return bool(workers)


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_workers_die_with_the_main_process(tmp_path, sig):
    crawl = tmp_path / "big.warc.gz"
    page = "<title>t</title>" + " ".join(f"<a href='/p{i}'>word{i} text</a> more words" for i in range(3000))
    write_warc(crawl, [html_response(f"http://site.example/{n}", page) for n in range(400)])
    main = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lshsql",
            "extract",
            str(crawl),
            "--work",
            str(tmp_path / "w"),
            "--threads",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    while main.poll() is None and len(workers) < 2 and time.monotonic() < deadline:
        workers = descendants(main.pid) - {main.pid}
        time.sleep(0.01)
    assert len(workers) >= 2, "the extraction ended before its workers could be seen"
    main.send_signal(sig)
    main.wait()
    deadline = time.monotonic() + 10
    while any(running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in workers if running(pid)]


# --- 6. one-line errors -------------------------------------------------------------------------------


def test_bags_that_do_not_exist_or_hold_nothing_usable(tmp_path, cli):
    line = one_line_error(cli("run", "--bags", str(tmp_path / "nope.parquet"), "--work", str(tmp_path / "w")))
    assert "nope.parquet: no such file" in line
    import pyarrow as pa

    schema = pa.schema([("url", pa.string()), ("term", pa.string()), ("weight", pa.float64())])
    empty = write_table(tmp_path / "empty.parquet", [], schema)
    line = one_line_error(cli("run", "--bags", str(empty), "--work", str(tmp_path / "w1"), "-q"))
    assert "no usable row" in line and "the table is empty" in line
    nulls = write_table(tmp_path / "nulls.parquet", [{"url": None, "term": "a", "weight": 1.0}] * 3, schema)
    line = one_line_error(cli("run", "--bags", str(nulls), "--work", str(tmp_path / "w2"), "-q"))
    assert "no usable row" in line and "3 null_url" in line


def test_a_read_only_work_folder(tmp_path, small_site, cli):
    """Writers stop with one line; readers still answer (they spill elsewhere)."""
    work = tmp_path / "w"
    crawl = write_warc(tmp_path / "c.warc.gz", small_site)
    assert cli("extract", str(crawl), "--work", str(work)).returncode == 0
    work.chmod(0o555)
    if writable(work):  # root writes where a mode forbids it: a folder of a read-only file system instead
        work = Path("/sys/kernel")
        if writable(work):
            pytest.skip("no read-only folder to try")
    line = one_line_error(cli("extract", str(crawl), "--work", str(work)))
    assert "cannot write to the work folder" in line
    result = cli("query", "select 42 as answer", "--work", str(work))
    assert result.returncode == 0, result.stderr
    assert "42" in result.stdout


def writable(folder: Path) -> bool:
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def test_a_work_folder_named_with_glob_characters(tmp_path, small_site, cli):
    crawl = write_warc(tmp_path / "c.warc.gz", small_site)
    work = tmp_path / "w[1]?*"
    result = cli("run", str(crawl), "--work", str(work), "--quiet", "--min-df", "1")
    assert result.returncode == 0, result.stderr
    result = cli("query", "select count(*) as n from fragments", "--work", str(work), "--format", "csv")
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.split()[1]) > 0


def test_terminal_escapes_in_titles_are_not_printed(tmp_path, cli):
    title = "Evil\x1b]0;pwned\x07 page\x1b[2J\rdone\x9b1m"
    crawl = tmp_path / "c.jsonl"
    write_jsonl(crawl, [{"url": "http://e.example/", "html": f"<title>{title}</title><a href='/x'>x</a>"}])
    work = tmp_path / "w"
    assert cli("extract", str(crawl), "--work", str(work)).returncode == 0
    result = cli("query", "select title from pages", "--work", str(work))
    assert result.returncode == 0, result.stderr
    assert "Evil" in result.stdout and "done" in result.stdout
    assert not any(ch in result.stdout for ch in "\x1b\x07\r\x9b")


def test_a_warc_status_out_of_range_is_a_skipped_record(tmp_path, small_site, cli):
    """HTTP/1.1 99999999999999 once overflowed the status column and stopped the extraction."""
    records = [
        *small_site,
        html_response("http://site.example/odd", "<a href='/'>x</a>", "99999999999999 OK"),
    ]
    crawl = write_warc(tmp_path / "c.warc.gz", records)
    result = cli("extract", str(crawl), "--work", str(tmp_path / "w"))
    assert result.returncode == 0, result.stderr
    assert "records read:    5 = 3 pages used + 2 skipped" in result.stdout
    assert "skipped http_status: 1" in result.stdout


@pytest.mark.parametrize("command", ["extract", "ingest"])
def test_an_input_path_that_is_not_utf8(tmp_path, command):
    """A folder name of bytes that are not UTF-8 once reached Arrow as lone surrogates, a traceback."""
    folder = os.fsdecode(bytes(tmp_path) + b"/caf\xe9")
    os.mkdir(folder)
    path = os.path.join(folder, "in.jsonl")
    row = {"url": "http://e.example/", "html": "<title>t</title><a href='/x'>x</a>"}
    write_jsonl(Path(path), [row if command == "extract" else {"id": "a", "text": "some words here"}])
    result = cli_process(command, path, "--work", str(tmp_path / "w"))
    assert result.returncode == 0, result.stderr
