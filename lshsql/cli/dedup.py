"""`lshsql dedup`: a corpus in, the corpus without its near-duplicates out."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lshsql.cli.options import MaxSpill, MemoryLimit, Quiet, Threads, resources
from lshsql.cli.output import echo_lines
from lshsql.cli.progress import shown


def dedup(
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="JSON Lines (plain or .gz), Parquet or CSV files, folders or globs.", show_default=False
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="The kept rows, unchanged, in input order: .jsonl[.gz], .parquet or .csv."
        ),
    ],
    removed: Annotated[
        Path | None,
        typer.Option(help="What was removed: row, id, reason, kept_row, kept_id, kept_earlier, similarity."),
    ] = None,
    removed_rows: Annotated[
        bool,
        typer.Option(
            "--removed-rows",
            help="REMOVED holds the removed rows themselves, with lshsql_kept_row, lshsql_kept_id and "
            "lshsql_similarity added.",
        ),
    ] = False,
    work: Annotated[
        Path | None,
        typer.Option("--work", "-w", help="Work folder: shingles, pairs, clusters [OUT's name + .work]."),
    ] = None,
    threshold: Annotated[
        float, typer.Option(help="Jaccard of two documents' shingle sets that makes them duplicates.")
    ] = 0.7,
    shingle: Annotated[int, typer.Option(help="Words per shingle.")] = 5,
    char_shingle: Annotated[
        int | None,
        typer.Option(help="Shingles of N characters instead of words (text without spaces between words)."),
    ] = None,
    keep: Annotated[
        str,
        typer.Option(
            help="Which document of a group stays: first (in input order), longest, or a column's name "
            "(its largest value)."
        ),
    ] = "first",
    id_column: Annotated[
        str, typer.Option(help="Column (or JSON key) of the document id [row number if absent].")
    ] = "id",
    text_column: Annotated[str, typer.Option(help="Column (or JSON key) of the text.")] = "text",
    against: Annotated[
        Path | None,
        typer.Option(
            help="Work folder of an earlier dedup: also remove documents that duplicate one it kept "
            "(it is only read)."
        ),
    ] = None,
    num_perm: Annotated[int, typer.Option(help="Min-hashes per document.")] = 80,
    seed: Annotated[int, typer.Option(help="Seed of the hash family and LSH tables.")] = 1,
    threads: Threads = None,
    memory_limit: MemoryLimit = None,
    max_spill: MaxSpill = None,
    quiet: Quiet = False,
) -> None:
    """Remove near-duplicate documents: write the rows kept to OUT and, with --removed, what was removed.

    Two documents are near-duplicates when the Jaccard similarity of their sets of 5-word shingles
    (lowercased words, punctuation dropped) is at least the threshold, measured exactly. Of a group, the
    first document (--keep) stays and every other is removed in favour of one it duplicates directly.

    Example: lshsql dedup corpus.jsonl.gz --out kept.jsonl.gz --removed removed.parquet
    """
    from lshsql.tools.dedup import DedupParams, dedup_files

    params = DedupParams(
        threshold=threshold,
        shingle=shingle,
        char_shingle=char_shingle,
        keep=keep,
        id_column=id_column,
        text_column=text_column,
        num_perm=num_perm,
        seed=seed,
    )
    work = work or out.with_name(out.name + ".work")
    with shown(quiet) as display:
        summary = dedup_files(
            inputs,
            work,
            params,
            out=out,
            removed=removed,
            removed_rows=removed_rows,
            against=against,
            resources=resources(work, threads, memory_limit, max_spill),
            log=display.log,
            progress=display.reading("MB of text"),
        )
    echo_lines(summary.lines())
