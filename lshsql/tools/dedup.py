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

Exact copies (documents with the same shingle set, known by its size and two 64-bit digests) are left
out of the signatures: the first document of each set in keep order is compared in the place of the
others, and the clusters stage puts them in its cluster (pipeline/rounds.add_copies). Over the same pairs
of distinct sets, that is the decision CENTER makes with the copies compared too, since every pair of a
copy is a pair of the document before it; it saves the pairs among copies, whose number grows with the
square of theirs. The LSH tables are planned for the distinct sets, so near the threshold the pairs found
can differ from those of a dedup that compares every copy, both within the planner's recall.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lshsql import manifest, schemas, sqlfiles, workdir
from lshsql.engines import duckdb as db
from lshsql.errors import InputError, ParamError
from lshsql.params import Params
from lshsql.pipeline import Log, run_stages
from lshsql.pipeline.rounds import COPIES
from lshsql.sources import corpus
from lshsql.sources.corpus import CorpusSource
from lshsql.sources.frames import as_arrow
from lshsql.sources.shingles import probe_digest
from lshsql.tools import dedup_output
from lshsql.tools.dedup_against import earlier_index, register_earlier_kept
from lshsql.tools.dedup_read import read_all

URL_DIGITS = 12
KEEP_POLICIES = ("first", "longest")
# what a file browser leaves in a folder it showed: an empty folder for all that (dedup leaves them there)
DESKTOP_FILES = (".DS_Store", "Thumbs.db", "desktop.ini")
STAGES_RUN = ("buckets", "candidates", "bucket_sizes", "pairs", "clusters")
# The tables a dedup writes in its work folder (DIR/<name>.parquet), what a dedup in it again removes first
WRITTEN = frozenset(
    ("records", "documents", "urls", "bags", "signatures", "copies", *STAGES_RUN)
    + ("cluster_history", "cluster_labels", "duplicates")
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
        self.run_params()  # the stages' checks (num_perm, seed) before any document is read

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
    exact_copies: int = 0  # documents with the shingle set of one before them in keep order: never kept

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
        if self.exact_copies:
            out.append(f"  exact copies (the same shingles, compared once): {self.exact_copies:,}")
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
    table = schemas.read(path, columns=list(dedup_output.REMOVED_COLUMNS))
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
    dedup_output.check_outputs(out, removed, work)
    dedup_output.check_columns(sources, out, removed, removed_rows)
    tables = {work.resolve() / f"{table}.parquet" for table in WRITTEN}
    for path in (p for p in (out, removed) if p is not None):
        if Path(path).resolve() in tables:
            raise InputError(f"{path}: is a table of the work folder {work}; name another file")
    if against is not None and Path(against).resolve() == work.resolve():
        raise InputError(f"{work}: --against names the work folder itself: give the new dedup another one")
    earlier = earlier_index(Path(against), params) if against is not None else None
    _check_work_folder(work)  # before the lock's clean-up of what killed runs left (DIR/tmp, *.tmp)
    with workdir.writing(work):
        resources = db.for_work(work, resources)
        _clear(work)
        text_bytes = read_all(sources, work, params, resources, earlier, log, progress)
        copies = _rank(work, params, resources, earlier)
        try:
            run_stages(work, params.run_params(), STAGES_RUN, resources, log)
        except ParamError as e:  # the planner's advice names run's -k and -l, which dedup does not take
            raise ParamError(str(e).removesuffix(", or give -k and -l")) from None
        # no terms to label clusters with: an empty table, so `lshsql clusters` lists them unlabelled
        pq.write_table(schemas.schema("cluster_labels").empty_table(), work / "cluster_labels.parquet")
        stats = _decide(work, resources)
        if not stats["kept"] and not stats["removed"]:  # every record skipped: no KEPT file of nothing
            reasons = ", ".join(f"{n} {reason}" for reason, n in stats["skipped"].items())
            raise InputError(f"no usable document among {stats['records_read']} records ({reasons})")
        data = manifest.read(work)
        data["dedup"] = {
            "params": asdict(params),
            "index": params.index_key(),
            "against": str(against) if against else None,
            "stats": {**stats, "exact_copies": copies},
        }
        manifest.write(work, data)
        written = dedup_output.write_outputs(work, sources, out, removed, removed_rows, resources)
    return DedupSummary(
        work=work,
        **stats,  # _decide's counts are named as the summary's fields
        text_bytes=text_bytes,
        seconds=time.perf_counter() - started,
        outputs=written,
        exact_copies=copies,
    )


def _inputs_apart(
    given: list[str] | pa.Table, sources: list[CorpusSource], work: Path, outputs: list
) -> list[CorpusSource]:
    """The sources without what this dedup writes: a folder given as input may hold an earlier run's work
    folder and outputs (set aside); an output named as an input is an error."""
    written = {Path(p).resolve() for p in outputs if p is not None}
    inside = work.resolve()
    for path in given if isinstance(given, list) else []:
        if Path(path).resolve() in written:
            raise InputError(f"{path}: is an input and an output of this dedup: name another output")
        if inside in Path(path).resolve().parents and Path(path).is_file():
            raise InputError(f"{path}: is inside the work folder {work}, which dedup rewrites: move it out")
    kept = []
    for source in sources:
        path = Path(source.path).resolve()
        if source.table is not None or (path not in written and inside not in path.parents):
            kept.append(source)
    if not kept:
        raise InputError("no input left once the work folder and the outputs are set aside")
    return kept


def _check_work_folder(work: Path) -> None:
    """A dedup rewrites its work folder: refuse one that holds a crawl's or a corpus's run instead, or
    files of the user's (a folder that is not empty and not an lshsql work folder)."""
    data = manifest.read(work) if work.is_dir() else {}
    if data.get("stages") and "dedup" not in data:
        raise InputError(
            f"{work}: holds the run of a crawl or of `lshsql run`; give dedup a work folder of its own"
        )
    ignored = (workdir.LOCK, *DESKTOP_FILES)
    lshsql_only = work.is_dir() and all(path.name in ignored for path in work.iterdir())
    if work.exists() and not (work / manifest.MANIFEST).exists() and not lshsql_only:
        raise InputError(
            f"{work}: is not empty and not an lshsql work folder; dedup rewrites its work folder: give it a "
            "new or empty one"
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
        if path.stem in WRITTEN:
            path.unlink()
    manifest.write(work, {"stages": {}, "dedup": {"unfinished": True}})


# --- ranking, deciding ------------------------------------------------------------------------------


def _rank(work: Path, params: DedupParams, resources: db.Resources, earlier: dict | None) -> int:
    """DIR/documents.parquet (sql/92_documents.sql): every record with its row in input order and, if it
    has shingles, its url_id: its rank under the keep policy; DIR/urls.parquet; and DIR/copies.parquet,
    the exact copies, which signatures.parquet then leaves out (see the module's docstring). For a policy
    other than input order, bags and signatures are written again under the ranked url_ids. Returns the
    number of exact copies."""
    policy = params.keep if params.keep in KEEP_POLICIES else "column"
    values = {"policy": policy, "base": earlier["kept"] if earlier else 0, "digits": URL_DIGITS}
    with db.connect(resources) as con:
        sqlfiles.register_inputs(con, {"records": str(work / "records.parquet")})
        if policy == "column" and not db.scalar(con, "select count(keep) from records"):
            raise InputError(
                f"no record has a '{params.keep}' field to keep by (--keep first, longest or a column)"
            )
        register_earlier_kept(con, earlier)
        documents = work / "documents.parquet"
        sqlfiles.materialize(con, sqlfiles.load("92_documents.sql"), values, documents)
        schemas.validate(documents, "documents")
        sqlfiles.register_inputs(con, {"documents": str(documents)})
        con.execute(
            "copy (select url_id, url, n_shingles as n_terms from documents where url_id is not null "
            "order by url_id) to $out (format parquet, compression zstd)",
            {"out": str(work / "urls.parquet")},
        )
        copies = db.scalar(con, "select count(copy_of) from documents")
        con.execute(
            "copy (select url_id, copy_of from documents where copy_of is not null order by url_id) "
            "to $out (format parquet, compression zstd)",
            {"out": str(work / COPIES)},
        )
        schemas.validate(work / COPIES, "copies")
        if policy != "first":
            _renumber(con, work, "bags", "url_id, term_hash")
        if policy != "first" or copies:
            _renumber(con, work, "signatures", "url_id", originals_only=True)
    return copies


def _renumber(con, work: Path, table: str, order: str, originals_only: bool = False) -> None:
    """Rewrite a table's url_ids from reading order (stream_id) to rank order (url_id); with originals_only
    without the rows of exact copies."""
    stream = work / f"{table}.stream.parquet"
    (work / f"{table}.parquet").rename(stream)
    where = "where documents.copy_of is null" if originals_only else ""
    query = (
        f"copy (select documents.url_id, t.* exclude (url_id) from read_parquet($t) as t "
        f"inner join documents on t.url_id = documents.stream_id {where} "
        f"order by {order}) to $out (format parquet, compression uncompressed)"
    )  # table, where and order are constants of this module
    con.execute(query, {"t": str(stream), "out": str(work / f"{table}.parquet")})
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
