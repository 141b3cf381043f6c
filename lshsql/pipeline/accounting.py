"""The bags stage's accounting: every row of term_counts read is used or dropped for a reason, and the
check that term_counts has one row per (url, term), the assumption the stage's fast form makes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lshsql import udf
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


DROP_REASONS = ("below_min_df", "above_max_df", "in_every_url", "weight_rounds_to_zero")


def _rows_used_and_dropped(engine, params: Params, rows_unique: bool) -> tuple[int, dict[str, int]]:
    """The rows of term_counts that went into a bag, and per reason those the bags stage dropped (the
    filters of sql/20_bags.sql, in its order). With one row per (url, term), terms.n_urls is the document
    frequency and counts the rows, so only the rows whose tf rounds to 0 are grouped (none in a set table)."""
    query = _DROPPED_ROWS.replace("{rows_judged}", _ROWS_UNIQUE if rows_unique else _ROWS_GROUPED)
    sql_params = {"min_df": params.min_df, "max_df": params.max_df, "weighting": params.weighting}
    used, *dropped = (int(n or 0) for n in engine.row(query, sql_params))
    return used, {reason: n for reason, n in zip(DROP_REASONS, dropped, strict=True) if n}


# Per reason, rows of term_counts: df filters first, then a weight of 0 (idf 0, or a tf that rounds to 0 at
# 12 decimals), as sql/20_bags.sql applies them. {rows_judged} gives (df, n_rows, zero_tf) per group of rows.
_DROPPED_ROWS = """
with
n as (select count(*) as n_urls from urls),
{rows_judged},
judged as (
    select
        case
            when rows_judged.df < $min_df then 'below_min_df'
            when not (rows_judged.df <= $max_df * n.n_urls) then 'above_max_df'
            when $weighting = 'tfidf' and rows_judged.df >= n.n_urls then 'in_every_url'
            when rows_judged.zero_tf then 'weight_rounds_to_zero'
            else 'used'
        end as reason,
        rows_judged.n_rows
    from rows_judged
    cross join n
)
select
    {sums}
from judged
""".replace(
    "{sums}",
    ",\n    ".join(
        f"sum(case when judged.reason = '{reason}' then judged.n_rows else 0 end) as {reason}"
        for reason in ("used", *DROP_REASONS)
    ),
)


# One row per (url, term): per term, its rows, less those whose tf rounds to 0, which are judged apart.
_ROWS_UNIQUE = """
zero_tf as (
    select term_counts.term, count(*) as n_rows
    from term_counts
    where cast(term_counts.tf as decimal(38, 12)) = 0
    group by term_counts.term
),
rows_judged as (
    select terms.n_urls as df, terms.n_urls - coalesce(zero_tf.n_rows, 0) as n_rows, false as zero_tf
    from terms
    left join zero_tf on terms.term = zero_tf.term
    union all
    select terms.n_urls as df, zero_tf.n_rows, true as zero_tf
    from zero_tf
    inner join terms on zero_tf.term = terms.term
)"""


# Repeated rows add up first: df counts a term's URLs, and the summed tf of a (url, term) is what rounds.
# Only rows with a known url and term, as the stage's inner joins keep.
_ROWS_GROUPED = """
counts as (
    select
        term_counts.url,
        term_counts.term,
        count(*) as n_rows,
        sum(cast(term_counts.tf as decimal(38, 12))) as tf
    from term_counts
    semi join terms on term_counts.term = terms.term
    semi join urls on term_counts.url = urls.url
    group by term_counts.url, term_counts.term
),
df as (
    select counts.term, count(*) as df from counts group by counts.term
),
rows_judged as (
    select df.df, counts.n_rows, counts.tf = 0 as zero_tf
    from counts
    inner join df on counts.term = df.term
)"""


# Repeats the bags written cannot show, in rows the bags stage drops: every row of a term too common by
# n_urls (which counts a repeat twice; max_df, or idf <= 0 with tfidf: these mirror sql/20_bags.sql), and a
# row whose tf rounds to 0 at 12 decimals while its repeat stays. It reads term_counts only for those terms
# and (url, term)s: none in the harness's sets; a crawl's few stopword-like terms above max_df.
HIDDEN_REPEATS = """
with
n as (select count(*) as n_urls from urls),
common as (
    select terms.term from terms cross join n
    where not (terms.n_urls <= $max_df * n.n_urls) or ($weighting = 'tfidf' and terms.n_urls >= n.n_urls)
),
tiny as (
    select distinct term_counts.url, term_counts.term from term_counts where term_counts.tf < 1e-12
)
select
    exists (
        select 1 from term_counts semi join common on term_counts.term = common.term
        group by term_counts.url, term_counts.term having count(*) > 1
    )
    or exists (
        select 1 from term_counts
        semi join tiny on term_counts.url = tiny.url and term_counts.term = tiny.term
        group by term_counts.url, term_counts.term having count(*) > 1
    )
"""


def has_repeated_rows(path: Path, key: tuple[str, ...], batch_rows: int = 1 << 20) -> bool:
    """Whether two consecutive rows of a Parquet file ordered by `key` have equal keys: a row group at a
    time, in batches of at most `batch_rows`, so memory stays bounded by the writer's row groups (DuckDB's
    hold 122,880 rows). Read on one thread, by row group: for bags' 17M rows at 100k documents, just
    written, 0.2 s, where ParquetFile.iter_batches took 0.65 s in a fresh process."""
    previous = None
    file = pq.ParquetFile(path)
    for group in range(file.num_row_groups):
        table = file.read_row_group(group, columns=list(key), use_threads=False)
        for batch in table.to_batches(max_chunksize=batch_rows):
            if not batch.num_rows:
                continue
            columns = [_key_values(column) for column in batch.columns]
            same = np.ones(batch.num_rows - 1, dtype=bool)
            for column in columns:
                same &= column[1:] == column[:-1]
            first = tuple(column[0] for column in columns)
            if same.any() or previous == first:
                return True
            previous = tuple(column[-1] for column in columns)
    return False


def _key_values(column: pa.Array) -> np.ndarray:
    """A key column as numpy; integers without nulls read from their buffers (see udf.integer_values)."""
    if pa.types.is_integer(column.type) and not column.null_count:
        return udf.integer_values(column)[0]
    return column.to_numpy(zero_copy_only=False)
