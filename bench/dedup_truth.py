"""Exact truth for dedup benchmarks, and the scores of a dedup result against it.

    python bench/dedup_truth.py bench-data/t50 --threshold 0.7,0.8
    python bench/dedup_truth.py bench-data/t2k --threshold 0.5,0.7,0.8 --check

INPUT is a corpus folder written by gen_text_corpus.py (its meta.json names the files) or JSON Lines /
Parquet files with `id` and `text`; input order is file order, then line (row) order.

Shingles: the text lowercased, words = maximal runs of letters and digits (regex [\\pL\\pN]+, i.e. Python's
[^\\W_]+: punctuation and underscores separate words), shingles = every run of 5 consecutive words (a
document of 1-4 words has one shingle, all of them; one of no words has none and duplicates nothing).
A document is its SET of shingles; Jaccard is |A & B| / |A | B|. Shingles are compared by a 64-bit hash
of their text (DuckDB's hash()); a collision would have to fall between two documents' shingles to
change anything, at about 1e-3 odds for a whole 1 GB corpus.

Pairs: every pair with Jaccard >= T, found without comparing all pairs by the harness's prefix filter
(../shared/bench/benchlib.py exact_pairs: shingles ordered rarest first, a pair can only reach T if the
prefixes of their sorted sets share a shingle, plus size and positional filters), then verified by exact
intersection counts. --check recomputes all pairs by brute force (sparse matrix product over every pair,
shingles made in Python with the `re` module from the JSON read in Python), compares pairs and values,
and checks the input order. Cost: 1 GB of gen_text_corpus.py text (254,651 documents, T = 0.7 and 0.8)
took 21 minutes (554 CPU seconds, most of them making the shingles) and 7.2 GB of RSS on 2 cores that
other processes shared.

Output (OUT, default: the corpus folder, or the first input's folder):
  truth/docs.parquet       pos, id, shingles (distinct), bytes (of text): input order
  truth/truth_<T>.parquet  id_a, id_b, jaccard: every pair with J >= T, id_a before id_b in input order

Scores of a dedup result (score(); used by dedup_compare.py). The truth keeps, greedily in input order,
every document that has no pair with an already kept document; each other document is the truth's
removal and joins the group of the first kept document it duplicates (a group of n documents: n - 1
removals). Given the set R of documents a system removed (K: the rest):
  recall     sum over the truth's groups of min(|R & group|, n - 1), over the truth's removals: a group
             counts as done when all but one of its documents are gone, whichever one stays (peers keep
             different representatives). recall_keep_first, |R & truth's removals| / |truth's removals|,
             is the same for a system that keeps the first document of each group.
  precision  share of R that has a pair (J >= T) with some document in K: its content survives in the
             output. A document removed because it resembles a removed document only (chains
             A ~ B ~ C with A !~ C, B removed) does not count as correct.
  left       truth pairs with both documents in K: duplicates the output still holds.
  partner    (systems that name the kept document of each removal) share of R whose named partner
             is in K and has J >= T with it.
Both recall and precision are 1 for the truth's own greedy result.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import duckdb
import numpy as np

HARNESS = Path(__file__).resolve().parents[2] / "shared" / "bench"
sys.path.insert(0, str(HARNESS))
import benchlib as bl  # noqa: E402

SHINGLE = 5
WORD_RE = r"[\pL\pN]+"


def input_files(inputs: list[Path]) -> list[Path]:
    """A corpus folder (meta.json) or files, in order."""
    files: list[Path] = []
    for path in inputs:
        meta = path / "meta.json"
        if path.is_dir() and meta.exists():
            files += [path / f for f in json.loads(meta.read_text())["files"]]
        elif path.is_dir():
            files += sorted(p for p in path.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz", ".parquet")))
        else:
            files.append(path)
    if not files:
        sys.exit("no input files")
    return files


def read_sql(files: list[Path]) -> str:
    """A DuckDB table expression of (id, text) over the files, in input order."""
    if all(f.name.endswith(".parquet") for f in files):
        return f"read_parquet([{', '.join(bl.sqlstr(str(f)) for f in files)}])"
    names = ", ".join(bl.sqlstr(str(f)) for f in files)
    return f"read_json([{names}], format='newline_delimited', columns={{'id': 'VARCHAR', 'text': 'VARCHAR'}})"


def connect(work: Path, memory_limit: str, threads: int | None) -> duckdb.DuckDBPyConnection:
    work.mkdir(parents=True, exist_ok=True)
    db = work / "truth.duckdb"
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    con.execute(f"SET memory_limit = {bl.sqlstr(memory_limit)}")
    con.execute(f"SET temp_directory = {bl.sqlstr(str(work / 'tmp'))}")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    con.execute("SET enable_progress_bar = false")
    return con


def load(con: duckdb.DuckDBPyConnection, files: list[Path]) -> int:
    """docs(pos, id, text) in input order, then benchlib's bag/sz/bagkey over shingle ranks."""
    # Insertion order is kept by CREATE TABLE AS over a scan, so rowid is the input position.
    con.execute("SET preserve_insertion_order = true")
    con.execute(f"CREATE TABLE raw AS SELECT id::VARCHAR AS id, text::VARCHAR AS text FROM {read_sql(files)}")
    con.execute("CREATE TABLE docs AS SELECT rowid::INTEGER AS pos, id, text FROM raw")
    con.execute("DROP TABLE raw")
    con.execute("SET preserve_insertion_order = false")
    joined = " || ' ' || ".join(f"w[i + {k}]" for k in range(SHINGLE))
    con.execute(f"""CREATE TABLE sh AS
        SELECT pos, unnest(list_distinct(CASE
                 WHEN len(w) = 0 THEN []::UBIGINT[]
                 WHEN len(w) < {SHINGLE} THEN [hash(array_to_string(w, ' '))]
                 ELSE list_transform(range(1, len(w) - {SHINGLE - 2}), lambda i: hash({joined})) END)) AS h
        FROM (SELECT pos, regexp_extract_all(lower(coalesce(text, '')), '{WORD_RE}') AS w FROM docs)""")
    # Shingle ranks, rarest first (ties by hash): benchlib's tid order.
    con.execute("""CREATE TABLE tok AS
        SELECT h, (row_number() OVER (ORDER BY df, h) - 1)::INTEGER AS tid
        FROM (SELECT h, count(*) AS df FROM sh GROUP BY h)""")
    con.execute("CREATE TABLE bag AS SELECT sh.pos AS id, tok.tid FROM sh JOIN tok USING (h)")
    con.execute("DROP TABLE sh; DROP TABLE tok")
    con.execute("CREATE TABLE sz AS SELECT id, count(*)::INTEGER AS n FROM bag GROUP BY id")
    con.execute("CREATE TABLE bagkey AS SELECT (id::BIGINT << 32) | tid AS k FROM bag")
    return con.execute("SELECT count(*) FROM docs").fetchone()[0]


def write_truth(con: duckdb.DuckDBPyConnection, ts: list[float], out: Path) -> dict:
    bl.exact_pairs(con, min(ts), "ex")
    con.execute(f"""COPY (
            SELECT d.pos, d.id, coalesce(sz.n, 0) AS shingles, strlen(coalesce(d.text, '')) AS bytes
            FROM docs d LEFT JOIN sz ON sz.id = d.pos ORDER BY d.pos
        ) TO {bl.sqlstr(str(out / "docs.parquet"))} (FORMAT parquet)""")
    counts = {}
    for t in ts:
        path = out / f"truth_{bl.tstr(t)}.parquet"
        con.execute(f"""COPY (
                SELECT a.id AS id_a, b.id AS id_b, e.jaccard FROM ex e
                JOIN docs a ON a.pos = e.x JOIN docs b ON b.pos = e.y
                WHERE e.jaccard >= {t!r}::DOUBLE ORDER BY e.x, e.y
            ) TO {bl.sqlstr(str(path))} (FORMAT parquet)""")
        counts[bl.tstr(t)] = con.execute(
            f"SELECT count(*) FROM ex WHERE jaccard >= {t!r}::DOUBLE"
        ).fetchone()[0]
    return counts


# -- brute force (--check) ----------------------------------------------------------------------------------


def python_docs(files: list[Path]) -> tuple[list[str], list[str]]:
    import gzip

    import pyarrow.parquet as pq

    ids, texts = [], []
    for f in files:
        if f.name.endswith(".parquet"):
            t = pq.read_table(f, columns=["id", "text"])
            ids += [str(x) for x in t.column("id").to_pylist()]
            texts += [x or "" for x in t.column("text").to_pylist()]
            continue
        opener = gzip.open if f.name.endswith(".gz") else open
        with opener(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    ids.append(str(rec["id"]))
                    texts.append(rec.get("text") or "")
    return ids, texts


def python_shingles(text: str) -> set[str]:
    words = re.findall(r"[^\W_]+", text.lower())
    if not words:
        return set()
    if len(words) < SHINGLE:
        return {" ".join(words)}
    return {" ".join(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def brute_force(files: list[Path], ts: list[float], out: Path) -> dict:
    import scipy.sparse as sp

    ids, texts = python_docs(files)
    order = duckdb.sql(f"SELECT id FROM read_parquet({bl.sqlstr(str(out / 'docs.parquet'))}) ORDER BY pos")
    if [r[0] for r in order.fetchall()] != ids:
        sys.exit("CHECK FAILED: input order differs from the order read in Python")
    vocab: dict[str, int] = {}
    rows, cols = [], []
    for d, text in enumerate(texts):
        for s in python_shingles(text):
            rows.append(d)
            cols.append(vocab.setdefault(s, len(vocab)))
    a = sp.csr_matrix(
        (np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(len(ids), max(1, len(vocab)))
    )
    size = np.asarray(a.sum(axis=1)).ravel()
    inter = (a @ a.T).tocoo()
    keep = inter.row < inter.col
    x, y, o = inter.row[keep], inter.col[keep], inter.data[keep]
    jac = o / (size[x] + size[y] - o)
    report = {}
    for t in ts:
        want = {(ids[i], ids[j]): v for i, j, v in zip(x, y, jac, strict=True) if v >= t}
        got = {
            (a_, b_): v
            for a_, b_, v in duckdb.sql(
                f"SELECT * FROM read_parquet({bl.sqlstr(str(out / f'truth_{bl.tstr(t)}.parquet'))})"
            ).fetchall()
        }
        missing = len(want.keys() - got.keys())
        extra = len(got.keys() - want.keys())
        off = int(sum(abs(got[k] - want[k]) > 1e-9 for k in want.keys() & got.keys()))
        report[bl.tstr(t)] = {
            "brute_force_pairs": len(want),
            "missing": missing,
            "extra": extra,
            "value_off": off,
        }
        if missing or extra or off:
            sys.exit(f"CHECK FAILED at T={t}: {report[bl.tstr(t)]}")
    return report


# -- scores -------------------------------------------------------------------------------------------------


def greedy_groups(pos_a: np.ndarray, pos_b: np.ndarray) -> dict[int, int]:
    """The truth's removals: in input order, a document with a pair to a kept earlier one is removed;
    returns {removed position: position of the first kept document it duplicates}."""
    order = np.lexsort((pos_a, pos_b))
    removed: dict[int, int] = {}
    for a, b in zip(pos_a[order].tolist(), pos_b[order].tolist(), strict=True):
        if a not in removed and b not in removed:
            # b's pairs arrive after every pair of a's (a < b), so a's fate is settled: kept.
            removed[b] = a
    return removed


def group_recall(groups: dict[int, int], removed: set[int]) -> int:
    """Sum over the truth's groups (a kept document and its removals) of min(|removed & group|, n - 1)."""
    members: dict[int, list[int]] = {}
    for doc, kept in groups.items():
        members.setdefault(kept, [kept]).append(doc)
    return sum(min(sum(d in removed for d in group), len(group) - 1) for group in members.values())


def score(truth_dir: Path, t: float, removed: str, con: duckdb.DuckDBPyConnection | None = None) -> dict:
    """Scores of a removal list: `removed` is a Parquet or JSON Lines file with column id, and optionally
    kept_id (the kept document each removal duplicates) and similarity. See the module docstring."""
    con = con or duckdb.connect()
    docs = bl.sqlstr(str(truth_dir / "docs.parquet"))
    truth = bl.sqlstr(str(truth_dir / f"truth_{bl.tstr(t)}.parquet"))
    src = (
        f"read_json({bl.sqlstr(removed)}, format='newline_delimited')"
        if removed.endswith((".jsonl", ".jsonl.gz"))
        else f"read_parquet({bl.sqlstr(removed)})"
    )
    cols = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()}
    partner = "kept_id" in cols
    sim = "similarity" in cols
    con.execute(f"CREATE OR REPLACE TEMP TABLE d AS SELECT pos, id FROM read_parquet({docs})")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE r AS
        SELECT DISTINCT d.pos, {"k.pos" if partner else "NULL::INTEGER"} AS kpos,
               {"rm.similarity::DOUBLE" if sim else "NULL::DOUBLE"} AS sim
        FROM {src} rm JOIN d ON d.id = rm.id::VARCHAR
        {"LEFT JOIN d k ON k.id = rm.kept_id::VARCHAR" if partner else ""}""")
    unknown = con.execute(
        f"SELECT count(*) FROM {src} WHERE id::VARCHAR NOT IN (SELECT id FROM d)"
    ).fetchone()[0]
    con.execute(f"""CREATE OR REPLACE TEMP TABLE e AS
        SELECT a.pos AS a, b.pos AS b, t.jaccard FROM read_parquet({truth}) t
        JOIN d a ON a.id = t.id_a JOIN d b ON b.id = t.id_b""")
    pa, pb = con.execute("SELECT a, b FROM e").fetchnumpy().values()
    groups = greedy_groups(np.asarray(pa, dtype=np.int64), np.asarray(pb, dtype=np.int64))
    truth_removed = list(groups)
    con.execute("CREATE OR REPLACE TEMP TABLE tr AS SELECT unnest($1::BIGINT[]) AS pos", [truth_removed])
    system_removed = {r[0] for r in con.execute("SELECT DISTINCT pos FROM r").fetchall()}
    credit = group_recall(groups, system_removed)
    n_docs = con.execute("SELECT count(*) FROM d").fetchone()[0]
    n_removed = con.execute("SELECT count(DISTINCT pos) FROM r").fetchone()[0]
    found = con.execute("SELECT count(*) FROM tr WHERE pos IN (SELECT pos FROM r)").fetchone()[0]
    covered = con.execute("""SELECT count(DISTINCT x) FROM (
            SELECT a AS x, b AS y FROM e UNION ALL SELECT b, a FROM e)
        WHERE x IN (SELECT pos FROM r) AND y NOT IN (SELECT pos FROM r)""").fetchone()[0]
    left = con.execute(
        "SELECT count(*) FROM e WHERE a NOT IN (SELECT pos FROM r) AND b NOT IN (SELECT pos FROM r)"
    ).fetchone()[0]
    out = {
        "docs": n_docs,
        "removed": n_removed,
        "unknown_ids": unknown,
        "truth_pairs": len(pa),
        "truth_removed": len(truth_removed),
        "found": found,
        "covered": covered,
        "recall": credit / len(truth_removed) if len(truth_removed) else 1.0,
        "recall_keep_first": found / len(truth_removed) if len(truth_removed) else 1.0,
        "precision": covered / n_removed if n_removed else 1.0,
        "left_pairs": left,
    }
    if partner:
        out["partner_ok"] = con.execute("""SELECT count(*) FROM r JOIN e
            ON (e.a = least(r.pos, r.kpos) AND e.b = greatest(r.pos, r.kpos))
            WHERE r.kpos NOT IN (SELECT pos FROM r)""").fetchone()[0]
        out["partner"] = out["partner_ok"] / n_removed if n_removed else 1.0
    if sim:  # mean |similarity - exact Jaccard| over removals whose pair is in the truth
        out["similarity_mae"] = con.execute("""SELECT avg(abs(r.sim - e.jaccard)) FROM r JOIN e
            ON (e.a = least(r.pos, r.kpos) AND e.b = greatest(r.pos, r.kpos))""").fetchone()[0]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("inputs", nargs="+", type=Path, help="corpus folder or JSON Lines / Parquet files")
    parser.add_argument("--threshold", default="0.7", help="T or a comma list (default 0.7)")
    parser.add_argument("--out", type=Path, help="folder for truth/ (default: beside the input)")
    parser.add_argument("--memory-limit", default="8GB")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--check", action="store_true", help="also brute force (up to ~5,000 documents)")
    parser.add_argument(
        "--score", help="score this removal list (Parquet or JSON Lines: id [, kept_id, similarity])"
    )
    args = parser.parse_args()
    ts = sorted({float(x) for x in args.threshold.split(",") if x.strip()})
    files = input_files(args.inputs)
    base = args.out or (args.inputs[0] if args.inputs[0].is_dir() else args.inputs[0].parent)
    out = base / "truth"
    if args.score:
        print(json.dumps({bl.tstr(t): score(out, t, args.score) for t in ts}))
        return
    start = time.perf_counter()
    con = connect(out, args.memory_limit, args.threads)
    n_docs = load(con, files)
    loaded = time.perf_counter() - start
    counts = write_truth(con, ts, out)
    con.close()
    os.remove(out / "truth.duckdb")
    report = {
        "docs": n_docs,
        "pairs": counts,
        "load_s": round(loaded, 2),
        "total_s": round(time.perf_counter() - start, 2),
    }
    if args.check:
        report["check"] = brute_force(files, ts, out)
    (out / "truth.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
