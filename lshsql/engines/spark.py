"""The Spark engine: the same stage files as DuckDB, transpiled (engines/transpile.py) and run by Spark SQL.

    spark = session("local[4]")                       # UDFs registered, UTC, ANSI arithmetic
    register_inputs(spark, {"bags": "work/bags.parquet", "urls": "work/urls.parquet"})
    sql = sqlfiles.render(sqlfiles.load("50_pairs.sql"), template_context(params))
    rows = materialize(spark, sql, {"min_agree": 60, ...}, Path("work/pairs.parquet"), name="50_pairs.sql")

Each stage's output is one ordered Parquet file with the column types of lshsql/schemas.py, as DuckDB writes
it, so the engines can take turns on one work folder. Loops (CENTER rounds, connected components) keep
their tables as checkpointed temp views (`to_table`) driven by the same Python loop as on DuckDB.

The UDFs are the function bodies of engines/udf.py, registered as Arrow UDFs (pyarrow arrays in and out;
Spark >= 4.1) or, on Spark 3.5 and 4.0, as pandas UDFs around the same bodies. Workers must import lshsql:
PYSPARK_PYTHON is set to this interpreter for local masters (and left as set for a cluster).

For a runner: every SQL text given to this module is DuckDB SQL (a rendered stage file, or a runner's own
select), linted and transpiled here. The DuckDB calls of a runner map onto it as

    sqlfiles.register_inputs(con, inputs)        ->  register_inputs(spark, inputs)
    sqlfiles.materialize(con, sql, params, out)  ->  materialize(spark, sqlfiles.render(sql, context),
                                                                 params, out, name=sql.name)
    create or replace temp table t as <select>   ->  to_table(spark, "<select>", params, "t")
    insert into t <select>                       ->  to_table(spark, "select * from t union all <select>",
                                                              {}, "t")
    create temp table t (a bigint)               ->  to_table(spark, "select cast(null as bigint) as a
                                                              where false", {}, "t")
    db.scalar(con, "<select>")                   ->  scalar(spark, "<select>")

(lshsql/engines/base.py's SparkEngine makes exactly these calls for the pipeline's runners, CENTER and
components loops included; tests/engines/test_spark_golden.py spells the loops out.) Spark 3.5
and 4.0 have no WITH RECURSIVE: sql/04_url_aliases.sql stops there with a StageError saying so.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from lshsql.errors import InputError, ParamError, StageError, one_line

INSTALL_HINT = "pip install 'lshsql[spark]'"
DEFAULT_CONF = {
    "spark.sql.session.timeZone": "UTC",
    # overflow, division by zero and bad casts raise as in DuckDB instead of giving NULL or wrapping
    "spark.sql.ansi.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.parquet.compression.codec": "zstd",
    # timestamps as DuckDB writes them (timestamp[us, tz=UTC]), not Spark's default INT96
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Spark 4.3's constraint propagation fails (NoSuchElementException) on the checkpoint of a union of two
    # checkpointed tables, as `append` makes in the hierarchy's loop; it only prunes filters, never rows
    "spark.sql.constraintPropagation.enabled": "false",
}
# Settings the rows depend on (time zone of timestamps, ANSI overflow and cast errors as in DuckDB).
SAME_ROWS_CONF = ("spark.sql.session.timeZone", "spark.sql.ansi.enabled")
COMPRESSIONS = ("zstd", "snappy", "uncompressed")  # as sqlfiles.COMPRESSIONS


# ---------------------------------------------------------------------------------------------- session


def session(master: str = "local[*]", conf: dict[str, str] | None = None):
    """A SparkSession for the stage files, with lshsql's UDFs registered.

    Local masters get few shuffle partitions (one per core; Spark's 200 cost more than they give on one
    machine) and no web UI. Raises ParamError (one line) when pyspark or sqlglot is not installed, or Java
    is missing, or Spark does not start.

    Example:
        >>> spark = session("local[2]", {"spark.driver.memory": "4g"})  # doctest: +SKIP
    """
    _require_pyspark()
    from lshsql.engines import transpile  # noqa: F401 - sqlglot missing: ParamError now, not at the first stage

    _require_java()
    local = master.startswith("local")
    if local:  # workers are this interpreter, which has lshsql and its dependencies
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = dict(DEFAULT_CONF)
    if local:
        cores = _local_cores(master)
        settings |= {
            "spark.sql.shuffle.partitions": str(cores),
            "spark.default.parallelism": str(cores),
            "spark.ui.enabled": "false",
        }
    fixed = sorted(key for key in conf or {} if key in SAME_ROWS_CONF)
    if fixed:  # the engine is in no fingerprint: its outputs must equal DuckDB's
        raise ParamError(f"--spark-conf {', '.join(fixed)}: fixed by lshsql so Spark gives DuckDB's rows")
    settings |= conf or {}
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("lshsql")
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # py4j / PySparkRuntimeError: the JVM did not start
        raise ParamError(
            f"Spark did not start ({master}): {_spark_message(e)} (Spark 4 needs Java 17 or later; "
            f"JAVA_HOME={os.environ.get('JAVA_HOME', 'unset')}, java on PATH: {shutil.which('java')})"
        ) from None
    try:
        spark.sparkContext.setLogLevel("ERROR")
        _quiet_loggers(spark)
        register_udfs(spark)
    except Exception:
        spark.stop()
        raise
    return spark


# Driver loggers that print a stack trace per message to an executor that is gone (a worker lost or
# killed): Spark's one-line "Lost executor" and the task retries already say what happened.
QUIET_LOGGERS = ("org.apache.spark.network.client.TransportClient",)


def _quiet_loggers(spark) -> None:
    """Switch QUIET_LOGGERS off in the driver's log4j 2 (a no-op where log4j 2 cannot be reached)."""
    try:
        jvm = spark.sparkContext._jvm  # noqa: SLF001 - log4j has no Python API
        level = jvm.org.apache.logging.log4j.Level.OFF
        for name in QUIET_LOGGERS:
            jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, level)
    except Exception:  # noqa: BLE001 - quieter logs are a nicety, never a reason to fail
        pass


def _require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise ParamError(f"the Spark engine needs pyspark: {INSTALL_HINT}") from None


def _require_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return
    if shutil.which("java"):
        return
    raise ParamError(
        "the Spark engine needs Java (17 or later for Spark 4): no java on PATH and JAVA_HOME is not set; "
        "install a JDK (e.g. apt-get install openjdk-17-jre-headless)"
    )


def _local_cores(master: str) -> int:
    inside = master[master.find("[") + 1 : master.find("]")] if "[" in master else "1"
    if inside.split(",")[0] in ("*", ""):
        return os.cpu_count() or 1
    try:
        return max(1, int(inside.split(",")[0]))
    except ValueError:
        return os.cpu_count() or 1


# ---------------------------------------------------------------------------------------------- UDFs


def libm_ln(values: pa.Array) -> pa.Array:
    """Natural logarithm by the C library (Arrow compute), as DuckDB's ln: Spark's StrictMath.log differs
    in the last bit for about 1 value in 30. ln(0) = -inf, ln(x < 0) = NaN, as in DuckDB."""
    return pc.ln(pc.cast(values, pa.float64()))


def libm_exp(values: pa.Array) -> pa.Array:
    """e^x by the C library (Arrow compute), as DuckDB's exp."""
    return pc.exp(pc.cast(values, pa.float64()))


def libm_pow(base: pa.Array, exponent: pa.Array) -> pa.Array:
    """base^exponent by the C library (Arrow compute), as DuckDB's pow."""
    return pc.power(pc.cast(base, pa.float64()), pc.cast(exponent, pa.float64()))


def udfs() -> list[tuple[str, Callable[..., pa.Array], str]]:
    """(SQL name, vectorized body, Spark return type) of every UDF the transpiled stage files may call."""
    from lshsql.engines import udf

    return [
        ("lsh_term_hash", udf.term_hash, "bigint"),
        ("lsh_minhash", udf.minhash, "array<int>"),
        ("lsh_oph", udf.oph, "array<int>"),
        ("lsh_url_unit", udf.url_unit, "string"),
        ("lsh_bag_pack", udf.bag_pack, "binary"),
        ("lsh_bag_overlap", udf.bag_overlap, "bigint"),
        ("lsh_ln", libm_ln, "double"),
        ("lsh_exp", libm_exp, "double"),
        ("lsh_pow", libm_pow, "double"),
    ]


def register_udfs(spark, arrow: bool | None = None) -> None:
    """Register the UDFs on a session, with the same bodies as on DuckDB (engines/udf.py), so the values are
    equal bit for bit. arrow=None: Arrow UDFs where Spark has them (4.1+), else pandas UDFs."""
    from pyspark.sql import functions

    if arrow is None:
        arrow = hasattr(functions, "arrow_udf")
    if not arrow:
        try:
            import pandas  # noqa: F401
        except ImportError:
            raise ParamError("Spark before 4.1 runs the UDFs as pandas UDFs: pip install pandas") from None
    for name, body, return_type in udfs():
        if arrow:
            function = functions.arrow_udf(body, return_type)
        else:
            function = functions.pandas_udf(_through_pandas(body), return_type)
        spark.udf.register(name, function)


def _through_pandas(body: Callable[..., pa.Array]) -> Callable:
    """A pandas UDF around an Arrow body (Spark 3.5, 4.0): Series -> Arrow -> body -> Series. Integers stay
    exact in both directions: a result with nulls becomes Python ints (object), not float64. (Spark itself
    hands pandas an integer argument with a null in its batch as float64; the stage files pass none.)"""

    def through_pandas(*series):
        result = body(*(pa.Array.from_pandas(s) for s in series))
        return result.to_pandas(integer_object_nulls=True)

    through_pandas.__name__ = getattr(body, "__name__", "udf")
    return through_pandas


# ---------------------------------------------------------------------------------------------- inputs


def register_inputs(spark, inputs: dict[str, str | Path | list[str] | list[Path]]) -> None:
    """A temp view per relation of each Parquet file, list of files or glob (as sqlfiles.register_inputs)."""
    for relation, paths in inputs.items():
        files = [str(p) for p in paths] if isinstance(paths, list | tuple) else [str(paths)]
        if not files:
            raise InputError(f"{relation}: no Parquet files given")
        try:
            spark.read.parquet(*files).createOrReplaceTempView(relation)
        except Exception as e:
            raise InputError(f"{relation}: Spark cannot read {files[0]}: {_spark_message(e)}") from None


# ---------------------------------------------------------------------------------------------- stages


def materialize(
    spark,
    sql: str,
    params: dict,
    out: str | Path,
    order_by: str | None = None,
    *,
    name: str = "query",
    table: str | None = None,
    compression: str = "zstd",
) -> int:
    """Run a rendered DuckDB stage file on Spark and write its rows as ONE Parquet file; return the rows.

    Lints and transpiles `sql` (engines/transpile.py), runs it with spark.sql(query, args=params) (only the
    parameters it uses are bound; a missing one is a StageError), casts the columns to the documented types
    of `table` (lshsql/schemas.py; by default the table the stage file `name` writes), and writes one file
    ordered by `order_by` (DuckDB syntax; by default the select's own final ORDER BY, or its header's order
    when it has none): coalesce(1), sorted within that partition, written to a temporary folder beside
    `out` and moved to `out`.

    Args:
        sql: the rendered stage file (sqlfiles.render), DuckDB dialect.
        params: values of its `$name` parameters.
        out: the Parquet file to write (a local or shared-mount path).
        order_by: e.g. "u_id, v_id" or "jaccard desc, host_a"; None: the file's own ORDER BY (or its
            header's).
        name: the stage file's name, for error messages ("sql/<name>: ...") and the default `table`.
        table: schema to cast to; None: the `writes` of sql/<name> when that is a stage file.
    """
    from lshsql.engines import transpile

    if compression not in COMPRESSIONS:
        raise StageError(f"unknown compression {compression}")
    tree = transpile.to_spark_tree(sql, name)
    order = _order_expressions(tree, order_by, name)
    df = _run(spark, tree, params, name)
    df = cast_to_schema(df, table or writes_of(name))
    df = df.coalesce(1)
    if order:
        df = df.sortWithinPartitions(*order)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = out.parent / f".{out.name}.spark-{uuid.uuid4().hex[:8]}"
    try:
        spark_call(
            name, lambda: df.write.mode("overwrite").option("compression", compression).parquet(str(scratch))
        )
        parts = sorted(scratch.glob("part-*.parquet"))
        if len(parts) > 1:
            raise StageError(f"sql/{name}: Spark wrote {len(parts)} files instead of one")
        if parts:
            os.replace(parts[0], out)
        else:  # no file for an empty result on some Spark versions: an empty one with the schema
            import pyarrow.parquet as pq

            empty = pa.Table.from_pylist([], schema=_arrow_schema(df.schema))
            pq.write_table(empty, out, compression=compression.replace("uncompressed", "none"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    import pyarrow.parquet as pq

    return pq.read_metadata(out).num_rows


def to_table(spark, sql: str, params: dict, name: str, *, source: str | None = None) -> int:
    """Run a DuckDB select on Spark and keep its rows as the temp view `name` (for loops of rounds); return
    its row count. The rows are computed now and checkpointed (localCheckpoint), so the view does not
    depend on the views it was computed from: a round may replace the very view it reads, as
    `insert into t select ...` becomes `to_table(spark, "select * from t union all select ...", {}, "t")`,
    and lineage does not grow with the rounds. `source` names the stage file in error messages."""
    from lshsql.engines import transpile

    label = source or name
    tree = transpile.to_spark_tree(sql, label)
    tree.set("order", None)  # a view has no order
    df = _run(spark, tree, params, label)
    df = spark_call(label, lambda: df.localCheckpoint(eager=True))
    df.createOrReplaceTempView(name)
    return spark_call(label, df.count)


def scalar(spark, sql: str, params: dict | None = None, *, name: str = "query"):
    """The first value of the first row of a DuckDB select run on Spark (None for no rows)."""
    from lshsql.engines import transpile

    df = _run(spark, transpile.to_spark_tree(sql, name), params or {}, name)
    rows = spark_call(name, lambda: df.limit(1).collect())
    return rows[0][0] if rows else None


def _run(spark, tree, params: dict, name: str):
    from sqlglot import exp

    from lshsql.engines import transpile

    if any(w.args.get("recursive") for w in tree.find_all(exp.With)) and version(spark) < (4, 1):
        raise StageError(
            f"sql/{name}: WITH RECURSIVE needs Spark 4.1 or later (this is Spark {spark.version})"
        )
    used = {p.name for p in tree.find_all(exp.Placeholder)}
    missing = sorted(used - params.keys())
    if missing:
        raise StageError(f"sql/{name}: missing SQL parameter(s): {', '.join(missing)}")
    query = transpile.generate(tree, name)
    args = {key: _plain(params[key]) for key in sorted(used)}
    return spark_call(name, lambda: spark.sql(query, args=args) if args else spark.sql(query))


def version(spark) -> tuple[int, int]:
    major, minor = spark.version.split(".")[:2]
    return int(major), int(minor)


def _plain(value):
    """A Python literal Spark can bind (numpy scalars become int/float/bool)."""
    return value.item() if hasattr(value, "item") else value


def spark_call(name: str, call: Callable):
    from py4j.protocol import Py4JError

    try:
        from pyspark.errors import PySparkException
    except ImportError:  # pragma: no cover - Spark 3.3 and older
        PySparkException = Exception  # noqa: N806
    try:
        return call()
    except (PySparkException, Py4JError) as e:
        raise StageError(f"sql/{name}: Spark: {_spark_message(e)}") from None


def _order_expressions(tree, order_by: str | None, name: str) -> list:
    """Spark Columns to sort by: `order_by` (DuckDB syntax) or the select's own final ORDER BY, with DuckDB's
    null placement (last, whatever the direction) and the columns named as the select outputs them."""
    import sqlglot
    from pyspark.sql import functions
    from sqlglot import exp

    from lshsql.engines import transpile

    if order_by is not None:
        if not order_by.strip():
            return []
        try:
            order = sqlglot.parse_one(f"select * from t order by {order_by}", read=transpile.READ).args[
                "order"
            ]
        except sqlglot.errors.SqlglotError as e:
            raise StageError(f"sql/{name}: order_by {order_by!r}: {_spark_message(e)}") from None
    else:
        order = tree.args.get("order")
        if order is None:  # a select of a sorted CTE (sql/20_bags.sql): the order its header gives
            header = order_of(name)
            return _order_expressions(tree, header, name) if header else []
    columns = []
    for ordered in order.expressions:
        key = ordered.this.copy()
        for column in key.find_all(exp.Column):  # output names, not the CTE's qualified ones
            column.set("table", None)
        column = functions.expr(transpile.generate(key, name))
        desc, nulls_first = bool(ordered.args.get("desc")), bool(ordered.args.get("nulls_first"))
        if desc:
            columns.append(column.desc_nulls_first() if nulls_first else column.desc_nulls_last())
        else:
            columns.append(column.asc_nulls_first() if nulls_first else column.asc_nulls_last())
    return columns


def _stage_file(name: str):
    """The parsed stage file `name` (sqlfiles.load), or None when `name` is not a file of sql/."""
    from lshsql import sqlfiles

    if not name.endswith(".sql") or not (sqlfiles.sql_dir() / name).exists():
        return None
    return sqlfiles.load(name)


def writes_of(name: str) -> str | None:
    """The relation a stage file writes, from its header; None when `name` is not a stage file."""
    sql = _stage_file(name)
    return sql.writes if sql else None


def order_of(name: str) -> str | None:
    """The order of a stage file's rows by its header (`-- order:  url_id, term_hash (why)`: the keys before
    the parenthesis); None when `name` is not a stage file or its rows have no order."""
    sql = _stage_file(name)
    order = sql.order.split(" (")[0].strip() if sql else "none"
    return None if order.startswith("none") else order


SPARK_TYPES = {
    pa.int64(): "bigint",
    pa.int32(): "int",
    pa.int16(): "smallint",
    pa.float64(): "double",
    pa.float32(): "float",
    pa.string(): "string",
    pa.bool_(): "boolean",
    pa.list_(pa.string()): "array<string>",
    pa.timestamp("us", tz="UTC"): "timestamp",
}


def cast_to_schema(df, table: str | None):
    """Cast the columns to the documented types of `table` (Spark's ranks are INT, sums of INT are BIGINT,
    ...). Columns the table does not document are left as they are; schemas.validate reports them."""
    from pyspark.sql import functions

    from lshsql import schemas

    if table is None or table not in schemas.COLUMNS:
        return df
    expected = {name: SPARK_TYPES.get(dtype) for name, dtype, _ in schemas.COLUMNS[table]}
    if table == "signatures":  # wide: url_id, then h0 .. h{m-1}
        expected |= {c: "int" for c in df.columns if c[:1] == "h" and c[1:].isdigit()}
    columns = [
        functions.col(c).cast(expected[c]).alias(c) if expected.get(c) else functions.col(c)
        for c in df.columns
    ]
    return df.select(*columns)


def _arrow_schema(schema) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


# Where the message of a Spark error ends and a stack trace begins (py4j appends the JVM's).
TRACE_MARKERS = (" JVM stacktrace:", " Driver stacktrace:", " == SQL")
FRAME_STARTS = ("at ", "Caused by:", "JVM stacktrace:", "Driver stacktrace:")


def _spark_message(error: Exception) -> str:
    """The message of a Spark error on one line: no stack trace (a job aborted by a lost task carries the
    driver's), no py4j prefix ("An error occurred while calling o123.parquet."), at most 400 characters."""
    lines = []
    for line in str(error).splitlines():
        if lines and line.strip().startswith(FRAME_STARTS):
            break
        lines.append(line)
    text = one_line(" ".join(lines))
    for marker in TRACE_MARKERS:
        text = text.split(marker)[0]
    text = re.sub(r"^An error occurred while calling [\w.$]+\. ?: ", "", text)
    return text[:400]
