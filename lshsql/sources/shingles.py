"""Shingles of plain text for `lshsql dedup`: the set of hashed word (or character) n-grams of each document.

The text is first normalized to Unicode NFKC (Python's unicodedata), so that one text in composed or
decomposed accents, with ligatures or in full-width forms gives the same words. A compiled kernel (numba)
then reads the UTF-8 bytes of the Arrow string array once: it lowercases, splits into
words (maximal runs of letters and digits, as Python's str.isalnum says), hashes each word, combines n
consecutive word hashes into a shingle hash and keeps each document's distinct shingles, sorted. With
characters, the n-grams are taken over the words joined by single spaces. A document with words but fewer
than n of them (characters) gets one shingle of all it has, so short texts still match their copies.

The hashes are 63-bit (non-negative BIGINTs, as lsh_term_hash gives for terms) and fixed by this file:
the same text gives the same shingle hashes in every run and version, so a later `dedup --against` can
compare with an earlier index.
"""

from __future__ import annotations

import unicodedata
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lshsql.engines.digests import set_digests
from lshsql.engines.jit import njit
from lshsql.engines.minhash import GOLDEN, finalize64

NFKC_GROWTH = 3  # see _normalized
TABLE_SIZE = 0x30000  # code points classified by lookup; beyond (rare planes) count as letters
_SPACE = 32
# A known text: `dedup --against` compares the digest of its shingles to tell that two indexes hash alike.
PROBE_TEXT = (
    "The shingles of this sentence, hashed, tell whether two indexes hash alike: Ünïcode 42, cafe\u0301, "
    "\ufb01nal ＷＩＤＴＨ."
)  # a decomposed accent, a ligature and full-width letters: normalized alike, or not


@cache
def code_point_tables() -> tuple[np.ndarray, np.ndarray]:
    """For code points below TABLE_SIZE: whether each is a word character (str.isalnum) and its lowercase
    (when that is a single code point; the point itself otherwise)."""
    points = range(TABLE_SIZE)
    word = np.fromiter((chr(c).isalnum() for c in points), dtype=np.bool_, count=TABLE_SIZE)
    lower = np.arange(TABLE_SIZE, dtype=np.int32)
    for c in points:
        low = chr(c).lower()
        if len(low) == 1 and low != chr(c):
            lower[c] = ord(low)
    return word, lower


@njit(cache=True)
def _next_point(data, i, end):
    """The code point starting at byte i and the index after it; 0xFFFD for a malformed sequence."""
    b = np.int64(data[i])
    if b < 0x80:
        return b, i + 1
    if b >= 0xF0:
        size, cp = 4, b & 0x07
    elif b >= 0xE0:
        size, cp = 3, b & 0x0F
    elif b >= 0xC0:
        size, cp = 2, b & 0x1F
    else:
        return 0xFFFD, i + 1
    if i + size > end:
        return 0xFFFD, end
    for k in range(1, size):
        cp = (cp << 6) | (np.int64(data[i + k]) & 0x3F)
    return cp, i + size


@njit(cache=True)
def _units(data, start, end, chars, word_table, lower_table, units):
    """Fill `units` with the document's word hashes (chars False) or the code points of its normalized
    text, words joined by single spaces (chars True); return how many."""
    n_units = 0
    h = np.uint64(0)
    length = 0
    i = start
    while i < end:
        cp, i = _next_point(data, i, end)
        if cp < word_table.shape[0]:
            is_word = word_table[cp]
            cp = lower_table[cp]
        else:
            is_word = True
        if is_word:
            if chars:
                if length == 0 and n_units > 0:
                    units[n_units] = _SPACE
                    n_units += 1
                units[n_units] = cp
                n_units += 1
            else:
                h = (h ^ np.uint64(cp)) * GOLDEN
            length += 1
        elif length > 0:
            if not chars:
                units[n_units] = np.int64(finalize64(h ^ np.uint64(length)))
                n_units += 1
            h = np.uint64(0)
            length = 0
    if length > 0 and not chars:
        units[n_units] = np.int64(finalize64(h ^ np.uint64(length)))
        n_units += 1
    return n_units


@njit(cache=True, nogil=True)
def _shingle_kernel(data, offsets, valid, n, chars, word_table, lower_table):
    """Distinct shingle hashes of every document: (hashes, count per document), documents in order."""
    n_docs = offsets.shape[0] - 1
    counts = np.zeros(n_docs, dtype=np.int64)
    longest = 0
    for d in range(n_docs):
        longest = max(longest, offsets[d + 1] - offsets[d])
    # a document has at most one unit (word or character) per byte, and at most one shingle per unit
    out = np.empty(offsets[n_docs] - offsets[0] + n_docs, dtype=np.int64)
    units = np.empty(longest + 1, dtype=np.int64)
    shingles = np.empty(longest + 1, dtype=np.uint64)
    filled = 0
    for d in range(n_docs):
        if not valid[d]:
            continue
        n_units = _units(data, offsets[d], offsets[d + 1], chars, word_table, lower_table, units)
        if n_units == 0:
            continue
        width = min(n, n_units)
        n_shingles = n_units - width + 1
        for s in range(n_shingles):
            h = np.uint64(width)
            for j in range(width):
                h = finalize64(h ^ np.uint64(units[s + j]))
            shingles[s] = h >> np.uint64(1)
        distinct = np.unique(shingles[:n_shingles])
        for h in distinct:
            out[filled] = np.int64(h)
            filled += 1
        counts[d] = distinct.shape[0]
    return out[:filled].copy(), counts


def shingle_hashes(
    texts: pa.Array | pa.ChunkedArray, n: int, chars: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct shingle hashes (63-bit) of each text, sorted per text, concatenated in text order, and
    the count per text (0 for a null text or one without words). n words per shingle, or n characters
    with chars."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks() if texts.num_chunks != 1 else texts.chunk(0)
    texts = texts.cast(pa.large_string()) if texts.type != pa.large_string() else texts
    if len(texts) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    texts = _normalized(texts)
    validity, offsets, data = texts.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[texts.offset : texts.offset + len(texts) + 1]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, np.uint8)
    valid = pc.is_valid(texts).to_numpy(zero_copy_only=False)
    word_table, lower_table = code_point_tables()
    return _shingle_kernel(data, offsets, valid, n, chars, word_table, lower_table)


def normal_form(text: str) -> str:
    """A text as the shingling reads it: its NFKC form, or its NFC form where NFKC would make it over
    NFKC_GROWTH times as long (see _normalized). Already normalized, the text itself."""
    normal = unicodedata.normalize("NFKC", text)
    return normal if len(normal) <= NFKC_GROWTH * len(text) else unicodedata.normalize("NFC", text)


def _normalized(texts: pa.LargeStringArray) -> pa.LargeStringArray:
    """The texts in Unicode NFKC. Only texts with other than ASCII can change; Python's unicodedata tells
    an already normalized text in one pass, where pyarrow's utf8_normalize rewrites every one. Invalid
    UTF-8 (a Parquet file's strings are not checked when read) has each bad sequence replaced by U+FFFD,
    as Python decodes it: not a letter, so a word break. A text whose NFKC form would be over NFKC_GROWTH
    times as long (U+FDFA alone becomes 18 characters) is taken in NFC form, at most 3 times as long, so
    that the kernel's buffers, 8 bytes per byte of text, stay near the text's size."""
    wide = np.flatnonzero(
        pc.fill_null(pc.invert(pc.string_is_ascii(texts)), False).to_numpy(zero_copy_only=False)
    )
    if not len(wide):
        return texts
    changed, values = [], []
    raws = texts.cast(pa.large_binary())
    for i in wide.tolist():  # one text at a time: a batch's texts are not all held twice more
        raw = raws[i].as_py()
        try:
            text = valid = raw.decode("utf-8")
        except UnicodeDecodeError:
            text, valid = raw.decode("utf-8", "replace"), None
        normal = normal_form(text)
        if normal is not valid:
            changed.append(i)
            values.append(normal)
    if not changed:
        return texts
    mask = np.zeros(len(texts), np.bool_)
    mask[changed] = True
    return pc.replace_with_mask(texts, pa.array(mask), pa.array(values, pa.large_string()))


def probe_digest(n: int, chars: bool) -> int:
    """A digest of all the shingles of PROBE_TEXT with these settings: equal digests, equal hashing."""
    hashes, counts = shingle_hashes(pa.array([PROBE_TEXT]), n, chars)
    return int(set_digests(hashes, counts)[0, 0])
