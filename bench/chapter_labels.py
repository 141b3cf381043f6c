"""Chapter labels from a documentation site's own table of contents, and the chapter benchmark's scores.

Pure functions over HTML text and plain Python containers, so tests can check them on a few snippets:
`docbook_chapters` reads a DocBook manual (the PostgreSQL documentation), `sphinx_chapters` a Sphinx one
(the Python documentation); `chapter_labels` turns either into url -> chapter; the rest score neighbours
and clusters against those labels (bench/chapters.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urldefrag, urljoin

import lxml.html
import numpy as np

from lshsql.tools.cluster_scores import cluster_metrics

# DocBook TOC entries whose pages form one chapter; parts (several chapters), the index, the bibliography
# and the top page are no chapter.
DOCBOOK_CHAPTERS = ("preface", "chapter", "appendix", "reference")
MIN_PAGES = 2  # a chapter of one page has no same-chapter neighbour to find


def _page(base: str, href: str) -> str:
    """The absolute URL of a TOC link, without its #fragment (a section of a page is that page)."""
    return urldefrag(urljoin(base, href))[0]


def _text(element) -> str:
    return " ".join(element.text_content().split())


def _toc_pages(html: bytes | str, url: str) -> list[str]:
    """The pages a DocBook page's own table of contents (div.toc) links to, in order."""
    root = lxml.html.fromstring(html)
    hrefs = root.xpath('//div[contains(concat(" ", @class, " "), " toc ")]//a/@href')
    return [_page(url, href) for href in hrefs]


def docbook_chapters(index_url: str, pages: Mapping[str, bytes | str]) -> list[tuple[str, list[str]]]:
    """(chapter, pages) of a DocBook manual: each preface, chapter, appendix and reference entry of the
    index page's table of contents, with its own page and the pages its page's table of contents lists
    (the entries nested under it in the index when its page is not in `pages`)."""
    root = lxml.html.fromstring(pages[index_url])
    chapters = []
    for span in root.xpath('//div[contains(concat(" ", @class, " "), " toc ")]//dt/span'):
        links = span.xpath("a/@href")
        if span.get("class") not in DOCBOOK_CHAPTERS or not links:
            continue
        url = _page(index_url, links[0])
        if url in pages:
            members = _toc_pages(pages[url], url)
        else:
            nested = span.getparent().getnext()
            hrefs = nested.xpath(".//a/@href") if nested is not None and nested.tag == "dd" else []
            members = [_page(index_url, href) for href in hrefs]
        chapters.append((_text(span), [url, *members]))
    return chapters


def sphinx_chapters(index_url: str, html: bytes | str) -> list[tuple[str, list[str]]]:
    """(chapter, pages) of a Sphinx manual's index page: each top-level toctree entry with its own page
    and the pages of the entries nested under it."""
    root = lxml.html.fromstring(html)
    chapters = []
    for item in root.xpath(
        '//div[contains(@class, "toctree-wrapper")]/ul/li[contains(@class, "toctree-l1")]'
    ):
        links = item.xpath("a")
        if not links or links[0].get("href") is None:
            continue
        members = [_page(index_url, href) for href in item.xpath("ul//a/@href")]
        chapters.append((_text(links[0]), [_page(index_url, links[0].get("href")), *members]))
    return chapters


def chapter_labels(
    chapters: Iterable[tuple[str, list[str]]], present: set[str], min_pages: int = MIN_PAGES
) -> tuple[dict[str, str], dict[str, int]]:
    """url -> chapter for the pages in `present`, and what was left out: pages listed under two chapters
    (ambiguous), and the pages of chapters with fewer than min_pages pages present."""
    listed: dict[str, set[str]] = {}
    for chapter, members in chapters:
        for url in members:
            if url in present:
                listed.setdefault(url, set()).add(chapter)
    single = {url: next(iter(found)) for url, found in listed.items() if len(found) == 1}
    sizes: dict[str, int] = {}
    for chapter in single.values():
        sizes[chapter] = sizes.get(chapter, 0) + 1
    labels = {url: chapter for url, chapter in single.items() if sizes[chapter] >= min_pages}
    dropped = {
        "in_two_chapters": len(listed) - len(single),
        "in_small_chapters": len(single) - len(labels),
    }
    return labels, dropped


# ---------------------------------------------------------------- scores


def neighbour_share(labels: Mapping[str, str], pairs: Iterable[tuple[str, str]]) -> float | None:
    """The share of labelled pages paired with at least one other labelled page."""
    found = set()
    for u, v in pairs:
        if u != v and u in labels and v in labels:
            found.update((u, v))
    return len(found) / len(labels) if labels else None


def precision_at_k(labels: Mapping[str, str], ranked: Mapping[str, list[str]], k: int = 5) -> dict:
    """Chapter precision of each labelled page's first k labelled neighbours (ranked: url -> neighbours,
    most similar first). precision: mean over the pages with a neighbour of the same-chapter share of those
    listed (up to k); hits: mean over every labelled page of same-chapter neighbours / k, so a page with
    fewer than k neighbours loses the missing ones."""
    shares, hits = [], 0
    for url, label in labels.items():
        found = [v for v in ranked.get(url, []) if v in labels and v != url][:k]
        same = sum(labels[v] == label for v in found)
        hits += same
        if found:
            shares.append(same / len(found))
    return {
        "pages": len(shares),
        "precision": sum(shares) / len(shares) if shares else None,
        "hits": hits / (k * len(labels)) if labels else None,
    }


def clustering_scores(labels: Mapping[str, str], clusters: Mapping[str, object]) -> dict:
    """cluster_metrics of the labelled pages' clusters against their chapters; a labelled page without a
    cluster counts as a cluster of its own."""
    counts: dict[tuple[object, str], int] = {}
    for url, label in labels.items():
        key = (clusters.get(url, ("alone", url)), label)
        counts[key] = counts.get(key, 0) + 1
    return cluster_metrics([(cluster, label, n) for (cluster, label), n in counts.items()])


def ranked_by_similarity(urls: list[str], similarity: np.ndarray, k: int) -> dict[str, list[str]]:
    """The k most similar other URLs of each URL from a square similarity matrix over `urls`, most similar
    first, ties by URL; only positive similarities."""
    order = sorted(range(len(urls)), key=lambda i: urls[i])
    ranked = {}
    for i, url in enumerate(urls):
        candidates = [j for j in order if j != i and similarity[i, j] > 0]
        candidates.sort(key=lambda j: -similarity[i, j])  # stable: ties keep URL order
        ranked[url] = [urls[j] for j in candidates[:k]]
    return ranked


def cosine_for_pairs(similarity: np.ndarray, n_pairs: int) -> float | None:
    """The similarity at or above which the matrix holds n_pairs distinct pairs (the n-th largest pair
    value; ties can add pairs), None when n_pairs is 0 or more than the pairs there are."""
    values = np.sort(similarity[np.triu_indices(similarity.shape[0], k=1)])[::-1]
    if n_pairs <= 0 or n_pairs > len(values):
        return None
    return float(values[n_pairs - 1])


def pairs_at(urls: list[str], similarity: np.ndarray, at_least: float) -> list[tuple[str, str]]:
    """The pairs of distinct URLs whose similarity reaches at_least."""
    rows, cols = np.nonzero(np.triu(similarity >= at_least, k=1))
    return [(urls[i], urls[j]) for i, j in zip(rows.tolist(), cols.tolist(), strict=True)]
