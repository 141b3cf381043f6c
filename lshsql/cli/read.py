"""Commands that read a run's tables without changing them: `related`, `clusters`, `diff`, `query`, `info`,
`explain` and `show`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from lshsql.cli.options import ClusterSource, MaxSpill, MemoryLimit, Threads, Work, from_cut, resources
from lshsql.cli.output import OutputFormat, print_table, printable


def related(
    url: Annotated[str, typer.Argument(help="A URL described in the work folder.")],
    work: Work = Path("work"),
    limit: Annotated[int, typer.Option(help="How many related URLs.")] = 20,
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """What's Related: the URLs paired with URL, most similar first.

    Example: lshsql related https://docs.python.example/3.11/library/index.html --work work
    """
    from lshsql.tools.explore import nearest
    from lshsql.tools.explore import related as find_related

    resources_ = resources(work, threads, memory_limit, max_spill)
    found = find_related(work, url, limit, resources_)
    print_table(found, format)
    if not found.num_rows:
        near = nearest(work, url, resources_)
        hint = (
            f"the nearest URL LSH found for it: {near[0]} (signatures agree on {near[1]} of {near[2]} "
            "positions; `lshsql explain` the two, or lower --threshold)"
            if near
            else "no URL shares an LSH bucket with it (lower --threshold to look further)"
        )
        typer.echo(f"no URL is paired with {url}; {hint}", err=True)


def clusters(
    work: Work = Path("work"),
    limit: Annotated[int, typer.Option(help="How many clusters, largest first.")] = 10,
    members: Annotated[int, typer.Option(help="Members shown per cluster.")] = 5,
    terms: Annotated[int, typer.Option(help="Top terms shown per cluster, as readable words (<= 10).")] = 8,
    sort: Annotated[
        str,
        typer.Option(
            help="size (largest first), or pair_share or min_pair_similarity (lowest first: chains first)."
        ),
    ] = "size",
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """The largest clusters with their first members and top terms (cluster_labels: the heaviest terms by
    summed TF-IDF, each shown as the word most often written for it), and how chained each is: pair_share,
    the share of its member pairs that are pairs (1.0: every member is similar to every other), and
    min_pair_similarity, its least similar pair's.

    Example: lshsql clusters --work work --limit 5 --sort pair_share
    """
    from lshsql.tools.explore import top_clusters

    resources_ = resources(work, threads, memory_limit, max_spill)
    print_table(top_clusters(work, limit, members, terms, resources_, sort), format)


def query(
    sql: Annotated[
        str, typer.Argument(help="SQL over pages, links, fragments, urls, bags, pairs, clusters, ...")
    ],
    work: Work = Path("work"),
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Ad-hoc SQL over the work folder's tables, with DuckDB's resources set as for `run`.

    Example: lshsql query "select size, count(*) from clusters group by 1 order by 1" --work work
    """
    from lshsql.tools.explore import query_rows

    print_table(query_rows(work, sql, resources(work, threads, memory_limit, max_spill)), format)


def info(
    work: Work = Path("work"),
    format: OutputFormat = "table",
) -> None:
    """Counts, parameters and per-stage timings of the run in the work folder (the paper's Table 1).

    Example: lshsql info --work work
    """
    from lshsql.tools.explore import info as run_info

    print_table(run_info(work), format, wrap_last=True)


def explain(
    u: Annotated[str, typer.Argument(help="A URL described in the work folder.")],
    v: Annotated[str | None, typer.Argument(help="A second URL: explain the pair.")] = None,
    work: Work = Path("work"),
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Why two URLs were paired or not (estimate, exact similarity, colliding LSH tables, shared terms, anchor
    phrases), or, for one URL, its bag, cluster and anchor phrases.

    Example: lshsql explain https://docs.python.example/3.11/index.html https://www.python.org/ --work work
    """
    from lshsql.tools import dedup_explain
    from lshsql.tools import explain as why

    resources_ = resources(work, threads, memory_limit, max_spill)
    if dedup_explain.is_dedup(work):
        pair = v and dedup_explain.explain_pair(work, u, v, resources_)
        lines = dedup_explain.pair_lines(pair) if v else dedup_explain.document_lines(work, u, resources_)
    elif v:
        lines = why.pair_lines(why.explain_pair(work, u, v, resources_))
    else:
        lines = why.url_lines(why.explain_url(work, u, resources_))
    for line in lines:
        typer.echo(printable(line))


def show(
    cluster: Annotated[
        str, typer.Argument(help="A cluster: its cluster_id, the URL of its center or a member.")
    ],
    work: Work = Path("work"),
    from_: ClusterSource = "clusters",
    limit: Annotated[int | None, typer.Option(help="Members shown (in URL order) [all].")] = None,
    html: Annotated[
        str | None,
        typer.Option(help="Print the stored HTML of this member, read back from its crawl file, instead."),
    ] = None,
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """A cluster's members with their titles, in-degrees and the crawl file and offset each page was read
    from, after its pair_share and least similar pair (see clusters); with --html URL, that member's page
    as stored in the crawl (printed as is).

    Example: lshsql show https://docs.python.example/3.11/index.html --work work
    """
    from lshsql.tools import show as shown

    cut = from_cut(from_)
    resources_ = resources(work, threads, memory_limit, max_spill)
    if html is not None:
        sys.stdout.write(shown.stored_html(work, html, cluster, cut, resources_))
        sys.stdout.flush()
        return
    table = shown.cluster_members(work, cluster, cut, limit, resources_)
    if format != "table":
        print_table(table, format)
        return
    typer.echo(printable(shown.heading(table, work, cut, resources_)))
    chained = shown.chaining(table, work, cut, resources_)
    if chained:
        typer.echo(printable(chained))
    print_table(table.drop_columns(["cluster_id", "center_id", "size"]), format)


def diff(
    work: Work = Path("work"),
    run: Annotated[int | None, typer.Option(help="Which run of the clusters stage [the latest].")] = None,
    event: Annotated[
        list[str] | None,
        typer.Option(help="Only these events (repeat): new, split, grew, shrank, changed, merged, gone."),
    ] = None,
    limit: Annotated[int | None, typer.Option(help="How many changed clusters [all].")] = None,
    terms: Annotated[int, typer.Option(help="Top terms shown per cluster (<= 10).")] = 5,
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """What the last run changed in the clusters (cluster_history.parquet): the clusters that are new, split
    off, grew, shrank or changed, and the ids that merged into another or are gone, with their sizes before
    and after, the other id involved, center and top terms; the counts per event go to stderr. A cluster
    keeps its cluster_id across runs while it holds most of its members.

    Example: lshsql diff --work work --event split --event merged
    """
    from lshsql.tools.changes import EVENTS, change_counts, cluster_changes, latest_run

    resources_ = resources(work, threads, memory_limit, max_spill)
    run = latest_run(work) if run is None else run
    events = tuple(event) if event else EVENTS
    print_table(cluster_changes(work, run, events, limit, terms, resources_), format)
    counts = change_counts(work, run)
    summary = ", ".join(f"{counts[e]} {e}" for e in EVENTS)
    typer.echo(f"run {run}: {summary} (clusters of 2 or more URLs before or after)", err=True)
