"""`lshsql dedup`: a corpus in, the corpus without its near-duplicates out.

Each document becomes the set of its shingles (sources/shingles.py) and its min-hash signature
(lsh/minhash.py, the values sql/30_signatures.sql gives a set), written straight into the tables the run's
stages read (urls, bags, signatures); the stages from buckets on find the pairs whose exact Jaccard of
those sets is at least the threshold (no document-frequency cut-offs); CENTER (sql/60_center_round.sql)
then keeps, in order of the keep policy, every document that no kept document before it duplicates, and
removes each other document in favour of the first kept document it duplicates. Every removed document
is a direct near-duplicate of the one kept for it: groups never chain unrelated documents through a
third. The policy's order is the order of url_id, and a url is its url_id written with 12 digits, a
space and the document's id, so that urls sort as their ids and read well (documents.parquet has both).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lshsql import manifest, schemas, sqlfiles, workdir
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.lsh.minhash import set_signatures
from lshsql.params import Params
from lshsql.pipeline import Log, run_stages
from lshsql.sources import corpus
from lshsql.sources.corpus import CorpusSource, arrow_batches
from lshsql.sources.frames import as_arrow
from lshsql.sources.shingles import probe_digest, shingle_hashes
from lshsql.tools import dedup_output

URL_DIGITS = 12
KEEP_POLICIES = ("first", "longest")
STAGES_RUN = ("buckets", "candidates", "bucket_sizes", "pairs", "clusters")
RECORDS_SCHEMA = pa.schema(
    [
        ("source", pa.int32()),
        ("source_path", pa.string()),
        ("ord", pa.int64()),
        ("id", pa.string()),
        ("n_bytes", pa.int64()),
        ("n_shingles", pa.int64()),
        ("seq", pa.int64()),
        ("keep", pa.string()),
        ("skip_reason", pa.string()),
    ]
)


@dataclass(frozen=True)
class DedupParams:
    """What counts as a near-duplicate and which document of a group stays. The defaults find edited
    copies, not topics: 5-word shingles of lowercased words, Jaccard >= 0.7, the first document kept."""

    threshold: float = 0.7
    shingle: int = 5
    char_shingle: int | None = None
    keep: str = "first"
    id_column: str = "id"
    text_column: str = "text"
    num_perm: int = 80
    seed: int = 1

    def __post_init__(self) -> None:
        """Raise ParamError with a one-line message for the first bad parameter."""
        checks = [
            (0 < self.threshold <= 1, f"threshold must be in (0, 1], got {self.threshold}"),
            (self.shingle >= 1, f"shingle must be >= 1, got {self.shingle}"),
            (
                self.char_shingle is None or self.char_shingle >= 1,
                f"char-shingle must be >= 1, got {self.char_shingle}",
            ),
            (bool(self.keep), "keep needs first, longest or a column name"),
            (bool(self.text_column), "the text column must be named"),
            (self.id_column != self.text_column, f"id and text column are both '{self.text_column}'"),
        ]
        for ok, message in checks:
            if not ok:
                raise ParamError(message)

    @property
    def keep_column(self) -> str | None:
        """The column whose largest value wins a group, for --keep COLUMN."""
        return None if self.keep in KEEP_POLICIES else self.keep

    def shingling(self) -> tuple[int, bool]:
        """(n, chars) for shingle_hashes."""
        return (self.char_shingle, True) if self.char_shingle else (self.shingle, False)

    def run_params(self) -> Params:
        """The stages' parameters: sets (no weights, no document-frequency cut-offs), exact verification,
        CENTER."""
        return Params(
            weighting="none",
            min_df=1,
            max_df=1.0,
            threshold=self.threshold,
            num_perm=self.num_perm,
            seed=self.seed,
            verify=True,
            clustering="center",
        )

    def index_key(self) -> dict:
        """What an earlier dedup must share for `--against`: shingles, signatures, what a duplicate is."""
        n, chars = self.shingling()
        return {
            "shingle": n,
            "chars": chars,
            "threshold": self.threshold,
            "num_perm": self.num_perm,
            "seed": self.seed,
            "probe": probe_digest(n, chars),
        }


@dataclass(frozen=True)
class DedupSummary:
    """Counts of one dedup: every record read is kept, removed as a duplicate, or skipped with its reason."""

    work: Path
    records_read: int
    kept: int
    removed: int
    skipped: dict[str, int]
    groups: int
    largest_group: int
    removed_by_earlier: int
    text_bytes: int
    seconds: float
    outputs: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The summary `lshsql dedup` prints."""
        mb = self.text_bytes / 1e6
        rate = mb / self.seconds if self.seconds else 0.0
        skipped = sum(self.skipped.values())
        out = [
            f"documents read:  {self.records_read:,} = {self.kept:,} kept + {self.removed:,} removed"
            + (f" + {skipped:,} skipped" if skipped else ""),
            *(f"  skipped {reason}: {n:,}" for reason, n in sorted(self.skipped.items())),
            f"groups:          {self.groups:,} with duplicates, the largest of {self.largest_group:,} "
            "documents",
        ]
        if self.removed_by_earlier:
            out.append(f"  removed as duplicates of the earlier corpus: {self.removed_by_earlier:,}")
        out += [
            f"time:            {self.seconds:.1f} s, {mb:,.1f} MB of text, {rate:.1f} MB/s",
            *(f"output:          {path}" for path in self.outputs),
            f"work folder:     {self.work} (lshsql explain, clusters and query read it)",
        ]
        return out


def dedup(
    inputs: list[str] | object,
    work: str | Path | None = None,
    params: DedupParams = DedupParams(),
    against: str | Path | None = None,
    resources: db.Resources | None = None,
) -> pa.Table:
    """The kept rows of a corpus as a pyarrow Table, in input order, every column as it was (for a
    notebook: `.to_pandas()`, `polars.from_arrow`). `work` keeps the work folder for `removed`, `explain`
    and `query`; without it a temporary folder is used and removed.

    Example:
        >>> kept = dedup(pandas_frame, params=DedupParams(threshold=0.8))  # doctest: +SKIP
    """
    data = _as_inputs(inputs)
    with contextlib.ExitStack() as stack:
        folder = Path(work) if work is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        dedup_files(data, folder, params, against=against, resources=resources)
        resources = db.for_work(folder, resources)
        return dedup_output.kept_table(folder, corpus.resolve_corpus(data), resources)


def removed(work: str | Path) -> pa.Table:
    """What a dedup removed, in input order: row, id, reason (duplicate, or why a record was skipped),
    kept_row, kept_id, kept_earlier, similarity."""
    path = Path(work) / "duplicates.parquet"
    if not path.exists():
        raise InputError(f"{work}: no duplicates.parquet: run `lshsql dedup` with --work {work} first")
    table = pq.read_table(path, columns=list(dedup_output.REMOVED_COLUMNS))
    return table.filter(pc.not_equal(table.column("reason"), "kept"))


def dedup_files(
    inputs: list[str] | object,
    work: str | Path,
    params: DedupParams = DedupParams(),
    out: str | Path | None = None,
    removed: str | Path | None = None,
    removed_rows: bool = False,
    against: str | Path | None = None,
    resources: db.Resources | None = None,
    log: Log | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> DedupSummary:
    """Remove the near-duplicates of a corpus: write its kept rows to `out` and what was removed to
    `removed`, both in the format of their extension (.jsonl, .jsonl.gz, .parquet, .csv).

    Args:
        inputs: JSON Lines, Parquet or CSV files, folders or globs; or a pyarrow Table, pandas or polars
            DataFrame.
        work: the work folder (shingles, pairs, clusters, DIR/duplicates.parquet); it is rewritten.
        against: the work folder of an earlier dedup: documents duplicating one it kept are removed too.

    Example:
        >>> summary = dedup_files(["corpus.jsonl"], "work", out="kept.jsonl")  # doctest: +SKIP
    """
    started = time.perf_counter()
    work = Path(work)
    data = _as_inputs(inputs)
    sources = _inputs_apart(data, corpus.resolve_corpus(data), work, [out, removed])
    for path in (out, removed):
        if path is not None:
            dedup_output.check_format(path)
    if against is not None and Path(against).resolve() == work.resolve():
        raise InputError(f"{work}: --against names the work folder itself: give the new dedup another one")
    earlier = _earlier_index(Path(against), params) if against is not None else None
    with workdir.writing(work):
        _check_work_folder(work)
        resources = db.for_work(work, resources)
        _clear(work)
        text_bytes = _read_all(sources, work, params, resources, earlier, log, progress)
        _rank(work, params, resources, earlier)
        run_stages(work, params.run_params(), STAGES_RUN, resources, log)
        # no terms to label clusters with: an empty table, so `lshsql clusters` lists them unlabelled
        pq.write_table(schemas.schema("cluster_labels").empty_table(), work / "cluster_labels.parquet")
        stats = _decide(work, resources)
        data = manifest.read(work)
        data["dedup"] = {
            "params": asdict(params),
            "index": params.index_key(),
            "against": str(against) if against else None,
            "stats": stats,
        }
        manifest.write(work, data)
        written = dedup_output.write_outputs(work, sources, out, removed, removed_rows, resources)
    return DedupSummary(
        work=work,
        **stats,  # _decide's counts are named as the summary's fields
        text_bytes=text_bytes,
        seconds=time.perf_counter() - started,
        outputs=written,
    )


def _inputs_apart(
    given: list[str] | pa.Table, sources: list[CorpusSource], work: Path, outputs: list
) -> list[CorpusSource]:
    """The sources without what this dedup writes: a folder given as input may hold an earlier run's work
    folder and outputs (set aside); an output named as an input is an error."""
    written = {Path(p).resolve() for p in outputs if p is not None}
    for path in given if isinstance(given, list) else []:
        if Path(path).resolve() in written:
            raise InputError(f"{path}: is an input and an output of this dedup: name another output")
    inside = work.resolve()
    kept = []
    for source in sources:
        path = Path(source.path).resolve()
        if source.table is not None or (path not in written and inside not in path.parents):
            kept.append(source)
    if not kept:
        raise InputError("no input left once the work folder and the outputs are set aside")
    return kept


def _check_work_folder(work: Path) -> None:
    """A dedup rewrites its work folder: refuse one that holds a crawl's or a corpus's run instead."""
    data = manifest.read(work) if work.is_dir() else {}
    if data.get("stages") and "dedup" not in data:
        raise InputError(
            f"{work}: holds the run of a crawl or of `lshsql run`; give dedup a work folder of its own"
        )


def _as_inputs(inputs: object) -> list[str] | pa.Table:
    if isinstance(inputs, (str, Path)):
        return [str(inputs)]
    if isinstance(inputs, (list, tuple)):
        return [str(p) for p in inputs]
    return as_arrow(inputs, "the input")


def _clear(work: Path) -> None:
    """Remove an earlier dedup's tables and start a manifest marked as an unfinished dedup: a dedup always
    reads its input again, and a folder it was interrupted in is still its own (`--against` refuses it)."""
    for path in work.glob("*.parquet"):
        path.unlink()
    manifest.write(work, {"stages": {}, "dedup": {"unfinished": True}})


# --- reading: shingles and signatures ---------------------------------------------------------------


class _Writers:
    """DIR/records.parquet (one row per record read), bags.parquet and signatures.parquet (the tables the
    stages read) written batch by batch."""

    def __init__(self, work: Path, num_perm: int) -> None:
        self.bags_schema = schemas.schema("bags")
        self.signatures_schema = pa.schema(
            [("url_id", pa.int64()), *((f"h{i}", pa.int32()) for i in range(num_perm))]
        )
        self.records = pq.ParquetWriter(work / "records.parquet", RECORDS_SCHEMA)
        # hashes do not compress: no codec, and a dictionary only for the constant columns
        self.bags = pq.ParquetWriter(
            work / "bags.parquet", self.bags_schema, compression="none", use_dictionary=["tf", "df", "weight"]
        )
        self.signatures = pq.ParquetWriter(
            work / "signatures.parquet", self.signatures_schema, compression="none", use_dictionary=False
        )

    def add_sets(self, url_ids: np.ndarray, hashes: np.ndarray, counts: np.ndarray, signatures) -> None:
        """The sets of documents url_ids (in order): their bags rows and signatures."""
        if not len(url_ids):
            return
        n = len(hashes)
        ones = pa.array(np.ones(n))
        bag_columns = [
            pa.array(np.repeat(url_ids, counts)),
            pa.array(hashes),
            ones,
            pa.nulls(n, pa.int64()),
            ones,
        ]
        self.bags.write_batch(pa.RecordBatch.from_arrays(bag_columns, schema=self.bags_schema))
        columns = [pa.array(url_ids), *(pa.array(signatures[:, i]) for i in range(signatures.shape[1]))]
        self.signatures.write_batch(pa.RecordBatch.from_arrays(columns, schema=self.signatures_schema))

    def close(self) -> None:
        for writer in (self.records, self.bags, self.signatures):
            writer.close()


def _read_all(
    sources: list[CorpusSource],
    work: Path,
    params: DedupParams,
    resources: db.Resources,
    earlier: dict | None,
    log: Log | None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Read every source in order into DIR/records.parquet, bags.parquet and signatures.parquet (url_ids in
    reading order, after the earlier corpus's kept documents); shingles and signatures are computed in
    `threads` threads; `progress` is called with the records and bytes of text read after each batch.
    Returns the bytes of text read."""
    last_id = earlier["kept"] if earlier else 0
    n_records = n_bytes = 0
    writers = _Writers(work, params.num_perm)
    written: list = []  # futures of the writer thread, in order; each gives the batch's bytes of text
    try:
        if earlier:
            _copy_earlier_sets(earlier, writers, resources)
        # Kernels in `threads` threads; one writer thread appends the batches in order, so neither the
        # reading (DuckDB) nor the Parquet encoding waits for the other.
        with ThreadPoolExecutor(resources.threads) as pool, ThreadPoolExecutor(1) as writer:
            for index, source in enumerate(sources):
                if log:
                    log(f"  reading {source.path} ...")
                columns = (params.id_column, params.text_column, params.keep_column)
                pending: list = []
                for batch in corpus.scan(source, *columns, resources):
                    pending.append((batch, pool.submit(_sets_of, batch.column(2), params)))
                    if progress:
                        n_records += batch.num_rows
                        n_bytes += batch.column(2).nbytes
                        progress(n_records, n_bytes)
                    while len(pending) > 2 * resources.threads or (pending and pending[0][1].done()):
                        last_id = _hand_over(writer, written, writers, index, source.path, pending, last_id)
                while pending:
                    last_id = _hand_over(writer, written, writers, index, source.path, pending, last_id)
        text_bytes = sum(future.result() for future in written)
    finally:
        writers.close()
    _check_some_text(sources, work, params, resources)
    return text_bytes


def _hand_over(
    writer, written: list, writers: _Writers, index: int, path: str, pending: list, last_id: int
) -> int:
    """Give the oldest shingled batch, with url_ids after last_id, to the writer thread; at most a few
    batches wait there. Returns the last url_id given."""
    batch, future = pending.pop(0)
    hashes, counts, signatures = future.result()
    while len(written) > 4 and not written[-5].done():
        written[-5].result()
    written.append(
        writer.submit(_write_batch, writers, index, path, batch, hashes, counts, signatures, last_id)
    )
    return last_id + int((counts > 0).sum())


def _sets_of(texts: pa.Array, params: DedupParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shingle hashes, count per text, signatures of the texts with shingles), in a worker thread."""
    n, chars = params.shingling()
    hashes, counts = shingle_hashes(texts, n, chars)
    signatures = set_signatures(hashes, counts[counts > 0], params.seed, params.num_perm)
    return hashes, counts, signatures


def _write_batch(
    writers: _Writers, index: int, path: str, batch: pa.RecordBatch, hashes, counts, signatures, last_id: int
) -> int:
    """Append one scanned batch: its records, and the sets of its documents with shingles under url_ids
    after last_id. Returns its bytes of text."""
    n_bytes = pc.fill_null(pc.binary_length(batch.column(2)), 0).cast(pa.int64())
    has_sets = counts > 0
    url_ids = np.arange(last_id + 1, last_id + 1 + int(has_sets.sum()), dtype=np.int64)
    seq = np.zeros(len(counts), dtype=np.int64)
    seq[has_sets] = url_ids
    no_words = pc.and_(pc.is_null(batch.column(4)), pa.array(~has_sets))
    columns = [
        pa.array(np.full(batch.num_rows, index, dtype=np.int32)),
        pa.array([path] * batch.num_rows, pa.string()),
        batch.column(0).cast(pa.int64()),
        batch.column(1).cast(pa.string()),
        n_bytes,
        pa.array(counts),
        pa.array(seq, mask=~has_sets),
        batch.column(3).cast(pa.string()),
        pc.if_else(no_words, pa.scalar("no_words"), batch.column(4)),
    ]
    writers.records.write_batch(pa.RecordBatch.from_arrays(columns, schema=RECORDS_SCHEMA))
    writers.add_sets(url_ids, hashes, counts[has_sets], signatures)
    return int(pc.sum(n_bytes).as_py() or 0)


def _check_some_text(
    sources: list[CorpusSource], work: Path, params: DedupParams, resources: db.Resources
) -> None:
    """InputError when there is nothing to compare: no record at all, or none with the text column (a
    wrong --text-column, named with the fields the records have)."""
    with db.connect(resources) as con:
        total, no_text = con.execute(
            "select count(*), count(*) filter (where skip_reason = 'no_text') from read_parquet($p)",
            {"p": str(work / "records.parquet")},
        ).fetchall()[0]
    if total == 0:
        raise InputError(f"no records in {', '.join(s.path for s in sources)}")
    if no_text == total:
        found = corpus.fields(sources[0], resources)
        raise corpus.missing_text_column(sources[0].path, params.text_column, found)


# --- ranking, deciding ------------------------------------------------------------------------------


def _rank(work: Path, params: DedupParams, resources: db.Resources, earlier: dict | None) -> None:
    """DIR/documents.parquet (sql/92_documents.sql): every record with its row in input order and,
    if it has shingles, its url_id: its rank under the keep policy; and DIR/urls.parquet. For a policy
    other than input order, bags and signatures are written again under the ranked url_ids."""
    policy = params.keep if params.keep in KEEP_POLICIES else "column"
    values = {"policy": policy, "base": earlier["kept"] if earlier else 0, "digits": URL_DIGITS}
    with db.connect(resources) as con:
        sqlfiles.register_inputs(con, {"records": str(work / "records.parquet")})
        if policy == "column" and not db.scalar(con, "select count(keep) from records"):
            raise InputError(
                f"no record has a '{params.keep}' field to keep by (--keep first, longest or a column)"
            )
        _register_earlier_kept(con, earlier)
        documents = work / "documents.parquet"
        sqlfiles.materialize(con, sqlfiles.load("92_documents.sql"), values, documents)
        schemas.validate(documents, "documents")
        con.execute(
            "copy (select url_id, url, n_shingles as n_terms from read_parquet($d) where url_id is not null "
            "order by url_id) to $out (format parquet, compression zstd)",
            {"d": str(documents), "out": str(work / "urls.parquet")},
        )
        if policy != "first":
            _renumber(con, work, "bags", "url_id, term_hash")
            _renumber(con, work, "signatures", "url_id")


def _renumber(con, work: Path, table: str, order: str) -> None:
    """Rewrite a table's url_ids from reading order (stream_id) to rank order (url_id)."""
    stream = work / f"{table}.stream.parquet"
    (work / f"{table}.parquet").rename(stream)
    query = (
        f"copy (select documents.url_id, t.* exclude (url_id) from read_parquet($t) as t "
        "inner join read_parquet($d) as documents on t.url_id = documents.stream_id "
        f"order by {order}) to $out (format parquet, compression uncompressed)"
    )  # table and order are constants of this module
    values = {"t": str(stream), "d": str(work / "documents.parquet"), "out": str(work / f"{table}.parquet")}
    con.execute(query, values)
    stream.unlink()


def _decide(work: Path, resources: db.Resources) -> dict:
    """DIR/duplicates.parquet (sql/93_duplicates.sql) and the counts of the summary."""
    out = work / "duplicates.parquet"
    inputs = {name: str(work / f"{name}.parquet") for name in ("documents", "clusters", "pairs")}
    with db.connect(resources) as con:
        sqlfiles.register_inputs(con, inputs)
        sqlfiles.materialize(con, sqlfiles.load("93_duplicates.sql"), {}, out)
        schemas.validate(out, "duplicates")
        con.read_parquet(str(out)).create_view("duplicates")
        reasons = dict(con.execute("select reason, count(*) from duplicates group by reason").fetchall())
        groups, largest = con.execute(
            "select count(*), coalesce(max(n), 0) from (select kept_row, count(*) + 1 as n "
            "from duplicates where reason = 'duplicate' and not kept_earlier group by kept_row)"
        ).fetchall()[0]
        (by_earlier,) = con.execute(
            "select count(*) from duplicates where reason = 'duplicate' and kept_earlier"
        ).fetchall()[0]
    kept, removed = reasons.pop("kept", 0), reasons.pop("duplicate", 0)
    return {
        "records_read": kept + removed + sum(reasons.values()),
        "kept": kept,
        "removed": removed,
        "skipped": dict(sorted(reasons.items())),
        "groups": groups,
        "largest_group": largest,
        "removed_by_earlier": by_earlier,
    }


# --- --against: an earlier dedup's kept documents -----------------------------------------------------

# The earlier dedup's kept documents (its own earlier ones first), renumbered 1 .. kept in their order.
_EARLIER_KEPT = """
with kept as (
    select url_id, row, id, source as source_path from read_parquet($documents) where earlier
    union all
    select documents.url_id, duplicates.row, duplicates.id, documents.source as source_path
    from read_parquet($duplicates) as duplicates
    inner join read_parquet($documents) as documents on duplicates.url = documents.url
    where duplicates.reason = 'kept'
)
select
    row_number() over (order by kept.url_id) as url_id,
    kept.url_id as earlier_url_id,
    kept.row,
    kept.id,
    kept.source_path
from kept
"""


def _earlier_index(folder: Path, params: DedupParams) -> dict:
    """What `--against FOLDER` reads: an earlier dedup's kept documents, checked to be shingled, signed
    and judged as this run will be. The folder is only read."""
    entry = manifest.read(folder).get("dedup") if folder.is_dir() else None
    tables = ("documents", "duplicates", "bags", "signatures")
    if not entry or "stats" not in entry or not all((folder / f"{t}.parquet").exists() for t in tables):
        raise InputError(f"{folder}: not the work folder of a finished `lshsql dedup`")
    theirs, ours = entry["index"], params.index_key()
    for key in ("shingle", "chars", "threshold", "num_perm", "seed"):
        if theirs.get(key) != ours[key]:
            option = "--" + ("char-shingle" if key == "chars" else key.replace("_", "-"))
            raise ParamError(
                f"{folder} was deduplicated with {option} {theirs.get(key)}, this run has {ours[key]}: "
                "give the same"
            )
    if theirs.get("probe") != ours["probe"]:
        raise InputError(
            f"{folder}: its shingles were hashed differently (another lshsql version): dedup it again"
        )
    values = {
        "documents": str(folder / "documents.parquet"),
        "duplicates": str(folder / "duplicates.parquet"),
    }
    with db.connect(db.Resources(threads=1)) as con:
        (kept,) = con.execute(f"select count(*) from ({_EARLIER_KEPT})", values).fetchall()[0]
    return {"folder": folder, "kept": kept, "values": values}


def _register_earlier_kept(con, earlier: dict | None) -> None:
    """The table earlier_kept(url_id, earlier_url_id, row, id, source_path); empty without --against."""
    if earlier:
        con.execute(f"create temp table earlier_kept as {_EARLIER_KEPT}", earlier["values"])
    else:
        con.execute(
            "create temp table earlier_kept (url_id bigint, earlier_url_id bigint, row bigint, "
            "id varchar, source_path varchar)"
        )


def _copy_earlier_sets(earlier: dict, writers: _Writers, resources: db.Resources) -> None:
    """The bags rows and signatures of the earlier corpus's kept documents under url_ids 1 .. kept: read,
    not computed again."""
    folder = earlier["folder"]
    with db.connect(resources) as con:
        con.execute("set preserve_insertion_order = true")
        _register_earlier_kept(con, earlier)
        for table, writer, schema, order in (
            ("bags", writers.bags, writers.bags_schema, "url_id, term_hash"),
            ("signatures", writers.signatures, writers.signatures_schema, "url_id"),
        ):
            query = (
                "select earlier_kept.url_id, t.* exclude (url_id) from read_parquet($t) as t "
                f"inner join earlier_kept on t.url_id = earlier_kept.earlier_url_id order by {order}"
            )  # order is a constant of this module
            for batch in arrow_batches(con, query, {"t": str(folder / f"{table}.parquet")}, 65536):
                writer.write_batch(batch.cast(schema))
