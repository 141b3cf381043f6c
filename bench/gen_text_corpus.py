"""A seeded synthetic corpus of English-like documents with planted near-duplicates, for dedup benchmarks.

    python bench/gen_text_corpus.py --mb 50 --out bench-data/t50
    python bench/gen_text_corpus.py --docs 2000 --seed 7 --shards 1 --out bench-data/t2k

Documents are 1-10 kB of text (log-uniform), paragraphs of 2-7 sentences of 4-27 words, commas, full
stops, question and exclamation marks, capitalised sentence starts. Words come from a Zipf-Mandelbrot
vocabulary (p ~ 1/(rank + 2.7), 100k words: about 150 English function words first, then made-up words
built from syllables), so a few words are very common and most are rare, as in English.

About a quarter of the documents (--dup-share) are derived from an earlier one (a reservoir sample of
the documents so far, so a copy can be far from its source; edited copies are sources too, which makes
chains A ~ B ~ C where A and C are further apart):

| kind | what | 5-word shingle Jaccard with the source (50 MB, seed 42) |
|---|---|---|
| exact | the same text | 1 |
| normalized | the same words; capitals and punctuation changed | 1 after normalization |
| edited | words substituted, deleted, inserted: 0.3-6 % of the words | 0.47-1, median 0.77; 68 % >= 0.7 |
| reordered | paragraphs shuffled (or two halves swapped) | 0.84-0.97 |
| boilerplate | a header and/or footer of 30-120 words (one of 40 shared ones) | 0.43-0.98; 85 % >= 0.7 |
| passage | NOT a duplicate: a long contiguous passage of the source inside new text | 0.23-0.64 |

Output (OUT/): docs.jsonl (or docs.jsonl.gz with --gzip; with --shards K > 1, docs/part-0000i.jsonl, the
documents split into K consecutive runs, so input order is still generation order), one
{"id": "d000000042", "text": ...} per line, ids in input order; planted.jsonl, one line per derived
document (id, source, kind, rate: the edit rate or the passage's target Jaccard); meta.json (sizes,
counts per kind, parameters, seed). Memory stays flat (the reservoir holds 2,000 documents, about
60 MB); about 6 MB/s of text per second of CPU, so 1 GB takes about 3 minutes of one idle core.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import time
from pathlib import Path

import numpy as np

_FUNCTION_WORDS = (
    "the of and to a in is that for it as was with be by on not he i this are or his from at which but have "
    "an they you were her she there one all we their been has who will more no if out so said what up its "
    "about into than them can only other new some could time these two may then do first any my now such "
    "like our over man me even most made after also did many before must through back years where much "
    "your way well down should because each just those people how too little state good very make world "
    "still own see men work long get here between both life being under never day same another know while "
    "last might us great old year off come since against go came right used take three"
)
_ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr sh st th tr ch"
_VOWELS = "a e i o u ai ea ou io y"
FUNCTION_WORDS = _FUNCTION_WORDS.split()
ONSETS = [*_ONSETS.split(), ""]
VOWELS = _VOWELS.split()
CODAS = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "ck"]
VOCAB = 100_000
KINDS = ("original", "exact", "normalized", "edited", "reordered", "boilerplate", "passage")
# Share of each derived kind among derived documents.
DERIVED_MIX = {
    "exact": 0.12,
    "normalized": 0.08,
    "edited": 0.36,
    "reordered": 0.12,
    "boilerplate": 0.12,
    "passage": 0.20,
}
RESERVOIR = 2000


def make_vocab(rng: np.random.Generator) -> list[str]:
    """Function words, then unique made-up words of 1-3 syllables, more syllables at rarer ranks."""
    words = list(dict.fromkeys(FUNCTION_WORDS))
    seen = set(words)
    while len(words) < VOCAB:
        batch = 50_000
        lg = np.log10(np.arange(len(words), len(words) + batch) + 1.0)
        syllables = 1 + (rng.random(batch) < 0.15 * lg) + (rng.random(batch) < 0.05 * lg)
        parts = (
            np.array(ONSETS, dtype=object)[rng.integers(len(ONSETS), size=(batch, 3))]
            + np.array(VOWELS, dtype=object)[rng.integers(len(VOWELS), size=(batch, 3))]
            + np.array(CODAS, dtype=object)[rng.integers(len(CODAS), size=(batch, 3))]
        )
        for row, k in zip(parts.tolist(), syllables.tolist(), strict=True):
            word = "".join(row[:k])
            if len(word) > 1 and word not in seen:
                seen.add(word)
                words.append(word)
                if len(words) == VOCAB:
                    break
    return words


class Writer:
    """Documents into one file or K consecutive shards; counts text bytes."""

    def __init__(self, out: Path, shards: int, gz: bool, docs: int | None, mb: float | None):
        self.out, self.shards, self.gz = out, shards, gz
        self.target_docs, self.target_bytes = docs, int(mb * 1e6) if mb else None
        self.docs = self.text_bytes = self.file_bytes = 0
        self.shard = -1
        self.f = None
        self.paths: list[str] = []
        if shards > 1:
            (out / "docs").mkdir(parents=True, exist_ok=True)
        self._next()

    def _next(self) -> None:
        if self.f:
            self.f.close()
        self.shard += 1
        ext = ".jsonl.gz" if self.gz else ".jsonl"
        path = self.out / ("docs" + ext if self.shards == 1 else f"docs/part-{self.shard:05d}{ext}")
        self.paths.append(str(path.relative_to(self.out)))
        raw = open(path, "wb")  # noqa: SIM115 - closed in _next/close
        self.f = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) if self.gz else raw
        self._raw = raw

    def progress(self) -> float:
        if self.target_docs:
            return self.docs / self.target_docs
        return self.text_bytes / self.target_bytes

    def write(self, doc_id: str, text: str) -> None:
        if self.shard + 1 < self.shards and self.progress() >= (self.shard + 1) / self.shards:
            self._next()
        line = f'{{"id": "{doc_id}", "text": {json.dumps(text)}}}\n'.encode()
        self.f.write(line)
        self.docs += 1
        self.text_bytes += len(text.encode())
        self.file_bytes += len(line)

    def done(self) -> bool:
        return self.progress() >= 1.0

    def close(self) -> None:
        self.f.close()
        if self.gz:
            self._raw.close()


class Generator:
    """Token arrays: ids < V lower-case words, V..2V-1 capitalised, then , . ? ! and a paragraph break."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        words = make_vocab(np.random.default_rng(seed + 1))
        v = len(words)
        self.V = v
        self.COMMA, self.PERIOD, self.QMARK, self.EXCL, self.PARA = range(2 * v, 2 * v + 5)
        # Each word carries the space before it; rendering gathers the tokens' bytes from one buffer.
        pieces = [" " + w for w in words] + [" " + w[0].upper() + w[1:] for w in words]
        pieces += [",", ".", "?", "!", "\n\n"]
        encoded = [x.encode() for x in pieces]
        self.piece_len = np.array([len(x) for x in encoded], dtype=np.int64)
        self.piece_start = np.concatenate([[0], np.cumsum(self.piece_len)[:-1]])
        self.piece_bytes = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        self.mark_cdf = np.cumsum([0.9, 0.06, 0.04])
        p = 1.0 / (np.arange(v) + 2.7)
        self.cdf = np.cumsum(p / p.sum())
        self.pool = np.empty(0, dtype=np.int32)
        self.pos = 0
        self.boilerplate = [self.fresh(int(self.rng.integers(30, 121)), paragraphs=False) for _ in range(40)]

    def words(self, n: int) -> np.ndarray:
        """n word ids drawn from the Zipf-Mandelbrot distribution (a pool refilled 1M at a time)."""
        if self.pos + n > len(self.pool):
            draw = max(1 << 20, n)
            fresh = np.searchsorted(self.cdf, self.rng.random(draw)).astype(np.int32)
            self.pool = np.concatenate([self.pool[self.pos :], np.minimum(fresh, self.V - 1)])
            self.pos = 0
        out = self.pool[self.pos : self.pos + n]
        self.pos += n
        return out

    def fresh(self, n: int, paragraphs: bool = True) -> np.ndarray:
        """A new text of n words: sentences of 4-27 words, commas, end marks, paragraphs of 2-7 sentences."""
        rng = self.rng
        w = self.words(n).copy()
        lengths = rng.integers(4, 28, size=n // 4 + 2)
        ends = np.cumsum(lengths)
        ends = ends[ends < n]
        ends = np.append(ends, n)  # exclusive end of each sentence
        starts = np.concatenate([[0], ends[:-1]])
        w[starts] += self.V
        marks = self.PERIOD + np.minimum(np.searchsorted(self.mark_cdf, rng.random(len(ends))), 2)
        commas = np.flatnonzero(rng.random(n) < 0.06) + 1
        is_end = np.zeros(n + 1, dtype=bool)
        is_end[ends] = True
        commas = commas[~is_end[commas]]
        index = [commas, ends]
        values = [np.full(len(commas), self.COMMA), marks]
        if paragraphs:
            para_len = rng.integers(2, 8, size=len(ends))
            para_ends = np.cumsum(para_len) - 1
            para_ends = para_ends[para_ends < len(ends) - 1]
            index.append(ends[para_ends])
            values.append(np.full(len(para_ends), self.PARA))
        idx = np.concatenate(index)
        val = np.concatenate(values)
        order = np.argsort(idx, kind="stable")  # a paragraph break after its sentence's end mark
        return np.insert(w, idx[order], val[order]).astype(np.int32)

    def render(self, tokens: np.ndarray) -> str:
        lengths = self.piece_len[tokens]
        ends = np.cumsum(lengths)
        # byte i of the text is piece_bytes[start of its token's piece + offset inside the piece]
        index = np.arange(ends[-1]) + np.repeat(self.piece_start[tokens] - (ends - lengths), lengths)
        text = self.piece_bytes[index].tobytes().decode()
        return text.replace("\n\n ", "\n\n").strip()

    def is_word(self, tokens: np.ndarray) -> np.ndarray:
        return tokens < 2 * self.V

    # -- derived documents ------------------------------------------------------------------------------

    def normalized(self, src: np.ndarray) -> np.ndarray:
        """Same words: capitals toggled on 10-40 % of the words, commas dropped or added."""
        rng = self.rng
        t = src.copy()
        words = np.flatnonzero(self.is_word(t))
        flip = words[rng.random(len(words)) < rng.uniform(0.1, 0.4)]
        t[flip] = np.where(t[flip] >= self.V, t[flip] - self.V, t[flip] + self.V)
        t = t[~((t == self.COMMA) & (rng.random(len(t)) < 0.5))]
        add = np.flatnonzero(self.is_word(t) & (rng.random(len(t)) < 0.03)) + 1
        return np.insert(t, add, self.COMMA)

    def edited(self, src: np.ndarray, rate: float) -> np.ndarray:
        """Substitute, delete and insert words, each at a random share of `rate`."""
        rng = self.rng
        t = src.copy()
        share = rng.dirichlet([1.0, 1.0, 1.0]) * rate
        words = np.flatnonzero(self.is_word(t))
        sub = words[rng.random(len(words)) < share[0]]
        caps = t[sub] >= self.V
        t[sub] = self.words(len(sub)) + np.where(caps, self.V, 0)
        delete = words[rng.random(len(words)) < share[1]]
        t = np.delete(t, delete)
        words = np.flatnonzero(self.is_word(t))
        ins = words[rng.random(len(words)) < share[2]]
        return np.insert(t, ins, self.words(len(ins)))

    def reordered(self, src: np.ndarray) -> np.ndarray:
        """Paragraphs shuffled (a different order guaranteed); one paragraph: its two halves swapped."""
        breaks = np.flatnonzero(src == self.PARA)
        parts = np.split(src, breaks + 1)
        parts = [p[p != self.PARA] for p in parts if len(p)]
        if len(parts) < 2:
            ends = np.flatnonzero(~self.is_word(src) & (src != self.COMMA))
            cut = ends[len(ends) // 2] + 1 if len(ends) > 1 else len(src) // 2
            return np.concatenate([src[cut:], src[:cut]])
        order = self.rng.permutation(len(parts))
        while np.all(order == np.arange(len(parts))):
            order = self.rng.permutation(len(parts))
        out = []
        for i in order:
            out += [parts[i], np.array([self.PARA], dtype=np.int32)]
        return np.concatenate(out[:-1])

    def with_boilerplate(self, src: np.ndarray) -> np.ndarray:
        rng = self.rng
        para = np.array([self.PARA], dtype=np.int32)
        where = rng.integers(3)  # 0 header, 1 footer, 2 both
        head = self.boilerplate[rng.integers(len(self.boilerplate))]
        foot = self.boilerplate[rng.integers(len(self.boilerplate))]
        parts = ([head, para] if where != 1 else []) + [src] + ([para, foot] if where != 0 else [])
        return np.concatenate(parts)

    def passage(self, src: np.ndarray, target: float, max_words: int) -> np.ndarray:
        """New text around a contiguous passage of p of the source's n words, so that about
        p / (n + new) = target: p in [target n, min(n, (max + n) target / (1 + target))]."""
        rng = self.rng
        n = len(src)
        lo = int(math.ceil(target * n))
        hi = max(lo, min(n, int((max_words + n) * target / (1 + target))))
        p = int(rng.integers(lo, hi + 1))
        start = int(rng.integers(0, n - p + 1))
        new = max(0, int(p / target) - n)
        before = int(rng.integers(0, new + 1))
        para = np.array([self.PARA], dtype=np.int32)
        parts = []
        if before:
            parts += [self.fresh(before), para]
        parts.append(src[start : start + p])
        if new - before:
            parts += [para, self.fresh(new - before)]
        return np.concatenate(parts)


def generate(args: argparse.Namespace) -> dict:
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    g = Generator(args.seed)
    rng = g.rng
    # Words per document from bytes: about 6.6 bytes per rendered word (measured on 1M words).
    bytes_per_word = len(g.render(g.fresh(200_000))) / 200_000
    min_words, max_words = int(1000 / bytes_per_word), int(10_000 / bytes_per_word)
    writer = Writer(out, args.shards, args.gzip, args.docs, args.mb)
    kinds = list(DERIVED_MIX)
    mix = np.array([DERIVED_MIX[k] for k in kinds])
    reservoir: list[tuple[str, np.ndarray]] = []
    seen_sources = 0
    counts = dict.fromkeys(KINDS, 0)
    start = time.perf_counter()
    with open(out / "planted.jsonl", "w") as planted:
        while not writer.done():
            doc_id = f"d{writer.docs:09d}"
            kind = "original"
            if len(reservoir) >= 10 and rng.random() < args.dup_share:
                kind = kinds[rng.choice(len(kinds), p=mix)]
            rate = None
            if kind == "original":
                n = int(math.exp(rng.uniform(math.log(min_words), math.log(max_words))))
                tokens = g.fresh(n)
            else:
                source, src = reservoir[rng.integers(len(reservoir))]
                if kind == "exact":
                    tokens = src
                elif kind == "normalized":
                    tokens = g.normalized(src)
                elif kind == "edited":
                    rate = float(rng.uniform(0.003, 0.06))
                    tokens = g.edited(src, rate)
                elif kind == "reordered":
                    tokens = g.reordered(src)
                elif kind == "boilerplate":
                    tokens = g.with_boilerplate(src)
                else:
                    rate = float(rng.uniform(0.25, 0.65))
                    tokens = g.passage(src, rate, max_words)
                planted.write(json.dumps({"id": doc_id, "source": source, "kind": kind, "rate": rate}) + "\n")
            counts[kind] += 1
            if kind in ("original", "edited"):  # reservoir sample of the sources so far
                seen_sources += 1
                if len(reservoir) < RESERVOIR:
                    reservoir.append((doc_id, tokens))
                else:
                    slot = rng.integers(seen_sources)
                    if slot < RESERVOIR:
                        reservoir[slot] = (doc_id, tokens)
            writer.write(doc_id, g.render(tokens))
            if args.progress and writer.docs % 20000 == 0:
                print(f"{writer.docs:,} docs, {writer.text_bytes / 1e6:,.0f} MB", flush=True)
    writer.close()
    meta = {
        "generator": "bench/gen_text_corpus.py",
        "seed": args.seed,
        "docs": writer.docs,
        "text_bytes": writer.text_bytes,
        "text_mb": round(writer.text_bytes / 1e6, 3),
        "file_bytes": writer.file_bytes,
        "files": writer.paths,
        "gzip": args.gzip,
        "counts": counts,
        "dup_share": args.dup_share,
        "derived_mix": DERIVED_MIX,
        "vocab": g.V,
        "doc_bytes": [1000, 10000],
        "seconds": round(time.perf_counter() - start, 2),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--mb", type=float, help="stop after this many MB (1e6 bytes) of text, e.g. 1000")
    size.add_argument("--docs", type=int, help="stop after this many documents")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--shards", type=int, default=1, help="split into K files (docs/part-*.jsonl)")
    parser.add_argument("--gzip", action="store_true", help="write .jsonl.gz (level 1)")
    parser.add_argument("--dup-share", type=float, default=0.25, help="share of derived documents")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args()
    meta = generate(args)
    print(json.dumps({k: meta[k] for k in ("docs", "text_mb", "counts", "seconds")}))


if __name__ == "__main__":
    main()
