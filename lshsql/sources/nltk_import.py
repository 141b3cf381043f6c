"""NLTK's import, lean in a process that runs nothing but lshsql. A module of its own, so that the `lshsql`
command marks its process without importing text.py, which builds its character classes as it is imported.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

_only_lshsql = False  # set where no other code runs: the `lshsql` command, extract's and ingest's workers
_SCIPY = ("scipy", "scipy.stats", "scipy.sparse")


def only_lshsql_here() -> None:
    """Called in a process that runs nothing but lshsql (the `lshsql` command's, a worker process of extract
    or ingest): it may import NLTK without SciPy (nltk_import)."""
    global _only_lshsql
    _only_lshsql = True


@contextlib.contextmanager
def nltk_import() -> Iterator[None]:
    """Around the first import from NLTK. NLTK's package imports all of NLTK, and with it scipy.stats and
    scipy.sparse where SciPy is installed, for collocation, alignment and parser code no stemmer runs: most
    of the time NLTK takes to import. In a process that runs only lshsql, those not imported yet are hidden
    for the import and NLTK falls back as where SciPy is not installed. Other processes import NLTK as it
    is: their own code may use the rest of it."""
    hidden = [name for name in _SCIPY if name not in sys.modules] if _only_lshsql else []
    if "nltk" in sys.modules:
        hidden = []
    for name in hidden:
        sys.modules[name] = None  # an import of it raises ImportError, which NLTK catches
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
