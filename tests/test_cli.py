"""The CLI: help text with an example for every command, one-line errors and exit codes."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from lshsql.cli import app
from tests.conftest import EXAMPLE_CRAWL, write_warc

runner = CliRunner()
COMMANDS = sorted(command.name or command.callback.__name__ for command in app.registered_commands)


def lshsql(*args: str) -> subprocess.CompletedProcess:
    """Run the real entry point in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "lshsql", *args], capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command):
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "Example: lshsql " + command in " ".join(result.output.split())


def test_top_level_help_lists_the_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert all(command in result.output for command in COMMANDS)


def test_version():
    assert lshsql("--version").stdout.startswith("lshsql ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["extract", "/nonexistent/crawl.warc.gz", "--work", "{tmp}/w"],
            "/nonexistent/crawl.warc.gz: no such file",
        ),
        (["extract", "{tmp}/not-a-crawl.txt", "--work", "{tmp}/w"], "not a WARC, ARC or JSON Lines file"),
        (["extract", str(EXAMPLE_CRAWL), "--work", "{tmp}/w", "--window", "-2"], "window must be >= 0"),
        (["extract", str(EXAMPLE_CRAWL), "--work", "{tmp}/w", "--language", "xx"], "unknown language 'xx'"),
        (
            ["extract", str(EXAMPLE_CRAWL), "--work", "{tmp}/w", "--memory-limit", "lots"],
            "memory limit 'lots'",
        ),
        (
            ["extract", str(EXAMPLE_CRAWL), "--work", "{tmp}/w", "--extra-stopwords", "{tmp}/none.txt"],
            "none.txt",
        ),
        (["run", "--bags", "{tmp}/b.parquet", "--work", "{tmp}/w", "--engine", "flink"], "--engine must be"),
        (
            [
                "run",
                "--bags",
                "{tmp}/b.parquet",
                "--work",
                "{tmp}/w",
                "--engine",
                "spark",
                "--spark-conf",
                "x",
            ],
            "--spark-conf wants KEY=VALUE, got 'x'",
        ),
        (
            ["run", "--bags", "{tmp}/b.parquet", "--work", "{tmp}/w", "--spark-master", "spark://head:7077"],
            "--spark-master and --spark-conf need --engine spark",
        ),
        (
            ["run", "--bags", "{tmp}/b.parquet", "--work", "{tmp}/w", "--recall", "1"],
            "recall is a probability",
        ),
        (
            ["run", "--bags", "{tmp}/b.parquet", "--work", "{tmp}/w", "--sketch", "bottomk"],
            "sketch must be one of minhash, oph",
        ),
        (["plan", "--sketch", "bottomk"], "sketch must be one of minhash, oph"),
        # click's usage errors, one line too, saying where the options are listed
        (["dedup"], "Missing argument 'inputs'. (see `"),
        (["dedup"], "lshsql dedup --help`)"),
        (["run", "--threshold", "abc", "{tmp}/not-a-crawl.txt"], "Invalid value for '--threshold'"),
        (["frobnicate"], "No such command 'frobnicate'. (see `"),
        (["run", "--no-such-option"], "No such option: --no-such-option"),
        (["dedup", "{tmp}/not-a-crawl.txt", "--keep"], "Option '--keep' requires an argument"),
        (
            [
                "run",
                "--bags",
                "{tmp}/b.parquet",
                "--work",
                "{tmp}/w",
                "--recall",
                "0.9",
                "-k",
                "3",
                "-l",
                "9",
            ],
            "--recall is the planner's: give it or both -k and -l, not all three",
        ),
    ],
)
def test_bad_input_gives_one_line_and_a_nonzero_exit(tmp_path, args, message, lshsql_command):
    (tmp_path / "not-a-crawl.txt").write_text("hello")
    result = lshsql_command(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("lshsql: error: ") and message in result.stderr
    assert "Traceback" not in result.stderr


def test_lshsql_alone_prints_its_commands():
    result = lshsql()
    assert result.returncode == 2 and result.stdout == ""  # on standard error, as click printed it
    assert result.stderr.startswith("Usage: ")
    assert all(f" {command} " in result.stderr for command in COMMANDS)


def test_extract_prints_its_summary(tmp_path, lshsql_command):
    result = lshsql_command("extract", str(EXAMPLE_CRAWL), "--work", str(tmp_path / "w"), "--quiet")
    assert result.returncode == 0, result.stderr
    assert "records read:    121 = 120 pages used + 1 skipped" in result.stdout
    assert result.stderr == ""


def test_extract_takes_max_links(tmp_path, small_site):
    crawl = write_warc(tmp_path / "site.warc.gz", small_site)
    work = tmp_path / "w"
    args = ["extract", str(crawl), "--work", str(work), "-q", "--threads", "1", "--max-links", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "  links over --max-links: 2 on 2 pages, not extracted" in result.output
    params = json.loads((work / "manifest.json").read_text())["stages"]["extract"]["params"]
    assert params["max_links_per_page"] == 1


def test_extra_stopwords_file_is_applied(tmp_path, lshsql_command):
    (tmp_path / "stop.txt").write_text("# corpus words\npython\n")
    result = lshsql_command(
        "extract",
        str(EXAMPLE_CRAWL),
        "--work",
        str(tmp_path / "w"),
        "-q",
        "--extra-stopwords",
        str(tmp_path / "stop.txt"),
        "--buckets",
        "1",
    )
    assert result.returncode == 0, result.stderr
    import duckdb

    with duckdb.connect() as con:
        n = con.execute(
            "select count(*) from read_parquet($p) where list_contains(terms, 'python')",
            {"p": str(tmp_path / "w" / "fragments" / "bucket=0" / "data.parquet")},
        ).fetchall()[0][0]
    assert n == 0


def test_a_stage_that_would_spill_over_max_spill_stops_with_one_line(tmp_path):
    """DuckDB enforces the limit only when it is set after opening (given in the config it is reported but
    ignored): 2M bag rows under a 64 MB memory limit spill well over 2 MB in the bags stage's sort."""
    import duckdb

    duckdb.execute(
        "copy (select 'https://e.example/' || (range // 100) as url, 'w' || hash(range) % 50000 as term "
        "from range(2000000)) to $out (format parquet)",
        {"out": str(tmp_path / "b.parquet")},
    ).fetchall()  # finished: the default connection is shared with every test of the process
    args = ["run", "--bags", str(tmp_path / "b.parquet"), "--work", str(tmp_path / "w"), "-q"]
    result = lshsql(*args, "--memory-limit", "64MB", "--threads", "1", "--max-spill", "2MB")
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1, result.stderr
    assert (
        "sql/20_bags.sql" in result.stderr and "more spill space than allowed (--max-spill" in result.stderr
    )
    assert "Traceback" not in result.stderr


# every command with --memory-limit, with the arguments it needs to get as far as opening DuckDB
MAX_SPILL_COMMANDS = {
    "extract": [str(EXAMPLE_CRAWL)],
    "ingest": ["{tmp}/d.jsonl"],
    "dedup": ["{tmp}/d.jsonl", "--out", "{tmp}/kept.jsonl"],
    "run": ["--bags", "{tmp}/b.parquet"],
    "stage": ["bags"],
    "eval": [],
    "hierarchy": [],
    "cut": ["--threshold", "0.3"],
    "environment": ["example.org"],
    "mirrors": [],
    "query": ["select 1"],
    "related": ["https://a.example/"],
    "clusters": [],
    "diff": [],
    "explain": ["https://a.example/"],
    "show": ["https://a.example/"],
    "report": [],
    "serve": ["--port", "0"],
    "plan": [],
}


def _commands_with(parameter: str) -> set[str]:
    import inspect

    return {
        command.name or command.callback.__name__
        for command in app.registered_commands
        if parameter in inspect.signature(command.callback).parameters
    }


def test_every_command_with_a_memory_limit_takes_max_spill():
    assert _commands_with("memory_limit") == _commands_with("max_spill") == set(MAX_SPILL_COMMANDS)


@pytest.mark.parametrize("command", sorted(MAX_SPILL_COMMANDS))
def test_max_spill_reaches_the_resources_of_every_command(tmp_path, command, lshsql_command):
    (tmp_path / "d.jsonl").write_text('{"id": "a", "text": "hello world"}\n')
    args = [a.replace("{tmp}", str(tmp_path)) for a in MAX_SPILL_COMMANDS[command]]
    result = lshsql_command(command, *args, "--work", str(tmp_path / "w"), "--max-spill", "lots")
    assert result.returncode != 0
    assert result.stderr.strip() == "lshsql: error: max spill 'lots' is not a size like 50GB or 512MB"


def test_query_runs_with_the_resources_it_is_given(tmp_path):
    """A user's ad-hoc SQL may join the biggest tables: its memory, threads and spill are theirs to set."""
    (tmp_path / "w").mkdir()
    sql = (
        "select current_setting('threads'), current_setting('memory_limit'), current_setting('temp_directory'), "
        "current_setting('enable_progress_bar')"  # DuckDB's bar would be drawn into the output after 2 s
    )
    options = ["--threads", "1", "--memory-limit", "300MB"]
    result = lshsql("query", sql, "--work", str(tmp_path / "w"), "--format", "csv", *options)
    assert result.returncode == 0, result.stderr
    threads, memory, temp, progress_bar = result.stdout.splitlines()[1].split(",")
    assert progress_bar == "False"
    import duckdb

    with duckdb.connect(config={"memory_limit": "300MB"}) as con:  # as this DuckDB shows 300MB
        shown = con.execute("select current_setting('memory_limit')").fetchall()[0][0]
    assert (threads, memory) == ("1", shown)
    assert (
        Path(temp).parent == tmp_path / "w" / "tmp" / "duckdb"
    )  # its own folder there: DIR/tmp/duckdb/<pid>
    assert Path(temp).name.isdigit()


def test_the_stage_options_of_run_and_stage_are_made_from_the_params_fields():
    """One source of truth: every Params field is an option of run and stage, not given (None) by default,
    its help showing the field's default; hierarchy takes the bag and signature ones."""
    from dataclasses import fields

    import typer

    from lshsql.params import Params

    group = typer.main.get_command(app)
    options = {
        name: {p.name: p for p in group.commands[name].params} for name in ("run", "stage", "hierarchy")
    }
    for name in ("run", "stage"):
        for field in fields(Params):
            option = options[name][field.name]
            assert option.default is None and option.help, (name, field.name)
    assert options["run"]["num_perm"].help == (
        "m, min-hashes per URL [80, or 128 where the planner expects less work]."
    )
    assert options["run"]["k"].opts == ["-k"]
    assert options["stage"]["banding"].secondary_opts == ["--random-tables"]
    assert {"weighting", "min_df", "max_df", "scale", "num_perm", "seed"} <= set(options["hierarchy"])
    assert options["hierarchy"]["seed"].help == "Seed of the hash family and LSH tables [1]."


@pytest.mark.slow  # three runs of the example crawl; params_for's rules: tests/stages/test_remembered.py
def test_run_keeps_the_extraction_options_of_the_last_run(tmp_path):
    """Options not given keep the values of the last run in the folder: extraction's too. A second `run`
    without --window, --buckets or --extra-stopwords does not extract again with the defaults; one giving
    another window does."""
    import json

    (tmp_path / "stop.txt").write_text("python\n")
    work = tmp_path / "w"

    def extraction() -> dict:
        return json.loads((work / "manifest.json").read_text())["stages"]["extract"]

    first = ["run", str(EXAMPLE_CRAWL), "--work", str(work), "-q", "--threads", "1"]
    options = ["--window", "2", "--buckets", "1", "--extra-stopwords", str(tmp_path / "stop.txt")]
    assert lshsql(*first, *options).returncode == 0
    made = extraction()
    assert made["params"]["window"] == 2 and made["extra_stopword_words"] == ["python"]
    result = lshsql(*first, "--threshold", "0.3")
    assert result.returncode == 0, result.stderr
    assert extraction() == made  # not extracted again
    assert lshsql(*first, "--window", "3").returncode == 0
    again = extraction()
    assert again["params"]["window"] == 3 and again["params"]["buckets"] == 1
    assert again["extra_stopword_words"] == ["python"]


@pytest.mark.slow  # three runs of the example crawl; params_for's rules: tests/stages/test_remembered.py
def test_run_takes_the_oph_sketch_and_records_it(tmp_path):
    import duckdb

    bags, work = tmp_path / "bags.parquet", tmp_path / "w"
    with duckdb.connect() as con:  # 40 docs of 30 words, each doc and the next sharing 20 of them
        con.execute(
            "copy (select 'http://d' || d || '.example/' as url, 'w' || (d * 10 + t) as term "
            "from range(40) a(d), range(30) b(t)) to $p (format parquet)",
            {"p": str(bags)},
        )
    args = ["run", "--bags", str(bags), "--work", str(work), "-q", "--threads", "1", "--threshold", "0.5"]
    result = lshsql(*args, "--weighting", "none", "--sketch", "oph", "--num-perm", "128")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((work / "manifest.json").read_text())
    assert (
        manifest["params"]["sketch"] == "oph"
        and manifest["stages"]["signatures"]["params"]["sketch"] == "oph"
    )
    assert (work / "family" / "oph.parquet").exists()
    with duckdb.connect() as con:
        pairs = con.execute("select count(*) from read_parquet($p)", {"p": str(work / "pairs.parquet")})
        assert pairs.fetchone()[0] >= 30  # 39 neighbours at J = 0.5, found with recall 0.95
    shown = lshsql("plan", "--threshold", "0.5", "--num-perm", "128", "--sketch", "oph", "--work", str(work))
    assert "sketch oph: P(candidate) measured on its signatures" in shown.stdout
    assert lshsql(*args).returncode == 0  # not given again: kept
    assert json.loads((work / "manifest.json").read_text())["params"]["sketch"] == "oph"


@pytest.mark.slow  # three runs of the example crawl in processes of their own
def test_run_recall_is_the_planners_and_kept(tmp_path):
    """--recall sets the chance the planner's tables find a pair right at the threshold: less recall, other
    tables and less expected work (l * N band keys and the weighted candidates; not always fewer tables, as
    a larger k may pay), the (k, l) `plan --recall` shows for the same data. A later run without it keeps
    it; a run giving another recall plans again."""
    import json

    from lshsql.lsh.plan import plan
    from lshsql.lsh.scurve import planned_work

    work = tmp_path / "w"

    def tables() -> tuple[int, int]:
        params = json.loads((work / "manifest.json").read_text())["params"]
        return params["k"], params["l"]

    base = ["run", str(EXAMPLE_CRAWL), "--work", str(work), "-q", "--threads", "1", "--threshold", "0.5"]
    assert lshsql(*base).returncode == 0
    default = tables()
    result = lshsql(*base, "--recall", "0.8")
    assert result.returncode == 0, result.stderr
    lower = tables()
    assert lower != default
    buckets = json.loads((work / "manifest.json").read_text())["stages"]["buckets"]
    assert 0.8 <= buckets["recall_at_threshold"] < 0.95  # shown by `info`
    shown = lshsql("plan", "--threshold", "0.5", "--recall", "0.8", "--work", str(work)).stdout
    assert f"chosen: k = {lower[0]}, l = {lower[1]}" in shown

    def work_expected(recall: float) -> float:
        chosen = plan(0.5, recall=recall, work=work)
        [option] = [o for o in chosen.options if (o.k, o.l) == (chosen.k, chosen.l)]
        return planned_work(chosen.l, chosen.n_urls, option.candidates)

    assert work_expected(0.8) < work_expected(0.95)
    assert lshsql(*base).returncode == 0 and tables() == lower  # kept
    assert lshsql(*base, "--recall", "0.95").returncode == 0 and tables() == default


def test_an_end_of_file_error_from_a_reader_is_one_line_not_aborted(monkeypatch, capsys):
    """click turns an EOFError into a bare 'Aborted!'; the error boundary reports it as bad input."""
    import importlib

    from lshsql import cli

    def cut(*args, **kwargs):
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")

    monkeypatch.setattr(importlib.import_module("lshsql.sources.extract"), "extract", cut)
    monkeypatch.setattr(sys, "argv", ["lshsql", "extract", str(EXAMPLE_CRAWL), "--work", "w", "--quiet"])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.startswith("lshsql: error: ") and err.count("\n") == 1, err
    assert "end-of-stream marker" in err and "Aborted" not in err


def test_stage_help_lists_every_stage_in_run_order():
    """`lshsql stage --help` names the stages without importing the pipeline: kept in step here."""
    from lshsql.pipeline import STAGE_NAMES

    result = CliRunner().invoke(app, ["stage", "--help"], terminal_width=400)
    listed = re.search(r"Run one stage \(([^)]*)\)", " ".join(result.output.split())).group(1)
    assert listed.split(", ") == list(STAGE_NAMES)


def imported_by_a_run(tmp_path: Path, module: str, through: str = "command") -> bool:
    """Whether a run on a small bags table, in a fresh process, imports `module`: a run of the command
    (lshsql.cli.main, DIR tmp_path/work) or a call of the API from one's own code (DIR tmp_path/api)."""
    bags = tmp_path / "bags.parquet"
    if not bags.exists():
        rows = [(f"https://example.org/{u}", f"w{(u * 7 + t) % 40}") for u in range(60) for t in range(12)]
        pq.write_table(pa.table({"url": [u for u, _ in rows], "term": [t for _, t in rows]}), bags)
    if through == "command":
        work = tmp_path / "work"
        call = (
            "from lshsql.cli import main\n"
            f"sys.argv = ['lshsql', 'run', '--bags', {str(bags)!r}, '--work', {str(work)!r}, '-q']\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        )
    else:
        call = f"from lshsql import api\napi.run({str(tmp_path / 'api')!r}, bags={str(bags)!r})\n"
    code = f"import sys\n{call}print({module!r} in sys.modules)\n"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()[-1] == "True"


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed here")
def test_a_run_on_bags_does_not_import_pandas(tmp_path):
    """pyarrow imports pandas, where installed, for most conversions to and from Python and numpy; a run
    from a bags table has no use for it and would pay its import in every run."""
    assert not imported_by_a_run(tmp_path, "pandas")
    assert (tmp_path / "work" / "reuse" / "signatures_digests.parquet").exists()  # the pass that read bags


COMMANDS_WITHOUT_PANDAS = """
import sys
from lshsql.cli import main
for argv in {argvs!r}:
    sys.argv = ["lshsql", *argv]
    try:
        main()
    except SystemExit as e:
        assert not e.code, (argv, e.code)
print("pandas" in sys.modules)
"""


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas is not installed here")
def test_a_run_whose_bags_have_no_copies_above_one_does_not_import_pandas(tmp_path):
    """pyarrow imports pandas, where installed, in most to_numpy calls, such as the validity of the
    signatures stage's list of copies, null for a bag whose copies are all 1 (here the long bags, whose
    TF-IDF weights are all small), and on reading a file by pq.read_table (pyarrow.dataset)."""
    rows = [(f"https://example.org/long{u}", f"w{u}-{t}") for u in range(20) for t in range(300)]
    rows += [(f"https://example.org/short{u}", f"s{(u * 7 + t) % 40}") for u in range(40) for t in range(5)]
    bags = tmp_path / "bags.parquet"
    pq.write_table(pa.table({"url": [u for u, _ in rows], "term": [t for _, t in rows]}), bags)
    code = COMMANDS_WITHOUT_PANDAS.format(
        argvs=[["run", "--bags", str(bags), "--work", str(tmp_path / "w"), "-q"]]
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "False"


@pytest.mark.slow  # what fresh interpreters import, each run twice: make test-all (CI) runs it
@pytest.mark.skipif(importlib.util.find_spec("scipy") is None, reason="scipy is not installed here")
def test_the_kernels_start_without_scipy_linalg_in_the_command_only(tmp_path):
    """numba looks for SciPy's BLAS as it loads its numpy support, importing scipy.linalg where SciPy is
    installed; no kernel calls it. A run of the command (its process runs only lshsql) signs and verifies
    without it; a process of one's own that calls the same kernels runs them as numba does anywhere, and
    one that only imports lshsql loads neither numba's numpy support nor SciPy."""
    assert not imported_by_a_run(tmp_path, "scipy.linalg")
    assert imported_by_a_run(tmp_path, "scipy.linalg", through="api")  # numba's own first kernel call
    code = "import sys, lshsql.api\nprint('numba.np.arraymath' in sys.modules, 'scipy.linalg' in sys.modules)"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert imported.stdout.split() == ["False", "False"], imported.stderr
    for work in ("work", "api"):  # both signed (the min-hash and digests kernels) and verified pairs
        assert pq.read_metadata(tmp_path / work / "signatures.parquet").num_rows == 60
        assert pq.read_metadata(tmp_path / work / "pairs.parquet").num_rows
