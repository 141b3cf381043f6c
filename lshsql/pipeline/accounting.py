"""The bags stage's accounting: every row of term_counts read is used or dropped for a reason, and the
check that term_counts has one row per (url, term), the assumption the stage's fast form makes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from lshsql import schemas, sqlfiles
from lshsql.engines.arrays import integer_values
from lshsql.errors import StageError
from lshsql.params import Params


def row_accounting(engine, params: Params, bag_rows: int, grouped: bool) -> dict:
    """rows_read, rows_used and rows_dropped per reason: every row of term_counts is one of them. Made the
    fast way, a bag row is one row used; the grouped way, rows used add up into fewer bag rows. A row whose
    url or term is missing from the urls or terms table (only with tables of a user's own) is dropped as
    unknown_url_or_term."""
    read = int(engine.scalar("select count(*) from term_counts"))
    used, dropped = _rows_used_and_dropped(engine, params, rows_unique=not grouped)
    if not grouped:
        used = bag_rows  # the query counts by term alone, so it also counts the rows of URLs urls lacks
    unknown = read - used - sum(dropped.values())
    if unknown < 0:
        raise StageError(
            f"bags: term_counts has {read} rows, fewer than the {read - unknown} counted used or dropped: "
            "a terms table whose n_urls does not count its term's rows of term_counts"
        )
    if unknown:
        dropped["unknown_url_or_term"] = unknown
    return {"rows_read": read, "rows_used": used, "rows_dropped": dropped}


ACCOUNTING_SQL = "20_bags_accounting.sql"  # of sql/20_bags.sql; of sql/20_bags_grouped.sql:
ACCOUNTING_GROUPED_SQL = "20_bags_accounting_grouped.sql"
REPEATS_SQL = "20_bags_repeats.sql"
# the columns of sql/20_bags_accounting.sql after used, in its order
DROP_REASONS = ("below_min_df", "above_max_df", "in_every_url", "weight_rounds_to_zero")


def _rows_used_and_dropped(engine, params: Params, rows_unique: bool) -> tuple[int, dict[str, int]]:
    """The rows of term_counts that went into a bag, and per reason those the bags stage dropped
    (sql/20_bags_accounting.sql, which mirrors the filters of sql/20_bags.sql, or its _grouped forms)."""
    query = sqlfiles.load(ACCOUNTING_SQL if rows_unique else ACCOUNTING_GROUPED_SQL).text
    sql_params = {"min_df": params.min_df, "max_df": params.max_df, "weighting": params.weighting}
    used, *dropped = (int(n or 0) for n in engine.row(query, sql_params))
    return used, {reason: n for reason, n in zip(DROP_REASONS, dropped, strict=True) if n}


def hidden_repeats(engine, params: Params) -> bool:
    """Whether term_counts repeats a (url, term) among rows the bags stage drops whatever their tf, which
    the bags written cannot show (sql/20_bags_repeats.sql)."""
    query = sqlfiles.load(REPEATS_SQL).text
    return bool(engine.scalar(query, {"max_df": params.max_df, "weighting": params.weighting}))


def has_repeated_rows(path: Path, key: tuple[str, ...], batch_rows: int = 1 << 20) -> bool:
    """Whether two consecutive rows of a Parquet file ordered by `key` have equal keys (ordered_keys)."""
    return ordered_keys(path, key, batch_rows)[0]


def ordered_keys(path: Path, key: tuple[str, ...], batch_rows: int = 1 << 20) -> tuple[bool, int | None]:
    """Whether two consecutive rows of a Parquet file ordered by `key` have equal keys, and if not, the
    number of distinct values of its first column (the runs of that column, in one pass: the bags stage's
    URLs with a bag). Rows out of that order are a StageError, since both answers rely on it. A row group
    at a time, in batches of at most `batch_rows`, so memory stays bounded by the writer's row groups
    (DuckDB's hold 122,880 rows). Read on one thread, by row group, which is faster than
    ParquetFile.iter_batches. Stops at the first repeat, with None for the count."""
    previous, runs = None, 0
    file = schemas.streamed(path)
    for group in range(file.num_row_groups):
        table = file.read_row_group(group, columns=list(key), use_threads=False)
        for batch in table.to_batches(max_chunksize=batch_rows):
            if not batch.num_rows:
                continue
            columns = [_key_values(column) for column in batch.columns]
            same = np.ones(batch.num_rows - 1, dtype=bool)
            backwards = np.zeros(batch.num_rows - 1, dtype=bool)
            for column in columns:
                backwards |= same & (column[1:] < column[:-1])
                same &= column[1:] == column[:-1]
            first = tuple(column[0] for column in columns)
            if backwards.any() or (previous is not None and first < previous):
                raise StageError(f"{path}: its rows are not in ({', '.join(key)}) order")
            if same.any() or previous == first:
                return True, None
            leading = columns[0]
            runs += int(np.count_nonzero(leading[1:] != leading[:-1])) + (
                previous is None or previous[0] != first[0]
            )
            previous = tuple(column[-1] for column in columns)
    return False, runs


def _key_values(column: pa.Array) -> np.ndarray:
    """A key column as numpy; integers without nulls read from their buffers (see integer_values)."""
    if pa.types.is_integer(column.type) and not column.null_count:
        return integer_values(column)[0]
    return column.to_numpy(zero_copy_only=False)
