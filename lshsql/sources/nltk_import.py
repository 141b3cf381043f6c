"""NLTK's import, lean in a process that runs nothing but lshsql (lshsql/imports.py). A module of its own,
so that importing it does not import text.py, which builds its character classes as it is imported."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from lshsql.imports import hidden

_SCIPY = ("scipy", "scipy.stats", "scipy.sparse")


@contextlib.contextmanager
def nltk_import() -> Iterator[None]:
    """Around the first import from NLTK. NLTK's package imports all of NLTK, and with it scipy.stats and
    scipy.sparse where SciPy is installed, for collocation, alignment and parser code no stemmer runs: most
    of the time NLTK takes to import. In a process that runs only lshsql, those not imported yet are hidden
    for the import and NLTK falls back as where SciPy is not installed."""
    with hidden(() if "nltk" in sys.modules else _SCIPY):
        yield
