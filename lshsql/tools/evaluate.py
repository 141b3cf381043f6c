"""`lshsql eval`: how well a finished run recovers the exact answer, and how good its clusters are.

The exact answer is every pair whose weighted Jaccard reaches the threshold (sql/70_truth.sql, prefix
filtering, no comparison of all pairs). Against it: recall and precision of the run's pairs and
candidates, the similarities of the pairs missed and wrongly kept, What's Related against the exact ten
nearest neighbours of a sample of URLs (Haveliwala et al. 2000, sec. 3), and, given a file of labels,
purity, pairwise F-measure and adjusted Rand index of the clusters. Everything is written to DIR/eval/.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from lshsql import __version__, manifest, sqlfiles, urls, workdir
from lshsql.engines import duckdb as db
from lshsql.engines.base import DuckDBEngine, Engine, materialize_in_parts
from lshsql.errors import InputError, ParamError, one_line
from lshsql.pipeline import output_path
from lshsql.pipeline.rounds import COPIES
from lshsql.tools.cluster_scores import cluster_metrics
from lshsql.tools.cluster_scores import ratio as _ratio

EVAL_DIR = "eval"
TRUTH_SQL = "70_truth.sql"
TRUTH_ALL = {"batches": 1, "batch": 0}  # sql/70_truth.sql's batch parameters for all pairs at once
NEIGHBOURS = 10
BINS = 10
REQUIRED = ("bags", "urls", "candidates", "pairs")


def register_flattened_bags(engine: Engine, path: Path) -> None:
    """The bags as eval measures them: weight = whole copies, round(weight) but at least 1, the multiset the
    signatures estimate and verified pairs are measured on (sql/50_pairs.sql), so truth and pairs agree.
    In a dedup's folder, without its exact copies (DIR/copies.parquet): its pairs are of distinct sets."""
    engine.register({"bags_file": str(path)})
    copies = "cast(greatest(1, cast(round(weight) as integer)) as double) as weight"
    bags = f"select url_id, term_hash, tf, df, {copies} from bags_file"
    if "dedup" in manifest.read(path.parent) and (path.parent / COPIES).exists():
        engine.register({"copies_file": str(path.parent / COPIES)})
        bags += " anti join copies_file using (url_id)"
    engine.view("bags", bags)


def truth(con: duckdb.DuckDBPyConnection, work: Path, threshold: float, batches: int = 1) -> int:
    """Run sql/70_truth.sql on the work folder's bags into DIR/eval/truth.parquet; the rows written. With
    batches > 1, in that many runs, each for the pairs whose smaller bag has url_id % batches = batch. Each
    run joins the index prefixes of 1/batches of the bags with all probe prefixes, so the join, its
    aggregate and the verification (what grows quadratically) are about 1/batches; every run computes the
    prefixes again (a window over all bags: 50 s of each batch at 1M documents)."""
    work = Path(work)
    if type(batches) is not int or batches < 1:  # a template value: a whole number, never text
        raise ParamError(f"truth batches must be a whole number of at least 1, got {batches!r}")
    engine = DuckDBEngine(con)  # eval is DuckDB's: a command of its own, on its own connection
    register_flattened_bags(engine, _existing(work, "bags"))
    out = work / EVAL_DIR / "truth.parquet"
    sql, params = sqlfiles.load(TRUTH_SQL), {"threshold": float(threshold)}
    if batches == 1:
        return engine.materialize(sql, params | TRUTH_ALL, out)
    part_params = [{"batches": batches, "batch": batch} for batch in range(batches)]
    return materialize_in_parts(
        engine,
        sql,
        params,
        [None] * batches,
        work / EVAL_DIR / "truth_batches",
        "u_id, v_id",
        out,
        part_params=part_params,
    )


@workdir.writer
def evaluate(
    work: str | Path,
    threshold: float | None = None,
    labels: str | Path | None = None,
    sample: int = 100,
    seed: int = 1,
    resources: db.Resources | None = None,
) -> dict:
    """Compare a finished run with the exact pairs and (given labels) score its clusters; writes DIR/eval/."""
    started = time.perf_counter()
    work = Path(work)
    if not work.is_dir():
        raise InputError(f"{work}: no such work folder")
    for relation in REQUIRED + (("clusters",) if labels is not None else ()):
        _existing(work, relation)
    threshold = _threshold(work, threshold)
    if sample < 0:
        raise ParamError(f"sample must be >= 0, got {sample}")
    if not 0 <= seed < 2**32:
        raise ParamError(f"seed must be in 0..2^32-1, got {seed}")
    out = work / EVAL_DIR
    out.mkdir(parents=True, exist_ok=True)
    resources = db.for_work(work, resources)
    result: dict = {"work": str(work), "threshold": threshold, "lshsql": __version__}
    with db.connect(resources) as con:
        relations = REQUIRED + (("clusters",) if output_path(work, "clusters").exists() else ())
        sqlfiles.register_inputs(con, {r: str(output_path(work, r)) for r in relations if r != "bags"})
        register_flattened_bags(DuckDBEngine(con), output_path(work, "bags"))
        result["truth"] = _truth_cached(con, work, threshold)
        sqlfiles.register_inputs(con, {"truth": str(out / "truth.parquet")})
        result["pairs"] = _recall_precision(con, "pairs")
        result["candidates"] = _recall_precision(con, "candidates")
        result["histograms"] = _histograms(con, out)
        result["neighbours"] = _neighbours(con, out, sample, seed)
        result["clusters"] = _cluster_quality(con, Path(labels)) if labels is not None else None
    result["seconds"] = round(time.perf_counter() - started, 3)
    workdir.write_text(out / "eval.json", json.dumps(result, indent=2) + "\n")
    return result


def summary_lines(result: dict) -> list[str]:
    """A short printable table of an evaluate() result."""
    lines = [f"threshold {result['threshold']:g}: {result['truth']['pairs']:,} exact pairs"]
    lines.append(f"{'':<12}{'rows':>12}{'correct':>10}{'recall':>9}{'precision':>11}")
    for name in ("pairs", "candidates"):
        entry = result[name]
        lines.append(
            f"{name:<12}{entry['rows']:>12,}{entry['correct']:>10,}"
            f"{_fmt(entry['recall']):>9}{_fmt(entry['precision']):>11}"
        )
    hist = result["histograms"]
    edges = hist["edges"]
    for name in ("missed", "wrong"):
        shown = [f"{edges[i]:.1f}:{n}" for i, n in enumerate(hist[name]) if n]
        lines.append(f"{name} by exact J: {' '.join(shown) or 'none'}")
    nn = result["neighbours"]
    lines.append(
        f"related vs exact {nn['k']} nearest neighbours: overlap@{nn['k']} {_fmt(nn['overlap'])} "
        f"over {nn['evaluated']} of {nn['sample']} sampled URLs"
    )
    if result.get("clusters"):
        lines += quality_lines(result["clusters"])
    lines.append(f"seconds {result['seconds']:.2f} (truth {result['truth']['seconds']:.2f})")
    return lines


def quality_lines(quality: dict) -> list[str]:
    """Two printable lines of cluster scores against labels (cluster_metrics' result)."""
    kind = "label sets, a pair agrees when it shares a label" if quality.get("multi_label") else "labels"
    return [
        f"clusters ({quality['urls']:,} labelled URLs, {quality['clusters']:,} clusters, "
        f"{quality['labels']:,} {kind}): purity {_fmt(quality['purity'])}, "
        f"inverse purity {_fmt(quality['inverse_purity'])}, class F {_fmt(quality['class_f'])}",
        f"  pairwise precision {_fmt(quality['pairwise_precision'])}, "
        f"recall {_fmt(quality['pairwise_recall'])}, F {_fmt(quality['pairwise_f'])}, "
        f"accuracy {_fmt(quality['pairwise_accuracy'])}, ARI {_fmt(quality['ari'])}",
    ]


# ---------------------------------------------------------------- steps


def _existing(work: Path, relation: str) -> Path:
    path = output_path(work, relation)
    if not path.exists():
        raise InputError(f"{work}: no {path.name}; run `lshsql run --work {work}` first")
    return path


def _threshold(work: Path, threshold: float | None) -> float:
    if threshold is None:
        try:
            threshold = manifest.read(work)["params"]["threshold"]
        except (KeyError, TypeError, json.JSONDecodeError):
            raise InputError(f"{work}: no threshold in manifest.json; give one") from None
    threshold = float(threshold)
    if not 0 < threshold <= 1:
        raise ParamError(f"threshold must be in (0, 1], got {threshold}")
    return threshold


def _truth_cached(con: duckdb.DuckDBPyConnection, work: Path, threshold: float) -> dict:
    """The exact pairs; eval/truth.parquet is reused when made from the same bags, SQL and threshold."""
    bags = output_path(work, "bags").stat()
    key = hashlib.sha256(
        json.dumps(
            [bags.st_size, bags.st_mtime_ns, threshold, sqlfiles.load(TRUTH_SQL).text, __version__, "copies"]
        ).encode()
    ).hexdigest()[:16]
    previous = _previous(work).get("truth") or {}
    if previous.get("fingerprint") == key and (work / EVAL_DIR / "truth.parquet").exists():
        return {**previous, "reused": True}
    started = time.perf_counter()
    rows = truth(con, work, threshold)
    return {"pairs": rows, "seconds": round(time.perf_counter() - started, 3), "fingerprint": key}


def _previous(work: Path) -> dict:
    path = work / EVAL_DIR / "eval.json"
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    return {}


def _recall_precision(con: duckdb.DuckDBPyConnection, relation: str) -> dict:
    """A pair of `relation` is correct when it is an exact pair (its exact Jaccard reaches the threshold)."""
    rows, correct, n_truth = con.execute(
        f"select (select count(*) from {relation}), "
        f"(select count(*) from {relation} semi join truth using (u_id, v_id)), "
        "(select count(*) from truth)"
    ).fetchall()[0]
    return {
        "rows": rows,
        "correct": correct,
        "recall": _ratio(correct, n_truth),
        "precision": _ratio(correct, rows),
    }


def _histograms(con: duckdb.DuckDBPyConnection, out: Path) -> dict:
    """Exact similarity of the exact pairs the run missed and of the pairs it kept below the threshold."""
    _copy(con, QUERIES["missed"], {}, out / "missed.parquet")
    _copy(con, QUERIES["wrong"], {}, out / "wrong.parquet")
    edges = [i / BINS for i in range(BINS + 1)]
    hist = {"edges": edges}
    for name in ("missed", "wrong"):
        counts = dict(
            con.execute(
                f"select least(cast(floor(jaccard * {BINS}) as integer), {BINS - 1}) as bin, count(*) "
                "from read_parquet($p) group by bin",
                {"p": str(out / f"{name}.parquet")},
            ).fetchall()
        )
        hist[name] = [int(counts.get(i, 0)) for i in range(BINS)]
    return hist


def _neighbours(con: duckdb.DuckDBPyConnection, out: Path, sample: int, seed: int) -> dict:
    """overlap@10 of What's Related with the exact 10 nearest neighbours, over a seeded sample of URLs."""
    ids = np.array([r[0] for r in con.execute("select distinct url_id from bags order by url_id").fetchall()])
    chosen = np.sort(np.random.RandomState(seed).choice(ids, size=min(sample, len(ids)), replace=False))
    con.register("sample_ids", pa.table({"url_id": pa.array(chosen.tolist(), pa.int64())}))
    _copy(con, QUERIES["neighbours"], {"k": NEIGHBOURS}, out / "neighbours.parquet")
    overlaps = con.execute(
        "select url_id, count(*) filter (where related_rank is not null) / count(*) "
        "from read_parquet($p) where exact_rank is not null group by url_id",
        {"p": str(out / "neighbours.parquet")},
    ).fetchall()
    con.unregister("sample_ids")
    return {
        "k": NEIGHBOURS,
        "sample": len(chosen),
        "seed": seed,
        "evaluated": len(overlaps),
        "overlap": float(np.mean([o for _, o in overlaps])) if overlaps else None,
    }


def _cluster_quality(con: duckdb.DuckDBPyConnection, path: Path) -> dict:
    """Scores of the clusters against the labels of the labelled URLs that have a cluster."""
    table = _read_labels(con, path)
    con.register("labels_given", table)
    try:
        rows = con.execute(QUERIES["contingency"]).fetchall()
    finally:
        con.unregister("labels_given")
    contingency = [(c, labels[0] if len(labels) == 1 else tuple(labels), n) for c, labels, n in rows]
    return {"labels_file": str(path), "labelled_rows": table.num_rows, **cluster_metrics(contingency)}


def score_clusters(clusters: str | Path, labels: str | Path, resources: db.Resources | None = None) -> dict:
    """Scores of any flat clustering with the clusters table's columns (clusters, a cut of the cluster
    tree) against a labels file: what `eval --labels` reports, without the pair evaluation."""
    if not Path(clusters).is_file():
        raise InputError(f"{clusters}: no such clusters file")
    with db.connect(resources or db.Resources()) as con:
        sqlfiles.register_inputs(con, {"clusters": str(clusters)})
        return _cluster_quality(con, Path(labels))


def _read_labels(con: duckdb.DuckDBPyConnection, path: Path) -> pa.Table:
    """url, canonical url and label of a Parquet or CSV file with columns url, label; a URL with several
    labels has a row for each (distinct rows)."""
    if not path.is_file():
        raise InputError(f"{path}: no such labels file")
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            relation = con.read_parquet(str(path))
        elif suffix in (".csv", ".tsv", ".txt"):
            relation = con.read_csv(str(path), header=True)
        else:
            raise InputError(f"{path}: labels must be a .parquet or .csv file with columns url, label")
        missing = {"url", "label"} - set(relation.columns)
        if missing:
            raise InputError(
                f"{path}: labels need columns url and label (missing: {', '.join(sorted(missing))})"
            )
        rows = relation.project("cast(url as varchar) as url, cast(label as varchar) as label").fetchall()
    except duckdb.Error as e:
        raise InputError(f"{path}: not a readable labels file: {one_line(e, 200)}") from None
    labelled = sorted({(url, label) for url, label in rows if url is not None and label is not None})
    canonical: dict[str, str] = {}
    for url, _ in labelled:
        if url not in canonical:
            try:
                canonical[url] = urls.canonicalize(url)
            except urls.UrlError:
                canonical[url] = url
    return pa.table(
        {
            "url": [url for url, _ in labelled],
            "canonical": [canonical[url] for url, _ in labelled],
            "label": [label for _, label in labelled],
        },
        schema=pa.schema([("url", pa.string()), ("canonical", pa.string()), ("label", pa.string())]),
    )


def _copy(con: duckdb.DuckDBPyConnection, query: str, params: dict, path: Path) -> None:
    con.execute(
        f"copy ({query}) to $lshsql_out (format parquet, compression zstd)",
        {**params, "lshsql_out": str(path)},
    ).fetchall()


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


# Exact weighted Jaccard of given pairs, as sql/70_truth.sql verifies its candidates: each side's terms
# gathered per pair and matched on (pair, term) by a group by, DECIMAL sums, shared / (W_u + W_v - shared).
_EXACT = """
    bag_totals as (
        select url_id, cast(sum(cast(weight as decimal(38, 12))) as double) as total_weight
        from bags group by url_id
    ),
    pair_terms as (
        select given.u_id, given.v_id, bags.term_hash, bags.weight
        from given inner join bags on given.u_id = bags.url_id
        union all
        select given.u_id, given.v_id, bags.term_hash, bags.weight
        from given inner join bags on given.v_id = bags.url_id
    ),
    shared_terms as (
        select u_id, v_id, min(weight) as min_weight
        from pair_terms group by u_id, v_id, term_hash having count(*) = 2
    ),
    shared_weights as (
        select u_id, v_id, cast(sum(cast(min_weight as decimal(38, 12))) as double) as min_weight
        from shared_terms group by u_id, v_id
    ),
    exact as (
        select
            given.u_id,
            given.v_id,
            coalesce(shared_weights.min_weight, 0)
            / (total_u.total_weight + total_v.total_weight - coalesce(shared_weights.min_weight, 0))
            as jaccard
        from given
        left join shared_weights using (u_id, v_id)
        inner join bag_totals as total_u on given.u_id = total_u.url_id
        inner join bag_totals as total_v on given.v_id = total_v.url_id
    )
"""

QUERIES = {
    # exact pairs the run did not keep; in_candidates tells whether LSH found them at all
    "missed": """
        select url_u.url as u, url_v.url as v, truth.u_id, truth.v_id, truth.jaccard,
               exists (select 1 from candidates where candidates.u_id = truth.u_id
                       and candidates.v_id = truth.v_id) as in_candidates
        from truth
        anti join pairs using (u_id, v_id)
        inner join urls as url_u on truth.u_id = url_u.url_id
        inner join urls as url_v on truth.v_id = url_v.url_id
        order by truth.u_id, truth.v_id
    """,
    # pairs the run kept whose exact Jaccard is below the threshold
    "wrong": f"""
        with given as (select u_id, v_id, similarity from pairs anti join truth using (u_id, v_id)),
        {_EXACT}
        select pairs.u, pairs.v, pairs.u_id, pairs.v_id, pairs.similarity, exact.jaccard
        from exact inner join pairs using (u_id, v_id)
        order by pairs.u_id, pairs.v_id
    """,
    # per sampled URL: its exact k nearest neighbours (any similarity > 0: the URLs sharing a term) and
    # the k URLs What's Related lists (pairs by estimated similarity desc, ties by URL = by url_id)
    "neighbours": """
        with bag_totals as (
            select url_id, cast(sum(cast(weight as decimal(38, 12))) as double) as total_weight
            from bags group by url_id
        ),
        sample_terms as (
            select sample_ids.url_id, bags.term_hash, bags.weight
            from sample_ids inner join bags on sample_ids.url_id = bags.url_id
        ),
        shared_weights as (
            select
                sample_terms.url_id,
                bags.url_id as neighbour_id,
                cast(sum(cast(least(sample_terms.weight, bags.weight) as decimal(38, 12))) as double)
                    as min_weight
            from sample_terms
            inner join bags on sample_terms.term_hash = bags.term_hash and sample_terms.url_id <> bags.url_id
            group by sample_terms.url_id, bags.url_id
        ),
        exact_ranked as (
            select
                shared_weights.url_id,
                shared_weights.neighbour_id,
                shared_weights.min_weight
                / (total_u.total_weight + total_v.total_weight - shared_weights.min_weight) as jaccard,
                row_number() over (
                    partition by shared_weights.url_id
                    order by shared_weights.min_weight
                    / (total_u.total_weight + total_v.total_weight - shared_weights.min_weight) desc,
                    shared_weights.neighbour_id
                ) as exact_rank
            from shared_weights
            inner join bag_totals as total_u on shared_weights.url_id = total_u.url_id
            inner join bag_totals as total_v on shared_weights.neighbour_id = total_v.url_id
        ),
        related as (
            select sample_ids.url_id, pairs.v_id as neighbour_id, pairs.similarity
            from sample_ids inner join pairs on sample_ids.url_id = pairs.u_id
            union all
            select sample_ids.url_id, pairs.u_id as neighbour_id, pairs.similarity
            from sample_ids inner join pairs on sample_ids.url_id = pairs.v_id
        ),
        related_ranked as (
            select
                related.*,
                row_number() over (
                    partition by related.url_id order by related.similarity desc, related.neighbour_id
                ) as related_rank
            from related
        ),
        both_lists as (
            select
                coalesce(exact_top.url_id, related_top.url_id) as url_id,
                coalesce(exact_top.neighbour_id, related_top.neighbour_id) as neighbour_id,
                exact_top.exact_rank,
                exact_top.jaccard,
                related_top.related_rank,
                related_top.similarity
            from (select * from exact_ranked where exact_rank <= $k) as exact_top
            full join (select * from related_ranked where related_rank <= $k) as related_top
                on exact_top.url_id = related_top.url_id and exact_top.neighbour_id = related_top.neighbour_id
        )
        select
            url_u.url,
            both_lists.url_id,
            url_v.url as neighbour,
            both_lists.neighbour_id,
            both_lists.exact_rank,
            both_lists.jaccard,
            both_lists.related_rank,
            both_lists.similarity
        from both_lists
        inner join urls as url_u on both_lists.url_id = url_u.url_id
        inner join urls as url_v on both_lists.neighbour_id = url_v.url_id
        order by both_lists.url_id, both_lists.exact_rank nulls last, both_lists.related_rank
    """,
    # (cluster, label set, URLs): labelled URLs matched to clusters as written, else in canonical form
    "contingency": """
        with matched as (
            select
                labels_given.url,
                labels_given.label,
                coalesce(as_written.center_id, as_canonical.center_id) as center_id
            from labels_given
            left join clusters as as_written on labels_given.url = as_written.url
            left join clusters as as_canonical on labels_given.canonical = as_canonical.url
        ),
        per_url as (
            select url, center_id, list_sort(list(distinct label)) as labels
            from matched
            where center_id is not null
            group by url, center_id
        )
        select center_id, labels, count(*) as n
        from per_url
        group by center_id, labels
        order by center_id, labels
    """,
}
