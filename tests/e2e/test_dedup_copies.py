"""`lshsql dedup` sets exact copies (documents with the same shingle set) aside before the LSH stages: only
the first of each set in keep order is signed and compared, and the others follow its decision. Checked
against the dedup's rule applied by brute force to every document (CENTER over the exact Jaccard of all
pairs), on a corpus where copies are most of the documents, with every keep policy, --against, explain."""

from __future__ import annotations

import json
import re
import unicodedata

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import lshsql
from lshsql.cli import app
from lshsql.sources.shingles import shingle_hashes
from lshsql.tools.dedup import DedupParams, dedup_files

RNG = np.random.default_rng(20261128)
VOCAB = [f"{a}{b}{c}" for a in "bcdfghklmnprstvz" for b in "aeiou" for c in "bcdfghklmnprstvz"][:3000]


def words(n: int) -> list[str]:
    return [VOCAB[i] for i in RNG.integers(0, len(VOCAB), n)]


def corpus() -> list[dict]:
    """An error page and 200 copies of it (some in capitals with blanks after: the same shingles, more
    bytes); a document, a near-duplicate of it and 30 copies of that near-duplicate; copies of a document
    whose near-duplicate comes first; and 20 unrelated documents, one of them twice."""
    page = "Page not found. Sorry, the page you asked for is not here: go back to the home page."
    source = words(200)
    near = list(source)
    near[100] = "changed"
    late = words(150)
    late_near = list(late)
    late_near[20] = "edited"
    docs = [{"id": "page", "text": page}]
    docs += [{"id": f"page-{i}", "text": page if i % 3 else page.upper() + "   "} for i in range(200)]
    docs += [{"id": "source", "text": " ".join(source)}, {"id": "near", "text": " ".join(near)}]
    docs += [{"id": f"near-{i}", "text": " ".join(near)} for i in range(30)]
    docs += [{"id": "late-near", "text": " ".join(late_near)}]
    docs += [{"id": f"late-{i}", "text": " ".join(late)} for i in range(5)]
    for i in range(20):
        docs.append({"id": f"other-{i}", "text": " ".join(words(120))})
    docs.append({"id": "other-again", "text": docs[-1]["text"]})
    return docs


def brute_force(docs: list[dict], order: list[int], threshold: float) -> dict[str, tuple]:
    """What the dedup decides, from the exact Jaccard of every pair: in keep order, a document is kept
    unless a kept document before it is its near-duplicate, and removed for the first such one."""
    hashes, counts = shingle_hashes(pa.array([d["text"] for d in docs]), 5)
    starts = np.concatenate([[0], np.cumsum(counts)])
    sets = [frozenset(hashes[starts[i] : starts[i + 1]].tolist()) for i in range(len(docs))]
    kept: list[int] = []
    decided = {}
    for i in order:
        for k in kept:
            jaccard = len(sets[i] & sets[k]) / len(sets[i] | sets[k])
            if jaccard >= threshold:
                decided[docs[i]["id"]] = ("duplicate", docs[k]["id"], jaccard)
                break
        else:
            kept.append(i)
            decided[docs[i]["id"]] = ("kept", None, None)
    return decided


def decisions(work) -> dict[str, tuple]:
    found = rows(f"select id, reason, kept_id, similarity from '{work}/duplicates.parquet'")
    return {doc_id: (reason, kept_id, similarity) for doc_id, reason, kept_id, similarity in found}


def rows(query: str) -> list[tuple]:
    """A query's rows, on a connection of its own: the module's default connection is shared with every
    test of the process, and DuckDB refuses a query on it while another's result is unfinished."""
    with duckdb.connect() as con:
        return con.sql(query).fetchall()


def write_jsonl(path, docs) -> None:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")


@pytest.fixture(scope="module")
def copies_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("copies")
    docs = corpus()
    write_jsonl(folder / "corpus.jsonl", docs)
    summary = dedup_files([str(folder / "corpus.jsonl")], folder / "work")
    return folder, docs, summary


def test_copies_follow_the_first_document_of_their_set(copies_run):
    folder, docs, summary = copies_run
    expected = brute_force(docs, list(range(len(docs))), 0.7)
    assert decisions(folder / "work") == expected
    assert expected["page-7"] == ("duplicate", "page", 1.0)
    # the copies of a removed document go where it goes, with its similarity
    assert expected["near-3"] == expected["near"] and expected["near"][:2] == ("duplicate", "source")
    # a near-duplicate first, its copies' set after it
    assert expected["late-0"][:2] == ("duplicate", "late-near") and expected["late-4"] == expected["late-0"]
    assert summary.kept == 23 and summary.removed == len(docs) - 23 and summary.largest_group == 201
    assert (
        summary.exact_copies == 235
        and "  exact copies (the same shingles, compared once): 235" in summary.lines()
    )


def test_only_the_first_of_a_set_is_signed_and_compared(copies_run):
    folder, docs, _ = copies_run
    work = folder / "work"
    count = lambda table: rows(f"select count(*) from '{work}/{table}.parquet'")[0][0]  # noqa: E731
    n_copies = 200 + 30 + 4 + 1  # of page, of near, of late-0 (the first of late's), of other-19
    assert count("copies") == n_copies
    assert count("signatures") == len(docs) - n_copies
    # every copy in the cluster of the document it copies; candidates and pairs between sets only
    (outside,) = rows(
        f"select count(*) from '{work}/copies.parquet' as c "
        f"join '{work}/clusters.parquet' as copied on c.url_id = copied.url_id "
        f"join '{work}/clusters.parquet' as original on c.copy_of = original.url_id "
        "where copied.center_id <> original.center_id or copied.is_center"
    )[0]
    assert outside == 0 and count("clusters") == len(docs)
    (with_copies,) = rows(
        f"select count(*) from '{work}/candidates.parquet' as c join '{work}/copies.parquet' as k "
        "on k.url_id in (c.u_id, c.v_id)"
    )[0]
    assert with_copies == 0 and count("candidates") < 10
    size, least = rows(
        f"select size, min_pair_similarity from '{work}/clusters.parquet' where url like '% page'"
    )[0]
    assert (size, least) == (201, 1.0)


@pytest.mark.parametrize("keep", ["longest", "rank"])
def test_the_copy_first_in_keep_order_is_the_one_kept(tmp_path, keep):
    docs = corpus()
    for i, doc in enumerate(docs):
        doc["rank"] = (i * 37) % 101  # ties broken by input order
    write_jsonl(tmp_path / "corpus.jsonl", docs)
    dedup_files([str(tmp_path / "corpus.jsonl")], tmp_path / "work", DedupParams(keep=keep))
    if keep == "longest":
        key = lambda i: (-len(docs[i]["text"].encode()), i)  # noqa: E731
    else:
        key = lambda i: (-docs[i]["rank"], i)  # noqa: E731
    expected = brute_force(docs, sorted(range(len(docs)), key=key), 0.7)
    assert decisions(tmp_path / "work") == expected
    if keep == "longest":  # a copy in capitals has blanks after it: it is longer, so it stays
        assert expected["page-0"] == ("kept", None, None) and expected["page"] == ("duplicate", "page-0", 1.0)


def test_copies_of_an_earlier_corpus_are_removed_for_its_document(tmp_path, copies_run):
    folder, docs, _ = copies_run
    write_jsonl(tmp_path / "new.jsonl", [{"id": f"again-{i}", "text": docs[0]["text"]} for i in range(40)])
    summary = dedup_files([str(tmp_path / "new.jsonl")], tmp_path / "work", against=folder / "work")
    removed = lshsql.removed(tmp_path / "work").to_pylist()
    assert summary.removed_by_earlier == 40 and summary.kept == 0
    assert {(r["kept_id"], r["kept_earlier"], r["similarity"]) for r in removed} == {("page", True, 1.0)}


def test_explain_an_exact_copy(copies_run):
    folder, _, _ = copies_run
    work = str(folder / "work")
    runner = CliRunner()
    (near_url, copy_url, source_url) = (
        rows(f"select url from '{work}/documents.parquet' where id = '{doc_id}'")[0][0]
        for doc_id in ("near", "near-5", "source")
    )
    one = runner.invoke(app, ["explain", "--work", work, copy_url])
    assert one.exit_code == 0, one.output
    assert "decision: duplicate of source (similarity 0.9" in one.output
    assert (
        f"exact copy of: {near_url}, compared in its place (30 other documents with its shingles)"
        in one.output
    )
    listed = one.output.split("near-duplicates (similarity):")[1].splitlines()
    assert len(listed) == 2 and listed[1].startswith(f"  {source_url}  0.9")
    kept = runner.invoke(app, ["explain", "--work", work, source_url])
    assert f"{near_url}  0.9" in kept.output and "(and its 30 exact copies)" in kept.output
    original = runner.invoke(app, ["explain", "--work", work, near_url]).output
    assert "exact copies (the same shingles): 30, compared as this document" in original
    pair = runner.invoke(app, ["explain", "--work", work, copy_url, near_url])
    assert pair.exit_code == 0, pair.output
    assert "Jaccard 1.000" in pair.output and "80 of 80" in pair.output


def test_one_text_in_composed_and_decomposed_accents_is_one_document(tmp_path):
    text = "Le café crème de la fiancée naïve, servi à côté du théâtre, était très apprécié ce matin-là."
    forms = [{"id": form, "text": unicodedata.normalize(form, text)} for form in ("NFC", "NFD", "NFKD")]
    assert len({doc["text"] for doc in forms}) == 2  # NFKD is NFD here: no compatibility characters
    write_jsonl(tmp_path / "forms.jsonl", forms)
    summary = dedup_files([str(tmp_path / "forms.jsonl")], tmp_path / "work")
    removed = [
        (r["id"], r["kept_id"], r["similarity"]) for r in lshsql.removed(tmp_path / "work").to_pylist()
    ]
    assert removed == [("NFD", "NFC", 1.0), ("NFKD", "NFC", 1.0)] and summary.exact_copies == 2


def test_related_web_page_and_eval_read_a_document_through_its_set(copies_run):
    folder, _, _ = copies_run
    work = folder / "work"
    url_of = dict(rows(f"select id, url from '{work}/documents.parquet'"))
    listed = lshsql.related(work, url_of["near-5"], limit=100).to_pylist()
    similarity = {row["related_url"]: row["similarity"] for row in listed}
    assert similarity[url_of["near"]] == similarity[url_of["near-29"]] == 1.0 and len(listed) == 31
    assert similarity[url_of["source"]] == decisions(work)["near-5"][2]  # its set's pair, to a copy too
    from_source = {
        row["related_url"] for row in lshsql.related(work, url_of["source"], limit=100).to_pylist()
    }
    assert from_source == {url_of["near"], *(url_of[f"near-{i}"] for i in range(30))}

    from lshsql.web import site, url

    _, body = url.render(site.open_site(work), {"u": [url_of["page-3"]]})
    assert "What's Related (200 pairs)" in body and "80 of 80" in body

    result = lshsql.evaluate(work)  # the exact pairs of distinct sets, as the pairs are
    assert result["pairs"]["recall"] == 1.0 and result["pairs"]["precision"] == 1.0


def test_run_refuses_a_dedup_folder_and_ignores_copies_elsewhere(tmp_path, copies_run):
    folder, _, _ = copies_run
    bags = tmp_path / "bags.parquet"
    terms = [(f"u{d}", f"t{t}") for d in range(6) for t in range(d // 2 * 10, d // 2 * 10 + 12)]
    pq.write_table(pa.table({"url": [u for u, _ in terms], "term": [t for _, t in terms]}), bags)
    with pytest.raises(lshsql.InputError, match="the work folder of `lshsql dedup`"):
        lshsql.run(folder / "work", bags=bags, params=lshsql.Params(weighting="none", threshold=0.5))
    run_folder = tmp_path / "run"
    lshsql.run(run_folder, bags=bags, params=lshsql.Params(weighting="none", threshold=0.5))
    pq.write_table(pa.table({"url_id": [2, 4], "copy_of": [1, 3]}), run_folder / "copies.parquet")
    lshsql.run(run_folder, bags=bags, params=lshsql.Params(weighting="none", threshold=0.5), force=True)
    members = rows(f"select url, size from '{run_folder}/clusters.parquet' order by url")
    assert members == [(f"u{d}", 2) for d in range(6)]


def test_explain_shows_character_shingles_where_they_are(tmp_path):
    from lshsql.tools.dedup_explain import explain_pair

    text = "Le café crème de la fiancée naïve était très apprécié ce matin"
    docs = [
        {"id": "nfc", "text": text},
        {"id": "nfd", "text": unicodedata.normalize("NFD", text)},
        {"id": "edited", "text": text.replace("matin", "soir")},
    ]
    write_jsonl(tmp_path / "c.jsonl", docs)
    dedup_files([str(tmp_path / "c.jsonl")], tmp_path / "work", DedupParams(char_shingle=5, threshold=0.5))
    url_of = dict(rows(f"select id, url from '{tmp_path}/work/documents.parquet'"))
    same = explain_pair(tmp_path / "work", url_of["nfc"], url_of["nfd"])
    assert same["jaccard"] == 1.0 and same["examples"]["only in u"] == same["examples"]["only in v"] == []

    def windows(t: str) -> set[str]:
        joined = " ".join(re.findall(r"[^\W_]+", t.lower()))
        return {joined[i : i + 5] for i in range(len(joined) - 4)}

    edited = explain_pair(tmp_path / "work", url_of["nfc"], url_of["edited"])["examples"]
    mine, theirs = windows(text), windows(docs[2]["text"])
    assert edited["only in u"] and set(edited["only in u"]) <= mine - theirs  # " mati", "matin", ...
    assert edited["shared"] and set(edited["shared"]) <= mine & theirs


def test_explain_reads_invalid_utf8_and_folders_made_before_copies(tmp_path):
    from lshsql.tools.dedup_explain import document_lines, explain_pair

    good = "caf\u00e9 ok bad bytes here and some more words of text".encode()
    bad = good.replace(b" ok ", b" ok \xff\xfe ")
    data = good + bad
    offsets = pa.py_buffer(np.array([0, len(good), len(data)], np.int32).tobytes())
    texts = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(data)])
    pq.write_table(pa.table({"id": ["good", "bad"], "text": texts}), tmp_path / "bad.parquet")
    work = tmp_path / "work"
    dedup_files([str(tmp_path / "bad.parquet")], work, DedupParams(threshold=0.5))
    pair = explain_pair(work, "000000000001 good", "000000000002 bad")
    assert pair["jaccard"] == 1.0 and pair["differences"] == []  # the bad bytes are no word
    # a dedup folder as lshsql wrote it before exact copies were set aside: no copy_of, no copies.parquet
    documents = pq.read_table(work / "documents.parquet")
    pq.write_table(documents.drop_columns(["copy_of"]), work / "documents.parquet")
    (work / "copies.parquet").unlink()
    signatures = pq.read_table(work / "signatures.parquet")  # and a signature for every document
    copy = signatures.set_column(0, signatures.schema.field(0), pa.array([2], pa.int64()))
    pq.write_table(pa.concat_tables([signatures, copy]), work / "signatures.parquet")
    assert "decision: duplicate of good (similarity 1.0)" in "\n".join(
        document_lines(work, "000000000002 bad")
    )
    assert explain_pair(work, "000000000001 good", "000000000002 bad")["jaccard"] == 1.0


def test_pair_share_counts_every_document_pair_the_copies_stand_for(copies_run):
    # the share of a cluster's member pairs that are pairs, counted over documents: two documents are a
    # pair when their sets are one (copies: Jaccard 1) or a pair of sets in pairs.parquet
    folder, docs, _ = copies_run
    work = folder / "work"
    first = dict(rows(f"select url_id, copy_of from '{work}/copies.parquet'"))
    set_pairs = set(rows(f"select u_id, v_id from '{work}/pairs.parquet'"))
    members: dict[int, list[int]] = {}
    shares = {}
    for url_id, center_id, share in rows(
        f"select url_id, center_id, pair_share from '{work}/clusters.parquet'"
    ):
        members.setdefault(center_id, []).append(url_id)
        shares[center_id] = share
    checked = 0
    for center_id, ids in members.items():
        if len(ids) == 1:
            assert shares[center_id] is None
            continue
        sets = [first.get(i, i) for i in ids]
        paired = sum(
            a == b or (min(a, b), max(a, b)) in set_pairs for x, a in enumerate(sets) for b in sets[x + 1 :]
        )
        assert shares[center_id] == pytest.approx(2 * paired / (len(ids) * (len(ids) - 1)), abs=1e-12)
        checked += 1
    # the error page and its 200 copies: every pair of the 201 is a pair
    page = rows(f"select pair_share from '{work}/clusters.parquet' where url like '% page'")[0][0]
    assert page == 1.0 and checked >= 4
