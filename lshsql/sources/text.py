"""Words, stopwords and stems: turn the text around a link into the terms that get min-hashed.

Pure functions, no I/O except reading the stopword lists shipped in lshsql/data/stopwords (cached).
Nothing is ever downloaded: NLTK's Porter and Snowball stemmers are code, not corpora.

Decisions:
- A word is a letter followed by letters and combining marks (categories Mn, Mc, Me), so Devanagari,
  Thai or decomposed accents stay whole. Python's \\w holds no marks, hence the generated mark class.
  "Letter" is \\w minus digits (Nd), '_' and the numeric characters of the BMP (No/Nl such as ², ½, Ⅻ);
  numeric characters outside the BMP still count as letters (excluding them would slow every match).
  Apostrophes and hyphens split words: "don't" -> don, t.
- Terms are folded: 'ё' -> 'е' in every word (any language), and the shipped Russian list is stored folded.
  No other Unicode normalization (NFC, accent stripping) is done.
- English stems every word with Porter (NLTK_EXTENSIONS mode, NLTK's default: its irregular-form pool and
  fixes to the original paper); Porter leaves non-Latin words as they are. Russian stems a word made only
  of Cyrillic letters (and combining marks) with Snowball 'russian' and every other word with Porter: NLTK's
  Russian stemmer transliterates, so it would turn the Latin letters of a mixed word into Cyrillic ones.
- Russian mode removes only Russian stopwords; English words on a Russian page keep their stopwords.
- A stem that comes out empty (Snowball turns 'ь' into '') keeps the unstemmed word instead.
"""

from __future__ import annotations

import functools
import importlib.resources
import itertools
import operator
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lshsql.sources.nltk_import import nltk_import

LANGUAGES = ("en", "ru")

_CACHE_SIZE = 200_000  # distinct words remembered per normalizer; the cache is emptied when it fills up


def _ranges(code_points: Iterable[int]) -> str:
    """Render code points as a regex character-class body of ranges, for the generated classes below."""
    parts: list[str] = []
    start = prev = -2
    for cp in code_points:
        if cp != prev + 1:
            if start >= 0:
                parts.append(f"\\U{start:08x}-\\U{prev:08x}")
            start = cp
        prev = cp
    if start >= 0:
        parts.append(f"\\U{start:08x}-\\U{prev:08x}")
    return "".join(parts)


def _word_pattern() -> str:
    """Build WORD_RE's pattern from this Python's Unicode tables (about 20 ms, once per process)."""
    bmp_marks: list[int] = []
    astral_marks: list[int] = []
    bmp_numerics: list[int] = []
    is_word_char = re.compile(r"\w").match
    # Marks live in planes 0, 1 and 14 only; planes 2 and 3 hold ideographs, which are letters.
    for cp in itertools.chain(range(0x20000), range(0xE0000, 0xE1000)):
        ch = chr(cp)
        category = unicodedata.category(ch)
        if category[0] == "M":
            (bmp_marks if cp < 0x10000 else astral_marks).append(cp)
        elif cp < 0x10000 and category in ("No", "Nl") and is_word_char(ch):
            bmp_numerics.append(cp)
    letter = f"[^\\W\\d_{_ranges(bmp_numerics)}]"
    # Astral marks sit behind a cheap lookahead: their long range list is only tried for astral characters.
    mark = f"(?:[{_ranges(bmp_marks)}]|(?=[\\U00010000-\\U0010ffff])[{_ranges(astral_marks)}])"
    # Possessive quantifiers: no backtracking, as fast as a plain [^\W\d_]+ on Latin text.
    return f"{letter}++(?:{mark}++{letter}*+)*+"


WORD_RE: re.Pattern[str] = re.compile(_word_pattern())
"""A word: a letter, then letters and combining marks; digits, '_', punctuation and spaces end it."""

_CYRILLIC_WORD = re.compile(r"[\u0400-\u052f\u1c80-\u1c8f\u2de0-\u2dff\ua640-\ua69f\u0300-\u036f]+")


@dataclass(frozen=True)
class TextOptions:
    """How words become terms: language (stopword list and stemmer), stemming, stopwords, minimum length."""

    language: str = "en"
    stem: bool = True
    stopwords: bool = True
    extra_stopwords: frozenset[str] = frozenset()
    min_length: int = 1

    def __post_init__(self) -> None:
        """Reject an unknown language or a bad min_length early; accept any iterable of extra stopwords."""
        _check_language(self.language)
        if isinstance(self.min_length, bool) or not isinstance(self.min_length, int) or self.min_length < 0:
            raise ValueError(f"min_length must be a whole number >= 0, got {self.min_length!r}")
        if not isinstance(self.extra_stopwords, frozenset):
            object.__setattr__(self, "extra_stopwords", frozenset(self.extra_stopwords))


def _check_language(language: str) -> None:
    """Raise the one-line error for a language without a stopword list and stemmer."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown language '{language}' (choose {' or '.join(LANGUAGES)})")


def _fold(word: str) -> str:
    """Spell 'ё' as 'е', as most Russian text does, so both spellings give one term."""
    return word.replace("ё", "е") if "ё" in word else word


def words(text: str) -> list[str]:
    """Lowercased words (letter runs, see WORD_RE) of text in reading order."""
    return WORD_RE.findall(text.lower())


def _parse_stopwords(text: str) -> frozenset[str]:
    """Stopwords from list text: '#' starts a comment; each line's words (as words() splits them), folded."""
    found: set[str] = set()
    for line in text.splitlines():
        found.update(map(_fold, words(line.split("#", 1)[0])))
    return frozenset(found)


@functools.cache
def load_stopwords(language: str) -> frozenset[str]:
    """The stopword list shipped for language (lowercase, 'ё' folded), read once per process."""
    _check_language(language)
    folder = importlib.resources.files("lshsql").joinpath("data").joinpath("stopwords")
    resource = folder.joinpath(f"{language}.txt")
    return _parse_stopwords(resource.read_text(encoding="utf-8"))


def read_stopword_file(path: str | os.PathLike[str]) -> frozenset[str]:
    """A user's stopword list: one word per line, '#' comments and blank lines ignored; lowercased, folded.

    A line that is not a single word adds each of its letter runs, the way the text is split ("don't" adds
    "don" and "t"). Raises ValueError with a one-line message if the file cannot be read as UTF-8 text.
    """
    try:
        with open(path, encoding="utf-8-sig") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ValueError(f"cannot read stopword list: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise ValueError(f"cannot read stopword list: {e.strerror or type(e).__name__}") from None
    return _parse_stopwords(text)


def _make_stemmer(language: str) -> Callable[[str], str]:
    """The stem function for language: Porter for English, Snowball for all-Cyrillic words in Russian."""
    with nltk_import():  # imported here, not with this module: NLTK takes long to import
        from nltk.stem.porter import PorterStemmer

    porter = PorterStemmer(PorterStemmer.NLTK_EXTENSIONS).stem
    if language == "en":
        return porter
    from nltk.stem.snowball import SnowballStemmer

    russian = SnowballStemmer("russian").stem  # ignore_stopwords=False: needs no corpus
    is_cyrillic = _CYRILLIC_WORD.fullmatch

    def stem(word: str) -> str:
        """Russian stem of a Cyrillic word, Porter stem of any other."""
        return russian(word) if is_cyrillic(word) else porter(word)

    return stem


def make_normalizer(options: TextOptions) -> Callable[[list[str]], list[str]]:
    """A function from words (as from words()) to terms: stopwords and short words dropped, the rest stemmed.

    The stopword set and stemmer are built once; each distinct word's outcome is cached (up to 200,000
    words), so a warm call is a few C-level passes over the list. Order is preserved.
    """
    aligned = _make_aligned(options)

    def normalize(word_list: list[str]) -> list[str]:
        """Terms of word_list, in order."""
        return list(filter(None, aligned(word_list)))

    return normalize


def _make_aligned(options: TextOptions) -> Callable[[list[str]], list[str]]:
    """A function from words to their terms aligned with them: the term of each word, "" for a dropped one.
    make_normalizer's and SurfaceForms' shared core (stopword set, stemmer and word cache)."""
    _check_language(options.language)
    stops = load_stopwords(options.language) if options.stopwords else frozenset()
    stops = stops | {_fold(w.lower()) for w in options.extra_stopwords}
    min_length = options.min_length
    stem = _make_stemmer(options.language) if options.stem else None
    cache: dict[str, str] = {}  # word -> term, or "" for a dropped word
    lookup = cache.get

    def term_of(word: str) -> str:
        """The term for one word, or "" to drop it (stopword checked on the unstemmed, folded word)."""
        folded = _fold(word.lower())
        if len(folded) < min_length or folded in stops:
            return ""
        return (stem(folded) or folded) if stem is not None else folded

    def aligned(word_list: list[str]) -> list[str]:
        """The term of each word of word_list ("" when it is dropped)."""
        found = list(map(lookup, word_list))
        if None in found:  # some words not seen before (or since the cache was emptied)
            unknown = map(operator.is_, found, itertools.repeat(None))
            missing = dict.fromkeys(itertools.compress(word_list, unknown))
            if len(cache) + len(missing) > _CACHE_SIZE:
                cache.clear()
                missing = dict.fromkeys(word_list)
            cache.update(zip(missing, map(term_of, missing), strict=True))
            found = list(map(lookup, word_list))
        return found

    return aligned


@functools.lru_cache(maxsize=32)
def _shared_aligned(options: TextOptions) -> Callable[[list[str]], list[str]]:
    """One aligned normalizer per options and process, so every SurfaceForms of a worker shares its cache."""
    return _make_aligned(options)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted (low, high) ranges with those that overlap or touch merged."""
    merged: list[list[int]] = []
    for low, high in spans:
        if merged and low <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return [(low, high) for low, high in merged]


@dataclass(frozen=True)
class FlowTerms:
    """A page's words with their terms (SurfaceForms.flow): the kept terms and their block keys in order, and
    kept[i], how many of the words before word i made a term."""

    words: list[str]
    terms: list[str]
    keys: list[int]
    kept: list[int]


class SurfaceForms:
    """Words -> terms exactly as make_normalizer(options) gives them, counting how often each (term, surface
    word) pair occurred. A surface word is the lowercased word a term was made from, before stemming (and
    before 'ё' is folded), so a stem such as 'configur' can be shown as the word most often written.

    Made once per batch of pages: the counts are the batch's; the stemmer and its word cache are shared by
    all SurfaceForms of a process with the same options. Counting costs one C-level Counter.update per word
    list; terms are found for the distinct words of the batch only, in rows().

    Example:
        >>> forms = SurfaceForms(TextOptions())
        >>> forms(["running", "runs", "the", "Running", "run", "running"])
        ['run', 'run', 'run', 'run', 'run']
        >>> sorted(forms.rows())
        [('run', 'run', 1), ('run', 'running', 3), ('run', 'runs', 1)]
    """

    def __init__(self, options: TextOptions) -> None:
        self._aligned = _shared_aligned(options)
        self._words: Counter[str] = Counter()  # word as given -> occurrences; its term is found in rows()
        self._pairs: Counter[tuple[str, str]] = Counter()  # (shingle, shingle of the surface words)

    def __call__(self, word_list: list[str]) -> list[str]:
        """Terms of word_list, in order, counting its words."""
        self._words.update(word_list)
        return list(filter(None, self._aligned(word_list)))

    def flow(self, word_list: list[str], keys: list[int], spans: list[tuple[int, int]]) -> FlowTerms:
        """The terms of a page's words in `spans` (sorted (low, high) ranges of word_list: its windows), found
        once for all windows (span): a window is then a few slices, and overlapping windows cost nothing more.
        keys[i] is the key of word i's block. Words outside every span get no term (and are never stemmed).
        Counts no words; span counts each window's."""
        found = [""] * len(word_list)
        for low, high in _merged(spans):
            found[low:high] = self._aligned(word_list[low:high])
        kept = list(itertools.accumulate(map(bool, found), initial=0))
        return FlowTerms(word_list, list(filter(None, found)), list(itertools.compress(keys, found)), kept)

    def span(
        self, flow: FlowTerms, low: int, first: int, stop: int, high: int
    ) -> tuple[list[str], list[int], int, int]:
        """The terms of the flow's words low..high-1, in order, counting those words; the key of the word
        each term was made from; and the span of terms made from words first..stop-1 (the anchor)."""
        self._words.update(flow.words[low:high])
        kept = flow.kept
        a, b = kept[low], kept[high]
        return flow.terms[a:b], flow.keys[a:b], kept[first] - a, kept[stop] - a

    def shingles(self, word_list: list[str], w: int) -> list[str]:
        """The w-word shingles of the terms of word_list (see shingles()), counting each with the shingle of
        the surface words it was made from."""
        found = self._aligned(word_list)
        surface = [word.lower() for word, term in zip(word_list, found, strict=True) if term]
        result = shingles([term for term in found if term], w)
        self._pairs.update(zip(result, shingles(surface, w), strict=True))
        return result

    def rows(self) -> list[tuple[str, str, int]]:
        """(term, surface word, occurrences) of every pair counted so far, in the order first seen (the
        finishing SQL sorts; sorting here would cost more than the counting)."""
        counted = self._words
        distinct = list(counted)
        found = self._aligned(distinct)
        lowered = [word.lower() for word in distinct]
        if lowered == distinct and not self._pairs:  # the usual case (words() lowercases): pairs are unique
            return [(term, word, counted[word]) for word, term in zip(distinct, found, strict=True) if term]
        counts = Counter(self._pairs)
        for word, low, term in zip(distinct, lowered, found, strict=True):
            if term:
                counts[(term, low)] += counted[word]
        return [(term, word, n) for (term, word), n in counts.items()]


@functools.lru_cache(maxsize=32)
def _cached_normalizer(options: TextOptions) -> Callable[[list[str]], list[str]]:
    """One normalizer per distinct options, so terms() keeps its word cache between calls."""
    return make_normalizer(options)


def terms(text: str, options: TextOptions = TextOptions()) -> list[str]:
    """Terms of text: make_normalizer(options)(words(text)), with the normalizer cached per options."""
    return _cached_normalizer(options)(words(text))


def shingles(words: list[str], w: int) -> list[str]:
    """The w-word shingles of words (each w consecutive words joined by one space), in order.

    Used by `lshsql ingest --shingle W` so documents compare by word order, not only by vocabulary. A list
    shorter than w gives one shingle of all its words, an empty list none. Raises ValueError when w < 1.
    """
    if isinstance(w, bool) or not isinstance(w, int) or w < 1:
        raise ValueError(f"shingle width must be a whole number >= 1, got {w!r}")
    if len(words) <= w:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + w]) for i in range(len(words) - w + 1)]
