"""TF-IDF cosine over pages' own text, bench/chapters.py's baseline; runs in its venv (scikit-learn).

    .chapters-venv/bin/python bench/tfidf_cosine.py texts.jsonl cosine.npy

texts.jsonl has one {"url", "text", "labelled"} object per page. Every page weighs in the vocabulary and
the IDF; the cosine matrix written (float64, .npy) is over the labelled pages, in their order in the file.
scikit-learn stays out of lshsql's dependencies, which is why this is a script of its own.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: tfidf_cosine.py TEXTS.jsonl OUT.npy")
    with open(sys.argv[1], encoding="utf-8") as f:
        pages = [json.loads(line) for line in f]
    # what a user would try first: sublinear tf, English stopwords, scikit-learn's other defaults
    vectors = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform(p["text"] for p in pages)
    labelled = [i for i, p in enumerate(pages) if p["labelled"]]
    np.save(sys.argv[2], cosine_similarity(vectors[labelled]))


if __name__ == "__main__":
    main()
