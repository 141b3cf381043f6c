"""A Spark standalone cluster on this machine (a master and N workers from pyspark's own spark-class), every
port on 127.0.0.1, and `lshsql run --engine spark` on it with one worker killed (kill -9 of its Worker JVM
and of its executor JVM) while a given stage's tasks run.

    python bench/spark_cluster.py up --root /tmp/cluster            # until Ctrl-C; prints the master URL
    python bench/spark_cluster.py bench --docs 500 --runs 3 --out bench/RESULTS.md  # make bench-spark-kill

From Python (tests/engines/test_spark_fault.py):

    with running(Path("/tmp/cluster"), workers=2) as cluster:
        result = run_killing(command, cluster, "pairs", driver_ui, work)

Every process is started in its own process group and stopped with it (SIGTERM, then SIGKILL), by `stop`, by
the context manager's `finally` and by atexit, so no JVM outlives the script, on failure too.
"""

from __future__ import annotations

import argparse
import atexit
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_home() -> Path:
    """The installed pyspark package: it ships bin/spark-class and the jars, so it is a SPARK_HOME."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


MASTER_ATTEMPTS = 3  # starts of the master, each on ports free when it is started


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_env(root: Path) -> dict[str, str]:
    """The environment of every process here: Spark binds to 127.0.0.1 only (RPC and web UIs) and reads
    no spark-defaults.conf or spark-env.sh of the machine's (an empty SPARK_CONF_DIR)."""
    conf = root / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONF_DIR": str(conf),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_MASTER_HOST": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(root / "local"),
        "SPARK_WORKER_DIR": str(root / "worker"),
        "SPARK_LOG_DIR": str(root / "logs"),
        "SPARK_DAEMON_JAVA_OPTS": FAST_JVM,
    }


@dataclass
class Cluster:
    """A running master and its workers: `processes[0]` is the master, `processes[i]` worker i (1-based)."""

    root: Path
    master_url: str
    web_url: str
    processes: list[subprocess.Popen] = field(default_factory=list)
    killed: list[int] = field(default_factory=list)  # workers killed by kill_worker

    def groups(self) -> list[int]:
        """The process groups started here (each process leads its own)."""
        return [p.pid for p in self.processes]


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, process group) of a process, from /proc; None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2])


def _pids() -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if e.name.isdigit()]


def live(pids: list[int]) -> list[int]:
    """Those of `pids` still running (zombies count as gone)."""
    return [pid for pid in pids if (st := _proc_stat(pid)) and st[0] != "Z"]


def group_pids(groups: list[int]) -> list[int]:
    """Pids of the live processes (zombies excluded) in any of these process groups."""
    wanted = set(groups)
    return [pid for pid in _pids() if (st := _proc_stat(pid)) and st[0] != "Z" and st[2] in wanted]


def descendants(pid: int) -> list[int]:
    """The live processes below `pid` (children, theirs, ...), whatever their process group: pyspark's
    Python daemon makes a group of its own."""
    children: dict[int, list[int]] = {}
    for other in _pids():
        st = _proc_stat(other)
        if st and st[0] != "Z":
            children.setdefault(st[1], []).append(other)
    found, stack = [], list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, []))
    return sorted(found)


def marked_pids(root: Path) -> list[int]:
    """Live processes whose environment names this cluster's SPARK_CONF_DIR (loopback_env): the master,
    the workers, their executors and Python workers, and an lshsql run started with that environment and
    its driver JVM, even where they left their process group or lost their parent."""
    marker = f"SPARK_CONF_DIR={root / 'conf'}".encode()
    found = []
    for pid in _pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        st = _proc_stat(pid)
        if marker in environ and st and st[0] != "Z" and pid != os.getpid():
            found.append(pid)
    return sorted(found)


def alive(cluster: Cluster) -> list[int]:
    """Pids of the processes started for this cluster that are still alive (marked_pids)."""
    return marked_pids(cluster.root)


def _spawn(cluster: Cluster, name: str, args: list[str]) -> subprocess.Popen:
    logs = cluster.root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with (logs / f"{name}.out").open("w") as out:
        process = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=loopback_env(cluster.root),
            start_new_session=True,  # its own process group: the JVM and the executors it forks stop together
        )
    cluster.processes.append(process)
    return process


def master_state(cluster: Cluster, timeout: float = 5) -> dict:
    """The master's JSON status page (workers with their state, applications)."""
    with urllib.request.urlopen(f"{cluster.web_url}/json/", timeout=timeout) as response:
        return json.load(response)


def _wait(what: str, ready, cluster: Cluster, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if any(p.poll() is not None for i, p in enumerate(cluster.processes) if i not in cluster.killed):
            break
        try:
            if ready():
                return
        except (OSError, ValueError):  # not up yet, or not a JSON page (another server on the port)
            pass
        time.sleep(0.3)
    tails = {
        log.name: log.read_text(errors="replace")[-1500:] for log in sorted((cluster.root / "logs").glob("*"))
    }
    raise RuntimeError(f"the Spark cluster did not start: no {what} after {seconds:.0f} s: {tails}")


def start(root: Path, workers: int = 2, cores: int = 1, memory: str = "1g", port: int = 0) -> Cluster:
    """Start a master on spark://127.0.0.1:port (a free port for 0) and `workers` workers of `cores` cores
    and `memory` each; return when all are registered (by the master's JSON page). Stops what it started
    if any part fails, and registers `stop` with atexit."""
    root.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(root, "", "")
    atexit.register(stop, cluster)
    _exit_on_sigterm()
    try:
        for attempt in range(1, MASTER_ATTEMPTS + 1):
            # a port free_port() found may be taken before the master binds it (another test's Spark):
            # the master then exits (_master_properties) and starts again on other ports
            master_port, web_port = port or free_port(), free_port()
            cluster.master_url = f"spark://127.0.0.1:{master_port}"
            cluster.web_url = f"http://127.0.0.1:{web_port}"
            master = _spawn(
                cluster,
                "master",
                ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(master_port),
                 "--webui-port", str(web_port), "--properties-file", str(_master_properties(root))],
            )  # fmt: skip
            try:
                _wait("master", lambda: master_state(cluster).get("status") == "ALIVE", cluster, 180)
                break
            except RuntimeError:
                if master.poll() is None or attempt == MASTER_ATTEMPTS:
                    raise
                cluster.processes.remove(master)
        for number in range(1, workers + 1):
            _spawn(
                cluster,
                f"worker-{number}",
                ["org.apache.spark.deploy.worker.Worker", cluster.master_url, "--host", "127.0.0.1",
                 "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                 "--work-dir", str(root / f"worker-{number}")],
            )  # fmt: skip
        _wait(f"{workers} workers", lambda: len(alive_workers(cluster)) == workers, cluster, 180)
    except BaseException:
        stop(cluster)
        raise
    return cluster


def _exit_on_sigterm() -> None:
    """SIGTERM raises SystemExit in the main thread (where it is not handled already), so that `finally`
    and atexit stop the cluster when the script or test is terminated."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) in (
        signal.SIG_DFL,
        None,
    ):
        signal.signal(signal.SIGTERM, lambda number, _: sys.exit(128 + number))


def _master_properties(root: Path) -> Path:
    """The master's settings: no REST submission server (it would listen on another port), and no other
    port than the ones it is given."""
    path = root / "conf" / "master.properties"
    path.parent.mkdir(parents=True, exist_ok=True)
    # no retry on the next port when one is taken: the master must serve the pages where start() looks
    path.write_text("spark.master.rest.enabled false\nspark.port.maxRetries 0\n")
    return path


def alive_workers(cluster: Cluster) -> list[dict]:
    """The workers the master has as ALIVE."""
    return [w for w in master_state(cluster).get("workers", []) if w.get("state") == "ALIVE"]


def stop(cluster: Cluster, grace: float = 20) -> None:
    """Stop everything started for this cluster: SIGTERM to each process group, SIGKILL after `grace`
    seconds, then SIGKILL to any marked process left (a Python daemon, a driver). Safe to call twice
    (atexit calls it again)."""
    groups = cluster.groups()
    for group in groups:
        _signal_group(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while group_pids(groups) and time.monotonic() < deadline:
        time.sleep(0.2)
    for group in groups:
        _signal_group(group, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while (left := alive(cluster)) and time.monotonic() < deadline:
        for pid in left:
            _signal(pid, signal.SIGKILL)
        time.sleep(0.2)
    for process in cluster.processes:
        process.wait(timeout=30)


def _signal_group(group: int, number: int) -> None:
    with suppress(ProcessLookupError):
        os.killpg(group, number)


def _signal(pid: int, number: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, number)


@contextmanager
def running(
    root: Path, workers: int = 2, cores: int = 1, memory: str = "1g", port: int = 0
) -> Iterator[Cluster]:
    """`start` ... `stop`, the stop in a finally."""
    cluster = start(root, workers, cores, memory, port)
    try:
        yield cluster
    finally:
        stop(cluster)


def executors(groups: list[int]) -> dict[str, int]:
    """Executor id -> pid of the executor JVMs (CoarseGrainedExecutorBackend) in these process groups."""
    found = {}
    for pid in group_pids(groups):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args and b"--executor-id" in args:
            found[args[args.index(b"--executor-id") + 1].decode()] = pid
    return found


def kill_worker(cluster: Cluster, number: int) -> list[int]:
    """kill -9 worker `number`: its Worker JVM, its executor JVM and their Python workers, all at once;
    return the pids killed, once they are gone."""
    worker = cluster.processes[number]
    pids = sorted({*group_pids([worker.pid]), *descendants(worker.pid)})
    _signal_group(worker.pid, signal.SIGKILL)
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    worker.wait(timeout=30)
    cluster.killed.append(number)
    deadline = time.monotonic() + 30
    while live(pids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"worker {number}: pids {pids} still alive 30 s after kill -9")
        time.sleep(0.1)
    return pids


def busy_worker(cluster: Cluster, driver_ui: str) -> int | None:
    """The number of a live worker to kill now (by the driver's REST API, matched to the worker by the
    executor JVM's process group), or None: one whose executor runs a task, else, while a job runs, one
    whose executor has run any. A stage of small tasks leaves gaps between them in which no executor is
    busy; its job is running through them, and the worker's lost shuffle outputs still have to be made
    again."""
    try:
        app = _rest(driver_ui, "applications")
        if not app:
            return None
        base = f"applications/{app[0]['id']}"
        listed = [e for e in _rest(driver_ui, f"{base}/executors") if e["id"] != "driver"]
        busy = {e["id"] for e in listed if e.get("activeTasks", 0) > 0}
        if not busy and _rest(driver_ui, f"{base}/jobs?status=running"):
            busy = {e["id"] for e in listed if e.get("totalTasks", 0) > 0}
    except (OSError, ValueError, KeyError, http.client.HTTPException):
        return None
    for number in range(1, len(cluster.processes)):
        if number not in cluster.killed and busy & executors([cluster.processes[number].pid]).keys():
            return number
    return None


def _rest(driver_ui: str, path: str) -> list:
    with urllib.request.urlopen(f"{driver_ui}/api/v1/{path}", timeout=10) as response:
        return json.load(response)


@dataclass
class KilledRun:
    """What run_killing saw: the exit code, stderr, when the stage began and the worker died (seconds
    from the start), the pids killed, and the work folder's files when the stage began."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    stage_at: float | None = None
    killed_at: float | None = None
    worker: int | None = None
    pids: list[int] = field(default_factory=list)
    before: dict[str, tuple[int, int]] = field(default_factory=dict)


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mtime_ns) of every file under `folder`."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def run_killing(
    command: list[str], cluster: Cluster, stage: str | None, driver_ui: str, work: Path, timeout: float = 600
) -> KilledRun:
    """Run `command` (an `lshsql run` on this cluster, not --quiet, with its driver's web UI at
    `driver_ui`). While its log says `stage` runs (from `  stage ...` to the next stage's line), poll the
    driver until a worker can be killed while a task or job runs (busy_worker) and kill it (kill_worker);
    no kill when the stage ends first, or for stage None. The run's process group is killed after
    `timeout` seconds (returncode -9), so no driver JVM outlives it."""
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=loopback_env(cluster.root),
        start_new_session=True,
    )
    result = KilledRun(0, "", "", 0.0)
    err_lines: list[str] = []
    current = [""]  # the stage the run's log last named

    def read_stderr() -> None:
        for line in process.stderr:
            err_lines.append(line)
            named = re.fullmatch(r"  (\w+) \.\.\.", line.rstrip())
            if named and named[1] == stage and result.stage_at is None:
                result.stage_at = time.monotonic() - started
                result.before = snapshot(work)
            if named:
                current[0] = named[1]

    out_chunks: list[str] = []
    threads = [
        threading.Thread(target=read_stderr, daemon=True),
        threading.Thread(target=lambda: out_chunks.append(process.stdout.read()), daemon=True),
    ]
    for thread in threads:
        thread.start()
    try:
        while stage and process.poll() is None and time.monotonic() - started < timeout:
            number = busy_worker(cluster, driver_ui) if current[0] == stage else None
            if number is not None and current[0] == stage:  # still in the stage after the REST calls
                result.killed_at = time.monotonic() - started
                result.worker = number
                result.pids = kill_worker(cluster, number)
                break
            if result.stage_at is not None and current[0] != stage:
                break  # the stage ended before a task was seen running
            time.sleep(0.05)
        process.wait(timeout=max(1.0, timeout - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        pass
    finally:
        _signal_group(process.pid, signal.SIGKILL)  # the run on a timeout, else a driver JVM left behind
        process.wait()
    for thread in threads:
        thread.join(timeout=10)
    result.returncode = process.returncode
    result.seconds = time.monotonic() - started
    result.stdout, result.stderr = "".join(out_chunks), "".join(err_lines)
    return result


def spark_options(driver_ui_port: int, partitions: int = 4) -> list[str]:
    """The `lshsql run` options for a run on the cluster: small executors, `partitions` shuffle partitions
    (several tasks per stage, so a worker is busy when it is killed), the driver's web UI on 127.0.0.1."""
    conf = {
        "spark.executor.memory": "1g",
        "spark.executor.cores": "1",
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.driver.extraJavaOptions": FAST_JVM,
        "spark.executor.extraJavaOptions": FAST_JVM,
        "spark.ui.port": str(driver_ui_port),
        "spark.port.maxRetries": "0",  # the port given or an error, never a neighbour's port
    }
    return [arg for key, value in conf.items() for arg in ("--spark-conf", f"{key}={value}")]


# ---------------------------------------------------------------------------------------------- bench


def _timed(command: list[str]) -> list[str]:
    """`command` under /usr/bin/time, which prints its wall-clock seconds as the last line of stderr."""
    return ["/usr/bin/time", "-f", "wall %e", *command]


def _wall(stderr: str) -> float:
    found = re.findall(r"^wall ([0-9.]+)$", stderr, re.MULTILINE)
    return float(found[-1]) if found else float("nan")


def bench(docs: int, runs: int, stage: str, data: Path, out: Path | None) -> str:
    """`lshsql run --bags` on a 2-worker cluster, `runs` times without a kill and `runs` times with a worker
    killed in `stage` (a fresh cluster each), against one DuckDB run; a RESULTS.md section."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pyarrow.parquet as pq
    from gen_bags import generate
    from results import machine, write_section

    corpus = data / f"b{docs}"
    if not (corpus / "meta.json").exists():
        generate(corpus, docs, 200_000, 90.0, 0.2, 1)
    bags = corpus / "docs.parquet"
    options = ["--weighting", "none", "--threshold", "0.5"]
    lshsql = [sys.executable, "-m", "lshsql", "run", "--bags", str(bags), *options]
    duck = data / "w-duckdb"
    shutil.rmtree(duck, ignore_errors=True)
    subprocess.run([*lshsql, "--work", str(duck), "--quiet"], check=True, capture_output=True)
    truth = pq.read_table(duck / "pairs.parquet")
    truth_rows = truth.to_pylist()  # rows in file order (Spark's file marks other columns nullable)
    rows: list[dict] = []
    for kill in (None, stage):
        for number in range(runs):
            work = data / "w-spark"
            shutil.rmtree(work, ignore_errors=True)
            with running(data / "cluster") as cluster:
                port = free_port()
                command = _timed([*lshsql, "--work", str(work), "--engine", "spark", "--spark-master",
                                  cluster.master_url, *spark_options(port)])  # fmt: skip
                result = run_killing(command, cluster, kill, f"http://127.0.0.1:{port}", work)
            same = result.returncode == 0 and pq.read_table(work / "pairs.parquet").to_pylist() == truth_rows
            last = result.stderr.strip().splitlines()[-2:-1] if result.returncode else []
            row = {
                "kill": kill or "-",
                "run": number + 1,
                "exit": result.returncode,
                "wall": _wall(result.stderr),
                "stage_at": result.stage_at,
                "killed_at": result.killed_at,
                "same_pairs": same,
                "error": last[0] if last else "",
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    text = _markdown(docs, pq.read_metadata(bags).num_rows, truth.num_rows, stage, rows, machine())
    if out:
        write_section(out, "spark-cluster-kill", text)
    return text


def _markdown(docs: int, bag_rows: int, pairs: int, stage: str, rows: list[dict], machine: str) -> str:
    def median(kill: str) -> str:
        walls = [r["wall"] for r in rows if r["kill"] == kill and r["exit"] == 0]
        return f"{statistics.median(walls):.1f}" if walls else "-"

    lines = [
        "## Spark standalone cluster under a worker kill (`bench/spark_cluster.py`)",
        "",
        f"{date.today().isoformat()}, {machine}. `python bench/spark_cluster.py bench --docs {docs} "
        f"--stage {stage}`: a master and two workers (1 core, 1 GB each; `bin/spark-class` of the installed "
        "pyspark, every port on 127.0.0.1), fresh for each run; "
        f"`lshsql run --bags` of {docs:,} bench/gen_bags.py documents ({bag_rows:,} rows), "
        "`--weighting none --threshold 0.5`, "
        "`--engine spark --spark-master spark://127.0.0.1:PORT`, 4 shuffle partitions, executors of 1 GB. "
        f"With a kill: when the run's log says `{stage} ...` and one worker's executor runs a task (the "
        "driver's REST API), `kill -9` of that worker's process group (the Worker JVM, its executor JVM and "
        f"its Python workers). Wall-clock by `/usr/bin/time`. DuckDB's pairs: {pairs:,}.",
        "",
        "| kill | run | exit | wall s | stage began s | killed s | pairs equal DuckDB's |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        began = f"{r['stage_at']:.1f}" if r["stage_at"] is not None else "-"
        killed = f"{r['killed_at']:.1f}" if r["killed_at"] is not None else "-"
        lines.append(
            f"| {r['kill']} | {r['run']} | {r['exit']} | {r['wall']:.1f} | {began} | {killed} | "
            f"{'yes' if r['same_pairs'] else 'NO'} |"
        )
    lines += ["", f"Median wall s: no kill {median('-')}, worker killed in {stage} {median(stage)}."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start a master and workers; stop them all on Ctrl-C or SIGTERM")
    up.add_argument("--root", type=Path, required=True)
    up.add_argument("--workers", type=int, default=2)
    up.add_argument("--port", type=int, default=7077)
    measure = commands.add_parser("bench", help="lshsql run on the cluster with and without a worker kill")
    measure.add_argument("--docs", type=int, default=2_000)
    measure.add_argument("--runs", type=int, default=3)
    measure.add_argument("--stage", default="pairs", choices=["buckets", "pairs"])
    measure.add_argument("--data", type=Path, default=Path("bench-data/spark-cluster"))
    measure.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.command == "bench":
        print(bench(args.docs, args.runs, args.stage, args.data, args.out))
        return
    with running(args.root, args.workers, port=args.port) as cluster:
        print(f"{cluster.master_url} (web UI {cluster.web_url}); Ctrl-C stops it", flush=True)
        try:
            while all(p.poll() is None for p in cluster.processes):
                time.sleep(1)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
