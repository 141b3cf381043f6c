# lshsql: `make help` lists the targets. Every target creates .venv itself when it is missing.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
CRAWL  ?= examples/crawl.warc.gz
WORK   ?= work/example

.DEFAULT_GOAL := help
.PHONY: help install demo test test-all lint docs bench bench-extract bench-peers bench-peers-1m bench-kernel bench-oph bench-scale bench-reuse bench-incremental bench-reuters bench-dedup bench-chapters bench-spark bench-spark-kill clean

help:  ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

# One venv; a stamp per set of packages, so `make demo` installs only what the pipeline needs.
$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.demo: pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet .
	@touch $@

$(VENV)/.test: pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@ $(VENV)/.demo

$(VENV)/.test-all: pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install --quiet -e '.[test,spark]'
	@touch $@ $(VENV)/.test $(VENV)/.demo

install: $(VENV)/.test  ## Create .venv and install lshsql (editable) with its test extras

demo: $(VENV)/.demo  ## Run the pipeline on the bundled example crawl and print the largest clusters
	$(BIN)/lshsql run $(CRAWL) --work $(WORK) --quiet
	$(BIN)/lshsql clusters --work $(WORK) --limit 10

test: $(VENV)/.test  ## The everyday loop: every test but the slow and Spark ones (uses ../shared/data where present)
	$(BIN)/python -m pytest -n 2 --dist loadfile -m "not slow and not spark"

# The oldest DuckDB readers docs/outputs.md says open DIR/lshsql.duckdb, for tests/e2e/test_catalog.py.
OLD_DUCKDB := .old-duckdb

$(OLD_DUCKDB)/.done: | $(VENV)/bin/python
	$(BIN)/pip install --quiet --no-deps --target $(OLD_DUCKDB)/cli duckdb-cli==1.4.4
	$(BIN)/pip install --quiet --no-deps --target $(OLD_DUCKDB)/py duckdb==1.0.0
	chmod +x $(OLD_DUCKDB)/cli/bin/duckdb
	@touch $@

test-all: $(VENV)/.test-all $(OLD_DUCKDB)/.done  ## Every test: the slow ones (long fuzzing, real crawls) and the Spark engine too (CI runs this)
	$(BIN)/python -m pytest -n 2 --dist loadfile --hypothesis-profile thorough

lint: install  ## ruff check and format check; import-linter's layer and no-cycle contracts (pyproject.toml); sqlfluff on sql/ (.sqlfluff)
	$(BIN)/pip install --quiet ruff import-linter sqlfluff
	$(BIN)/ruff check lshsql tests bench docs/generate.py
	$(BIN)/ruff format --check lshsql tests bench docs/generate.py
	$(BIN)/lint-imports
	$(BIN)/sqlfluff lint sql

docs: $(VENV)/.test  ## Regenerate docs/cli.md and docs/outputs.md from the commands' --help and lshsql/schemas.py
	$(BIN)/python docs/generate.py

BENCH_VENV := .bench-venv
SHARED_BENCH := ../shared/bench

$(BENCH_VENV)/bin/python: $(SHARED_BENCH)/requirements.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet -r $(SHARED_BENCH)/requirements.txt
	@touch $@

bench: bench-extract bench-peers bench-peers-1m bench-kernel bench-oph bench-scale bench-reuse bench-incremental bench-reuters bench-dedup bench-chapters  ## All benchmarks -> bench/RESULTS.md (about 6 h on 2 cores)

bench-extract: install  ## Extraction pages/s and MB/s on the largest shared crawl, 5 runs
	$(BIN)/python bench/extract_speed.py --runs 5 --out bench/RESULTS.md

bench-peers: install $(BENCH_VENV)/bin/python  ## lshsql vs datasketch and rensa, 10k and 100k docs, T 0.5 and 0.8, 3 runs
	$(BIN)/python bench/peers.py --sizes 10000,100000 --thresholds 0.5,0.8 --runs 3 --out bench/RESULTS.md

bench-peers-1m: install $(BENCH_VENV)/bin/python  ## The same at 1M docs, T 0.5 and 0.8, lshsql with --memory-limit 4GB, truth by bench/truth.py in 16 batches, 3 runs (~2.5 h)
	$(BIN)/python bench/peers.py --sizes 1000000 --thresholds 0.5,0.8 --runs 3 --truth lshsql --truth-batches 16 \
		--lshsql-args "--memory-limit 4GB --threads 2" --section peers-1m --out bench/RESULTS.md

bench-kernel: install $(BENCH_VENV)/bin/python  ## The signatures stage against its numba kernel and rensa's, 3 runs
	$(BIN)/python bench/minhash_kernel.py --runs 3 --out bench/RESULTS.md

bench-oph: install  ## The signatures stage and kernel with each sketch (minhash, oph at m 80/128/256)
	$(BIN)/python bench/oph_sketch.py --runs 3 --out bench/RESULTS.md

bench-scale: install  ## Bags -> clusters at 100k, 1M, 10M URLs (limits 4GB, 4GB, 8GB): time, RSS, spill
	$(BIN)/python bench/scale.py --sizes 100000,1000000,10000000 --memory-limit 4GB,4GB,8GB --out bench/RESULTS.md

bench-reuse: install  ## A 1M-URL bags table grown by 10 %: rerun in the same folder vs a run from scratch, 3 rounds
	test -f bench-data/reuse/b1000000/docs.parquet || $(BIN)/python bench/gen_bags.py --docs 1000000 --out bench-data/reuse/b1000000
	$(BIN)/python bench/reuse_speed.py bench-data/reuse/b1000000/docs.parquet --out bench-data/reuse/runs --rounds 3
bench-incremental: install  ## A grown crawl and a 1M-URL --bags table grown by 10 %: the run in the last run's folder vs from scratch, ids kept
	$(BIN)/python bench/incremental.py --docs 1000000 --runs 3 --out bench/RESULTS.md

bench-reuters: install  ## Reuters-21578: LSH vs exact single-link at 1k, 10k, all docs: time, F-measure
	$(BIN)/python bench/reuters.py --sizes 1000,10000,all,body --runs 3 --threshold 0.25 --cuts 0.25,0.3,0.35 --headline-cut 0.25 --sweep 0.2:0.4:0.01 --out bench/RESULTS.md

DEDUP_VENV := .dedup-venv

$(DEDUP_VENV)/bin/python: bench/dedup-requirements.txt
	$(PYTHON) -m venv $(DEDUP_VENV)
	$(DEDUP_VENV)/bin/pip install --quiet -r bench/dedup-requirements.txt
	@touch $@

bench-dedup: install $(DEDUP_VENV)/bin/python  ## lshsql dedup vs datatrove and text-dedup on 1 GB of generated text, T 0.7: time, MB/s, RSS, recall, precision
	$(BIN)/python bench/dedup_compare.py --mb 1000 --thresholds 0.7 --runs 3 --runs-for datatrove=1 --runs-for text-dedup=1 \
		--peer-python $(DEDUP_VENV)/bin/python --lshsql-args "--memory-limit 4GB --threads 2" --md bench/RESULTS.md

CHAPTERS_VENV := .chapters-venv

$(CHAPTERS_VENV)/bin/python: bench/chapters-requirements.txt
	$(PYTHON) -m venv $(CHAPTERS_VENV)
	$(CHAPTERS_VENV)/bin/pip install --quiet -r bench/chapters-requirements.txt
	@touch $@

# Variants are named `lshsql run` arguments: keep (the paper's windows) and blocks (windows stopped at block
# boundaries) need the extraction options --templates and --window-blocks; a variant that fails is reported.
bench-chapters: install $(CHAPTERS_VENV)/bin/python  ## Chapter labels of the PostgreSQL and Python manuals: neighbours, 5-NN chapter precision, clusters vs TF-IDF cosine
	$(BIN)/python bench/chapters.py --variant default= --variant "cut=--templates cut" --variant "keep=--templates keep" \
		--variant "blocks=--window-blocks" --variant "keep+blocks=--templates keep --window-blocks" \
		--baseline-python $(CHAPTERS_VENV)/bin/python --out bench/RESULTS.md

bench-spark: $(VENV)/.test-all  ## run --bags (10k docs) and extract (shared crawls) on DuckDB and Spark local[2]: median wall of 3, peak RSS with the JVM
	$(BIN)/python bench/spark_engine.py --docs 10000 --runs 3 --out bench/RESULTS.md

bench-spark-kill: $(VENV)/.test-all  ## run --bags (500 docs) on a local 2-worker Spark cluster, a worker killed in pairs or not: 3 runs each
	$(BIN)/python bench/spark_cluster.py bench --docs 500 --runs 3 --stage pairs --out bench/RESULTS.md

clean:  ## Remove .venv, work/ and caches
	rm -rf $(VENV) work .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
