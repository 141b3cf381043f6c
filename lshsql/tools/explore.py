"""Reading results: What's Related, the largest clusters, ad-hoc SQL and the run's Table 1.

Each function opens its own in-memory DuckDB with a view per output table of the work folder (no UDF), so
they work on any finished run, from the CLI or a notebook. Rows come back as a pyarrow.Table
(`.to_pandas()`, `polars.from_arrow`); the CLI's `query` prints DuckDB's own Python values (query_rows),
which Arrow does not always keep (a HUGEINT sum becomes a decimal, an interval a MonthDayNano).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from lshsql import manifest, schemas, urls
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError, one_line
from lshsql.pipeline import CATALOG_RELATIONS, STAGE_NAMES, labels, output_path, register_outputs
from lshsql.pipeline.rounds import COPIES

# The command that writes an output that `lshsql run` does not (extract's outputs are the default).
WRITTEN_BY = {
    "labels": "ingest", "merges": "hierarchy", "cluster_tree": "hierarchy", "cut": "cut", "cut_labels": "cut",
    "mirrors": "mirrors", "documents": "dedup", "copies": "dedup", "duplicates": "dedup",
}  # fmt: skip


@dataclass(frozen=True)
class Table:
    """A query result as Python values: column names and rows (the CLI's `query`, `info`)."""

    columns: list[str]
    rows: list[tuple]


@contextmanager
def open_work(work: str | Path, resources: db.Resources | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection with a view for every output that exists in the work folder, within `resources`
    (default: as for `run`, half the RAM and all cores, spilling to DIR/tmp/duckdb). An unreadable output
    fails only a query that reads it, with a one-line InputError naming its file (see _register_outputs)."""
    work = Path(work)
    if not work.is_dir():
        raise InputError(f"{work}: no such work folder")
    with db.connect(db.for_work(work, resources)) as con:
        unreadable = _register_outputs(con, work)
        try:
            yield con
        except (duckdb.Error, InputError) as e:  # InputError: _fetch's "query failed: ..." of such a view
            text = str(e)
            message = next((m for token, m in unreadable.items() if token in text), None)
            if message is None:
                message = _not_made_yet(work, text)
            if message is None:
                raise
            raise InputError(message) from None


def _register_outputs(con: duckdb.DuckDBPyConnection, work: Path) -> dict[str, str]:
    """pipeline.register_outputs, and for an output DuckDB cannot open (a truncated file) a view with its
    documented columns that raises an error when read, so a command that does not read it still works.
    Returns, per such view, the token its error carries and the one-line message it stands for."""
    messages = {}
    for relation, error in register_outputs(con, work).items():
        path = work / "fragments" if relation == "fragments" else output_path(work, relation)
        token = f"lshsql: unreadable output {relation}"  # the SQL holds no text of the user's (the path)
        messages[token] = (
            str(error) if isinstance(error, InputError) else unreadable(path, error, _remake(work, relation))
        )
        _failing_view(con, relation, token)
    return messages


def _not_made_yet(work: Path, error: str) -> str | None:
    """For DuckDB's "Table with name X does not exist" where X is an output of lshsql's that this folder
    does not hold (not made yet, or the command that makes it was killed), what makes it."""
    found = re.search(r"Table with name (\w+) does not exist", error)
    relation = found.group(1) if found else None
    if relation not in CATALOG_RELATIONS:
        return None
    if relation in STAGE_NAMES:
        return f"{work}: no {relation} yet; run `lshsql run --work {work}` first"
    made_by = WRITTEN_BY.get(relation)
    command = f"`lshsql {made_by}`" if made_by else "`lshsql extract` or `lshsql ingest`"
    return f"{work}: no {relation} yet; run {command} for {work} first"


def unreadable(path: Path, error: Exception, remake: str) -> str:
    """The one-line message for a Parquet file of the work folder that DuckDB cannot read."""
    return f"{path}: not a readable Parquet file ({db.error_message(error)[:200]}); {remake}"


def _remake(work: Path, relation: str) -> str:
    if relation in STAGE_NAMES:
        return f"rerun `lshsql run --work {work} --force`"
    return f"rerun `lshsql {WRITTEN_BY.get(relation, 'extract')}` for {work}"


def _failing_view(con: duckdb.DuckDBPyConnection, relation: str, token: str) -> None:
    """A view named `relation` that raises `token` when read. Every column is error(token) too, so a
    filter DuckDB pushes into the scan cannot skip the error (a filtered constant row could)."""
    literal = f"'{token}'"  # an internal name only
    select = f"error({literal}) as unreadable"  # bucket_sizes has no documented columns
    if relation in schemas.COLUMNS:
        typed = con.from_arrow(schemas.schema(relation).empty_table())  # DuckDB's names of the Arrow types
        select = ", ".join(
            f'cast(error({literal}) as {t}) as "{c}"' for c, t in zip(typed.columns, typed.types, strict=True)
        )
    con.execute(
        f"create or replace temp view {relation} as "
        f"select {select} from range(1) where error({literal}) is null"
    ).fetchall()


def require_outputs(work: Path, *relations: str) -> None:
    """A one-line InputError naming the first of `relations` the work folder does not hold yet."""
    for relation in relations:
        if not output_path(work, relation).exists():
            raise InputError(f"{work}: no {relation} yet; run `lshsql run --work {work}` first")


def clustering_path(work: str | Path, from_cut: bool = False) -> Path:
    """A flat clustering of the work folder: DIR/clusters.parquet, or DIR/cut.parquet of `lshsql cut`; an
    InputError names the command that makes it. Checks that its members are URLs (not --unit host/domain
    keys), since pages, links and hosts are looked up by URL."""
    work = Path(work)
    path = work / ("cut.parquet" if from_cut else "clusters.parquet")
    if not path.exists():
        command = f"lshsql cut --threshold T --work {work}" if from_cut else f"lshsql run --work {work}"
        raise InputError(f"{work}: no {path.name} yet; run `{command}` first")
    unit = manifest.read(work).get("params", {}).get("unit", "url")
    if unit != "url":
        raise InputError(f"{work}: the clusters are of --unit {unit}, not of URLs; run with --unit url")
    return path


def _fetch(con: duckdb.DuckDBPyConnection, query: str, params: dict | None = None) -> Table:
    try:
        result = con.execute(query, params or {})
        columns = [d[0] for d in result.description]
        return Table(columns, result.fetchall())
    except duckdb.Error as e:
        raise InputError(f"query failed: {one_line(e)}") from None


def fetch_arrow(con: duckdb.DuckDBPyConnection, query: str, params: dict | None = None) -> pa.Table:
    """A query's rows as an Arrow table, columns named as DuckDB names them; a statement without a result
    set gives no rows."""
    try:
        relation = con.sql(query, params=params or None)
        return pa.table({}) if relation is None else db.arrow_table(relation)
    except duckdb.Error as e:
        raise InputError(f"query failed: {one_line(e)}") from None


def related(work: str | Path, url: str, limit: int = 20, resources: db.Resources | None = None) -> pa.Table:
    """What's Related (Haveliwala et al. 2000, sec. 3): the URLs paired with `url`, most similar first:
    related_url, similarity, n_bands (LSH tables they collided in) and same_cluster.

    Example:
        >>> related("work/example", "https://docs.python.example/3.11/").to_pandas()  # doctest: +SKIP
    """
    work = Path(work)
    with open_work(work, resources) as con:
        require_outputs(work, "urls", "pairs", "clusters")
        found = described_url(con, url)
        through_sets = document_pairs(work)
        if through_sets is not None:
            (url_id,) = con.execute("select url_id from urls where url = $url", {"url": found}).fetchall()[0]
            values = through_sets | {"id": url_id, "url": found, "limit": limit}
            return fetch_arrow(con, RELATED_DOCUMENTS, values)
        return fetch_arrow(con, QUERIES["related"], {"url": found, "limit": limit})


# In a dedup's folder with exact copies (DIR/copies.parquet) pairs are of distinct shingle sets: the pairs
# of document $id are those of its set, with every document of the other set, and the other documents of
# its own set (its exact copies: Jaccard 1, every min-hash agreeing, met in every one of the LSH tables)
DOCUMENT_PAIRS = """
with
sets as (
    select documents.url, documents.url_id, coalesce(documents.copy_of, documents.url_id) as set_id
    from documents
    where documents.url_id is not null
),
mine as (select sets.set_id from sets where sets.url_id = $id),
near as (
    select pairs.v_id as set_id, pairs.similarity, pairs.n_agree, pairs.n_bands
    from pairs inner join mine on pairs.u_id = mine.set_id
    union all
    select pairs.u_id as set_id, pairs.similarity, pairs.n_agree, pairs.n_bands
    from pairs inner join mine on pairs.v_id = mine.set_id
    union all
    select mine.set_id, cast(1 as double), cast($num_perm as bigint), cast($tables as bigint) from mine
)
select sets.url, sets.url_id, near.similarity, near.n_agree, near.n_bands
from near inner join sets on near.set_id = sets.set_id
where sets.url_id <> $id
"""
RELATED_DOCUMENTS = f"""
select
    related.url as related_url,
    related.similarity,
    related.n_bands,
    clusters.center = (select center from clusters where url = $url) as same_cluster
from ({DOCUMENT_PAIRS}) as related
inner join clusters on related.url = clusters.url
order by related.similarity desc, related_url
limit $limit
"""


def document_pairs(work: Path) -> dict | None:
    """In a dedup's folder with exact copies: the values DOCUMENT_PAIRS takes besides $id (the signature
    length and the LSH tables, an exact copy's agreement with its set); None elsewhere, where a URL's
    pairs are its own."""
    folder = manifest.read(work)
    if "dedup" not in folder or not (work / COPIES).exists():
        return None
    num_perm = folder["dedup"].get("params", {}).get("num_perm")
    return {"num_perm": num_perm, "tables": folder["stages"].get("buckets", {}).get("params", {}).get("l")}


def nearest(work: str | Path, url: str, resources: db.Resources | None = None) -> tuple[str, int, int] | None:
    """For a URL without pairs: the URL that shares most LSH buckets with it among its candidates (those
    LSH found but verification dropped), most agreeing signature positions first, as (url, positions
    agreeing, signature length); None when no URL shares a bucket with it."""
    work = Path(work)
    with open_work(work, resources) as con:
        require_outputs(work, "urls", "candidates", "signatures")
        found = described_url(con, url)
        hashes = [c for c in con.sql("select * from signatures limit 0").columns if c != "url_id"]
        agree = " + ".join(f"cast(mine.{h} = theirs.{h} as integer)" for h in hashes)  # column names only
        rows = con.execute(
            f"""
            with me as (select url_id from urls where url = $url),
            other as (
                select case when candidates.u_id = me.url_id then candidates.v_id else candidates.u_id end
                    as url_id
                from candidates, me
                where me.url_id in (candidates.u_id, candidates.v_id)
            )
            select urls.url, {agree} as n_agree
            from other
            inner join urls on other.url_id = urls.url_id
            inner join signatures as theirs on other.url_id = theirs.url_id
            cross join (select signatures.* from signatures, me where signatures.url_id = me.url_id) as mine
            order by n_agree desc, urls.url
            limit 1
            """,
            {"url": found},
        ).fetchall()
    return (rows[0][0], int(rows[0][1]), len(hashes)) if rows else None


def canonical(url: str) -> str:
    """The URL canonicalized as extraction does; an odd URL (or a document id) as written."""
    with contextlib.suppress(urls.UrlError):
        return urls.canonicalize(url)
    return url


def described_url(con: duckdb.DuckDBPyConnection, url: str) -> str:
    """find_url in urls, or an InputError saying the URL is not described in the work folder."""
    found = find_url(con, url)
    if found is None:
        raise InputError(f"{url}: not described in this work folder (as given or canonicalized)")
    return found


def find_url(con: duckdb.DuckDBPyConnection, url: str, relation: str = "urls") -> str | None:
    """The url of `relation` that `url` names: as given first (ids of a --bags table are stored as
    written), else canonicalized; None when it has neither."""
    rows = con.execute(
        f"select url from {relation} where url in ($url, $canonical) order by url = $url desc limit 1",
        {"url": url, "canonical": canonical(url)},
    ).fetchall()
    return rows[0][0] if rows else None


CLUSTER_SORTS = ("size", "pair_share", "min_pair_similarity")


def top_clusters(
    work: str | Path,
    limit: int = 10,
    members: int = 5,
    terms: int = 8,
    resources: db.Resources | None = None,
    sort: str = "size",
) -> pa.Table:
    """The largest clusters: cluster_id (what `lshsql show` and serve's /cluster/ take; see cluster_key),
    size, pair_share and min_pair_similarity (the chaining diagnostics, rounded to 3 decimals), center,
    top_terms (the readable words of their labels, the terms that weigh most in them, see
    cluster_labels; none for a URL without a pair) and members (the first ones, in URL order), both
    lists. sort "pair_share" or "min_pair_similarity" puts the lowest first (chains; singletons last),
    ties largest first; a clusters table made before these columns shows them empty."""
    if sort not in CLUSTER_SORTS:
        raise ParamError(f"sort must be {', '.join(CLUSTER_SORTS[:-1])} or {CLUSTER_SORTS[-1]}, got {sort!r}")
    work = Path(work)
    require_outputs(work, "clusters", "bags")
    with open_work(work, resources) as con:
        chaining = "min_pair_similarity, pair_share" if has_chaining(con) else CHAINING_UNKNOWN
        key = cluster_key(con)
        found = fetch_arrow(
            con,
            QUERIES["top_clusters"].replace("{chaining}", chaining).replace("{key}", key),
            {"limit": limit, "members": members, "sort": sort},
        )
    center_ids = found.column("center_id").to_pylist()
    words = cluster_labels(work, center_ids, n=terms, resources=resources)
    top_terms = pa.array([words[center_id] for center_id in center_ids], pa.list_(pa.string()))
    return found.drop_columns(["center_id"]).add_column(5, "top_terms", top_terms)


# A clusters table made before the chaining diagnostics existed: shown empty until the run is repeated.
CHAINING_UNKNOWN = "cast(null as double) as min_pair_similarity, cast(null as double) as pair_share"


def has_chaining(con: duckdb.DuckDBPyConnection, relation: str = "clusters") -> bool:
    """Whether `relation` has the chaining columns (clusters made before them, and cuts, have none)."""
    columns = con.execute(f"select column_name from (describe {relation})").fetchall()
    return ("pair_share",) in columns


def cluster_key(con: duckdb.DuckDBPyConnection, relation: str = "clusters") -> str:
    """The column that names `relation`'s clusters to a user: cluster_id, which survives runs, or in a file
    made before it existed center_id (the id such a file's clusters keep when the folder is rerun)."""
    columns = con.execute(f"select column_name from (describe {relation})").fetchall()
    return "cluster_id" if ("cluster_id",) in columns else "center_id"


def cluster_labels(
    work: str | Path,
    center_ids: list[int] | None = None,
    from_cut: bool = False,
    n: int = 8,
    resources: db.Resources | None = None,
) -> dict[int, list[str]]:
    """The labels of clusters as readable words, heaviest first: {center_id: [word, ...]}, up to n each.

    Read from DIR/cluster_labels.parquet (with from_cut, DIR/cut_labels.parquet of `lshsql cut`): the top
    terms of each cluster of two or more URLs by summed TF-IDF, each shown as its most frequent surface
    word. With center_ids, every id asked for is a key (an empty list for a singleton or an unknown id);
    without, every cluster that has labels. A folder made before labels existed gets them computed from its
    clusters (or cut), bags, terms and urls.

    Example:
        >>> cluster_labels("work/example", [3, 17], n=3)  # doctest: +SKIP
        {3: ['tutorial', 'python', 'modules'], 17: []}
    """
    work = Path(work)
    name, source = ("cut_labels", "cut") if from_cut else ("cluster_labels", "clusters")
    path = output_path(work, name)
    query = (
        "select center_id, list(word order by rank) from {} where rank <= $n "
        "and ($all or list_contains($ids, center_id)) group by center_id order by center_id"
    )
    params = {"n": n, "all": center_ids is None, "ids": [int(i) for i in center_ids or []]}
    with db.connect(db.for_work(work, resources)) as con:
        if path.exists():
            con.read_parquet(str(path)).create_view("label_rows", replace=True)
        else:
            require_outputs(work, source, "bags", "terms", "urls")
            labels.to_table(con, work, output_path(work, source), "label_rows")
        rows = _fetch(con, query.format("label_rows"), params).rows
    found = {int(center_id): list(words) for center_id, words in rows}
    if center_ids is None:
        return found
    return {int(i): found.get(int(i), []) for i in center_ids}


def query(work: str | Path, sql: str, resources: db.Resources | None = None) -> pa.Table:
    """Run the user's SQL over the work folder's tables (pages, links, fragments, bags, pairs, ...), within
    `resources` (see open_work), and return its rows as an Arrow table. Repeated column names are made
    unique as DuckDB names the columns of a subquery (a, a_1); a statement without a result set (create
    view ...) gives no rows.

    Example:
        >>> query("work/example", "select size, count(*) from clusters group by 1")  # doctest: +SKIP
    """
    with open_work(work, resources) as con:
        if not _has_statement(con, sql):
            raise InputError("no SQL statement given")
        found = fetch_arrow(con, sql)
    return found.rename_columns(unique_names(found.column_names))


def query_rows(work: str | Path, sql: str, resources: db.Resources | None = None) -> Table:
    """`query` as DuckDB's Python values, for printing (`lshsql query`); a statement without a result set
    gives DuckDB's Count or Success column."""
    with open_work(work, resources) as con:
        if not _has_statement(con, sql):
            raise InputError("no SQL statement given")
        found = _fetch(con, sql)
    return Table(unique_names(found.columns), found.rows)


def _has_statement(con: duckdb.DuckDBPyConnection, sql: str) -> bool:
    """Whether `sql` holds a statement: DuckDB runs '', ';' or a comment as nothing and returns no result.
    SQL that does not parse counts as a statement, so that running it reports the syntax error."""
    try:
        return bool(con.extract_statements(sql))
    except duckdb.Error:
        return True


def unique_names(columns: list[str]) -> list[str]:
    """Column names made unique as DuckDB does for a subquery: a repeated name (compared ignoring case)
    gets the next free suffix _1, _2, ... counted per name, so a, a, A become a, a_1, A_2."""
    counts: dict[str, int] = {}
    names = []
    for name in columns:
        if name.lower() in counts:
            while f"{name}_{counts[name.lower()] + 1}".lower() in counts:
                counts[name.lower()] += 1
            counts[name.lower()] += 1
            name = f"{name}_{counts[name.lower()]}"
        counts[name.lower()] = 0
        names.append(name)
    return names


def info(work: str | Path) -> Table:
    """Per stage, rows written and seconds, like Table 1 of the paper; from the run manifest."""
    stages = manifest.read(work)["stages"]
    if not stages:
        raise InputError(f"{work}: no manifest.json; nothing has run here")
    rows = []
    for name in ("extract", *STAGE_NAMES):
        entry = stages.get(name)
        if entry:
            rows.append((name, _rows_of(name, entry), entry.get("seconds"), _details(entry)))
    return Table(["stage", "rows", "seconds", "details"], rows)


def _rows_of(name: str, entry: dict) -> int | None:
    return entry["counts"]["pages_used"] if name == "extract" else entry.get("rows")


def _details(entry: dict) -> str:
    """The entry's counts, then its parameters, as k=v; nested counts flattened (skipped.read_error=3), so
    the skip accounting of extract, term_counts and bags shows beside the totals it explains."""
    skip = {"fingerprint", "rows", "seconds", "params", "counts", "inputs", "file", "extra_stopword_words"}
    counts = {k: v for k, v in entry.items() if k not in skip} | entry.get("counts", {})
    parts = [f"{k}={v}" for k, v in sorted(_flatten(counts))]
    parts += [f"{k}={v}" for k, v in sorted(_flatten(entry.get("params", {})))]
    return ", ".join(parts)


def _flatten(values: dict, prefix: str = "") -> list[tuple[str, object]]:
    """The leaves of nested dicts, named by their dotted path."""
    leaves = []
    for key, value in values.items():
        if isinstance(value, dict):
            leaves += _flatten(value, f"{prefix}{key}.")
        else:
            leaves.append((f"{prefix}{key}", value))
    return leaves


QUERIES = {
    "related": """
        select
            case when pairs.u = $url then pairs.v else pairs.u end as related_url,
            pairs.similarity,
            pairs.n_bands,
            clusters.center = (select center from clusters where url = $url) as same_cluster
        from pairs
        inner join clusters on clusters.url = (case when pairs.u = $url then pairs.v else pairs.u end)
        where pairs.u = $url or pairs.v = $url
        order by pairs.similarity desc, related_url
        limit $limit
    """,
    "top_clusters": """
        with biggest as (
            select center, center_id, {key} as cluster_id, size, {chaining} from clusters where is_center
            order by
                case when $sort = 'pair_share' then pair_share end nulls last,
                case when $sort = 'min_pair_similarity' then min_pair_similarity end nulls last,
                size desc, center
            limit $limit
        ),
        members_ranked as (
            select clusters.center_id, clusters.url,
                   row_number() over (partition by clusters.center_id order by clusters.url) as rank
            from clusters inner join biggest on clusters.center_id = biggest.center_id
        )
        select
            biggest.cluster_id,
            biggest.size,
            round(biggest.pair_share, 3) as pair_share,
            round(biggest.min_pair_similarity, 3) as min_pair_similarity,
            biggest.center,
            biggest.center_id,
            (select list(url order by rank) from members_ranked
             where members_ranked.center_id = biggest.center_id and rank <= $members) as members
        from biggest
        order by
            case when $sort = 'pair_share' then biggest.pair_share end nulls last,
            case when $sort = 'min_pair_similarity' then biggest.min_pair_similarity end nulls last,
            biggest.size desc, biggest.center
    """,
}
