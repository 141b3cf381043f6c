"""Shared fixtures: hand-built crawls written with warcio, the example crawl extracted and run once per test
run, the lshsql command run in this process or its own, paths to ../shared/data."""

from __future__ import annotations

import fcntl
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests on DuckDB take their number of examples from the profile: `make test` runs a fixed few
# (derandomized, the same every run), `make test-all` (--hypothesis-profile thorough) many more, at random.
settings.register_profile("everyday", max_examples=30, derandomize=True)
settings.register_profile("thorough", max_examples=200)
settings.load_profile("everyday")

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
EXAMPLE_CRAWL = REPO / "examples" / "crawl.warc.gz"


def _one_thread(work: Path):
    from lshsql.engines import duckdb as db

    return db.Resources(memory_limit="2GB", threads=1, temp_directory=db.spill_directory(work))


def made_once(tmp_path_factory, name: str, make: Callable[[Path], None]) -> Path:
    """DIR/work made by make(DIR/work) once per test run: the workers of `pytest -n` share it, the first to
    need it making it while the others wait."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's, above each worker's own
    work, done = root / name / "work", root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(work.parent, ignore_errors=True)
            make(work)
            done.touch()
    return work


@pytest.fixture(scope="session")
def example_extraction(tmp_path_factory) -> Path:
    """The example crawl extracted once per test run, for the tests of what comes after extraction: read it,
    or write to a copy_work of it. Default ExtractParams, 1 worker and 1 DuckDB thread: tests compare it
    with extractions and runs at 2."""
    from lshsql.sources.extract import ExtractParams, extract

    def make(work: Path) -> None:
        extract([str(EXAMPLE_CRAWL)], work, ExtractParams(), _one_thread(work))

    return made_once(tmp_path_factory, "example-extraction", make)


@pytest.fixture(scope="session")
def example_run(example_extraction: Path, tmp_path_factory) -> Path:
    """example_extraction run with the default Params (threshold 0.2, verified) on 1 DuckDB thread; read it,
    or write to a copy_work of it."""
    from lshsql.params import Params
    from lshsql.pipeline import run

    def make(work: Path) -> None:
        run(copy_work(example_extraction, work), Params(), resources=_one_thread(work))

    return made_once(tmp_path_factory, "example-run", make)


@pytest.fixture(scope="session")
def example_run_two(tmp_path_factory) -> Path:
    """The example crawl extracted by 2 workers in batches of 8 pages (so batches finish out of order) and
    run on 2 DuckDB threads: what the determinism tests compare with example_run."""
    from lshsql.engines import duckdb as db
    from lshsql.params import Params
    from lshsql.pipeline import run
    from lshsql.sources.extract import ExtractParams, extract

    def make(work: Path) -> None:
        resources = db.Resources(memory_limit="2GB", threads=2, temp_directory=db.spill_directory(work))
        extract([str(EXAMPLE_CRAWL)], work, ExtractParams(batch_records=8), resources)
        run(work, Params(), resources=resources)

    return made_once(tmp_path_factory, "example-run-two", make)


def copy_work(source: Path, dest: Path) -> Path:
    """A copy of a work folder at `dest`, as a user makes one (its catalog names files by relative path).
    DIR/tmp is left out: a command another test runs on the shared folder makes and removes its spill
    folder there, which a copy made meanwhile would find gone."""

    def spill(folder: str, names: list[str]) -> list[str]:
        return ["tmp"] if Path(folder) == source else []

    shutil.copytree(source, dest, ignore=spill)
    return dest


@pytest.fixture(params=[pytest.param("main"), pytest.param("subprocess", marks=pytest.mark.slow)])
def lshsql_command(request, monkeypatch, capsys) -> Callable[..., subprocess.CompletedProcess]:
    """`lshsql ARGS...` as a user types it, for the tests of what commands print and exit with: through the
    command's entry point, lshsql.cli.main, in this process (no interpreter and imports to start: the
    everyday loop), and in a process of its own as well in `make test-all`."""
    if request.param == "subprocess":

        def in_a_process(*args: str) -> subprocess.CompletedProcess:
            command = [sys.executable, "-m", "lshsql", *args]
            return subprocess.run(command, capture_output=True, text=True, timeout=300)

        return in_a_process
    from lshsql import cli, imports

    def in_this_process(*args: str) -> subprocess.CompletedProcess:
        monkeypatch.setattr(sys, "argv", ["lshsql", *args])
        monkeypatch.setattr(imports, "_only_lshsql", imports._only_lshsql)  # main() sets it
        capsys.readouterr()
        try:
            cli.main()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["lshsql", *args], code, out, err)

    return in_this_process


def shared(*parts: str) -> Path:
    """A file of ../shared/data; the test is skipped where the shared folder is not beside the repo."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def html_response(
    url: str,
    html: str | bytes,
    status: str = "200 OK",
    content_type: str = "text/html; charset=utf-8",
    date: str = "2024-01-01T00:00:00Z",
    headers: list[tuple[str, str]] | None = None,
) -> dict:
    body = html.encode("utf-8") if isinstance(html, str) else html
    return {
        "type": "response",
        "url": url,
        "status": status,
        "content_type": content_type,
        "body": body,
        "date": date,
        "headers": headers or [],
    }


def write_warc(path: Path, records: list[dict], compress: bool = True) -> Path:
    """Write records (dicts from html_response, or {'type': 'request'|'revisit'|'metadata'|..., 'url': u})."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=compress)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "lshsql tests"}))
        for rec in records:
            warc_headers = {"WARC-Date": rec.get("date", "2024-01-01T00:00:00Z")}
            if rec["type"] == "response":
                http = StatusAndHeaders(
                    rec["status"],
                    [("Content-Type", rec["content_type"]), *rec["headers"]],
                    protocol="HTTP/1.1",
                )
                record = writer.create_warc_record(
                    rec["url"],
                    "response",
                    payload=io.BytesIO(rec["body"]),
                    http_headers=http,
                    warc_headers_dict=warc_headers,
                )
            else:
                payload = rec.get(
                    "payload",
                    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
                    if rec["type"] == "request"
                    else b"HTTP/1.1 200 OK\r\n\r\n"
                    if rec["type"] == "revisit"
                    else b"x",
                )
                record = writer.create_warc_record(
                    rec["url"], rec["type"], payload=io.BytesIO(payload), warc_headers_dict=warc_headers
                )
            writer.write_record(record)
    return path


def write_single_member_gzip(path: Path, records: list[dict]) -> Path:
    """A WARC gzipped as one member, as some tools write it (warcio itself refuses to read these)."""
    plain = write_warc(path.with_suffix(".plain"), records, compress=False)
    path.write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    return path


def plain_records(path: Path) -> list[bytes]:
    """The bytes of each record of an uncompressed WARC, with the blank lines after it."""
    from warcio.archiveiterator import ArchiveIterator

    data = path.read_bytes()
    with open(path, "rb") as f:
        records = ArchiveIterator(f)
        offsets = [records.get_record_offset() for _ in records]
    return [data[a:b] for a, b in zip(offsets, [*offsets[1:], len(data)], strict=True)]


def write_records(path: Path, records: list[bytes], compress: bool) -> Path:
    """Records as they are, or each gzipped as its own member."""
    path.write_bytes(b"".join(gzip.compress(r, mtime=0) for r in records) if compress else b"".join(records))
    return path


def write_jsonl(path: Path, rows: list[dict | str]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


@pytest.fixture
def small_site() -> list[dict]:
    """Three pages of one site linking to each other and out."""
    return [
        html_response(
            "http://site.example/",
            "<title>Home</title><p>welcome to the <a href='/a.html'>apple "
            "orchard</a> and the <a href='b.html'>banana plantation</a> pages</p>",
        ),
        html_response(
            "http://site.example/a.html",
            "<title>Apples</title><p>see <a href='/b.html'>bananas</a> "
            "or <a href='http://other.example/x'>other fruit</a></p>",
        ),
        html_response("http://site.example/b.html", "<title>Bananas</title><p>back <a href='/'>home</a></p>"),
    ]


def write_table(path: Path, rows: list[dict], schema=None) -> Path:
    """A Parquet file from Python rows (a stage input built by hand)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def rendered_contexts(monkeypatch, key: str) -> list:
    """The value of `key` in the template context of every stage file DuckDBEngine.materialize renders from
    now on, in order: what a runner chose to render."""
    from lshsql.engines.base import DuckDBEngine

    seen: list = []
    materialize = DuckDBEngine.materialize

    def recording(self, sql, params, out, context=None, *args, **kwargs):
        seen.append(context[key])
        return materialize(self, sql, params, out, context, *args, **kwargs)

    monkeypatch.setattr(DuckDBEngine, "materialize", recording)
    return seen


def run_stage(
    work: Path, name: str, params, tables: dict[str, list[dict]] | None = None, schemas=None
) -> list[dict]:
    """Write `tables` into `work`, run one pipeline stage on them, return its output rows."""
    import duckdb

    from lshsql.engines import duckdb as db
    from lshsql.engines import udf
    from lshsql.engines.base import DuckDBEngine
    from lshsql.pipeline import RUNNERS, STAGES, output_path

    for relation, rows in (tables or {}).items():
        path = (
            work / "fragments" / "bucket=0" / "data.parquet"
            if relation == "fragments"
            else work / f"{relation}.parquet"
        )
        write_table(path, rows, (schemas or {}).get(relation))
    stage = next(s for s in STAGES if s.name == name)
    with db.connect(db.Resources(memory_limit="1GB", threads=1, temp_directory=str(work / "tmp"))) as con:
        udf.register(con)
        RUNNERS[name](DuckDBEngine(con), stage, params, work, None)
    with duckdb.connect() as con:
        return con.read_parquet(str(output_path(work, name))).to_arrow_table().to_pylist()


def clusters_by_id(work: Path) -> dict[int, tuple[str, int, list[str]]]:
    """{cluster_id: (center, center_id, members in URL order)} of a work folder's clusters.parquet."""
    import duckdb

    with duckdb.connect() as con:
        rows = con.execute(
            "select cluster_id, any_value(center), any_value(center_id), list(url order by url) "
            "from read_parquet($p) group by cluster_id",
            {"p": str(work / "clusters.parquet")},
        ).fetchall()
    return {row[0]: row[1:] for row in rows}
