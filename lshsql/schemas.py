"""Parquet schemas of every table lshsql writes, with a line of documentation per column, and how a
Parquet file is opened to be streamed.

These are the contracts between stages (and with users who bring their own tables); docs/outputs.md
is generated from the same docs (python docs/generate.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    import pyarrow.parquet as pq

COLUMNS: dict[str, list[tuple[str, pa.DataType, str]]] = {
    "pages": [
        ("record_id", pa.int64(), "input order: file number * 2^32 + record number in the file"),
        (
            "url",
            pa.string(),
            "canonical URL of the record (raw WARC-Target-URI if it cannot be canonicalized)",
        ),
        ("record_type", pa.string(), "WARC record type (response, request, revisit, ...), 'file' or 'jsonl'"),
        ("warc_date", pa.timestamp("us", tz="UTC"), "capture time (WARC-Date), null if absent"),
        ("status", pa.int32(), "HTTP status code"),
        ("content_type", pa.string(), "HTTP Content-Type header"),
        ("encoding", pa.string(), "character encoding the HTML was decoded with"),
        ("n_bytes", pa.int64(), "bytes of the (decoded) HTTP body"),
        ("title", pa.string(), "text of <title>, whitespace collapsed"),
        ("n_out_links", pa.int32(), "number of followable links (<a href> with a web target) on the page"),
        ("source_file", pa.string(), "file the record was read from"),
        (
            "source_offset",
            pa.int64(),
            "byte offset of the record in source_file (of the gzip member it starts, else in the "
            "decompressed stream; line offset for JSON Lines)",
        ),
        ("skip_reason", pa.string(), "why the record is not used; null for a used page"),
        (
            "redirect_url",
            pa.string(),
            "a 301/302/303/307/308 response: its Location, resolved against url and canonicalized; "
            "null otherwise or when it cannot be canonicalized",
        ),
        (
            "canonical_url",
            pa.string(),
            'a parsed page: the target of its <link rel="canonical"> (after <base href>), canonicalized; '
            "null when absent, invalid or the page's own url",
        ),
    ],
    "links": [
        ("source_url", pa.string(), "canonical URL of the page the link is on"),
        ("position", pa.int32(), "0-based position of the link among the page's <a href> elements"),
        ("href", pa.string(), "the href attribute as written"),
        ("target_url", pa.string(), "canonical absolute target (after <base href>); null when skipped"),
        ("is_internal", pa.bool_(), "target has the same registered domain as the source"),
        (
            "anchor_text",
            pa.string(),
            "text of the anchor (with alt text of images in it), whitespace collapsed",
        ),
        (
            "skip_reason",
            pa.string(),
            "why the link gives no fragment (javascript, mailto, ...); null if used",
        ),
        (
            "is_template",
            pa.bool_(),
            "the link is in a text block that repeats on many of its host's pages (navigation, footer)",
        ),
    ],
    "fragments": [
        ("url", pa.string(), "the URL described: the link target, or the page itself for title/content"),
        ("bucket", pa.int32(), "xxh64(url) mod M; stored as the folder name fragments/bucket=<i>/"),
        ("kind", pa.string(), "'anchor' (anchor text + window), 'title' or 'content'"),
        ("source_url", pa.string(), "the page the words come from"),
        ("position", pa.int32(), "position of the link on source_url (0 for title and content rows)"),
        ("terms", pa.list_(pa.string()), "normalized words (lowercased, stopwords removed, stemmed)"),
    ],
    "term_counts": [
        ("url", pa.string(), "URL described"),
        ("term", pa.string(), "a term of its fragments"),
        (
            "tf",
            pa.float64(),
            "occurrences of the term in all fragments of the URL (or the summed user weight)",
        ),
    ],
    "urls": [
        (
            "url_id",
            pa.int64(),
            "1, 2, ... in byte order of url: url_id_a < url_id_b exactly when url_a < url_b",
        ),
        ("url", pa.string(), "URL described by at least one term"),
        ("n_terms", pa.int64(), "rows of term_counts: distinct terms before document-frequency limits"),
    ],
    "terms": [
        ("term_id", pa.int64(), "1, 2, ... in order of term_hash"),
        ("term_hash", pa.int64(), "xxh64(utf8(term)) >> 1, the UDF lsh_term_hash; bags name terms by it"),
        ("term", pa.string(), "the term"),
        (
            "n_urls",
            pa.int64(),
            "rows of term_counts with the term: the URLs it describes when no (url, term) repeats",
        ),
    ],
    "bags": [
        ("url_id", pa.int64(), "the URL (urls.url_id)"),
        ("term_hash", pa.int64(), "a term kept by min_df/max_df (terms.term_hash; join terms for its text)"),
        ("tf", pa.float64(), "term frequency"),
        (
            "df",
            pa.int64(),
            "number of URLs whose fragments contain the term (with --freeze-idf: frozen_idf.n_urls if it "
            "has the term)",
        ),
        ("weight", pa.float64(), "tf*ln(N/df) (tfidf), tf, or as given (none); tfidf/tf bags sum to --scale"),
    ],
    "signatures": [
        ("url_id", pa.int64(), "the URL"),
        (
            "h0",
            pa.int32(),
            "min-hash 0: min over the flattened bag of ((a_0*x + b_0) mod 2^40) >> 9; h1 ... h{m-1} follow",
        ),
    ],
    "buckets": [
        (
            "band",
            pa.int32(),
            "the LSH table, 0 .. l-1 (family/lsh_tables.parquet holds its k min-hash indices)",
        ),
        ("bucket", pa.int64(), "the bucket: the smallest url_id of its members"),
        ("url_id", pa.int64(), "a member: a URL whose k min-hashes of this table equal the bucket's"),
        ("n_members", pa.int64(), "members of the bucket, at least 2 (buckets of one URL are not kept)"),
    ],
    "candidates": [
        ("u_id", pa.int64(), "url_id of the first URL"),
        ("v_id", pa.int64(), "url_id of the second URL, u_id < v_id"),
        ("n_bands", pa.int64(), "LSH tables in which the two shared a bucket"),
    ],
    "pairs": [
        ("u", pa.string(), "first URL (u < v in byte order)"),
        ("v", pa.string(), "second URL"),
        (
            "similarity",
            pa.float64(),
            "the exact jaccard when verified (the default); with --no-verify the fraction of the m "
            "min-hashes that agree, which estimates it",
        ),
        ("n_agree", pa.int64(), "number of agreeing min-hashes"),
        ("n_bands", pa.int64(), "LSH tables in which the two collided"),
        ("u_id", pa.int64(), "url_id of u"),
        ("v_id", pa.int64(), "url_id of v"),
        (
            "jaccard",
            pa.float64(),
            "exact weighted Jaccard sum(min)/sum(max) of the flattened bags (the rounded weights the "
            "signatures estimate), after the min_df/max_df cut-offs; null with --no-verify",
        ),
    ],
    "clusters": [
        ("url", pa.string(), "a URL with a bag; every one is in exactly one cluster"),
        ("url_id", pa.int64(), "its url_id"),
        ("center", pa.string(), "the cluster's center (CENTER) or smallest URL (components)"),
        (
            "center_id",
            pa.int64(),
            "url_id of the center: names the cluster within this run (url_ids shift when URLs are added)",
        ),
        (
            "cluster_id",
            pa.int64(),
            "the cluster's stable id, the one `show` and serve take: kept by the cluster that holds most of "
            "its members when a later run remakes the clusters (cluster_history.parquet)",
        ),
        ("size", pa.int64(), "URLs in the cluster (1 for a URL with no pair)"),
        ("is_center", pa.bool_(), "url is the center"),
        (
            "min_pair_similarity",
            pa.float64(),
            "similarity of the cluster's least similar pair in pairs (ties: smallest u_id, v_id); "
            "null for a singleton",
        ),
        ("min_pair_u", pa.string(), "u of that pair (pairs.u); null for a singleton"),
        ("min_pair_v", pa.string(), "v of that pair (pairs.v); null for a singleton"),
        (
            "pair_share",
            pa.float64(),
            "share of the size * (size - 1) / 2 member pairs that are in pairs: 1.0 for a clique, "
            "2 / size for a chain or star; null for a singleton (in a dedup's folder, where pairs holds "
            "each shingle set once, every document pair counts: exact copies are pairs of each other, and "
            "of every document their set is paired with)",
        ),
    ],
    "merges": [
        (
            "level",
            pa.int32(),
            "r, the band size of the LSH level that found the edge; null for the exact method",
        ),
        ("threshold", pa.float64(), "t, the similarity a pair needed to merge its clusters"),
        ("u_id", pa.int64(), "url_id of the first document of the pair (u_id < v_id)"),
        ("v_id", pa.int64(), "url_id of the second document"),
        ("cluster_u", pa.int64(), "u's cluster before the merge (its smallest url_id); u_id for exact"),
        ("cluster_v", pa.int64(), "v's cluster before the merge; v_id for exact"),
        (
            "similarity",
            pa.float64(),
            "exact weighted Jaccard of the pair (the min-hash estimate with --no-verify)",
        ),
    ],
    "environment_domains": [
        ("domain", pa.string(), "a registered domain other than the site's own"),
        ("direction", pa.string(), "'out' (the site links to it), 'in' (it links to the site) or 'both'"),
        ("links_out", pa.int64(), "links from the site's pages to the domain"),
        ("pages_out", pa.int64(), "pages of the site with such a link"),
        ("links_in", pa.int64(), "links from the domain's crawled pages to the site"),
        ("citing_pages", pa.int64(), "pages of the domain with such a link"),
    ],
    "cluster_tree": [
        ("node_id", pa.int64(), "a leaf: its url_id; a merge: max(leaf url_id) + merge step 1, 2, ..."),
        ("parent_id", pa.int64(), "node_id of the merge above; null for a root"),
        ("is_leaf", pa.bool_(), "the node is a URL"),
        ("similarity", pa.float64(), "similarity of the merge edge; null for a leaf"),
        ("parent_similarity", pa.float64(), "the parent's similarity (<= the node's); null for a root"),
        ("level", pa.int32(), "level of the merge edge; null for a leaf or when the edges have none"),
        ("left_id", pa.int64(), "child on the side of the edge's u_id; null for a leaf"),
        ("right_id", pa.int64(), "child on the side of the edge's v_id; null for a leaf"),
        ("u_id", pa.int64(), "first url_id of the edge that made the merge; null for a leaf"),
        ("v_id", pa.int64(), "second url_id of the edge; null for a leaf"),
        ("size", pa.int64(), "leaves under the node (1 for a leaf)"),
        (
            "first_position",
            pa.int64(),
            "first leaf position under the node; leaves are numbered 0.. depth first, left child first, "
            "trees in order of their smallest url_id",
        ),
        ("last_position", pa.int64(), "last leaf position: the node's leaves are first..last_position"),
    ],
    "labels": [
        ("url", pa.string(), "id of a used document (its url in pages and fragments)"),
        ("label", pa.string(), "one of its labels (a Reuters TOPICS entry, or label/labels of the input)"),
    ],
}

# Written by extract (sql/04_url_aliases.sql): URLs the crawl says are the same page as another.
COLUMNS["url_aliases"] = [
    ("alias_url", pa.string(), "a URL that is the same page as another: a redirect, or a non-canonical URL"),
    (
        "target_url",
        pa.string(),
        "the URL its chain of aliases ends at (or the first URL of a cycle it runs into); never an alias_url",
    ),
    (
        "kind",
        pa.string(),
        "'redirect' (a 3xx response with a Location) or 'canonical' (a used page's <link "
        'rel="canonical"> to its own registered domain): how alias_url itself points on '
        "(its latest capture decides)",
    ),
    ("hops", pa.int32(), "aliases followed from alias_url to target_url: 1 .. 10"),
    ("links_collapsed", pa.int64(), "links (rows of links) with target_url = alias_url: links to target_url"),
]

# A cut of the cluster tree at a threshold is a flat clustering with the clusters table's columns.
# The clusters table's chaining diagnostics (sql/62_clusters.sql). A cut has none: the cluster tree keeps
# only the pairs that merged two clusters, not every pair within one.
CHAINING_COLUMNS = ("min_pair_similarity", "min_pair_u", "min_pair_v", "pair_share")
COLUMNS["cut"] = [
    (name, dtype, f"{doc} (a cut of the cluster tree at a threshold)" if name == "url" else doc)
    for name, dtype, doc in COLUMNS["clusters"]
    if name not in CHAINING_COLUMNS
]

# Written by the clusters stage (lshsql/lsh/cluster_ids.py): per run, the clusters whose members changed.
COLUMNS["cluster_history"] = [
    (
        "run",
        pa.int64(),
        "the clusters stage's run in this folder: 1, 2, ... (manifest.json: stages.clusters.run)",
    ),
    ("cluster_id", pa.int64(), "the cluster (clusters.cluster_id), or an id that ended in this run"),
    ("event", pa.string(), "new, split, grew, shrank, changed, merged or gone (see below)"),
    ("size_before", pa.int64(), "URLs of the id's cluster before the run; null for new and split"),
    ("size_after", pa.int64(), "URLs of the id's cluster after the run; null for merged and gone"),
    ("n_gained", pa.int64(), "members the id's cluster has now and did not have before"),
    ("n_lost", pa.int64(), "members the id's cluster had before and has no more"),
    (
        "other_id",
        pa.int64(),
        "split: the earlier id it took most of its members from; merged: the id of the cluster that holds "
        "most of its members now; null otherwise",
    ),
]

# Written by `run --freeze-idf` before its first bags stage (lshsql/pipeline/frozen.py): the vocabulary
# whose document frequencies later --freeze-idf runs keep.
COLUMNS["frozen_idf"] = [
    ("term_hash", pa.int64(), "a term of the run that froze the vocabulary (terms.term_hash)"),
    ("n_urls", pa.int64(), "its document frequency then (terms.n_urls): the df bags keep for it"),
    ("corpus_urls", pa.int64(), "the URLs of that run (N of ln(N / df)), the same in every row"),
]

# Written by extract and ingest (sql/05_surface_forms.sql): the readable words behind the stems.
COLUMNS["surface_forms"] = [
    ("term", pa.string(), "a term of the fragments (a stem, or with ingest --shingle a shingle)"),
    (
        "word",
        pa.string(),
        "a lowercased word normalized into the term, before stemming (a shingle of them for a shingle)",
    ),
    ("n", pa.int64(), "how often the word was normalized into the term, over every page parsed"),
]

# sql/63_cluster_labels.sql: the stage after clusters, and `lshsql cut` for its cut.
COLUMNS["cluster_labels"] = [
    ("center_id", pa.int64(), "the cluster (clusters.center_id); only clusters of 2 or more URLs"),
    ("cluster_id", pa.int64(), "the same cluster's stable id (clusters.cluster_id)"),
    ("rank", pa.int32(), "1 for the heaviest term, 2, ... up to 10"),
    ("term", pa.string(), "the term (terms.term)"),
    ("word", pa.string(), "the term's most frequent surface word (surface_forms), or the term without one"),
    ("weight", pa.float64(), "tf * ln(N / df) of the term summed over the cluster's URLs (any --weighting)"),
]
COLUMNS["cut_labels"] = [
    (name, dtype, doc.replace("clusters.", "cut.")) for name, dtype, doc in COLUMNS["cluster_labels"]
]

# `lshsql mirrors` (sql/90_mirrors.sql): page clusters aggregated to pairs of hosts.
COLUMNS["mirrors"] = [
    ("host_a", pa.string(), "a host (lowercase, no port) of the clustered URLs; host_a < host_b"),
    ("host_b", pa.string(), "the other host"),
    ("shared_clusters", pa.int64(), "clusters of size >= 2 holding URLs of both hosts (>= --min-shared)"),
    ("clusters_a", pa.int64(), "clusters of size >= 2 holding a URL of host_a"),
    ("clusters_b", pa.int64(), "clusters of size >= 2 holding a URL of host_b"),
    (
        "jaccard",
        pa.float64(),
        "Jaccard of the hosts' cluster sets: shared_clusters / (clusters_a + clusters_b - shared_clusters)",
    ),
]

# `lshsql dedup` (sql/92_documents.sql, sql/93_duplicates.sql): every record read, what became of it, and
# its exact copies (lshsql/tools/dedup.py).
COLUMNS["documents"] = [
    ("url_id", pa.int64(), "place in the keep order (url_ids of bags, signatures, pairs); null if skipped"),
    ("url", pa.string(), "url_id with 12 digits, a space and the id (or # and the row): the url in pairs"),
    ("stream_id", pa.int64(), "the url_id in reading order the sets were first written under"),
    ("row", pa.int64(), "0-based position in the input (files in the order given, records in file order)"),
    ("source", pa.string(), "the file read (<table> for an in-memory table)"),
    ("ord", pa.int64(), "1-based position in that file; null for a document of the earlier corpus"),
    ("id", pa.string(), "the id column as text; null when the record has none"),
    ("n_bytes", pa.int64(), "bytes of UTF-8 text"),
    ("n_shingles", pa.int64(), "distinct shingles (0: nothing to compare)"),
    ("skip_reason", pa.string(), "why the record was not compared, or null"),
    ("earlier", pa.bool_(), "a document kept by the earlier dedup of --against (row and id are its own)"),
    (
        "copy_of",
        pa.int64(),
        "an exact copy (the same shingle set as a document before it in keep order): the url_id of the "
        "first document of its set, compared in its place (signatures and pairs leave copies out); null "
        "otherwise",
    ),
]
COLUMNS["copies"] = [
    ("url_id", pa.int64(), "an exact copy (documents.url_id), left out of signatures and pairs"),
    ("copy_of", pa.int64(), "the first document of its shingle set in keep order, compared in its place"),
]
COLUMNS["duplicates"] = [
    ("row", pa.int64(), "the record's row (documents.row)"),
    ("id", pa.string(), "its id"),
    ("url", pa.string(), "its url (documents.url); null if skipped"),
    ("reason", pa.string(), "kept, duplicate, or why it was skipped (documents.skip_reason)"),
    ("kept_row", pa.int64(), "for a duplicate: the row of the document kept in its place"),
    ("kept_id", pa.string(), "for a duplicate: that document's id"),
    (
        "kept_earlier",
        pa.bool_(),
        "for a duplicate: the kept document is one of the earlier corpus (--against)",
    ),
    (
        "similarity",
        pa.float64(),
        "for a duplicate: Jaccard of the two documents' shingle sets (>= threshold)",
    ),
]

RAW_EXTRA = ("record_id", pa.int64(), "input order of the page the row comes from")
# Raw columns template detection reads (sources/templates.py), dropped from the final tables: the key of
# the text block a link starts in, and for an anchor fragment the key of each term's block and the span of
# its anchor's terms.
RAW_ONLY = {
    "links": [("block", pa.int64(), "")],
    "fragments": [
        ("block", pa.int64(), ""),
        ("blocks", pa.list_(pa.int64()), ""),
        ("anchor_from", pa.int32(), ""),
        ("anchor_to", pa.int32(), ""),
    ],
}

# The columns that name one row of a stage's table. A table a user brings for a stage to read is checked for
# them (pipeline.check_user_table): a repeated url_id in signatures would repeat pairs without an error.
KEYS: dict[str, tuple[tuple[str, ...], ...]] = {
    "urls": (("url_id",), ("url",)),
    "terms": (("term_id",), ("term",), ("term_hash",)),
    "bags": (("url_id", "term_hash"),),
    "signatures": (("url_id",),),
    "buckets": (("band", "url_id"),),
    "candidates": (("u_id", "v_id"),),
    "pairs": (("u_id", "v_id"),),
    "clusters": (("url",),),
}


def schema(table: str) -> pa.Schema:
    """The Arrow schema of a table lshsql writes."""
    return pa.schema([(name, dtype) for name, dtype, _ in COLUMNS[table]])


def raw_schema(table: str) -> pa.Schema:
    """Schema of the intermediate rows extraction workers produce, before duplicates are resolved."""
    columns = [*COLUMNS[table], *RAW_ONLY.get(table, [])]
    if table == "links":
        columns = [c for c in columns if c[0] != "is_template"]  # known once every page is read
    if table not in ("pages", "surface_forms"):  # surface forms are counted per batch, not per page
        columns = [RAW_EXTRA, *columns]
    return pa.schema([(name, dtype) for name, dtype, _ in columns])


def markdown(table: str) -> str:
    """A markdown table of the columns, for docs/outputs.md."""
    rows = [f"| `{name}` | {dtype} | {doc} |" for name, dtype, doc in COLUMNS[table]]
    return "\n".join(["| column | type | meaning |", "|---|---|---|", *rows])


def validate(path, table: str) -> None:
    """Raise StageError when a written file's columns or types differ from the documented schema."""
    import pyarrow.parquet as pq

    from lshsql.errors import StageError

    if table not in COLUMNS:
        return
    found = pq.read_schema(path)
    expected = schema(table)
    if table == "signatures":  # wide: url_id then h0..h{m-1}, all int32
        names = found.names
        ok = names[0] == "url_id" and all(n == f"h{i}" for i, n in enumerate(names[1:]))
        ok = (
            ok
            and found.field("url_id").type == pa.int64()
            and all(f.type == pa.int32() for f in list(found)[1:])
        )
    else:
        ok = [(f.name, f.type) for f in found] == [(f.name, f.type) for f in expected]
    if not ok:
        raise StageError(
            f"{path}: columns ({_brief(found)}) differ from the documented {table} ({_brief(expected)})"
        )


def _brief(schema_: pa.Schema) -> str:
    return ", ".join(f"{f.name} {f.type}" for f in schema_)


def read(path: str | Path, columns: list[str] | None = None) -> pa.Table:
    """A Parquet file's table (or the `columns` of it). pq.read_table would import pyarrow.dataset, which
    imports pandas where it is installed: a cost no read of one file needs."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as parquet:
        missing = [c for c in columns or () if c not in parquet.schema_arrow.names]
        if missing:  # as pq.read_table says, where ParquetFile.read would leave the column out
            raise pa.ArrowInvalid(f"No match for FieldRef.Name({missing[0]}) in {path}")
        return parquet.read(columns=columns)


def streamed(path: str | Path) -> pq.ParquetFile:
    """A Parquet file to read a batch or a row group at a time. pyarrow pre-buffers by default: iter_batches
    then reads ahead every row group it is to return, so memory grows with the file, not the batch."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path, pre_buffer=False)
