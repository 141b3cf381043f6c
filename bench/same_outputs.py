"""Run two checkouts of lshsql on the same inputs and compare every output file byte for byte.

For changes that must not change results (a restructuring, a reader rewritten): each checkout runs
`lshsql run` on the shared crawls and on a generated bags table, in folders of its own, with the same
interpreter (PYTHONPATH picks the checkout); then the sha256 of every Parquet file of both folders is
compared. manifest.json, info.json and the DuckDB catalog hold times and absolute paths, so they are not
compared. term_counts and bags are written unordered (their readers group or join them), so their bytes may
differ from run to run: those two are compared as multisets of rows. Exit 0 when every output is identical,
1 otherwise.

    git worktree add /tmp/before HEAD~3
    python bench/same_outputs.py /tmp/before . --out /tmp/same
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
CRAWLS = (
    "crawls/fixture-small.warc.gz",
    "crawls/fixture-small.noisy.warc.gz",
    "crawls/fixture-handbook-neardup.warc.gz",
    "crawls/postgresql15.warc.gz",
)


def check_imports(checkout: Path) -> None:
    """Stop unless `lshsql` imported with PYTHONPATH=checkout is that checkout's code."""
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve())}
    found = subprocess.run(
        [sys.executable, "-P", "-c", "import lshsql; print(lshsql.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(found).resolve().is_relative_to(checkout.resolve()):
        raise SystemExit(f"{checkout}: lshsql imports {found} instead")


def run(checkout: Path, args: list[str]) -> None:
    """`lshsql ARGS` with the code of `checkout`."""
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve())}
    # -P: `python -m` would otherwise put the current folder first on sys.path, so run from a checkout
    # both sides would import that checkout's lshsql
    command = [sys.executable, "-P", "-m", "lshsql", *args]
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"{checkout}: lshsql {' '.join(args)} failed:\n{result.stderr}")


UNORDERED = ("term_counts.parquet", "bags.parquet")


def digests(work: Path) -> dict[str, str]:
    """sha256 of every Parquet output; of its sorted rows for the tables written unordered."""
    out = {}
    for path in sorted(work.rglob("*.parquet")):
        name = path.relative_to(work).as_posix()
        if "tmp" not in path.relative_to(work).parts:
            out[name] = (
                rows_digest(path) if name in UNORDERED else hashlib.sha256(path.read_bytes()).hexdigest()
            )
    return out


def rows_digest(path: Path) -> str:
    import duckdb

    with duckdb.connect() as con:
        rows = con.execute("select * from read_parquet($p) order by all", {"p": str(path)}).fetchall()
    return "rows:" + hashlib.sha256(repr(rows).encode()).hexdigest()


def cases(out: Path) -> dict[str, list[str]]:
    """Each case's `lshsql run` arguments, the work folder left out."""
    bags = out / "bags"
    if not (bags / "docs.parquet").exists():
        generator = Path(__file__).with_name("gen_bags.py")
        subprocess.run(
            [sys.executable, str(generator), "--docs", "3000", "--out", str(bags), "--seed", "7"], check=True
        )
    runs = {Path(crawl).name: [str(SHARED / crawl)] for crawl in CRAWLS if (SHARED / crawl).exists()}
    runs["example"] = [str(Path(__file__).resolve().parents[1] / "examples" / "crawl.warc.gz")]
    runs["example-hosts"] = [*runs["example"], "--unit", "host", "--no-aliases"]
    runs["bags"] = ["--bags", str(bags / "docs.parquet"), "--threshold", "0.5"]
    runs["bags-sets-estimated"] = [*runs["bags"], "--weighting", "none", "--no-verify"]
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="checkout of the code before the change")
    parser.add_argument("after", type=Path, help="checkout of the code after it")
    parser.add_argument("--out", type=Path, required=True, help="scratch folder for both runs")
    args = parser.parse_args()
    check_imports(args.before)
    check_imports(args.after)
    different = 0
    for name, arguments in cases(args.out).items():
        outputs = {}
        for side in ("before", "after"):
            work = args.out / side / name
            run(getattr(args, side), ["run", *arguments, "--work", str(work), "--quiet", "--threads", "2"])
            outputs[side] = digests(work)
        same = outputs["before"] == outputs["after"]
        different += not same
        print(f"{name:40} {len(outputs['after']):3} files  {'identical' if same else 'DIFFERENT'}")
        for file in sorted(set(outputs["before"]) | set(outputs["after"])):
            if outputs["before"].get(file) != outputs["after"].get(file):
                print(f"    {file}")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
