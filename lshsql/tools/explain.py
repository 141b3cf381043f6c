"""`lshsql explain`: why two URLs were paired (or not), and what describes one URL.

Everything comes from the work folder's tables: the signatures (estimate and colliding LSH tables, recomputed
from the stored family/lsh_tables.parquet), the bags (exact similarity and the shared terms), candidates,
pairs and clusters (what the run decided), and links (the anchor phrases other pages use).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.tools.explore import cluster_key, find_url, open_work, require_outputs, unreadable

TOP = 10
# What each explanation reads, in the order a run makes them: the first missing one is named.
PAIR_READS = ("urls", "terms", "bags", "signatures", "candidates", "pairs", "clusters")
URL_READS = ("urls", "terms", "bags", "pairs", "clusters")


def _url_id(con, url: str) -> tuple[str, int]:
    """The URL as the urls table has it (as given, else canonicalized; see explore.find_url) and its id."""
    found = find_url(con, url)
    if found is None:
        raise InputError(f"{url}: not described in this work folder (as given or canonicalized)")
    return found, db.scalar(con, "select url_id from urls where url = $url", {"url": found})


def _has(con, relation: str) -> bool:
    return bool(db.scalar(con, "select count(*) from duckdb_views() where view_name = $v", {"v": relation}))


def _anchor_phrases(con, url: str) -> list[tuple[str, int]]:
    if not _has(con, "links"):
        return []
    return con.execute(
        "select anchor_text, count(*) as n from links where target_url = $url and anchor_text <> '' "
        "group by anchor_text order by n desc, anchor_text limit 5",
        {"url": url},
    ).fetchall()


def explain_pair(work: str | Path, u: str, v: str, resources: db.Resources | None = None) -> dict:
    """The evidence for and against pairing u and v (DuckDB within `resources`, see explore.open_work)."""
    work = Path(work)
    with open_work(work, resources) as con:
        require_outputs(work, *PAIR_READS)
        u, u_id = _url_id(con, u)
        v, v_id = _url_id(con, v)
        if u_id == v_id:
            raise ParamError(f"the two URLs are the same, {u}: give two different URLs, or one to explain it")
        if u_id > v_id:
            (u, u_id), (v, v_id) = (v, v_id), (u, u_id)
        signatures = {
            row[0]: row[1:]
            for row in con.execute(
                "select * from signatures where url_id in ($u, $v)", {"u": u_id, "v": v_id}
            ).fetchall()
        }
        unsigned = [url for url, url_id in ((u, u_id), (v, v_id)) if url_id not in signatures]
        if unsigned:
            raise InputError(f"{unsigned[0]}: no bag (all its terms were dropped), so no signature")
        agree = [a == b for a, b in zip(signatures[u_id], signatures[v_id], strict=True)]
        tables = _collided_tables(con, work, agree)
        shared = con.execute(SHARED_TERMS, {"u": u_id, "v": v_id}).fetchall()
        exact = con.execute(EXACT, {"u": u_id, "v": v_id}).fetchall()[0]
        candidate = con.execute(
            "select n_bands from candidates where u_id = $u and v_id = $v", {"u": u_id, "v": v_id}
        ).fetchall()
        pair = con.execute(
            "select similarity from pairs where u_id = $u and v_id = $v", {"u": u_id, "v": v_id}
        ).fetchall()
        centers = dict(
            con.execute(
                "select url_id, center from clusters where url_id in ($u, $v)", {"u": u_id, "v": v_id}
            ).fetchall()
        )
        return {
            "u": u,
            "v": v,
            "agreeing": sum(agree),
            "num_perm": len(agree),
            "estimate": sum(agree) / len(agree),
            "jaccard_flattened": exact[0],
            "jaccard_weights": exact[1],
            "tables_collided": tables,
            "is_candidate": bool(candidate),
            "similarity_kept": pair[0][0] if pair else None,
            "same_cluster": centers.get(u_id) is not None and centers.get(u_id) == centers.get(v_id),
            "centers": (centers.get(u_id), centers.get(v_id)),
            "shared_terms": shared,
            "anchors": {u: _anchor_phrases(con, u), v: _anchor_phrases(con, v)},
        }


def _collided_tables(con, work: Path, agree: list[bool]) -> list[int] | None:
    path = work / "family" / "lsh_tables.parquet"
    if not path.exists():
        return None
    try:
        rows = con.execute(
            "select band, list(hash_index order by slot) from read_parquet($p) group by band order by band",
            {"p": str(path)},
        ).fetchall()
    except duckdb.Error as e:
        raise InputError(unreadable(path, e, f"rerun `lshsql run --work {work} --force`")) from None
    return [band for band, indices in rows if all(agree[i] for i in indices)]


def explain_url(work: str | Path, url: str, resources: db.Resources | None = None) -> dict:
    """A URL alone: its heaviest terms, its cluster (center, size, is_center and the cluster_id `lshsql show`
    takes), its pairs, and the anchor phrases for it."""
    with open_work(work, resources) as con:
        require_outputs(Path(work), *URL_READS)
        url, url_id = _url_id(con, url)
        terms = con.execute(
            "select terms.term, bags.weight, bags.tf, bags.df from bags inner join terms using (term_hash) "
            "where bags.url_id = $id order by bags.weight desc, terms.term limit $n",
            {"id": url_id, "n": TOP},
        ).fetchall()
        cluster = con.execute(
            f"select center, size, is_center, {cluster_key(con)} from clusters where url_id = $id",
            {"id": url_id},
        ).fetchall()
        n_pairs = db.scalar(con, "select count(*) from pairs where u_id = $id or v_id = $id", {"id": url_id})
        return {
            "url": url,
            "url_id": url_id,
            "terms": terms,
            "cluster": cluster[0] if cluster else None,
            "n_pairs": n_pairs,
            "anchors": _anchor_phrases(con, url),
        }


def pair_lines(e: dict) -> list[str]:
    """What `lshsql explain U V` prints."""
    verdict = (
        f"kept as a pair, similarity {e['similarity_kept']:.3f}"
        if e["similarity_kept"] is not None
        else ("a candidate, but below the threshold" if e["is_candidate"] else "never a candidate")
    )
    tables = e["tables_collided"]
    out = [
        f"u: {e['u']}",
        f"v: {e['v']}",
        f"verdict: {verdict}; {'same cluster' if e['same_cluster'] else 'different clusters'}",
        f"estimate: {e['agreeing']} of {e['num_perm']} min-hashes agree = {e['estimate']:.3f}",
        f"exact weighted Jaccard: {e['jaccard_flattened']:.3f} of the flattened bags (what the estimate "
        f"targets), {e['jaccard_weights']:.3f} of the real weights",
        "LSH tables where they collided: "
        + (
            "unknown (no family/lsh_tables.parquet)"
            if tables is None
            else (", ".join(map(str, tables)) or "none")
        ),
        "",
        "shared terms by contribution, min(weight u, weight v):",
    ]
    out += [
        f"  {term:<24} {contribution:8.3f}   (u {wu:.3f}, v {wv:.3f})"
        for term, contribution, wu, wv in e["shared_terms"]
    ] or ["  none"]
    for url, phrases in e["anchors"].items():
        if phrases:
            out += ["", f"anchor phrases for {url}:"] + [f"  {n:>4} x {text}" for text, n in phrases]
    return out


def url_lines(e: dict) -> list[str]:
    """What `lshsql explain U` prints."""
    cluster = e["cluster"]
    where = (
        f"{cluster[3]}, center of a cluster of {cluster[1]}"
        if cluster and cluster[2]
        else f"{cluster[3]}, in the cluster of {cluster[0]} ({cluster[1]} URLs)"
        if cluster
        else "no cluster (no bag)"
    )
    out = [
        f"url: {e['url']} (url_id {e['url_id']})",
        f"cluster: {where}; {e['n_pairs']} pairs",
        "",
        "heaviest terms (weight, tf, df):",
    ]
    out += [f"  {term:<24} {weight:8.3f} {tf:6.0f} {df:6d}" for term, weight, tf, df in e["terms"]] or [
        "  none"
    ]
    if e["anchors"]:
        out += ["", "anchor phrases other pages use for it:"] + [
            f"  {n:>4} x {text}" for text, n in e["anchors"]
        ]
    return out


SHARED_TERMS = """
select
    terms.term,
    least(bag_u.weight, bag_v.weight) as contribution,
    bag_u.weight,
    bag_v.weight
from bags as bag_u
inner join bags as bag_v on bag_u.term_hash = bag_v.term_hash
inner join terms on bag_u.term_hash = terms.term_hash
where bag_u.url_id = $u and bag_v.url_id = $v
order by contribution desc, terms.term
limit 10
"""

EXACT = """
with both_bags as (
    select url_id, term_hash, weight, cast(greatest(1, cast(round(weight) as integer)) as double) as copies
    from bags where url_id in ($u, $v)
),
per_term as (
    select term_hash, min(copies) as min_copies, max(copies) as max_copies, min(weight) as min_weight,
           max(weight) as max_weight, count(*) as n_sides
    from both_bags group by term_hash
)
select
    sum(case when n_sides = 2 then min_copies else 0 end) / sum(max_copies),
    sum(case when n_sides = 2 then min_weight else 0 end) / sum(max_weight)
from per_term
"""
