"""Same input, parameters and seed: byte-identical outputs, whatever the number of DuckDB threads.

Every stage but term_counts and bags ends in an ordered COPY to Parquet, so its file must not depend on how
DuckDB split the work. Checked with sha256 on every stage's output (pairs and clusters above all; the sorted
rows of the two unordered tables), for a bags table of 2,800 docs
with planted near-duplicates (fixed numpy seed) and for the example crawl (extract, then the SQL stages).
A different seed must change the min-hash family and so signatures.parquet. Exact: no tolerance.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import numpy as np
import pytest

from lshsql import pipeline
from lshsql.params import Params
from tests.properties._support import read_columns, resources, sha256, write_parquet

BASE_DOCS, DUPLICATES, VOCABULARY = 2000, 800, 3000
PARAMS = Params(weighting="tfidf", threshold=0.5, seed=1)
# verify=True sums min(weight) in parallel aggregates, the likeliest place for thread-dependent float bits.
# It is checked on a smaller table: its term join grows with df^2 (4.6 s for the full table, see report).
VERIFY_PARAMS = Params(weighting="tfidf", threshold=0.5, seed=1, verify=True)
SIGNATURE_STAGES = ("term_counts", "urls", "terms", "bags", "signatures")


def planted_bags(
    path: Path, base_docs: int = BASE_DOCS, duplicates: int = DUPLICATES
) -> tuple[Path, list[tuple[str, str]]]:
    """Docs of 30-60 Zipf-distributed tokens (repeats add up to tf > 1); each duplicate copies a base doc
    with 10-20% of its tokens replaced. Returns the Parquet file and the planted (base, copy) URL pairs."""
    rng = np.random.default_rng(20240607)
    zipf = 1 / np.arange(1, VOCABULARY + 1)
    zipf /= zipf.sum()
    docs: dict[str, np.ndarray] = {}
    for i in range(base_docs):
        docs[f"http://site{i % 37}.example/page/{i}"] = rng.choice(
            VOCABULARY, size=rng.integers(30, 61), p=zipf
        )
    bases = list(docs)
    planted = []
    for j in range(duplicates):
        base = bases[rng.integers(base_docs)]
        tokens = docs[base].copy()
        changed = rng.uniform(size=len(tokens)) < rng.uniform(0.1, 0.2)
        tokens[changed] = rng.choice(VOCABULARY, size=int(changed.sum()), p=zipf)
        copy = f"http://mirror{j % 11}.example/copy/{j}"
        docs[copy] = tokens
        planted.append((base, copy))
    urls = [u for u, tokens in docs.items() for _ in tokens]
    terms = [f"w{t}" for tokens in docs.values() for t in tokens]
    # Small row groups, so that DuckDB scans the input in parallel at 2 threads.
    return write_parquet(path, {"url": urls, "term": terms}, row_group_size=4096), planted


UNORDERED = ("term_counts", "bags")  # written unordered (see their headers): rows fixed, bytes not


def digests(work: Path) -> dict[str, str]:
    """sha256 of every stage's file; of the sorted rows for the stages written unordered."""
    out = {}
    for name in pipeline.STAGE_NAMES:
        path = pipeline.output_path(work, name)
        if name in UNORDERED:
            if path.exists():
                out[name] = rows_digest(path)
        else:
            out[name] = sha256(path)
    return out


def rows_digest(path: Path) -> str:
    with duckdb.connect() as con:
        rows = con.execute("select * from read_parquet($p) order by all", {"p": str(path)}).fetchall()
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def run_at_1_and_2_threads(root: Path, bags: Path, params: Params) -> dict[int, Path]:
    works = {}
    for threads in (1, 2):
        works[threads] = root / f"threads{threads}"
        pipeline.run(works[threads], params, bags=bags, resources=resources(works[threads], threads))
    return works


def assert_identical(one: dict[str, str], two: dict[str, str]) -> None:
    different = [name for name in one if one[name] != two[name]]
    assert not different, f"outputs differ between thread counts: {different}"


@pytest.fixture(scope="module")
def bags_runs(tmp_path_factory) -> tuple[Path, list[tuple[str, str]], dict[int, Path]]:
    root = tmp_path_factory.mktemp("determinism_bags")
    bags, planted = planted_bags(root / "input_bags.parquet")
    return bags, planted, run_at_1_and_2_threads(root, bags, PARAMS)


def test_bags_run_is_byte_identical_at_1_and_2_threads(bags_runs):
    bags, planted, works = bags_runs
    one, two = digests(works[1]), digests(works[2])
    assert_identical(one, two)
    # ...and again at 2 threads, forced, in the same folder (run-to-run, not only thread-count, stability).
    pipeline.run(works[2], PARAMS, bags=bags, resources=resources(works[2], 2), force=True)
    assert_identical(one, digests(works[2]))
    # The run is not trivial: most planted near-duplicates are pairs and some clusters have members.
    pairs = read_columns(works[1] / "pairs.parquet")
    found = set(zip(pairs["u"], pairs["v"], strict=True))
    hits = sum((min(a, b), max(a, b)) in found for a, b in planted)
    assert hits >= 0.5 * len(planted), f"only {hits} of {len(planted)} planted duplicates found"
    assert (read_columns(works[1] / "clusters.parquet")["size"] > 1).sum() >= len(planted)


def test_verified_jaccard_is_byte_identical_at_1_and_2_threads(tmp_path):
    bags, _ = planted_bags(tmp_path / "input_bags.parquet", base_docs=500, duplicates=200)
    works = run_at_1_and_2_threads(tmp_path, bags, VERIFY_PARAMS)
    assert_identical(digests(works[1]), digests(works[2]))
    jaccard = read_columns(works[1] / "pairs.parquet")["jaccard"]
    assert len(jaccard) > 50 and not np.isnan(jaccard.astype(float)).any()


def test_the_oph_sketch_is_byte_identical_at_1_and_2_threads(tmp_path):
    # tfidf bags: weighted, flattened to term#j, which the one-permutation sketch hashes too
    bags, planted = planted_bags(tmp_path / "input_bags.parquet", base_docs=500, duplicates=200)
    params = Params(weighting="tfidf", threshold=0.5, seed=1, sketch="oph", num_perm=128)
    works = run_at_1_and_2_threads(tmp_path, bags, params)
    assert_identical(digests(works[1]), digests(works[2]))
    pairs = read_columns(works[1] / "pairs.parquet")
    found = set(zip(pairs["u"], pairs["v"], strict=True))
    assert sum((min(a, b), max(a, b)) in found for a, b in planted) >= 0.5 * len(planted)


def test_a_different_seed_changes_the_signatures(bags_runs, tmp_path):
    bags, _, works = bags_runs
    for seed, expect_same in ((1, True), (2, False)):
        work = tmp_path / f"seed{seed}"
        params = Params(weighting="tfidf", threshold=0.5, seed=seed)
        pipeline.run(work, params, bags=bags, resources=resources(work, 2), only=SIGNATURE_STAGES)
        same = sha256(work / "signatures.parquet") == sha256(works[1] / "signatures.parquet")
        assert same == expect_same, f"seed {seed}"
        assert rows_digest(work / "bags.parquet") == rows_digest(
            works[1] / "bags.parquet"
        )  # seed: hashes only


def test_example_crawl_is_byte_identical_at_1_and_2_threads(example_run, example_run_two):
    """At 1 thread: conftest.example_run (extracted by 1 worker, run on 1 DuckDB thread); at 2:
    conftest.example_run_two (2 workers in batches of 8 pages, 2 DuckDB threads)."""
    assert_identical(digests(example_run), digests(example_run_two))
    assert (
        pq_rows(example_run_two / "pairs.parquet") > 0 and pq_rows(example_run_two / "clusters.parquet") > 0
    )


def pq_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows
