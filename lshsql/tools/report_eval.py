"""The report's Evaluation section: what `lshsql eval` found (DIR/eval/eval.json), told as tables with
labels and a plot only when it has something to show."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from lshsql.errors import one_line
from lshsql.tools import report_plots as plots

EVAL = Path("eval") / "eval.json"
# The cluster scores of eval --labels, with what each measures.
CLUSTER_SCORES = (
    ("purity", "purity", "share of labelled URLs in their cluster's most common label"),
    ("inverse_purity", "inverse purity", "share of labelled URLs in their label's best cluster"),
    ("class_f", "class F", "F-measure of each label's best cluster, weighted by label size"),
    ("pairwise_precision", "pairwise precision", "of the pairs put together, the share that share a label"),
    ("pairwise_recall", "pairwise recall", "of the pairs that share a label, the share put together"),
    ("pairwise_f", "pairwise F", "harmonic mean of the two above"),
    ("pairwise_accuracy", "pairwise accuracy", "share of all pairs on which clusters and labels agree"),
    ("ari", "adjusted Rand index", "agreement with the labels beyond chance: 0 random, 1 the same"),
)


def read_eval(work: Path) -> dict | str | None:
    """The eval figures, an error message when the file is unreadable, or None when there is none."""
    path = work / EVAL
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return f"{EVAL} could not be read: {one_line(e)}"
    if not isinstance(data, dict) or not isinstance(data.get("pairs"), dict):
        return f"{EVAL} is not what `lshsql eval` writes; run it again"
    return data


def eval_html(evaluation: dict | str | None) -> str:
    """The section's HTML: recall and precision, the pairs missed and wrongly kept, What's Related
    against the exact neighbours, and the cluster scores when labels were given."""
    if evaluation is None:
        return (
            '<p class="note">No evaluation in this work folder: run <code>lshsql eval</code> to compare the '
            "run with an exact comparison of every pair, and see its recall and precision here.</p>"
        )
    if isinstance(evaluation, str):
        return f'<p class="note">{escape(evaluation)}</p>'
    parts = [_recall_html(evaluation), _errors_html(evaluation), _neighbours_html(evaluation)]
    parts.append(_clusters_html(evaluation.get("clusters")))
    return "\n".join(part for part in parts if part)


def _recall_html(e: dict) -> str:
    threshold = _number(e.get("threshold"), "{:g}")
    exact = (e.get("truth") or {}).get("pairs")
    rows = []
    for key, name in (("candidates", "LSH candidates (same bucket)"), ("pairs", "pairs kept")):
        entry = e.get(key) or {}
        rows.append(
            f"<tr><td>{name}</td><td class=num>{_number(entry.get('rows'))}</td>"
            f"<td class=num>{_number(entry.get('correct'))}</td>"
            f"<td class=num>{_number(entry.get('recall'), '{:.3f}')}</td>"
            f"<td class=num>{_number(entry.get('precision'), '{:.3f}')}</td></tr>"
        )
    head = "<tr><th></th><th>rows</th><th>exact pairs among them</th><th>recall</th><th>precision</th></tr>"
    return (
        f"<p>An exact comparison of every two URLs finds <b>{_number(exact)}</b> pairs with a weighted "
        f"Jaccard of at least {threshold}. Recall is the share of them the run found, precision the share "
        "of what it found that is one of them.</p>\n"
        f'<table class="eval"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _errors_html(e: dict) -> str:
    hist = e.get("histograms") or {}
    edges, missed, wrong = hist.get("edges"), hist.get("missed") or [], hist.get("wrong") or []
    n_missed, n_wrong = sum(missed), sum(wrong)
    said = [
        f"{n_missed:,} exact pairs were missed" if n_missed else "No exact pair was missed",
        f"{n_wrong:,} pairs kept are below the threshold"
        if n_wrong
        else "no pair kept is below the threshold",
    ]
    text = f"<p>{said[0]}; {said[1]}.</p>"
    if not edges or not (n_missed or n_wrong):
        return text
    caption = (
        "The exact similarity of the pairs the run got wrong: exact pairs it missed (LSH did not make them "
        "candidates, or their min-hash estimate fell below the threshold) and pairs it kept whose exact "
        "similarity is below the threshold."
    )
    svg = plots.errors_svg(edges, missed, wrong, float(e.get("threshold") or 0))
    return f"{text}\n<figure>\n{svg}\n<figcaption>{caption}</figcaption>\n</figure>"


def _neighbours_html(e: dict) -> str:
    nn = e.get("neighbours") or {}
    if nn.get("overlap") is None:
        return ""
    k = escape(str(nn.get("k")))
    return (
        f"<p>What's Related against the exact {k} nearest neighbours, over {_number(nn.get('evaluated'))} of "
        f"{_number(nn.get('sample'))} sampled URLs: on average <b>{_number(nn['overlap'], '{:.3f}')}</b> of "
        f"each URL's {k} exact nearest neighbours are among its related URLs (overlap@{k}).</p>"
    )


def _clusters_html(quality: dict | None) -> str:
    if not quality:
        return (
            '<p class="note">No cluster scores: <code>lshsql eval --labels FILE</code> compares the clusters '
            "with known labels (topics, categories).</p>"
        )
    kind = "label sets (a pair agrees when it shares a label)" if quality.get("multi_label") else "labels"
    rows = "".join(
        f"<tr><td>{name}</td><td class=num>{_number(quality.get(key), '{:.3f}')}</td><td>{meaning}</td></tr>"
        for key, name, meaning in CLUSTER_SCORES
    )
    return (
        f"<p>The clusters against the labels of {_number(quality.get('urls'))} labelled URLs "
        f"({_number(quality.get('clusters'))} clusters, {_number(quality.get('labels'))} {kind}):</p>\n"
        f'<table class="eval"><thead><tr><th>score</th><th>value</th><th>what it measures</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def _number(value: object, form: str = "{:,}") -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "&ndash;"
    return form.format(value)
