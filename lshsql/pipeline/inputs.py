"""A stage's inputs: the relations of the work folder registered as views, a user's bags table as the view
term_counts (sql/10_term_counts_from_bags.sql) with its unusable rows counted, and the checks of a table the
user put in the folder for a stage to read.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from lshsql import manifest, schemas, sqlfiles
from lshsql.engines import duckdb as db
from lshsql.engines.base import Engine
from lshsql.errors import InputError, one_line
from lshsql.pipeline.stages import BAGS_SOURCE_SQL, input_paths, output_path


def register(engine: Engine, work: Path, relations: tuple[str, ...]) -> None:
    """The relations a stage reads, each a view of its Parquet file(s) in the work folder; term_counts of a
    folder started from a user's bags is the view of their table (register_user_bags)."""
    user_bags = user_bags_source(work) if "term_counts" in relations else None
    if user_bags:
        register_user_bags(engine, user_bags)
        relations = tuple(r for r in relations if r != "term_counts")
    engine.register({r: input_paths(work, r) for r in relations})


def check_user_table(work: Path, relation: str, resources: db.Resources) -> None:
    """A table the user put in the folder for a stage to read (no manifest entry): it has the documented key
    columns (schemas.KEYS) and one row per key, or an InputError says what is wrong. Grouping the keys reads
    the whole table once; tables lshsql wrote are not checked (their stages guarantee it)."""
    path = output_path(work, relation)
    if relation not in schemas.KEYS or not path.exists():
        return  # a missing input gets the stage's own error
    try:
        names = set(pq.read_schema(path).names)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not a readable Parquet file ({one_line(e)})") from None
    documented = ", ".join(name for name, _, _ in schemas.COLUMNS[relation])
    with db.connect(resources) as con:
        for key in schemas.KEYS[relation]:
            if missing := [column for column in key if column not in names]:
                absent = ", ".join(missing)
                raise InputError(f"{path}: no column {absent}; a {relation} table has {documented}")
            columns = ", ".join(key)  # names from schemas.KEYS, never from the user
            repeated = db.scalar(
                con,
                f"select count(*) from (select 1 from read_parquet($path) group by {columns} "
                "having count(*) > 1)",
                {"path": str(path)},
            )
            if repeated:
                raise InputError(
                    f"{path}: {repeated:,} value(s) of ({columns}) are in more than one row; a {relation} "
                    f"table has one row per ({columns})"
                )


# The tail of a Parquet file holds its footer (row groups, offsets, statistics): what a rewrite changes
FOOTER_BYTES = 64 * 1024


def bags_fingerprint(bags: str | Path) -> str:
    """What tells a user's bags table from a changed one, taken before it is read: its resolved path and,
    for each file DuckDB reads of it (a folder: every *.parquet under it, as DuckDB's read_parquet takes a
    folder), the name within it, size, mtime (ns) and the xxh3 of its last FOOTER_BYTES. A file rewritten
    in place changes its own mtime, not its folder's."""
    path = Path(bags).resolve()
    if not path.exists():
        raise InputError(f"{bags}: no such file")
    files = sorted(f for f in path.rglob("*.parquet") if f.is_file()) if path.is_dir() else [path]
    seen = {}
    for file in files:
        try:
            stat = file.stat()
            with open(file, "rb") as f:
                f.seek(max(0, stat.st_size - FOOTER_BYTES))
                footer = xxhash.xxh3_64_hexdigest(f.read(FOOTER_BYTES))
        except OSError as error:
            raise InputError(f"{file}: cannot be read ({error.strerror or error})") from None
        name = str(file.relative_to(path)) if path.is_dir() else file.name
        seen[name] = [stat.st_size, stat.st_mtime_ns, footer]
    return f"bags:{path}:{manifest.fingerprint(seen)}"


def user_bags_source(work: Path) -> Path | None:
    """The user's bags table when term_counts is a view of it (runs started with --bags)."""
    entry = manifest.read(work)["stages"].get("term_counts", {})
    return Path(entry["source"]) if entry.get("view") else None


def unit_tf(work: Path) -> bool:
    """Whether term_counts gives tf 1 on every row: a view of a user's bags table without a weight column
    (user_bags_columns supplies 1). A table pyarrow cannot read gives False, the form that reads tf."""
    source = user_bags_source(work)
    if source is None:
        return False
    try:
        return "weight" not in pq.read_schema(source).names
    except (OSError, ValueError, pa.ArrowException):
        return False


def register_user_bags(engine: Engine, path: Path) -> None:
    """The user's table as the view term_counts(url, term, tf) of its usable rows
    (sql/10_term_counts_from_bags.sql), after user_bags(url, term, weight) of all its rows."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    _check_user_bags_types(path)
    columns = engine.open_parquet("user_bags_file", path)
    missing = {"url", "term"} - set(columns)
    if missing:
        raise InputError(f"{path}: bags need columns url and term (missing: {', '.join(sorted(missing))})")
    engine.view("user_bags", f"select {user_bags_columns(columns)} from user_bags_file")
    engine.stage_view(sqlfiles.load(BAGS_SOURCE_SQL), "term_counts")


# What each column of a user's bags may hold: url and term are ids (text or integers, taken as text), a
# weight is a number. Anything else (a list of terms, a float url, a text or boolean weight) would be cast
# into something the user did not mean, so it is refused.
_BAGS_COLUMN_TYPES = {
    "url": ("text or an integer", lambda t: pa.types.is_integer(t) or _is_text(t)),
    "term": ("text or an integer", lambda t: pa.types.is_integer(t) or _is_text(t)),
    "weight": (
        "a number",
        lambda t: pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t),
    ),
}


def _is_text(arrow_type: pa.DataType) -> bool:
    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(arrow_type))
    )


def _check_user_bags_types(path: Path) -> None:
    """The columns of a user's bags have types lshsql can take as they are (see _BAGS_COLUMN_TYPES); a file
    pyarrow cannot read is left to the engine's own error."""
    try:
        schema = pq.read_schema(path)
    except (OSError, ValueError, pa.ArrowException):
        return
    for name, (wanted, accepts) in _BAGS_COLUMN_TYPES.items():
        if name not in schema.names:
            continue
        arrow_type = schema.field(name).type
        if pa.types.is_dictionary(arrow_type):
            arrow_type = arrow_type.value_type
        if not accepts(arrow_type):
            raise InputError(f"{path}: column {name} is {arrow_type}; a bags table's {name} is {wanted}")


def user_bags_columns(columns) -> str:
    """user_bags(url, term, weight) from the user's columns; weight 1 when their table has none. A NaN
    weight becomes infinity: Parquet writers leave NaN out of a column's min and max, and DuckDB, trusting
    them, can decide `weight < infinity` for a whole row group, NaN rows included, without looking at them.
    Both are counted as weight_not_finite."""
    weight = (
        f"case when isnan(cast(weight as double)) then {INFINITY} else cast(weight as double) end"
        if "weight" in columns
        else "1.0"
    )
    return f"cast(url as varchar) as url, cast(term as varchar) as term, {weight} as weight"


def count_user_bags(engine: Engine) -> dict[str, int]:
    """The usable rows of user_bags and, per reason, the rows that cannot be used. A table whose Parquet
    statistics rule out every unusable row is counted from its metadata, without a scan; otherwise one
    scan counts by reason."""
    names = ("rows", "null_url", "null_term", "null_weight", "weight_not_positive", "weight_not_finite")
    finite = f"weight < {INFINITY}"  # user_bags has NaN as infinity
    unusable = f"url is null or term is null or not coalesce(weight > 0 and {finite}, false)"
    if not engine.scalar(f"select count(*) from user_bags where {unusable}"):
        counts = dict.fromkeys(names, 0) | {"rows": int(engine.scalar("select count(*) from user_bags"))}
    else:
        named = "url is not null and term is not null"
        values = engine.row(
            f"select count(*) filter (where {named} and weight > 0 and {finite}), "
            "count(*) filter (where url is null), "
            "count(*) filter (where url is not null and term is null), "
            f"count(*) filter (where {named} and weight is null), "
            f"count(*) filter (where {named} and weight <= 0), "
            f"count(*) filter (where {named} and weight > 0 and not {finite}) "
            "from user_bags"
        )
        counts = {k: int(v) for k, v in zip(names, values, strict=True)}
    too_heavy = engine.scalar(f"select count(*) from user_bags where weight > {MAX_WEIGHT:.0e} and {finite}")
    if too_heavy:
        raise InputError(
            f"{too_heavy:,} row(s) of the bags table have a weight above {MAX_WEIGHT:.0e}, beyond what "
            "lshsql adds up exactly: scale the weights down"
        )
    return counts


INFINITY = "cast('Infinity' as double)"
MAX_WEIGHT = 1e15  # sums of weights are exact as DECIMAL(38, 12): up to 1e26, so 1e11 rows of this weight
