"""The engine that runs the stage SELECTs: DuckDB (the default) or Spark (lshsql/engines/spark.py).

An Engine is opened once at the top of a run or a command (open_engine) and handed down. The pipeline's
runners (lshsql/pipeline/runners.py) and the tools call only these operations, so the same Python drives
a stage, a CENTER round or a connected-components round on either engine; nothing outside lshsql/engines/
asks which engine it has:

    register(inputs)                      a view per relation of Parquet file(s)
    materialize(sql, params, out, ...)    a stage file's final select -> ONE ordered Parquet file
    materialize_partitioned(sql, ...)     a stage file's final select -> one ordered file per partition
    materialize_query(query, ..., out)    a runner's own select -> one Parquet file
    concatenate(relation, order, out)     ordered files, one after another in that order -> one file
                                          (materialize_in_parts: one file per context, then one file)
    to_table(sql, params, table, ...)     a stage file's final select kept as a table (loops of rounds)
    table(name, select) / append(...)     `create or replace temp table name as select` / `insert into`
                                          (both with named parameters)
    empty_table(name, columns)            `create or replace temp table name (column type, ...)`
    view(name, select)                    `create or replace temp view name as select`
    stage_view(sql, name)                 a stage file's final select kept as a view (a user's bags)
    open_parquet(name, path)              a view of a user's Parquet file, its columns (InputError if
                                          unreadable, in the engine's words)
    file_source(name, path)               a FROM item reading one Parquet file, and its parameters
                                          (DuckDB: read_parquet($p); Spark: a temp view `name`)
    scalar(query) / row(query) / rows(query)  one value / the first row / every row of a select
    columns(relation)                     the column names of a registered relation
    band_batch(n_urls, key_bytes)         LSH tables per batch the memory limit holds (Spark: None, all)
    rows_fitting(row_bytes)               rows of that size the memory limit holds (Spark: None, no bound)
    local_duckdb()                        a DuckDB connection for reads on this machine (the planner's
                                          sample): DuckDB's own, or a new one beside Spark
    hashes_band_keys                      the buckets stage's form: one hashed 64-bit key per LSH table and
                                          shared keys by a sort (DuckDB), or the k values grouped (Spark)

The UDFs the stage files call (engines/udf.py) are registered when an engine is opened, on either engine.

Every SQL text is DuckDB SQL; the Spark engine lints and transpiles it (engines/transpile.py). DuckDBEngine
makes exactly the calls the runners made before this module existed, so DuckDB's outputs are unchanged.
The engine is not a stage parameter: both engines write the same rows (tests/engines/test_spark_run.py), but
for a 64-bit collision of DuckDB's hashed LSH band keys (sql/macros/band_keys.sql).

Example:
    >>> with open_engine("spark", resources, spark_master="local[2]") as engine:  # doctest: +SKIP
    ...     engine.register({"pairs": "work/pairs.parquet"})
    ...     engine.scalar("select count(*) from pairs")
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import duckdb

from lshsql import progress, sqlfiles
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError, one_line

ENGINES = ("duckdb", "spark")


class Engine:
    """What the pipeline and the tools ask of an engine (see the module's docstring). Only lshsql/engines/
    knows which engine runs: every difference between DuckDB and Spark is a method or an attribute here."""

    name: str = ""
    # The buckets stage's form (sql/35_buckets.sql, sql/macros/band_keys.sql): one 64-bit hashed band key
    # per table, shared keys found by a sort (DuckDB), or the k values grouped (Spark, whose hash() is
    # another function and whose window over one global order would run in one partition).
    hashes_band_keys: bool = False
    # Whether `extract` parses the crawl on this engine's executors (Spark) rather than in its own worker
    # processes, which fork before any DuckDB connection exists (so an open DuckDB engine cannot be used).
    parses_crawls: bool = False

    def register(self, inputs: dict[str, str | list[str]]) -> None:
        raise NotImplementedError

    def materialize(self, sql, params, out, context=None, compression="zstd") -> int:
        raise NotImplementedError

    def materialize_partitioned(self, sql, params: dict, out_dir, column: str, n: int) -> int:
        raise NotImplementedError

    def materialize_query(self, query: str, params: dict, out, compression="zstd", table=None) -> int:
        raise NotImplementedError

    def concatenate(self, relation: str, order: str, out, compression="zstd", table=None) -> int:
        raise NotImplementedError

    def to_table(self, sql, params: dict, table: str, context=None) -> int:
        raise NotImplementedError

    def stage_view(self, sql, name: str, context=None) -> None:
        raise NotImplementedError

    def table(self, name: str, select: str, params: dict | None = None) -> None:
        raise NotImplementedError

    def append(self, name: str, select: str, params: dict | None = None) -> None:
        raise NotImplementedError

    def empty_table(self, name: str, columns: dict[str, str]) -> None:
        raise NotImplementedError

    def view(self, name: str, select: str, params: dict | None = None) -> None:
        raise NotImplementedError

    def open_parquet(self, name: str, path: str | Path) -> list[str]:
        raise NotImplementedError

    def file_source(self, name: str, path: str | Path) -> tuple[str, dict]:
        raise NotImplementedError

    def scalar(self, query: str, params: dict | None = None):
        raise NotImplementedError

    def row(self, query: str, params: dict | None = None) -> tuple:
        raise NotImplementedError

    def rows(self, query: str, params: dict | None = None) -> list[tuple]:
        raise NotImplementedError

    def columns(self, relation: str) -> list[str]:
        raise NotImplementedError

    def band_batch(self, n_urls: int, key_bytes: int) -> int | None:
        raise NotImplementedError

    def rows_fitting(self, row_bytes: int) -> int | None:
        raise NotImplementedError

    def local_duckdb(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        raise NotImplementedError


class DuckDBEngine(Engine):
    """Stage SELECTs on a DuckDB connection (the runners' calls of before, unchanged)."""

    name = "duckdb"
    hashes_band_keys = True

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con

    def register(self, inputs: dict[str, str | list[str]]) -> None:
        sqlfiles.register_inputs(self.con, inputs)

    def materialize(self, sql, params, out, context=None, compression="zstd") -> int:
        return sqlfiles.materialize(self.con, sql, params, out, context, compression)

    def materialize_partitioned(self, sql, params: dict, out_dir, column: str, n: int) -> int:
        return sqlfiles.materialize_partitioned(self.con, sql, params, out_dir, column, n)

    def materialize_query(self, query: str, params: dict, out, compression="zstd", table=None) -> int:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        self.con.execute(
            f"copy ({query}) to $out (format parquet, compression {compression})", {**params, "out": str(out)}
        ).fetchall()
        return db.scalar(self.con, "select count(*) from read_parquet($p)", {"p": str(out)})

    def concatenate(self, relation: str, order: str, out, compression="zstd", table=None) -> int:
        """The rows of `relation`, files each in `order` and in it one after another, written as they come:
        DuckDB keeps a scan's file and row order when told to preserve insertion order, so no sort."""
        kept = db.scalar(self.con, "select current_setting('preserve_insertion_order')")
        self.con.execute("set preserve_insertion_order = true")
        try:
            return self.materialize_query(f"select * from {relation}", {}, out, compression, table=table)
        finally:
            self.con.execute(f"set preserve_insertion_order = {'true' if kept else 'false'}")

    def to_table(self, sql, params: dict, table: str, context=None) -> int:
        return sqlfiles.to_table(self.con, sql, params, table, context)

    def stage_view(self, sql, name: str, context=None) -> None:
        """`create or replace view name as` the stage file's final select (its setup statements run first);
        a view, not a temp view, so it can be kept in a database file (DIR/lshsql.duckdb)."""
        query, _ = sqlfiles.final_select(self.con, sql, {}, context)
        self.con.execute(f"create or replace view {name} as {query}").fetchall()

    def table(self, name: str, select: str, params: dict | None = None) -> None:
        self.con.execute(f"create or replace temp table {name} as {select}", params or {}).fetchall()

    def append(self, name: str, select: str, params: dict | None = None) -> None:
        self.con.execute(f"insert into {name} {select}", params or {}).fetchall()

    def empty_table(self, name: str, columns: dict[str, str]) -> None:
        spec = ", ".join(f"{column} {dtype}" for column, dtype in columns.items())
        self.con.execute(f"create or replace temp table {name} ({spec})").fetchall()

    def view(self, name: str, select: str, params: dict | None = None) -> None:
        self.con.execute(f"create or replace temp view {name} as {select}", params or {}).fetchall()

    def open_parquet(self, name: str, path: str | Path) -> list[str]:
        """The Parquet file `path` (a user's) as the view `name`; its columns. InputError when DuckDB cannot
        read it."""
        try:
            relation = self.con.read_parquet(str(path))
        except duckdb.Error as e:
            raise InputError(f"{path}: not a readable Parquet file: {one_line(e, 200)}") from None
        relation.create_view(name, replace=True)
        return relation.columns

    def file_source(self, name: str, path: str | Path) -> tuple[str, dict]:
        """A FROM item reading the Parquet file `path`, and its parameters: read_parquet($p) in the query."""
        return "read_parquet($p)", {"p": str(path)}

    def scalar(self, query: str, params: dict | None = None):
        return db.scalar(self.con, query, params)

    def row(self, query: str, params: dict | None = None) -> tuple:
        return self.con.execute(query, params or {}).fetchall()[0]

    def rows(self, query: str, params: dict | None = None) -> list[tuple]:
        return self.con.execute(query, params or {}).fetchall()

    def columns(self, relation: str) -> list[str]:
        return self.con.table(relation).columns

    def band_batch(self, n_urls: int, key_bytes: int) -> int:
        """LSH tables per batch so that their band keys (key_bytes each) fit in DuckDB's memory limit."""
        return max(1, db.memory_limit_bytes(self.con) // key_bytes // max(1, n_urls))

    def rows_fitting(self, row_bytes: int) -> int:
        """How many rows of row_bytes DuckDB's memory limit holds."""
        return db.memory_limit_bytes(self.con) // row_bytes

    @contextmanager
    def local_duckdb(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """This engine's own connection (left open)."""
        yield self.con


class SparkEngine(Engine):
    """Stage SELECTs on a SparkSession: transpiled stage files, tables as checkpointed temp views."""

    name = "spark"
    hashes_band_keys = False
    parses_crawls = True

    def __init__(self, spark, resources: db.Resources | None = None):
        self.spark = spark
        self.resources = resources  # for local_duckdb

    def register(self, inputs: dict[str, str | list[str]]) -> None:
        from lshsql.engines import spark

        spark.register_inputs(self.spark, inputs)

    def materialize(self, sql, params, out, context=None, compression="zstd") -> int:
        from lshsql.engines import spark

        rendered = sqlfiles.render(sql, context)
        return spark.materialize(self.spark, rendered, params, out, name=sql.name, compression=compression)

    def materialize_partitioned(self, sql, params: dict, out_dir, column: str, n: int) -> int:
        """As sqlfiles.materialize_partitioned: out_dir/<column>=<i>/data.parquet for i in 0..n-1, each
        ordered, without the column; the select is computed once (a checkpoint) and filtered n times."""
        table = f"lshsql_{sql.stage}"
        self.to_table(sql, params, table)
        kept = ", ".join(c for c in self.columns(table) if c != column)
        rows = 0
        for part in range(n):
            query = f"select {kept} from {table} where {column} = $part order by {sql.order}"
            path = Path(out_dir) / f"{column}={part}" / "data.parquet"
            rows += self.materialize_query(query, {"part": part}, path, table=sql.writes)
        self.spark.catalog.dropTempView(table)  # its checkpoint is freed, not kept for the session's life
        return rows

    def materialize_query(self, query: str, params: dict, out, compression="zstd", table=None) -> int:
        from lshsql.engines import spark

        return spark.materialize(self.spark, query, params, out, table=table, compression=compression)

    def concatenate(self, relation: str, order: str, out, compression="zstd", table=None) -> int:
        """Sorted by `order`: Spark reads a list of files in partitions of its choosing, not in turn."""
        query = f"select * from {relation} order by {order}"
        return self.materialize_query(query, {}, out, compression, table)

    def to_table(self, sql, params: dict, table: str, context=None) -> int:
        from lshsql.engines import spark

        text = sqlfiles.render(sql, context)
        return spark.to_table(self.spark, text, params, table, source=sql.name)

    def stage_view(self, sql, name: str, context=None) -> None:
        """The rendered stage file (one select on Spark) as the temp view `name`."""
        self.view(name, sqlfiles.render(sql, context))

    def table(self, name: str, select: str, params: dict | None = None) -> None:
        from lshsql.engines import spark

        spark.to_table(self.spark, select, params or {}, name)

    def append(self, name: str, select: str, params: dict | None = None) -> None:
        self.table(name, f"select * from {name} union all {select}", params)

    def empty_table(self, name: str, columns: dict[str, str]) -> None:
        spec = ", ".join(f"cast(null as {dtype}) as {column}" for column, dtype in columns.items())
        self.table(name, f"select {spec} where false")

    def view(self, name: str, select: str, params: dict | None = None) -> None:
        from lshsql.engines import spark, transpile

        tree = transpile.to_spark_tree(select, name)
        spark._run(self.spark, tree, params or {}, name).createOrReplaceTempView(name)  # noqa: SLF001

    def open_parquet(self, name: str, path: str | Path) -> list[str]:
        """The Parquet file `path` (a user's) as the temp view `name`; its columns (InputError when Spark
        cannot read it)."""
        self.register({name: str(path)})
        return self.columns(name)

    def file_source(self, name: str, path: str | Path) -> tuple[str, dict]:
        """A FROM item reading the Parquet file `path`: the temp view `name` of it (Spark SQL names no
        file in a query)."""
        self.register({name: str(path)})
        return name, {}

    def scalar(self, query: str, params: dict | None = None):
        from lshsql.engines import spark

        return spark.scalar(self.spark, query, params)

    def row(self, query: str, params: dict | None = None) -> tuple:
        from lshsql.engines import spark, transpile

        df = spark._run(self.spark, transpile.to_spark_tree(query), params or {}, "query")  # noqa: SLF001
        rows = spark.spark_call("query", lambda: df.limit(1).collect())
        return tuple(rows[0]) if rows else ()

    def rows(self, query: str, params: dict | None = None) -> list[tuple]:
        from lshsql.engines import spark, transpile

        df = spark._run(self.spark, transpile.to_spark_tree(query), params or {}, "query")  # noqa: SLF001
        return [tuple(row) for row in spark.spark_call("query", df.collect)]

    def columns(self, relation: str) -> list[str]:
        return self.spark.table(relation).columns

    def band_batch(self, n_urls: int, key_bytes: int) -> int | None:
        """All LSH tables at once: Spark spills its shuffles to disk (None: no batches)."""
        return None

    def rows_fitting(self, row_bytes: int) -> int | None:
        """None: Spark spills its shuffles, so the pairs stage takes all signatures at once."""
        return None

    @contextmanager
    def local_duckdb(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A DuckDB connection of the driver, with the run's resources, for what is read on this machine (the
        planner's sample of signatures): closed at the end."""
        with db.connect(self.resources or db.Resources()) as con:
            yield con


def materialize_in_parts(
    engine: Engine,
    sql: sqlfiles.SqlFile,
    params: dict,
    contexts: list[dict],
    parts: Path,
    order: str,
    out,
    compression: str = "zstd",
    table: str | None = None,
    part_params: list[dict] | None = None,
    prepare: Callable[[int], None] | None = None,
    parts_in_order: bool = False,
) -> int:
    """A stage file's final select once per template context, each into a Parquet file under `parts`, then
    their rows into `out` in `order` (columns): the batches of the buckets stage, the ranges of candidates,
    the blocks of pairs, the batches of eval's truth. When `parts_in_order` (each part's rows follow the
    last part's in `order`), the parts are concatenated rather than sorted. Part i adds part_params[i] to
    `params` (if given) and is preceded by prepare(i) (the pairs stage registers its block's views). The
    parts are removed, on failure too. Returns the rows written."""
    shutil.rmtree(parts, ignore_errors=True)
    files = [str(Path(parts) / f"part-{number:05d}.parquet") for number in range(len(contexts))]
    try:
        for number, context in enumerate(contexts):
            if prepare:
                prepare(number)
            bound = params | (part_params[number] if part_params else {})
            engine.materialize(sql, bound, files[number], context)
            progress.step("batch", number + 1, len(contexts))
        engine.register({"parts": files})  # in the order written, whatever their names' sort order
        if parts_in_order:
            return engine.concatenate("parts", order, out, compression, table=table)
        sort = f"select * from parts order by {order}"
        return engine.materialize_query(sort, {}, out, compression, table=table)
    finally:
        shutil.rmtree(parts, ignore_errors=True)


@contextmanager
def open_engine(
    name: str | Engine = "duckdb",
    resources: db.Resources | None = None,
    spark_master: str = "local[*]",
    spark_conf: dict[str, str] | None = None,
) -> Iterator[Engine]:
    """The engine `name` for a run: a DuckDB connection with `resources`, or a SparkSession on
    `spark_master` with `spark_conf` (stopped at the end). An Engine given instead of a name is used as it
    is and left open (a command that runs the pipeline and then its own rounds opens one engine for both).
    ParamError (one line) for an unknown engine, or when pyspark, sqlglot or Java is missing."""
    if isinstance(name, Engine):
        yield name
        return
    if name == "duckdb":
        with db.connect(resources or db.Resources()) as con:
            from lshsql.engines import udf

            udf.register(con)
            yield DuckDBEngine(con)
        return
    if name != "spark":
        raise ParamError(f"unknown engine '{name}' (engines: {', '.join(ENGINES)})")
    from pyspark.sql import SparkSession

    from lshsql.engines import spark

    already_running = SparkSession.getActiveSession() is not None  # a caller's session: not ours to stop
    session = spark.session(spark_master, spark_conf)
    try:
        yield SparkEngine(session, resources)
    finally:
        if not already_running:
            session.stop()


def parse_conf(pairs: list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """--spark-conf KEY=VALUE options as a dict; ParamError for one without '='."""
    conf = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ParamError(f"--spark-conf wants KEY=VALUE, got '{pair}'")
        conf[key.strip()] = value
    return conf
