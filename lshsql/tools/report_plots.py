"""The report's plots as inline SVG, drawn by matplotlib (imported where a plot is drawn, so that importing
lshsql does not pay for it): S-curve, similarities, cluster sizes, stage timings, evaluation series."""

from __future__ import annotations

import io
import re
from html import escape
from typing import TYPE_CHECKING

from lshsql.lsh.scurve import collision_probability, tables_recall

if TYPE_CHECKING:
    from matplotlib.figure import Figure

BLUE, ORANGE, GREY = "#3b6ea8", "#d9822b", "#777777"
RC = {
    "svg.fonttype": "none",  # text stays text: searchable, and no glyph outlines to bloat the file
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e4e4e4",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
}


def _svg(fig: Figure, name: str) -> str:
    """The figure as an inline <svg> element: deterministic ids, no XML prolog, no metadata block."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"lshsql-report-{name}"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{escape(name)}" ', 1).strip()


def _figure(width: float = 8.0, height: float = 3.6) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=72, layout="constrained")


def scurve_svg(
    threshold: float,
    k: int,
    l: int,  # noqa: E741
    num_perm: int,
    seed: int,
    banding: bool,
) -> tuple[str, float]:
    """The S-curve of the run's tables with the recall at the threshold. Random tables share min-hashes and
    collide less often than the closed form says: their measured curve is drawn over it."""
    import matplotlib

    recall = tables_recall(threshold, k, l, num_perm, seed, banding)
    xs = [i / 400 for i in range(401)]
    with matplotlib.rc_context(RC):
        fig = _figure()
        ax = fig.add_subplot()
        closed = "1 − (1 − s^k)^l"
        ax.plot(xs, [collision_probability(s, k, l) for s in xs], color=BLUE, linewidth=2, label=closed)
        if not banding:
            measured = [i / 40 for i in range(41)]
            ax.plot(
                measured,
                [tables_recall(s, k, l, num_perm, seed) for s in measured],
                "-",
                color="#222",
                linewidth=1,
                label="the run's tables, measured",
            )
            ax.legend(loc="lower right")
        ax.axvline(threshold, color=ORANGE, linestyle="--", linewidth=1.5)
        ax.plot([threshold], [recall], "o", color=ORANGE)
        ax.annotate(
            f"threshold {threshold:g}: recall {recall:.3f}",
            xy=(threshold, recall),
            xytext=(12, -16) if recall > 0.5 else (12, 10),
            textcoords="offset points",
            color="#222",
            bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": ORANGE},
        )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.03)
        ax.set_xlabel("similarity s of a pair (weighted Jaccard)")
        ax.set_ylabel("P(pair is a candidate)")
        ax.set_title(f"S-curve 1 − (1 − s^k)^l, k = {k}, l = {l}", loc="left")
        return _svg(fig, "S-curve"), recall


def similarity_svg(stats: dict, num_perm: int, threshold: float) -> str:
    import matplotlib

    verified = bool(stats["estimate"])
    estimate_label = f"min-hash estimate (agreeing / {num_perm})"
    with matplotlib.rc_context(RC):
        fig = _figure()
        ax = fig.add_subplot()
        width = 1 / num_perm
        bars = ax.bar(
            [b / num_perm for b, _ in stats["similarity"]],
            [n for _, n in stats["similarity"]],
            width=width,
            align="center",
            color=BLUE,
            edgecolor="white",
            linewidth=0.3,
            label="exact weighted Jaccard" if verified else estimate_label,
        )
        handles: list = [bars]
        if verified:
            counts = [0] * (num_perm + 1)
            for a, n in stats["estimate"]:
                counts[min(max(a, 0), num_perm)] += n
            edges = [(i - 0.5) / num_perm for i in range(num_perm + 2)]
            handles.append(ax.stairs(counts, edges, color=ORANGE, linewidth=1.5, label=estimate_label))
        handles.append(
            ax.axvline(threshold, color=GREY, linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
        )
        ax.set_xlim(0, 1 + width)
        ax.set_xlabel("similarity")
        ax.set_ylabel("pairs")
        ax.set_title(f"{stats['n_pairs']:,} pairs", loc="left")
        ax.legend(handles=handles, frameon=False, loc="upper right")
        return _svg(fig, "pair similarities")


def sizes_svg(stats: dict) -> str:
    import matplotlib
    from matplotlib.ticker import FuncFormatter

    with matplotlib.rc_context(RC):
        fig = _figure()
        ax = fig.add_subplot()
        sizes = stats["sizes"]
        ax.plot([s for s, _ in sizes], [n for _, n in sizes], "o", color=BLUE, markersize=5)
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("cluster size (URLs)")
        ax.set_ylabel("number of clusters")
        largest = max((s for s, _ in sizes), default=1)
        ax.set_xlim(0.8, max(largest, 2) * 1.5)
        ax.set_ylim(0.7, max((n for _, n in sizes), default=1) * 1.6)
        ax.set_title(f"{stats['n_clusters']:,} clusters of {stats['n_urls']:,} URLs", loc="left")
        return _svg(fig, "cluster sizes")


def timings_svg(rows: list[tuple]) -> str:
    import matplotlib

    names = [r[0] for r in rows]
    seconds = [r[2] or 0.0 for r in rows]
    with matplotlib.rc_context({**RC, "axes.grid.axis": "x"}):
        fig = _figure(8.0, 0.45 + 0.3 * max(len(rows), 1))
        ax = fig.add_subplot()
        positions = list(range(len(rows)))
        ax.set_axisbelow(True)
        ax.barh(positions, seconds, color=BLUE, height=0.65)
        ax.set_yticks(positions, names)
        ax.invert_yaxis()
        top = max(seconds, default=0.0) or 1.0
        for y, s in zip(positions, seconds, strict=True):
            ax.text(s + top * 0.01, y, f"{s:.2f}", va="center", fontsize=9, color="#333")
        ax.set_xlim(0, top * 1.12)
        ax.set_xlabel("seconds")
        return _svg(fig, "stage timings")


def errors_svg(edges: list, missed: list, wrong: list, threshold: float) -> str:
    """The exact similarity of the pairs missed and of the pairs wrongly kept, side by side per bin; drawn
    only when there is at least one (the caller says so in words otherwise)."""
    import matplotlib

    lefts = edges[:-1]
    width = (edges[1] - edges[0]) / 2.2 if len(edges) > 1 else 0.05
    with matplotlib.rc_context(RC):
        fig = _figure(8.0, 3.0)
        ax = fig.add_subplot()
        for shift, values, colour, label in (
            (0.0, missed, BLUE, "missed"),
            (width, wrong, ORANGE, "kept wrongly"),
        ):
            if sum(values):
                ax.bar(
                    [x + shift for x in lefts], values, width=width, align="edge", color=colour, label=label
                )
        ax.axvline(threshold, color=GREY, linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
        ax.set_xlim(0, 1)
        ax.set_xlabel("exact similarity of the pair (weighted Jaccard)")
        ax.set_ylabel("pairs")
        ax.legend(frameon=False, loc="upper right")
        return _svg(fig, "pairs missed and kept wrongly")
