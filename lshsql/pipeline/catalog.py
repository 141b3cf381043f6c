"""What describes a work folder's outputs: DIR/lshsql.duckdb, a view per output table for ad-hoc SQL;
the same views on a connection of one's own (register_outputs); DIR/info.json, rows and seconds per stage.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import duckdb

from lshsql import manifest, sqlfiles, workdir
from lshsql.engines import duckdb as db
from lshsql.engines.base import DuckDBEngine
from lshsql.errors import InputError, StageError
from lshsql.pipeline.inputs import register, user_bags_columns, user_bags_source
from lshsql.pipeline.stages import BAGS_SOURCE_SQL, STAGE_NAMES, output_path

CATALOG = "lshsql.duckdb"
# The storage format the catalog is written in: DuckDB 1.0 and every later reader opens it (the
# duckdb-cli on PyPI and the DuckDB packages users have installed are often a major version behind).
CATALOG_STORAGE = "v1.0.0"


# frozen_idf from run --freeze-idf; cluster_history from the clusters stage; labels from ingest; merges,
# cluster_tree and cut from `lshsql hierarchy` and `lshsql cut`; mirrors from `lshsql mirrors`
CATALOG_RELATIONS = (
    "pages", "links", "fragments", "url_aliases", "surface_forms", *STAGE_NAMES, "frozen_idf",
    "cluster_history", "labels",
    "merges", "cluster_tree", "cut", "cut_labels", "mirrors", "documents", "copies", "duplicates",
)  # fmt: skip


def write_catalog(work: Path) -> Path:
    """DIR/lshsql.duckdb: a view per output table, so `duckdb lshsql.duckdb` in the work folder answers
    ad-hoc SQL. The views name the folder's files by relative path (a moved or copied folder keeps working:
    DuckDB resolves them from its working directory), need no UDF, and are written in storage format
    CATALOG_STORAGE, under a temporary name then renamed into place (a write-ahead log left by a writer
    that died is removed with the old file, so it is not replayed onto the new one)."""
    work = work.resolve()
    path = work / CATALOG
    fresh = path.with_name(CATALOG + ".new")
    fresh.unlink(missing_ok=True)
    config = {"storage_compatibility_version": CATALOG_STORAGE}
    # DuckDB checks a view's files as it creates it, from the working directory first: from the work folder,
    # so that a file of the same name where the command runs (another work folder) is not the one checked.
    with (
        db.database_file(fresh) as database,
        duckdb.connect(database, config=config) as con,
        contextlib.chdir(work),
    ):
        user_bags = user_bags_source(work)
        if user_bags and user_bags.exists():
            _catalog_user_bags(con, work, user_bags)
        for relation in CATALOG_RELATIONS:
            if relation == "term_counts" and user_bags:
                continue
            source = _view_source(work, relation)
            if source:
                # DDL takes no parameters: the path is written as a SQL string literal, quotes doubled.
                con.execute(f"create view {relation} as select * from {source}").fetchall()
    path.with_name(CATALOG + ".wal").unlink(missing_ok=True)
    os.replace(fresh, path)
    return path


def open_catalog(work: Path | str) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection (in memory) with the views of DIR/lshsql.duckdb, naming the folder's files by
    absolute path: they read this folder's tables wherever the process runs, even from inside another work
    folder (where the catalog's relative paths would find that folder's files first)."""
    con = duckdb.connect()
    register_outputs(con, Path(work))
    return con


def _catalog_user_bags(con: duckdb.DuckDBPyConnection, work: Path, path: Path) -> None:
    """term_counts in the catalog as the view of the user's table it is in a run (by relative path when the
    table is inside the work folder, else by absolute path: it stays where the user keeps it)."""
    source = f"read_parquet({_literal(_relative(work, path))})"  # DDL takes no parameters: a literal
    columns = {name for name, *_ in con.execute(f"describe select * from {source}").fetchall()}
    con.execute(f"create view user_bags as select {user_bags_columns(columns)} from {source}").fetchall()
    DuckDBEngine(con).stage_view(sqlfiles.load(BAGS_SOURCE_SQL), "term_counts")


def _view_source(work: Path, relation: str) -> str | None:
    if relation == "fragments":
        if not (work / "fragments").exists():
            return None
        files = ", ".join(_literal(_relative(work, Path(f))) for f in workdir.fragment_files(work))
        return f"read_parquet([{files}], hive_partitioning = true)" if files else None
    path = output_path(work, relation)
    return f"read_parquet({_literal(_relative(work, path))})" if path.exists() else None


def _relative(work: Path, path: Path) -> str:
    """`path` relative to the work folder when it is inside it (with / separators), else absolute."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(work.resolve()).as_posix()
    except ValueError:
        return str(resolved)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def register_outputs(con: duckdb.DuckDBPyConnection, work: Path) -> dict[str, Exception]:
    """A view for every output the work folder has (an output not made yet simply has none). Returns the
    outputs that cannot be read, with the error: a file DuckDB could not open (a truncated file), the tables
    of an extraction that is not whole, or term_counts when the --bags table it is a view of is gone (an
    InputError saying so). The
    catalog is DuckDB's (a connection of one's own, DIR/lshsql.duckdb), so `con` is a DuckDB connection."""
    engine = DuckDBEngine(con)
    unopened: dict[str, Exception] = {}
    try:
        workdir.require_extraction(work)
    except InputError as e:
        unopened = dict.fromkeys(("pages", "links", "fragments", "url_aliases", "surface_forms", "labels"), e)
    for relation in CATALOG_RELATIONS:
        if relation in unopened:
            continue
        try:
            register(engine, work, (relation,))
        except (InputError, StageError) as e:
            if relation == "term_counts" and isinstance(e, InputError) and user_bags_source(work):
                unopened[relation] = InputError(f"{e}; term_counts of {work} is a view of this --bags table")
            continue
        except duckdb.InterruptException:  # Ctrl-C, not a file DuckDB could not open
            raise
        except duckdb.Error as e:
            unopened[relation] = e
    return unopened


def write_info(work: Path) -> Path:
    """DIR/info.json: rows and seconds per stage (the paper's Table 1), from the manifest."""
    stages = manifest.read(work)["stages"]
    rows = [
        {
            "stage": name,
            "rows": entry.get("rows", entry.get("counts", {}).get("pages_used")),
            "seconds": entry.get("seconds"),
        }
        for name in ("extract", *STAGE_NAMES)
        if (entry := stages.get(name))
    ]
    path = work / "info.json"
    path.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return path
