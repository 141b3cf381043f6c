"""One peer's MinHash dedup of a JSON Lines corpus, as a whole process that dedup_compare.py times.

    .dedup-venv/bin/python bench/dedup_peers.py datatrove --work W --buckets 14 --rows 8 F1.jsonl F2.jsonl ...
    .dedup-venv/bin/python bench/dedup_peers.py textdedup --work W --threshold 0.7 F1.jsonl F2.jsonl ...

Runs with the dedup virtualenv's Python (bench/dedup-requirements.txt), not the project's: the peers
pin their own dependencies. Leaves WORK/kept/ (the peer's own output of kept documents) and
WORK/removed.jsonl: one {"id": ...} line per removed document, which dedup_compare.py scores.

datatrove (0.10): the four steps of its MinHash dedup, each by a LocalPipelineExecutor, as its
examples/minhash_deduplication.py does:
  1. MinhashDedupSignature: JsonlReader, one task per input file (--workers at a time). Its default
     English text normalization (lowercase, punctuation to spaces, numbers to 0, diacritics removed),
     spaCy's blank English word tokenizer, 5-word shingles hashed by xxhash64, and --buckets x --rows
     min-hashes (its default 14 x 8 = 112 hashes, threshold about (1/14)^(1/8) = 0.72).
  2. MinhashDedupBuckets: one task per bucket: documents whose --rows hashes agree in a bucket.
  3. MinhashDedupCluster: union-find over those pairs (union by size); each cluster keeps its root,
     not necessarily its first document, and a removed document may resemble no kept one (chains).
  4. MinhashDedupFilter: reads the corpus again, writes the kept documents (JsonlWriter, no
     compression) and the removed ones (exclusion writer).
datatrove does not verify candidates: a bucket collision is a duplicate.

text-dedup (0.4.0, the newest version the package index serves): its MinHash command (python -m
text_dedup.minhash) with its defaults: lowercased text split on every non-word character (so ", " gives
an empty token too), 5-grams, 250 permutations of a SHA-1 based hash, and the bands x rows that minimise
its weighted false positive and negative areas for --threshold (optimal_param). Hugging Face datasets
reads the JSON Lines into Arrow (a fresh cache each run), --workers processes hash, each LSH band is a
Python dict, and union-find by rank keeps each cluster's root, often not its first document. It writes
the kept rows as a datasets folder; the removal list is the input's ids that are not in it.

--tokenizer split (the row "datatrove-split" in dedup_compare.py) swaps spaCy's tokenizer for str.split
on the normalized text, which then has no punctuation and single spaces, so the words are the same on
this corpus. spaCy makes a lexeme for every word type of every document (its memory zone frees them
after each one), which costs most of datatrove's time; the split row shows the rest of its pipeline.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def split_tokenizer():
    """A datatrove WordTokenizer that splits on whitespace (only word_tokenize is used by MinHash)."""
    from datatrove.utils.word_tokenizers import WordTokenizer

    class SplitTokenizer(WordTokenizer):
        def word_tokenize(self, text: str) -> list[str]:
            return text.split()

        def sent_tokenize(self, text: str) -> list[str]:
            return [text]

        def span_tokenize(self, text: str) -> list[tuple[int, int]]:
            return [(0, len(text))]

    return SplitTokenizer("en")


def datatrove(files: list[Path], work: Path, buckets: int, rows: int, workers: int, tokenizer: str) -> dict:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    root = Path(os.path.commonpath([f.parent.resolve() for f in files]))
    paths = work / "paths.txt"
    paths.write_text("".join(f"{f.resolve().relative_to(root)}\n" for f in files))
    tasks = len(files)
    config = MinhashConfig(n_grams=5, num_buckets=buckets, hashes_per_bucket=rows)
    logs = work / "logs"

    def reader() -> JsonlReader:
        return JsonlReader(str(root), paths_file=str(paths), text_key="text", id_key="id")

    phases = {}
    start = time.perf_counter()
    LocalPipelineExecutor(
        pipeline=[
            reader(),
            MinhashDedupSignature(
                output_folder=str(work / "signatures"),
                config=config,
                **({"language": split_tokenizer()} if tokenizer == "split" else {}),
            ),
        ],
        tasks=tasks,
        workers=min(workers, tasks),
        logging_dir=str(logs / "signatures"),
    ).run()
    phases["signatures_s"] = time.perf_counter() - start
    mark = time.perf_counter()
    LocalPipelineExecutor(
        pipeline=[
            MinhashDedupBuckets(
                input_folder=str(work / "signatures"), output_folder=str(work / "buckets"), config=config
            )
        ],
        tasks=buckets,
        workers=min(workers, buckets),
        logging_dir=str(logs / "buckets"),
    ).run()
    phases["buckets_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    LocalPipelineExecutor(
        pipeline=[
            MinhashDedupCluster(
                input_folder=str(work / "buckets"), output_folder=str(work / "remove_ids"), config=config
            )
        ],
        tasks=1,
        logging_dir=str(logs / "clusters"),
    ).run()
    phases["clusters_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    LocalPipelineExecutor(
        pipeline=[
            reader(),
            MinhashDedupFilter(
                input_folder=str(work / "remove_ids"),
                exclusion_writer=JsonlWriter(str(work / "removed"), compression=None),
            ),
            JsonlWriter(str(work / "kept"), compression=None),
        ],
        tasks=tasks,
        workers=min(workers, tasks),
        logging_dir=str(logs / "filter"),
    ).run()
    phases["filter_s"] = time.perf_counter() - mark
    removed = 0
    with open(work / "removed.jsonl", "w") as out:
        for part in sorted((work / "removed").glob("*.jsonl")):
            with open(part) as f:
                for line in f:
                    out.write(json.dumps({"id": json.loads(line)["id"]}) + "\n")
                    removed += 1
    phases["total_s"] = time.perf_counter() - start
    return {
        "removed": removed,
        "buckets": buckets,
        "rows": rows,
        "tokenizer": tokenizer,
        "tasks": tasks,
        "workers": workers,
        **phases,
    }


def textdedup(files: list[Path], work: Path, threshold: float, num_perm: int, workers: int) -> dict:
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import datasets
    import orjson
    from text_dedup import minhash
    from text_dedup.utils import optimal_param

    start = time.perf_counter()
    # Its --data_files is one string (a glob): links to the inputs, named in input order.
    links = work / "input"
    links.mkdir()
    for i, f in enumerate(files):
        (links / f"{i:05d}-{f.name}").symlink_to(f.resolve())
    pattern = links / "*"
    args = [
        "--path",
        "json",
        "--data_files",
        str(pattern),
        "--split",
        "train",
        "--cache_dir",
        str(work / "cache"),
    ]
    args += ["--output", str(work / "kept"), "--column", "text", "--num_proc", str(workers)]
    args += ["--threshold", str(threshold), "--ngram", "5", "--num_perm", str(num_perm)]
    minhash.main.main(args=args, standalone_mode=False)
    dedup_s = time.perf_counter() - start
    kept = set(datasets.load_from_disk(str(work / "kept"))["id"])
    removed = 0
    with open(work / "removed.jsonl", "wb") as out:
        for f in files:
            with open(f, "rb") as fh:
                for line in fh:
                    doc_id = str(orjson.loads(line)["id"])
                    if doc_id not in kept:
                        out.write(orjson.dumps({"id": doc_id}) + b"\n")
                        removed += 1
    bands, rows = optimal_param(threshold, num_perm, false_positive_weight=0.5, false_negative_weight=0.5)
    return {
        "removed": removed,
        "buckets": bands,
        "rows": rows,
        "num_perm": num_perm,
        "workers": workers,
        "dedup_s": dedup_s,
        "removal_list_s": time.perf_counter() - start - dedup_s,
        "total_s": time.perf_counter() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("system", choices=["datatrove", "textdedup"])
    parser.add_argument("files", nargs="+", type=Path, help="JSON Lines files (id, text), in input order")
    parser.add_argument("--work", type=Path, required=True, help="an empty folder for the peer's files")
    parser.add_argument("--buckets", type=int, default=14, help="LSH bands (datatrove's default 14)")
    parser.add_argument("--rows", type=int, default=8, help="hashes per band (datatrove's default 8)")
    parser.add_argument("--workers", type=int, default=2, help="processes at a time (default 2)")
    parser.add_argument("--threshold", type=float, default=0.7, help="text-dedup's threshold")
    parser.add_argument("--num-perm", type=int, default=250, help="text-dedup's permutations (its default)")
    parser.add_argument(
        "--tokenizer", choices=["spacy", "split"], default="spacy", help="spacy: datatrove's English default"
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.system == "datatrove":
        info = datatrove(args.files, args.work, args.buckets, args.rows, args.workers, args.tokenizer)
    else:
        info = textdedup(args.files, args.work, args.threshold, args.num_perm, args.workers)
    (args.work / "timing.json").write_text(json.dumps(info, indent=1) + "\n")
    print(json.dumps(info))


if __name__ == "__main__":
    main()
