"""`lshsql explain U V` on a `lshsql dedup` work folder: the two documents' shingles, shared and not, and
the words that differ, read again from the input files (a dedup keeps no text of its own).

The shingle sets come from the folder's bags (what the dedup compared); the text of a shingle is found by
hashing the document's shingles again (sources/shingles.py), so what is shown is what was compared.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import numpy as np
import pyarrow as pa

from lshsql import manifest
from lshsql.engines import duckdb as db
from lshsql.engines.minhash import finalize64
from lshsql.errors import ParamError
from lshsql.sources import corpus
from lshsql.sources.shingles import TABLE_SIZE, code_point_tables, normal_form, shingle_hashes
from lshsql.tools.explain import _collided_tables, _url_id
from lshsql.tools.explore import open_work, require_outputs

SHOWN = 8
_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits, as the shingling kernel splits words


# A document's near-duplicates: the pairs of its shingle set (its own, or the one of the document it is an
# exact copy of) with other sets, each named by the first document of the set and its number of copies
NEAR_SETS = """
with
sets as (
    select
        documents.url_id,
        documents.url,
        coalesce(documents.copy_of, documents.url_id) as set_id,
        count(*) over (partition by coalesce(documents.copy_of, documents.url_id)) - 1 as n_copies
    from documents
    where documents.url_id is not null
),
mine as (select sets.set_id from sets where sets.url_id = $id),
near as (
    select pairs.v_id as set_id, pairs.similarity from pairs inner join mine on pairs.u_id = mine.set_id
    union all
    select pairs.u_id as set_id, pairs.similarity from pairs inner join mine on pairs.v_id = mine.set_id
)
select sets.url, near.similarity, sets.n_copies
from near inner join sets on near.set_id = sets.url_id
order by near.similarity desc, sets.url
limit $n
"""
# A document's shingle set: its first document (the url itself for an original) and how many documents
# share it besides the url
SAME_SET = """
with mine as (
    select coalesce(documents.copy_of, documents.url_id) as set_id from documents where documents.url_id = $id
)
select
    (select documents.url from documents, mine where documents.url_id = mine.set_id),
    (select count(*) from documents, mine
     where coalesce(documents.copy_of, documents.url_id) = mine.set_id and documents.url_id <> $id)
"""


def _with_copy_of(con, work: Path) -> None:
    """The view documents of a dedup made before exact copies were set aside gets copy_of, null: it has
    none (its copies were compared like any document, so their pairs are in pairs)."""
    if "copy_of" not in con.sql("select * from documents limit 0").columns:
        table = con.read_parquet(str(work / "documents.parquet"))
        table.project("*, cast(null as bigint) as copy_of").create_view("documents", replace=True)


def is_dedup(work: str | Path) -> bool:
    """The folder holds a `lshsql dedup`."""
    return "dedup" in manifest.read(work)


def explain_pair(work: str | Path, u: str, v: str, resources: db.Resources | None = None) -> dict:
    """Why two documents are, or are not, near-duplicates: their shingles, the min-hash estimate, the
    colliding LSH tables, what the dedup decided, and the words that differ."""
    work = Path(work)
    params = manifest.read(work)["dedup"]["params"]
    with open_work(work, resources) as con:
        require_outputs(work, "urls", "bags", "signatures", "pairs", "documents", "duplicates")
        _with_copy_of(con, work)
        (u, u_id), (v, v_id) = sorted((_url_id(con, u), _url_id(con, v)), key=lambda pair: pair[1])
        if u_id == v_id:
            raise ParamError(f"the two documents are the same, {u}: give two different ones")
        sets = {
            url_id: set(hashes)
            for url_id, hashes in con.execute(
                "select url_id, list(term_hash) from bags where url_id in ($u, $v) group by url_id",
                {"u": u_id, "v": v_id},
            ).fetchall()
        }
        signatures = {  # an exact copy's is the one of the document it copies
            row[0]: row[1:]
            for row in con.execute(
                "select documents.url_id, signatures.* exclude (url_id) from documents inner join signatures "
                "on coalesce(documents.copy_of, documents.url_id) = signatures.url_id "
                "where documents.url_id in ($u, $v)",
                {"u": u_id, "v": v_id},
            ).fetchall()
        }
        agree = [a == b for a, b in zip(signatures[u_id], signatures[v_id], strict=True)]
        decided = dict(
            con.execute(
                "select url, reason || coalesce(' of ' || kept_id, '') from duplicates where url in ($u, $v)",
                {"u": u, "v": v},
            ).fetchall()
        )
        where = con.execute(
            "select url_id, source, ord from documents where url_id in ($u, $v) and not earlier",
            {"u": u_id, "v": v_id},
        ).fetchall()
        tables = _collided_tables(con, work, agree)
    texts = document_texts(where, params, db.for_work(work, resources))
    n, chars = (params["char_shingle"], True) if params["char_shingle"] else (params["shingle"], False)
    shared = sets[u_id] & sets[v_id]
    return {
        "u": u,
        "v": v,
        "threshold": params["threshold"],
        "decided": (decided.get(u, "kept by the earlier dedup"), decided.get(v, "kept by the earlier dedup")),
        "shared": len(shared),
        "only": (len(sets[u_id] - shared), len(sets[v_id] - shared)),
        "jaccard": len(shared) / len(sets[u_id] | sets[v_id]),
        "agreeing": sum(agree),
        "num_perm": len(agree),
        "tables_collided": tables,
        "examples": _shingle_texts(texts.get(u_id), texts.get(v_id), sets[u_id], sets[v_id], n, chars),
        "differences": _differences(texts.get(u_id), texts.get(v_id)),
    }


def document_lines(work: str | Path, url: str, resources: db.Resources | None = None) -> list[str]:
    """What `lshsql explain U` prints for a dedup folder: the document's decision, shingles and pairs."""
    work = Path(work)
    with open_work(work, resources) as con:
        require_outputs(work, "urls", "pairs", "documents", "duplicates")
        _with_copy_of(con, work)
        url, url_id = _url_id(con, url)
        row, source, ord_, n_shingles, earlier = con.execute(
            "select row, source, ord, n_shingles, earlier from documents where url_id = $id", {"id": url_id}
        ).fetchall()[0]
        decided = con.execute(
            "select reason || coalesce(' of ' || kept_id || ' (similarity ' || round(similarity, 3) || ')', "
            "'') from duplicates where url = $url",
            {"url": url},
        ).fetchall()
        pairs = con.execute(NEAR_SETS, {"id": url_id, "n": SHOWN}).fetchall()
        (first, n_same) = con.execute(SAME_SET, {"id": url_id}).fetchall()[0]
    out = [
        f"document: {url}",
        f"decision: {decided[0][0] if decided else 'kept by the earlier dedup'}",
        f"read from: {source}"
        + ("" if earlier else f", its record {ord_} (row {row} of the input); {n_shingles} shingles"),
    ]
    if first != url:
        others = f"{n_same:,} other document{'' if n_same == 1 else 's'}"
        out.append(f"exact copy of: {first}, compared in its place ({others} with its shingles)")
    elif n_same:
        out.append(f"exact copies (the same shingles): {n_same:,}, compared as this document")
    out += ["", "near-duplicates (similarity):"]
    return out + (
        [
            f"  {other}  {similarity:.3f}"
            + (f"  (and its {n_copies:,} exact {'copy' if n_copies == 1 else 'copies'})" if n_copies else "")
            for other, similarity, n_copies in pairs
        ]
        or ["  none"]
    )


def document_texts(
    where: list[tuple[int, str, int]], params: dict, resources: db.Resources
) -> dict[int, str]:
    """The text of each (url_id, file, ord), read again from its file, one pass per file however many
    are asked for; none for an in-memory table or a file that is gone."""
    wanted: dict[str, dict[int, list[int]]] = {}  # file -> ord -> url_ids
    for url_id, path, ord_ in where:
        if Path(path).is_file():
            wanted.setdefault(path, {}).setdefault(ord_, []).append(url_id)
    texts: dict[int, str] = {}
    for path, ords_wanted in wanted.items():
        left = set(ords_wanted)
        source = corpus.resolve_corpus([path])[0]
        for batch in corpus.scan(source, params["id_column"], params["text_column"], None, resources):
            ords = batch.column(0).to_pylist()
            raw = batch.column(2).cast(pa.large_binary())  # invalid UTF-8 read as the shingling reads it
            for ord_ in [o for o in left if ords[0] <= o <= ords[-1]]:
                value = raw[ords.index(ord_)].as_py()
                text = None if value is None else value.decode("utf-8", "replace")
                texts.update(dict.fromkeys(ords_wanted[ord_], text))
                left.discard(ord_)
            if not left:
                break
    return texts


def _words(text: str) -> list[str]:
    """The words the shingling kernel reads (sources/shingles.py): runs of letters and digits of the text's
    normal form, each code point lowercased by the kernel's table."""
    _, lower = code_point_tables()
    return [
        "".join(chr(lower[ord(c)]) if ord(c) < TABLE_SIZE else c for c in word)
        for word in _WORD.findall(normal_form(text))
    ]


def _char_shingle_hash(window: str) -> int:
    """The kernel's hash of a character shingle given as text, spaces and all: fed back to the kernel, a
    window that starts or ends with the space between two words would lose it."""
    h = np.uint64(len(window))
    for c in window:
        h = finalize64(h ^ np.uint64(ord(c)))
    return int(h >> np.uint64(1))


def _shingles(text: str, n: int, chars: bool) -> list[str]:
    words = _words(text)
    if chars:
        joined = " ".join(words)
        return [joined[i : i + n] for i in range(max(1, len(joined) - n + 1))] if joined else []
    return [" ".join(words[i : i + n]) for i in range(max(1, len(words) - n + 1))] if words else []


def _shingle_texts(
    text_u: str | None, text_v: str | None, set_u: set[int], set_v: set[int], n: int, chars: bool
) -> dict[str, list[str]]:
    """Up to SHOWN shingles shared, only in u and only in v, in text order, as text."""
    out: dict[str, list[str]] = {"shared": [], "only in u": [], "only in v": []}
    for text, other, alone, shared_here in (
        (text_u, set_v, "only in u", True),
        (text_v, set_u, "only in v", text_u is None),
    ):
        if text is None:
            continue
        shingles = _shingles(text, n, chars)
        if chars:
            hashes = [_char_shingle_hash(shingle) for shingle in shingles]
        else:
            hashes = shingle_hashes(pa.array(shingles, pa.string()), n, chars)[0].tolist()
        for shingle, h in zip(shingles, hashes, strict=True):
            key = "shared" if h in other else alone
            if (key == alone or shared_here) and shingle not in out[key] and len(out[key]) < SHOWN:
                out[key].append(shingle)
    return out


def _differences(text_u: str | None, text_v: str | None) -> list[tuple[str, str]]:
    """The first SHOWN runs of words that differ: (words of u, words of v), either side may be empty."""
    if text_u is None or text_v is None:
        return []
    a, b = _words(text_u), _words(text_v)
    runs = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if op != "equal":
            runs.append((_brief(a[i1:i2]), _brief(b[j1:j2])))
    return runs[:SHOWN]


def _brief(words: list[str], most: int = 16) -> str:
    return " ".join(words[:most]) + (f" ... ({len(words)} words)" if len(words) > most else "")


def pair_lines(e: dict) -> list[str]:
    """What `lshsql explain U V` prints for a dedup folder."""
    tables = e["tables_collided"]
    out = [
        f"u: {e['u']} ({e['decided'][0]})",
        f"v: {e['v']} ({e['decided'][1]})",
        f"shingles: {e['shared']} shared, {e['only'][0]} only in u, {e['only'][1]} only in v: Jaccard"
        f" {e['jaccard']:.3f} (threshold {e['threshold']})",
        f"estimate: {e['agreeing']} of {e['num_perm']} min-hashes agree = "
        f"{e['agreeing'] / e['num_perm']:.3f}",
        "LSH tables where they collided: "
        + ("unknown" if tables is None else (", ".join(map(str, tables)) or "none")),
    ]
    if not any(e["examples"].values()):
        out.append("(the texts are not at hand: the input files are gone or were in-memory tables)")
    for key, shingles in e["examples"].items():
        if shingles:
            out += ["", f"shingles {key}:"] + [f"  {s}" for s in shingles]
    if e["differences"]:
        out += ["", "words that differ (u | v):"] + [
            f"  {a or '-'} | {b or '-'}" for a, b in e["differences"]
        ]
    return out
