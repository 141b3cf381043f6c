"""Cluster labels: each cluster's heaviest terms by summed TF-IDF, shown as readable words.

sql/63_cluster_labels.sql ranks the terms of every cluster of two or more URLs by tf * ln(N / df) summed
over its members and names each term by its most frequent surface word, kept by extraction in
DIR/surface_forms.parquet (sql/05_surface_forms.sql). The pipeline runs it as the stage `cluster_labels`
after `clusters`; `lshsql cut` runs the same file on its cut (DIR/cut_labels.parquet).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from lshsql import schemas, sqlfiles

LABEL_TERMS = 10  # terms kept per cluster (the file's $n_terms)
SQL = "63_cluster_labels.sql"
SURFACE_FORMS = "surface_forms.parquet"
LABEL_INPUTS = ("bags", "terms", "urls")  # besides clusters and surface_forms


def register_surface_forms(con: duckdb.DuckDBPyConnection, work: Path) -> bool:
    """DIR/surface_forms.parquet as the view surface_forms, or an empty one when the folder has none (a
    user's bags, or an extraction made before surface forms were kept); True when the file is there."""
    path = Path(work) / SURFACE_FORMS
    if path.exists():
        sqlfiles.register_inputs(con, {"surface_forms": str(path)})
        return True
    empty = "select cast(null as varchar) as term, cast(null as varchar) as word, cast(null as bigint) as n"
    con.sql(f"{empty} where false").create_view("surface_forms", replace=True)
    return False


def materialize(
    con: duckdb.DuckDBPyConnection, out: Path, table: str = "cluster_labels", min_size: int = 2
) -> int:
    """Run sql/63_cluster_labels.sql on the registered views into `out`; rows written. Clusters of fewer
    than min_size URLs get no labels (singletons say what their own bag says)."""
    params = {"n_terms": LABEL_TERMS, "min_size": min_size}
    rows = sqlfiles.materialize(con, sqlfiles.load(SQL), params, out)
    schemas.validate(out, table)
    return rows


def register(con: duckdb.DuckDBPyConnection, work: Path, clusters: Path) -> None:
    """The views the labels are made from: the flat clustering in `clusters` (the columns of clusters or
    cut) as clusters, and the work folder's bags, terms, urls and surface forms. A clustering made before
    cluster ids lends its center_id as the id, the one its clusters keep when it is remade."""
    work = Path(work)
    inputs = {relation: str(work / f"{relation}.parquet") for relation in LABEL_INPUTS}
    sqlfiles.register_inputs(con, {"clusters": str(clusters), **inputs})
    columns = {name for (name,) in con.execute("select column_name from (describe clusters)").fetchall()}
    if "cluster_id" not in columns:
        with_ids = con.read_parquet(str(clusters)).project("*, center_id as cluster_id")
        with_ids.create_view("clusters", replace=True)
    register_surface_forms(con, work)


def write(
    con: duckdb.DuckDBPyConnection,
    work: Path,
    clusters: Path,
    out: Path,
    table: str = "cluster_labels",
    min_size: int = 2,
) -> int:
    """Labels of the flat clustering in `clusters` into `out` (see register); rows written."""
    register(con, work, clusters)
    return materialize(con, out, table, min_size)


def to_table(con: duckdb.DuckDBPyConnection, work: Path, clusters: Path, table: str) -> int:
    """Labels of the flat clustering in `clusters` as a temp table, for a folder without a labels file."""
    register(con, work, clusters)
    return sqlfiles.to_table(con, sqlfiles.load(SQL), {"n_terms": LABEL_TERMS, "min_size": 2}, table)
