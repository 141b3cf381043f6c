"""Commands around a run: `plan` (choose k and l), `eval` (measure against the exact answer),
`hierarchy` and `cut` (clusters at every similarity), `environment` (a site's linked domains), `report`
(an HTML page), `serve` (a local web application over a run) and `mirrors` (host pairs sharing clusters)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from lshsql.cli.options import (
    ClusterSource,
    EngineName,
    GivenParams,
    MaxSpill,
    MemoryLimit,
    Quiet,
    SparkConf,
    SparkMaster,
    Threads,
    Work,
    engine_options,
    from_cut,
    param_options,
    resources,
    say,
)
from lshsql.cli.output import OutputFormat, echo_lines, print_table
from lshsql.cli.progress import shown


def plan(
    threshold: Annotated[float, typer.Option(help="The similarity pairs must reach.")] = 0.5,
    recall: Annotated[
        float, typer.Option(help="Probability wanted of finding a pair right at the threshold.")
    ] = 0.95,
    num_perm: Annotated[
        int | None, typer.Option(help="m, min-hashes per URL [that of --work's signatures, else 80].")
    ] = None,
    sketch: Annotated[str, typer.Option(help="minhash or oph: the signatures' sketch.")] = "minhash",
    banding: Annotated[bool, typer.Option("--banding/--random-tables", help="b bands of r rows.")] = False,
    seed: Annotated[int, typer.Option(help="Seed of the LSH tables (for the bucket prediction).")] = 1,
    work: Annotated[
        Path | None,
        typer.Option("--work", "-w", help="A work folder with signatures: predict from its data."),
    ] = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Choose k and l for a threshold and show why: the S-curve, the options, and with --work the candidate
    pairs and biggest buckets expected on that data. `run` makes the same choice when -k/-l are not given.

    Example: lshsql plan --threshold 0.8 --work work
    """
    from lshsql.lsh.plan import plan as make_plan

    resources_ = resources(work, threads, memory_limit, max_spill) if work is not None else None
    echo_lines(make_plan(threshold, num_perm, recall, banding, work, resources_, seed, sketch).lines())


def eval_(
    work: Work = Path("work"),
    threshold: Annotated[
        float | None, typer.Option(help="Similarity of the truth [default: the run's].")
    ] = None,
    labels: Annotated[
        Path | None, typer.Option(help="Parquet or CSV with url,label: score the clusters.")
    ] = None,
    sample: Annotated[int, typer.Option(help="URLs whose 10 nearest neighbours are checked.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed of that sample.")] = 1,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Measure the run against the exact answer: recall and precision of pairs and candidates, the exact
    similarity of what was missed or wrongly kept, nearest-neighbour overlap, and cluster quality with labels.
    Written to DIR/eval/ (Parquet and eval.json).

    Example: lshsql eval --work work --labels labels.csv
    """
    from lshsql.tools.evaluate import evaluate, summary_lines

    resources_ = resources(work, threads, memory_limit, max_spill)
    echo_lines(summary_lines(evaluate(work, threshold, labels, sample, seed, resources_)))


@param_options("weighting", "min_df", "max_df", "scale", "num_perm", "seed")
def hierarchy(
    work: Work = Path("work"),
    threshold: Annotated[
        float | None,
        typer.Option(help="t: a pair of clusters merges when two of their documents reach it [0.3]."),
    ] = None,
    r_start: Annotated[int | None, typer.Option(help="Band size (rows) of the first level [20].")] = None,
    r_min: Annotated[int | None, typer.Option(help="Band size of the last level [2].")] = None,
    delta: Annotated[
        int | None, typer.Option(help="The band size shrinks by this from level to level [2].")
    ] = None,
    level_thresholds: Annotated[
        bool | None,
        typer.Option(
            "--level-thresholds/--one-threshold",
            help="A level of b bands of r rows merges pairs >= max(t, (1/b)^(1/r)); the last takes all >= t "
            "[level thresholds].",
            show_default=False,
        ),
    ] = None,
    method: Annotated[
        str | None,
        typer.Option(help="lsh, or exact: single link over every exact pair >= t (small corpora) [lsh]."),
    ] = None,
    verify: Annotated[
        bool | None,
        typer.Option(
            "--verify/--no-verify",
            help="Merge by exact weighted Jaccard, not the estimate [verify].",
            show_default=False,
        ),
    ] = None,
    max_bucket: Annotated[
        int | None, typer.Option(help="Clusters per bucket above which pairs are capped [1000].")
    ] = None,
    given: GivenParams = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    engine: EngineName = "duckdb",
    spark_master: SparkMaster = "local[*]",
    spark_conf: SparkConf = None,
    quiet: Quiet = False,
) -> None:
    """Hierarchical single-link clustering by LSH with a shrinking band size: levels r = r_start,
    r_start - delta, ... >= r_min; pairs of different clusters sharing a band of r rows and reaching t merge.
    Options not given keep the folder's last hierarchy's values (in brackets: the defaults of a new folder).
    Runs the stages up to signatures first when needed. Writes DIR/merges.parquet and
    DIR/cluster_tree.parquet; `lshsql cut` turns the tree into flat clusters.

    Example: lshsql hierarchy --work work/reuters --threshold 0.3
    """
    from lshsql.pipeline import params_for
    from lshsql.tools.hierarchy import hierarchy as build
    from lshsql.tools.hierarchy import hierarchy_params_for

    params = hierarchy_params_for(
        work,
        threshold=threshold,
        r_start=r_start,
        r_min=r_min,
        delta=delta,
        method=method,
        verify=verify,
        max_bucket=max_bucket,
        level_thresholds=level_thresholds,
    )
    with shown(quiet) as display:
        summary = build(
            work,
            params,
            params_for(work, **given),
            resources(work, threads, memory_limit, max_spill),
            log=display.log,
            **engine_options(engine, spark_master, spark_conf),
        )
    echo_lines(summary.lines())


def cut(
    threshold: Annotated[float, typer.Option(help="Similarity at which to cut the cluster tree.")],
    work: Work = Path("work"),
    labels: Annotated[
        Path | None, typer.Option(help="Parquet or CSV with url,label: score the flat clusters.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Where to write [default: DIR/cut.parquet].")] = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Flat clusters from the cluster tree of `lshsql hierarchy`: the single-link clusters at a similarity
    threshold (one query, sql/85_cut.sql), with the clusters table's columns.

    Example: lshsql cut --threshold 0.6 --work work/reuters --labels work/reuters/labels.parquet
    """
    from lshsql.tools.evaluate import quality_lines, score_clusters
    from lshsql.tools.hierarchy import cut as make_cut

    if labels is not None and not labels.is_file():  # before the cut is written, not after
        from lshsql.errors import InputError

        raise InputError(f"{labels}: no such file")
    resources_ = resources(work, threads, memory_limit, max_spill)
    path, counts = make_cut(work, threshold, resources_, out)
    typer.echo(
        f"{counts['clusters']:,} clusters of {counts['rows']:,} URLs at similarity {threshold:g} "
        f"(largest {counts['largest_cluster']:,}, {counts['singletons']:,} singletons)  ->  {path}"
    )
    if labels is not None:
        echo_lines(quality_lines(score_clusters(path, labels, resources_)))


def environment(
    site: Annotated[str, typer.Argument(help="A host (docs.python.org) or registered domain (python.org).")],
    work: Work = Path("work"),
    threshold: Annotated[float, typer.Option(help="Similarity at which two domains' bags pair.")] = 0.2,
    clustering: Annotated[str, typer.Option(help="center or components.")] = "center",
    members: Annotated[int, typer.Option(help="Domains shown per cluster.")] = 8,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    quiet: Quiet = False,
) -> None:
    """The external web environment of a site: the domains it links to and those citing it, with counts of
    links and pages, clustered by the anchor text the whole crawl uses for them (one bag per registered
    domain) and labelled by their heaviest terms. Written to DIR/environment/SITE/.

    Example: lshsql environment docs.python.example --work work/crawl
    """
    from lshsql.params import Params
    from lshsql.tools.environment import environment as describe

    params = Params(threshold=threshold, clustering=clustering)
    result = describe(work, site, params, resources(work, threads, memory_limit, max_spill), log=say(quiet))
    echo_lines(result.lines(members))


def report(
    work: Work = Path("work"),
    out: Annotated[
        Path | None, typer.Option(help="Where to write the HTML [default: DIR/report.html].")
    ] = None,
    serve_url: Annotated[
        str | None,
        typer.Option(
            help="Address of `lshsql serve` over this folder (http://127.0.0.1:8000): members link to its "
            "pages [default: each member shows the crawl file and offset of its stored page]."
        ),
    ] = None,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Write one self-contained HTML report of the run: S-curve, similarities, cluster sizes, Table 1,
    the largest clusters with titles and a filter, and what `lshsql eval` found when it was run.

    Example: lshsql report --work work
    """
    from lshsql.tools.report import write_report

    resources_ = resources(work, threads, memory_limit, max_spill)
    typer.echo(str(write_report(work, out, resources_, serve_url)))


def mirrors(
    work: Work = Path("work"),
    from_: ClusterSource = "clusters",
    min_shared: Annotated[
        int, typer.Option(help="Keep pairs of hosts sharing at least this many clusters of size >= 2.")
    ] = 2,
    min_jaccard: Annotated[
        float, typer.Option(help="Print the pairs whose cluster sets have at least this Jaccard.")
    ] = 0.5,
    limit: Annotated[int | None, typer.Option(help="Pairs printed [all].")] = None,
    format: OutputFormat = "table",
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
) -> None:
    """Host mirrors: page clusters aggregated to pairs of hosts (shared clusters, Jaccard of the hosts'
    cluster sets). Writes every pair sharing --min-shared clusters to DIR/mirrors.parquet and prints the
    likely mirrors, the pairs with Jaccard >= --min-jaccard.

    Example: lshsql mirrors --work work --min-shared 2 --min-jaccard 0.5
    """
    from lshsql.tools.mirrors import likely_mirrors
    from lshsql.tools.mirrors import mirrors as find_mirrors

    resources_ = resources(work, threads, memory_limit, max_spill)
    path, counts = find_mirrors(work, from_cut(from_), min_shared, resources_)
    table = likely_mirrors(work, min_jaccard, limit, resources_)
    summary = (
        f"{counts['rows']:,} pairs of hosts share >= {min_shared} clusters  ->  {path}; "
        f"{table.num_rows:,}{' shown' if limit is not None else ''} with Jaccard >= {min_jaccard:g}"
    )
    typer.echo(summary, err=format != "table")
    print_table(table, format)


def serve(
    work: Work = Path("work"),
    host: Annotated[
        str, typer.Option(help="Address to listen on; 0.0.0.0 would let other machines connect.")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port to listen on; 0 picks a free one.", min=0, max=65535)
    ] = 8000,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No line per request.")] = False,
) -> None:
    """Browse a finished work folder in a web browser: the clusters, largest first, with search and
    filters; each cluster's members with snippets of their stored pages; What's Related for a URL with why
    each pair was kept; two pages side by side with the differing words marked. Read-only; queries run on
    demand, so it serves runs of any size. Prints the address and answers until stopped (Ctrl-C).

    Example: lshsql serve --work work/example
    """
    from lshsql.web import address, make_server

    log = None if quiet else (lambda line: typer.echo(line, err=True))
    server = make_server(work, host, port, resources(work, threads, memory_limit, max_spill), log)
    typer.echo(f"serving {work} at {address(server)} (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        if not server.stop_queries():  # a thread still in DuckDB as Python exits would abort the process
            typer.echo(
                "lshsql serve: queries still running 10 s after Ctrl-C: stopped without them", err=True
            )
            sys.stdout.flush()
            os._exit(130)
        typer.echo("stopped")
    finally:
        server.server_close()
