"""Scores of a clustering against labels: purity, inverse purity, class-based F, pairwise precision, recall,
F and accuracy, and the adjusted Rand index, from (cluster, label, count) rows; pure functions (`lshsql eval
--labels`)."""

from __future__ import annotations

from math import comb


def cluster_metrics(contingency: list[tuple[object, object, int]]) -> dict:
    """Purity, inverse purity, pairwise precision/recall/F/accuracy and ARI from (cluster, label, count) rows.

    A label may be a tuple of labels, for URLs with several (a Reuters story with topics earn and acq): a
    pair then counts as same-label when the two share one, the pairwise reading used for Reuters clustering
    (Korelin & Blekanov). Purity counts a cluster's most shared label, inverse purity a label's best cluster
    over all (URL, label) memberships; ARI, defined for partitions only, is None when any URL has several.
    class_f is Larsen and Aone's F-measure (see class_f), which papers quote beside or instead of pairwise
    F."""
    rows = [(c, lab if isinstance(lab, tuple) else (lab,), n) for c, lab, n in contingency]
    if any(len(labels) != 1 for _, labels, _ in rows):
        return _multi_label_metrics([(c, frozenset(labels), n) for c, labels, n in rows])
    by_cluster: dict[object, int] = {}
    by_label: dict[object, int] = {}
    best_in_cluster: dict[object, int] = {}
    best_in_label: dict[object, int] = {}
    together = 0  # pairs of URLs with the same cluster and the same label
    cells: dict[tuple[object, object], int] = {}
    for cluster, (label,), n in rows:
        cells[(cluster, label)] = cells.get((cluster, label), 0) + n
        by_cluster[cluster] = by_cluster.get(cluster, 0) + n
        by_label[label] = by_label.get(label, 0) + n
        best_in_cluster[cluster] = max(best_in_cluster.get(cluster, 0), n)
        best_in_label[label] = max(best_in_label.get(label, 0), n)
        together += comb(n, 2)
    total = sum(by_cluster.values())
    same_cluster = sum(comb(n, 2) for n in by_cluster.values())
    same_label = sum(comb(n, 2) for n in by_label.values())
    return {
        "urls": total,
        "clusters": len(by_cluster),
        "labels": len(by_label),
        "multi_label": False,
        "purity": ratio(sum(best_in_cluster.values()), total),
        "inverse_purity": ratio(sum(best_in_label.values()), total),
        "class_f": class_f(cells, by_cluster),
        **_pairwise(together, same_cluster, same_label, comb(total, 2)),
        "ari": adjusted_rand_index(together, same_cluster, same_label, comb(total, 2)),
    }


def _pairwise(together: int, same_cluster: int, same_label: int, all_pairs: int) -> dict:
    """Precision and recall of the same-cluster pairs against the same-label pairs, F, and accuracy: the
    fraction of all pairs on which the clustering and the labels agree (together, or apart in both)."""
    precision = ratio(together, same_cluster)
    recall = ratio(together, same_label)
    f = None
    if precision is not None and recall is not None:
        f = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    apart_in_both = all_pairs - same_cluster - same_label + together
    return {
        "pairwise_precision": precision,
        "pairwise_recall": recall,
        "pairwise_f": f,
        "pairwise_accuracy": ratio(together + apart_in_both, all_pairs),
    }


def _multi_label_metrics(rows: list[tuple[object, frozenset, int]]) -> dict:
    per_cluster: dict[object, dict[frozenset, int]] = {}
    overall: dict[frozenset, int] = {}
    for cluster, labels, n in rows:
        per_cluster.setdefault(cluster, {})[labels] = per_cluster.get(cluster, {}).get(labels, 0) + n
        overall[labels] = overall.get(labels, 0) + n
    total = sum(overall.values())
    in_cluster_label: dict[tuple[object, object], int] = {}  # URLs of a cluster having a label
    for cluster, labels, n in rows:
        for label in labels:
            in_cluster_label[(cluster, label)] = in_cluster_label.get((cluster, label), 0) + n
    best_in_cluster: dict[object, int] = {}
    best_in_label: dict[object, int] = {}
    label_sizes: dict[object, int] = {}
    for (cluster, label), n in in_cluster_label.items():
        best_in_cluster[cluster] = max(best_in_cluster.get(cluster, 0), n)
        best_in_label[label] = max(best_in_label.get(label, 0), n)
        label_sizes[label] = label_sizes.get(label, 0) + n
    together = sum(_pairs_sharing_a_label(counts) for counts in per_cluster.values())
    same_cluster = sum(comb(sum(counts.values()), 2) for counts in per_cluster.values())
    return {
        "urls": total,
        "clusters": len(per_cluster),
        "labels": len(label_sizes),
        "multi_label": True,
        "purity": ratio(sum(best_in_cluster.values()), total),
        "inverse_purity": ratio(sum(best_in_label.values()), sum(label_sizes.values())),
        "class_f": class_f(in_cluster_label, {c: sum(counts.values()) for c, counts in per_cluster.items()}),
        **_pairwise(together, same_cluster, _pairs_sharing_a_label(overall), comb(total, 2)),
        "ari": None,
    }


def class_f(cells: dict[tuple[object, object], int], cluster_sizes: dict[object, int]) -> float | None:
    """Larsen and Aone (1999)'s class-based F-measure: each label's best F over the clusters, weighted by the
    label's size, sum_i (n_i / n) max_j F(i, j) with F(i, j) = 2PR / (P + R), P = n_ij / n_j, R = n_ij / n_i,
    which is 2 n_ij / (n_i + n_j). cells: URLs of a cluster having a label, {(cluster, label): n_ij};
    cluster_sizes: URLs of each cluster, n_j. With several labels per URL, n is the sum of the label sizes."""
    best: dict[object, float] = {}
    label_sizes: dict[object, int] = {}
    for (_, label), n in cells.items():
        label_sizes[label] = label_sizes.get(label, 0) + n
    for (cluster, label), n in cells.items():
        f = 2 * n / (label_sizes[label] + cluster_sizes[cluster])
        best[label] = max(best.get(label, 0.0), f)
    total = sum(label_sizes.values())
    return ratio(sum(label_sizes[label] * f for label, f in best.items()), total)


def _pairs_sharing_a_label(counts: dict[frozenset, int]) -> int:
    """Pairs of URLs whose label sets intersect, from the number of URLs with each label set."""
    by_label: dict[object, list[frozenset]] = {}
    for labels in counts:
        for label in labels:
            by_label.setdefault(label, []).append(labels)
    cross = 0  # pairs of URLs with different but overlapping sets, each counted from both sides
    for labels, n in counts.items():
        overlapping = {other for label in labels for other in by_label[label] if other != labels}
        cross += sum(n * counts[other] for other in overlapping)
    return sum(comb(n, 2) for n in counts.values()) + cross // 2


def adjusted_rand_index(together: int, same_cluster: int, same_label: int, all_pairs: int) -> float | None:
    """Hubert and Arabie's ARI from pair counts: sum C(n_ij, 2), sum C(a_i, 2), sum C(b_j, 2), C(n, 2)."""
    if all_pairs == 0:
        return None
    expected = same_cluster * same_label / all_pairs
    maximum = (same_cluster + same_label) / 2
    if maximum == expected:  # both partitions all singletons, or both one block: identical (as sklearn)
        return 1.0
    return (together - expected) / (maximum - expected)


def ratio(a: int | float, b: int | float) -> float | None:
    return a / b if b else None
