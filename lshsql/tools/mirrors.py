"""`lshsql mirrors`: page clusters aggregated to pairs of hosts, to find mirror sites.

A site and its mirror serve the same pages under another host; other pages describe each copy with the same
anchor texts, so every page clusters with its copy and the two hosts end up in the same clusters. For each
pair of hosts sharing clusters of size >= 2, sql/90_mirrors.sql counts the shared clusters and the Jaccard of
the two hosts' cluster sets; `likely_mirrors` keeps the pairs whose Jaccard is high.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lshsql import manifest, pipeline, schemas, sqlfiles, workdir
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.tools.explore import clustering_path, fetch_arrow, open_work

SQL = "90_mirrors.sql"
SOURCES = ("clusters", "cut")


@workdir.writer
def mirrors(
    work: str | Path,
    from_cut: bool = False,
    min_shared: int = 2,
    resources: db.Resources | None = None,
) -> tuple[Path, dict]:
    """Write DIR/mirrors.parquet: every pair of hosts sharing at least `min_shared` clusters of size >= 2,
    with the Jaccard of their cluster sets (sql/90_mirrors.sql). The clusters are DIR/clusters.parquet, or
    with from_cut the flat clusters of `lshsql cut`. Returns the path and counts.

    Example:
        >>> path, counts = mirrors("work/example", min_shared=2)  # doctest: +SKIP
    """
    work = Path(work)
    if min_shared < 1:
        raise ParamError(f"min_shared must be >= 1, got {min_shared}")
    source = clustering_path(work, from_cut)
    out = pipeline.output_path(work, "mirrors")
    resources = db.for_work(work, resources)
    with db.connect(resources) as con:
        sqlfiles.register_inputs(con, {"clusters": str(source)})
        rows = sqlfiles.materialize(con, sqlfiles.load(SQL), {"min_shared": min_shared}, out)
        hosts = db.scalar(
            con,
            "select count(*) from (select host_a from read_parquet($p) "
            "union select host_b from read_parquet($p))",
            {"p": str(out)},
        )
    schemas.validate(out, "mirrors")
    counts = {"rows": rows, "hosts": hosts}
    entry = {"from": SOURCES[from_cut], "min_shared": min_shared, "path": str(out), **counts}
    manifest.record_stage(work, "mirrors", entry)
    pipeline.write_catalog(work)
    return out, counts


def likely_mirrors(
    work: str | Path,
    min_jaccard: float = 0.5,
    limit: int | None = None,
    resources: db.Resources | None = None,
) -> pa.Table:
    """The pairs of DIR/mirrors.parquet (written by `mirrors`) whose Jaccard is at least `min_jaccard`,
    most alike first, as an Arrow table."""
    work = Path(work)
    if not 0 <= min_jaccard <= 1:
        raise ParamError(f"min_jaccard must be in [0, 1], got {min_jaccard}")
    if limit is not None and limit < 0:
        raise ParamError(f"limit must be >= 0, got {limit}")
    if not pipeline.output_path(work, "mirrors").exists():
        raise InputError(f"{work}: no mirrors.parquet yet; run `lshsql mirrors --work {work}` first")
    with open_work(work, resources) as con:
        return fetch_arrow(
            con,
            "select * from mirrors where jaccard >= $min_jaccard "
            "order by jaccard desc, shared_clusters desc, host_a, host_b limit $limit",
            {"min_jaccard": min_jaccard, "limit": 2**62 if limit is None else limit},
        )
