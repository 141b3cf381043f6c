"""bench/chapter_labels.py: chapter labels from small hand-made tables of contents, and the chapter scores
on a tiny hand-checked example."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import chapter_labels as cl  # noqa: E402

BASE = "https://docs.example/15/"

# a DocBook index: a preface with nested sections, a part (no label) holding two chapters and a reference
DOCBOOK_INDEX = """<html><body><div class="toc"><dl class="toc">
<dt><span class="preface"><a href="preface.html">Preface</a></span></dt>
<dd><dl><dt><span class="sect1"><a href="intro.html">1. What Is It?</a></span></dt>
<dt><span class="sect1"><a href="history.html#early">2. History</a></span></dt></dl></dd>
<dt><span class="part"><a href="tutorial.html">I. Tutorial</a></span></dt>
<dd><dl><dt><span class="chapter"><a href="start.html">1. Getting
  Started</a></span></dt>
<dt><span class="chapter"><a href="lonely.html">2. Lonely</a></span></dt>
<dt><span class="reference"><a href="sql-commands.html">I. SQL Commands</a></span></dt></dl></dd>
<dt><span class="index"><a href="bookindex.html">Index</a></span></dt>
</dl></div></body></html>"""
START = """<html><body><div class="chapter"><div class="toc"><dl class="toc">
<dt><span class="sect1"><a href="install.html">1.1. Installation</a></span></dt>
<dt><span class="sect1"><a href="install.html#unix">1.1.1. On Unix</a></span></dt>
<dt><span class="sect1"><a href="createdb.html">1.2. Creating a Database</a></span></dt>
</dl></div><p><a href="history.html">not in the toc</a></p></div></body></html>"""
SQL_COMMANDS = """<html><body><div class="toc"><dl class="toc">
<dt><span class="refentrytitle"><a href="sql-select.html">SELECT</a></span></dt>
<dt><span class="refentrytitle"><a href="install.html">listed twice</a></span></dt></dl></div></body></html>"""


def test_docbook_chapters_from_the_index_and_chapter_pages():
    pages = {
        BASE + "index.html": DOCBOOK_INDEX,
        BASE + "start.html": START,
        BASE + "sql-commands.html": SQL_COMMANDS,
    }
    chapters = cl.docbook_chapters(BASE + "index.html", pages)
    assert chapters == [
        # the preface's page is not in the crawl: its pages come from the index's nested entries
        ("Preface", [BASE + "preface.html", BASE + "intro.html", BASE + "history.html"]),
        (
            "1. Getting Started",
            [BASE + p for p in ("start.html", "install.html", "install.html", "createdb.html")],
        ),
        ("2. Lonely", [BASE + "lonely.html"]),
        ("I. SQL Commands", [BASE + p for p in ("sql-commands.html", "sql-select.html", "install.html")]),
    ]
    present = {
        BASE + p
        for p in (
            "intro.html",
            "history.html",
            "start.html",
            "install.html",
            "createdb.html",
            "lonely.html",
            "sql-commands.html",
            "sql-select.html",
            "tutorial.html",
        )
    }
    labels, dropped = cl.chapter_labels(chapters, present)
    assert labels == {
        BASE + "intro.html": "Preface",
        BASE + "history.html": "Preface",
        BASE + "start.html": "1. Getting Started",
        BASE + "createdb.html": "1. Getting Started",
        BASE + "sql-commands.html": "I. SQL Commands",
        BASE + "sql-select.html": "I. SQL Commands",
    }
    # install.html is in two chapters; lonely.html is a chapter of one page; the part page has no label
    assert dropped == {"in_two_chapters": 1, "in_small_chapters": 1}


SPHINX_INDEX = """<html><body><div class="toctree-wrapper compound"><ul>
<li class="toctree-l1"><a class="reference internal" href="intro.html">Introduction</a><ul>
<li class="toctree-l2"><a class="reference internal" href="intro.html#notes">Notes</a></li></ul></li>
<li class="toctree-l1"><a class="reference internal" href="text.html">Text Processing
 Services</a><ul>
<li class="toctree-l2"><a class="reference internal" href="string.html"><code>string</code> — Common string operations</a></li>
<li class="toctree-l2"><a class="reference internal" href="re.html">re</a></li></ul></li>
</ul></div></body></html>"""


def test_sphinx_chapters_take_the_top_level_entries():
    base = "https://docs.example/3.11/library/"
    chapters = cl.sphinx_chapters(base + "index.html", SPHINX_INDEX)
    assert chapters == [
        ("Introduction", [base + "intro.html", base + "intro.html"]),
        ("Text Processing Services", [base + "text.html", base + "string.html", base + "re.html"]),
    ]
    labels, dropped = cl.chapter_labels(chapters, {base + p for p in ("intro.html", "text.html", "re.html")})
    assert labels == {
        base + "text.html": "Text Processing Services",
        base + "re.html": "Text Processing Services",
    }
    assert dropped == {"in_two_chapters": 0, "in_small_chapters": 1}  # intro.html: one page, listed twice


# pages a, b, c in chapter X; d, e in chapter Y; f unlabelled
LABELS = {"a": "X", "b": "X", "c": "X", "d": "Y", "e": "Y"}


def test_neighbour_share_counts_only_labelled_partners():
    # c is paired only with f (unlabelled), e with itself: neither counts
    assert cl.neighbour_share(LABELS, [("a", "b"), ("c", "f"), ("b", "d"), ("e", "e")]) == pytest.approx(
        3 / 5
    )
    assert cl.neighbour_share({}, []) is None


def test_precision_at_k_by_hand():
    ranked = {
        "a": ["f", "b", "d", "c"],  # labelled: b (X), d (Y) with k=2 -> 1/2
        "b": ["a"],  # 1/1
        "d": ["a", "b"],  # 0/2
        "e": [],  # no neighbour: out of precision, 0 hits
    }
    got = cl.precision_at_k(LABELS, ranked, k=2)
    assert got["pages"] == 3
    assert got["precision"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert got["hits"] == pytest.approx((1 + 1 + 0 + 0 + 0) / (2 * 5))  # c has no list at all


def test_clustering_scores_against_chapters():
    # clusters {a, b, d} and {c}; e has no cluster (its own). Same cluster pairs ab ad bd: ab is a chapter pair.
    q = cl.clustering_scores(LABELS, {"a": 1, "b": 1, "d": 1, "c": 2, "f": 2})
    assert q["pairwise_precision"] == pytest.approx(1 / 3)
    assert q["pairwise_recall"] == pytest.approx(1 / 4)  # chapter pairs: ab ac bc de
    assert q["clusters"] == 3 and q["purity"] == pytest.approx(4 / 5)


def test_similarity_matrix_helpers():
    urls = ["p", "q", "r", "s"]
    sim = np.array(
        [
            [1.0, 0.9, 0.2, 0.2],
            [0.9, 1.0, 0.5, 0.0],
            [0.2, 0.5, 1.0, 0.1],
            [0.2, 0.0, 0.1, 1.0],
        ]
    )
    ranked = cl.ranked_by_similarity(urls, sim, k=2)
    assert ranked["p"] == ["q", "r"]  # r and s tie at 0.2: URL order
    assert ranked["s"] == ["p", "r"]  # q at 0.0 is no neighbour
    assert ranked["q"] == ["p", "r"]
    assert cl.cosine_for_pairs(sim, 2) == 0.5 and cl.cosine_for_pairs(sim, 0) is None
    assert cl.cosine_for_pairs(sim, 7) is None  # only 6 pairs
    assert cl.pairs_at(urls, sim, 0.5) == [("p", "q"), ("q", "r")]
