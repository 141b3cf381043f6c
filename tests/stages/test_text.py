"""Tests for lshsql.sources.text: words, the shipped stopword lists, normalization (stopwords, length, stemming)."""

import subprocess
import sys
from pathlib import Path

import nltk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lshsql.sources import text
from lshsql.sources.text import (
    LANGUAGES,
    WORD_RE,
    TextOptions,
    load_stopwords,
    make_normalizer,
    read_stopword_file,
    terms,
    words,
)

REPO = Path(__file__).resolve().parents[2]
STOPWORD_DIR = REPO / "lshsql" / "data" / "stopwords"
RU = TextOptions(language="ru")
PLAIN = TextOptions(stem=False, stopwords=False)


# --- words ---------------------------------------------------------------------------------------------


def test_words_mixed_text() -> None:
    assert words("Hello, World! 42 foo_bar Привет мир") == ["hello", "world", "foo", "bar", "привет", "мир"]


def test_words_apostrophes_and_hyphens_split() -> None:
    assert words("don't") == ["don", "t"]
    assert words("It's a well-known fact") == ["it", "s", "a", "well", "known", "fact"]


def test_words_accented_latin() -> None:
    assert words("Café CRÈME brûlée, naïve") == ["café", "crème", "brûlée", "naïve"]
    # Decomposed (NFD) accents are combining marks: kept inside the word, not a word break.
    assert words("cafe\u0301 noir") == ["cafe\u0301", "noir"]


def test_words_scripts_with_combining_marks_stay_whole() -> None:
    assert words("हिन्दी भाषा") == ["हिन्दी", "भाषा"]  # Devanagari vowel signs and virama are marks
    assert words("ภาษาไทย!") == ["ภาษาไทย"]  # Thai vowel marks
    assert words("東京タワー 2024") == ["東京タワー"]
    assert words("Ελληνικά") == ["ελληνικά"]


def test_words_digits_and_underscore_dropped() -> None:
    assert words("abc123def 4.5 x2 _under_score_ 3rd") == ["abc", "def", "x", "under", "score", "rd"]
    assert words("m² 1½ cups Ⅻ") == ["m", "cups"]  # numeric characters are not letters
    assert words("٣٤ ۵ १२३") == []  # Arabic-Indic and Devanagari digits


def test_words_leading_mark_is_not_a_word() -> None:
    assert words("\u0301abc 1\u093fx") == ["abc", "x"]


def test_words_empty() -> None:
    assert words("") == []
    assert words(" ,.;!? 123 _ ") == []


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_words_agree_with_lowercasing_each_match(s: str) -> None:
    # anchors.py lowercases each WORD_RE match of the original text; words() lowercases the text first.
    assert words(s) == [m.group().lower() for m in WORD_RE.finditer(s)]


# --- shipped stopword lists ----------------------------------------------------------------------------


def _entries(language: str) -> list[str]:
    lines = (STOPWORD_DIR / f"{language}.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("#"), "the list opens with a comment block naming its sources"
    return [line for line in lines if not line.startswith("#")]


@pytest.mark.parametrize(("language", "minimum"), [("en", 300), ("ru", 150)])
def test_shipped_list_is_clean(language: str, minimum: int) -> None:
    entries = _entries(language)
    assert len(entries) >= minimum
    assert entries == sorted(set(entries)), "sorted, no duplicates"
    for word in entries:
        assert word == word.lower() and WORD_RE.fullmatch(word), word
    assert "ё" not in "".join(entries)
    assert load_stopwords(language) == frozenset(entries)


def test_shipped_list_sizes_and_sources() -> None:
    en, ru = load_stopwords("en"), load_stopwords("ru")
    assert len(en) == 352 and len(ru) == 387
    # Content words of stopwords-iso were trimmed: they are what link contexts are clustered on.
    assert not {"москва", "россия", "книга", "город", "работа"} & ru
    # Glasgow (scikit-learn) and NLTK/Snowball English, including contraction pieces.
    assert {"the", "afterwards", "whereupon", "don", "shouldn", "ll", "ve", "re", "t", "s"} <= en
    # Snowball Russian, with 'ё' words folded.
    assert {"и", "в", "что", "ее", "еще", "всю", "между", "всего"} <= ru
    readme = (STOPWORD_DIR / "README.md").read_text(encoding="utf-8")
    assert "en.txt" in readme and "ru.txt" in readme


def test_load_stopwords_unknown_language() -> None:
    with pytest.raises(ValueError, match=r"^unknown language 'xx' \(choose en or ru\)$"):
        load_stopwords("xx")


# --- normalization -------------------------------------------------------------------------------------


def test_stopwords_removed_en() -> None:
    assert terms("The cat and the hat, don't you know?", TextOptions(stem=False)) == ["cat", "hat", "know"]


def test_stopwords_removed_ru() -> None:
    assert terms("Я и ты в новой библиотеке", TextOptions("ru", stem=False)) == ["новой", "библиотеке"]


def test_stemming_en() -> None:
    assert terms("running connections libraries") == ["run", "connect", "librari"]


def test_stemming_ru() -> None:
    assert terms("библиотеки книгами", RU) == ["библиотек", "книг"]


def test_ru_uses_porter_for_latin_and_mixed_words() -> None:
    # NLTK's Russian stemmer would transliterate the Latin letters of "mixслово" into Cyrillic.
    assert terms("running connections mixслово", RU) == ["run", "connect", "mixслово"]


def test_en_leaves_other_scripts_unstemmed() -> None:
    assert terms("библиотеки हिन्दी 東京", TextOptions()) == ["библиотеки", "हिन्दी", "東京"]


def test_stem_off_and_stopwords_off() -> None:
    assert terms("The running dogs", TextOptions(stem=False)) == ["running", "dogs"]
    assert terms("The running dogs", TextOptions(stopwords=False)) == ["the", "run", "dog"]
    assert terms("The running dogs", PLAIN) == ["the", "running", "dogs"]


def test_extra_stopwords_are_lowercased_and_folded() -> None:
    options = TextOptions("ru", stem=False, extra_stopwords=frozenset({"Ёлка", "Foo"}))
    assert terms("ёлка елка FOO bar", options) == ["bar"]
    # Extra stopwords apply even with the shipped list switched off.
    only_extra = TextOptions(stopwords=False, stem=False, extra_stopwords=frozenset({"foo"}))
    assert terms("the foo bar", only_extra) == ["the", "bar"]


def test_extra_stopwords_accept_any_iterable() -> None:
    options = TextOptions(extra_stopwords={"foo"})  # type: ignore[arg-type]
    assert options.extra_stopwords == frozenset({"foo"})
    hash(options)


def test_min_length_counts_folded_unstemmed_word() -> None:
    options = TextOptions(stem=False, stopwords=False, min_length=3)
    assert terms("an ox ate grass", options) == ["ate", "grass"]
    # "runs" (4 letters) is kept although its stem "run" is shorter than 4.
    assert terms("runs on", TextOptions(stopwords=False, min_length=4)) == ["run"]


def test_yo_folding() -> None:
    assert terms("Ёжик ежик", TextOptions("ru", stem=False)) == ["ежик", "ежик"]
    assert terms("Её ещё всё", TextOptions("ru", stem=False)) == []  # stored as ее, еще, все
    assert terms("ёлки", RU) == terms("елки", RU)
    assert terms("Ёлки", TextOptions(stem=False)) == ["елки"]  # folded in English mode too


def test_empty_stem_keeps_word() -> None:
    # Snowball reduces "ь" to ""; the unstemmed word is kept rather than an empty term.
    assert terms("ь", TextOptions("ru", stopwords=False)) == ["ь"]


def test_unknown_language() -> None:
    with pytest.raises(ValueError, match=r"^unknown language 'xx' \(choose en or ru\)$"):
        TextOptions(language="xx")
    assert LANGUAGES == ("en", "ru")


def test_bad_min_length() -> None:
    with pytest.raises(ValueError, match="min_length"):
        TextOptions(min_length=-1)


def test_normalizer_preserves_order_and_survives_cache_clearing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text, "_CACHE_SIZE", 3)
    normalize = make_normalizer(TextOptions())
    batch = words("the dogs were running; dogs run, cats ran and connections were connected")
    expected = ["dog", "run", "dog", "run", "cat", "ran", "connect", "connect"]
    for _ in range(3):  # cold, warm, and across cache clears
        assert normalize(batch) == expected
    assert normalize([]) == []


def test_normalizer_does_not_touch_its_input() -> None:
    batch = ["the", "running", "dogs"]
    make_normalizer(TextOptions())(batch)
    assert batch == ["the", "running", "dogs"]


# --- user stopword files -------------------------------------------------------------------------------


def test_read_stopword_file(tmp_path: Path) -> None:
    path = tmp_path / "extra.txt"
    path.write_text("\ufeff# my list\n\nFoo\n  bar  # trailing comment\nДон't\nЁж\n", encoding="utf-8")
    assert read_stopword_file(path) == frozenset({"foo", "bar", "дон", "t", "еж"})
    assert read_stopword_file(str(path)) == read_stopword_file(path)


def test_read_stopword_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^cannot read stopword list: No such file") as missing:
        read_stopword_file(tmp_path / "missing.txt")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"ok\n\xff\xfe\x00bad\n")
    with pytest.raises(ValueError, match=r"^cannot read stopword list: not UTF-8") as bad:
        read_stopword_file(binary)
    with pytest.raises(ValueError, match=r"^cannot read stopword list: ") as directory:
        read_stopword_file(tmp_path)
    for error in (missing, bad, directory):
        assert "\n" not in str(error.value)


# --- nothing is downloaded -----------------------------------------------------------------------------

NO_DOWNLOAD = """
import nltk, nltk.data

def refuse(*args, **kwargs):
    raise AssertionError("NLTK data access attempted")

nltk.download = refuse
nltk.data.find = refuse
nltk.data.load = refuse
from lshsql.sources.text import TextOptions, terms
assert terms("The connections are running") == ["connect", "run"], terms("The connections are running")
assert terms("Библиотеки и книги, running", TextOptions("ru")) == ["библиотек", "книг", "run"]
print("ok")
"""


def test_import_and_terms_never_download() -> None:
    result = subprocess.run(
        [sys.executable, "-c", NO_DOWNLOAD], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


LSHSQL_ALONE = """
import importlib.util, sys
from lshsql import imports
from lshsql.sources import text
imports.only_lshsql_here()
assert text.terms("The connections are running") == ["connect", "run"]
assert text.terms("Библиотеки и книги, running", text.TextOptions("ru")) == ["библиотек", "книг", "run"]
assert "nltk" in sys.modules and not [name for name in sys.modules if name.split(".")[0] == "scipy"]
if importlib.util.find_spec("scipy"):  # hidden for NLTK's import only
    import scipy.sparse, scipy.stats
print("ok")
"""


def test_a_process_of_lshsql_alone_imports_nltk_without_scipy() -> None:
    """The `lshsql` command and the workers of extract and ingest stem as any process does, without
    importing SciPy with NLTK."""
    result = subprocess.run(
        [sys.executable, "-c", LSHSQL_ALONE], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_new_normalizers_never_download(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("NLTK data access attempted")

    monkeypatch.setattr(nltk, "download", refuse)
    monkeypatch.setattr(nltk.data, "find", refuse)
    monkeypatch.setattr(nltk.data, "load", refuse)
    for language in LANGUAGES:
        normalize = make_normalizer(TextOptions(language, extra_stopwords=frozenset({"zzz"})))
        assert normalize(["running", "книгами"])


# --- properties ----------------------------------------------------------------------------------------

_ODD_WORDS = ["Running", "dogs", "Ёлка", "ёж", "библиотеки", "हिन्दी", "café", "x2", "foo_bar", "don't", "ь"]
_VOCABULARY = sorted(load_stopwords("en"))[:40] + sorted(load_stopwords("ru"))[:40] + _ODD_WORDS
_TEXTS = st.one_of(
    st.text(),
    st.lists(st.sampled_from(_VOCABULARY) | st.text(max_size=5), max_size=30).map(" ".join),
)


@settings(max_examples=300, deadline=None)
@given(_TEXTS, st.sampled_from(LANGUAGES), st.integers(min_value=0, max_value=4))
def test_unstemmed_terms_are_words_and_not_stopwords(s: str, language: str, min_length: int) -> None:
    stops = load_stopwords(language)
    folded = {w.replace("ё", "е") for w in words(s)}
    found = terms(s, TextOptions(language, stem=False, min_length=min_length))
    for term in found:
        assert term in folded
        assert term not in stops
        assert len(term) >= min_length
    assert len(found) <= len(words(s))


@settings(max_examples=300, deadline=None)
@given(_TEXTS, st.sampled_from(LANGUAGES))
def test_stemmed_terms_never_crash_and_are_nonempty(s: str, language: str) -> None:
    found = terms(s, TextOptions(language))
    assert all(isinstance(t, str) and t for t in found)
    assert len(found) <= len(words(s))
