"""Random damage to WARC, JSON Lines and bags inputs never gives a traceback, and nothing is lost.

Each example builds a small valid input, damages it (cut anywhere, wrong lengths, wrong types, odd bytes)
and runs the command through the CLI's entry point in this process. Three invariants: no exception escapes
(a traceback), the exit code is 0 or the output is one `lshsql: error:` line, and records read = used +
skipped, with every record that lies wholly before the damage used. The default suite runs a few examples
of each; the slow test runs many more.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lshsql.cli import main
from tests.conftest import html_response, write_warc

FEW = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
MANY = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def run_cli(*args: str) -> tuple[int, str]:
    """main() as the `lshsql` script calls it; (exit code, stderr). Any exception but SystemExit fails."""
    stderr = io.StringIO()
    argv = sys.argv
    sys.argv = ["lshsql", *args]
    code = 0
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = argv
    return code, stderr.getvalue()


def check_outcome(code: int, stderr: str) -> None:
    """Exit 0, or one line `lshsql: error: ...` and a non-zero code."""
    assert "Traceback" not in stderr
    if code:
        errors = [line for line in stderr.splitlines() if line.startswith("lshsql: error: ")]
        assert len(errors) == 1 and stderr.strip().splitlines()[-1] == errors[0], stderr


def pages_accounting(work: Path) -> dict[int, str | None]:
    """pages.parquet's rows by source offset: every record read is in it, used or with its skip reason;
    the summary's records read = used + skipped is this table's row count split by skip_reason."""
    manifest = json.loads((work / "manifest.json").read_text())
    counts = manifest["stages"]["extract"]["counts"]
    with duckdb.connect() as con:
        rows = con.execute(
            "select source_offset, skip_reason from read_parquet($p)", {"p": str(work / "pages.parquet")}
        ).fetchall()
    assert counts["records_read"] == len(rows) == counts["pages_used"] + sum(counts["skipped"].values())
    return {offset: reason for offset, reason in rows}


def extracted(crawl: Path, work: Path) -> dict[int, str | None] | None:
    """`lshsql extract` of the damaged crawl, checked; its pages by offset, or None for a one-line error."""
    code, stderr = run_cli("extract", str(crawl), "--work", str(work), "--threads", "1")
    check_outcome(code, stderr)
    return None if code else pages_accounting(work)


# --- damage ---------------------------------------------------------------------------------------------

damage = st.one_of(
    st.tuples(st.just("cut"), st.floats(0, 1)),
    st.tuples(st.just("flip"), st.floats(0, 1), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("length"), st.integers(0, 2), st.sampled_from(["0", "7", "999999999999", "-3", "x"])),
)


def damaged(data: bytes, how: tuple) -> tuple[bytes, int]:
    """`data` damaged as `how` says; also the offset of the first damaged byte."""
    kind = how[0]
    if kind == "length":
        _, which, value = how
        starts = [i for i in range(len(data)) if data.startswith(b"Content-Length: ", i)]
        if not starts:
            return data, len(data)
        at = starts[which % len(starts)]
        end = data.index(b"\r\n", at)
        return data[:at] + b"Content-Length: " + value.encode() + data[end:], at
    at = int(how[1] * len(data))
    if kind == "cut":
        return data[:at], at
    if kind == "flip":
        return data[:at] + how[2] + data[at + len(how[2]) :], at
    return data[:at] + how[2] + data[at:], at


def pages(n: int) -> list[dict]:
    return [
        html_response(
            f"http://site.example/{i}.html",
            f"<title>Page {i}</title><p>words about {i} <a href='/{(i + 1) % n}.html'>next page {i}</a></p>",
        )
        for i in range(n)
    ]


def warc_with_offsets(folder: Path, n: int, compress: bool) -> tuple[bytes, list[tuple[int, int]]]:
    """A WARC of n pages (after a warcinfo record) and the (start, end) bytes of each response record."""
    path = write_warc(folder / "clean.warc", pages(n), compress=compress)
    data = path.read_bytes()
    from warcio.archiveiterator import ArchiveIterator

    spans = []
    with open(path, "rb") as stream:
        records = ArchiveIterator(stream)
        for record in records:
            if record.rec_type == "response":
                record.content_stream().read()
                start = records.get_record_offset()
                spans.append((start, start + records.get_record_length()))
    return data, spans


def check_warc(n: int, compress: bool, how: tuple) -> None:
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        data, spans = warc_with_offsets(folder, n, compress)
        broken, at = damaged(data, how)
        crawl = folder / ("crawl.warc.gz" if compress else "crawl.warc")
        crawl.write_bytes(broken)
        by_offset = extracted(crawl, folder / "work")
        if by_offset is None:
            return
        for start, end in spans:
            if end <= at:  # wholly before the damage: read and used
                assert by_offset.get(start, "not read") is None, (start, by_offset.get(start, "not read"))


# --- JSON Lines -----------------------------------------------------------------------------------------

odd_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=5),
    st.just("\ud800"),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
FIELDS = ("url", "html", "status", "content_type", "location")


def jsonl_lines(n: int, odd: dict[str, object], odd_line: int) -> list[bytes]:
    lines = []
    for i in range(n):
        record: dict[str, object] = {
            "url": f"http://site.example/{i}.html",
            "html": f"<title>Page {i}</title><a href='/{i + 1}.html'>next {i}</a>",
        }
        if i == odd_line:
            record.update(odd)
        lines.append(json.dumps(record, allow_nan=True).encode("utf-8", "surrogatepass") + b"\n")
    return lines


def check_jsonl(n: int, odd: dict, odd_line: int, how: tuple | None, compress: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        lines = jsonl_lines(n, odd, odd_line % n)
        data = b"".join(lines)
        at = len(data)
        if how is not None and how[0] != "length":
            data, at = damaged(data, how)
        crawl = folder / ("crawl.jsonl.gz" if compress else "crawl.jsonl")
        crawl.write_bytes(gzip.compress(data, mtime=0) if compress else data)
        by_offset = extracted(crawl, folder / "work")
        if by_offset is None:
            return
        offset = 0
        for i, line in enumerate(lines):
            if offset + len(line) <= at and i != odd_line % n:
                assert by_offset.get(offset, "not read") is None, (i, by_offset.get(offset, "not read"))
            offset += len(line)


# --- bags ---------------------------------------------------------------------------------------------


def check_bags(columns: dict[str, list], how: tuple | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        path = folder / "bags.parquet"
        try:
            table = pa.table(columns)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return  # not a table Arrow can write: nothing a user could hand lshsql
        pq.write_table(table, path)
        if how is not None and how[0] != "length":
            path.write_bytes(damaged(path.read_bytes(), how)[0])
        work = folder / "work"
        code, stderr = run_cli("run", "--bags", str(path), "--work", str(work), "--quiet", "--threads", "1")
        check_outcome(code, stderr)
        if code:
            return
        entry = json.loads((work / "manifest.json").read_text())["stages"]["term_counts"]
        assert entry["rows"] + sum(entry.get("rows_skipped", {}).values()) == table.num_rows


bag_value = st.one_of(st.none(), st.text(max_size=4), st.integers(-5, 5))
weight = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3))
bag_columns = st.integers(1, 12).flatmap(
    lambda n: st.fixed_dictionaries(
        {
            "url": st.lists(bag_value, min_size=n, max_size=n),
            "term": st.lists(bag_value, min_size=n, max_size=n),
        },
        optional={"weight": st.lists(weight, min_size=n, max_size=n)},
    )
)


def homogeneous(columns: dict[str, list]) -> dict[str, list]:
    """Arrow wants one type a column: mixed columns become text (still the wrong type for weight)."""
    out = {}
    for name, values in columns.items():
        kinds = {type(v) for v in values if v is not None}
        out[name] = [None if v is None else str(v) for v in values] if len(kinds) > 1 else values
    return out


# --- the tests ----------------------------------------------------------------------------------------

warc_case = (st.integers(1, 6), st.booleans(), damage)
jsonl_case = (
    st.integers(1, 6),
    st.dictionaries(st.sampled_from(FIELDS), odd_value, max_size=2),
    st.integers(0, 5),
    st.one_of(st.none(), damage),
    st.booleans(),
)


@FEW
@given(*warc_case)
def test_damaged_warc(n, compress, how):
    check_warc(n, compress, how)


@FEW
@given(*jsonl_case)
def test_damaged_jsonl(n, odd, odd_line, how, compress):
    check_jsonl(n, odd, odd_line, how, compress)


@FEW
@given(bag_columns.map(homogeneous), st.one_of(st.none(), damage))
# a flipped byte in the ARROW:schema metadata: DuckDB reads the file, pyarrow cannot read its schema
@example(columns={"url": [None] * 6 + [""], "term": [None] * 6 + [""]}, how=("flip", 0.75, b"\x00"))
def test_damaged_bags(columns, how):
    check_bags(columns, how)


@pytest.mark.slow
@MANY
@given(*warc_case)
def test_damaged_warc_many(n, compress, how):
    check_warc(n, compress, how)


@pytest.mark.slow
@MANY
@given(*jsonl_case)
def test_damaged_jsonl_many(n, odd, odd_line, how, compress):
    check_jsonl(n, odd, odd_line, how, compress)


@pytest.mark.slow
@MANY
@given(bag_columns.map(homogeneous), st.one_of(st.none(), damage))
def test_damaged_bags_many(columns, how):
    check_bags(columns, how)
