"""Imports a process that runs nothing but lshsql makes lean: NLTK's and numba's packages import parts of
SciPy, where it is installed, that no lshsql code calls. In such a process (the `lshsql` command's, a worker
of extract or ingest: only_lshsql_here) those parts are hidden for the import that would load them; other
processes import as they are, since their own code may use them."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

_only_lshsql = False  # set where no other code runs: the `lshsql` command, extract's and ingest's workers


def only_lshsql_here() -> None:
    """Called in a process that runs nothing but lshsql: imports may leave out what lshsql never calls."""
    global _only_lshsql
    _only_lshsql = True


def only_lshsql() -> bool:
    """Whether only_lshsql_here() was called in this process."""
    return _only_lshsql


@contextlib.contextmanager
def hidden(names: tuple[str, ...]) -> Iterator[None]:
    """In a process that runs only lshsql, the modules `names` not imported yet raise ImportError for the
    duration (the importer then falls back as where they are not installed); elsewhere, nothing changes."""
    names_hidden = [name for name in names if name not in sys.modules] if _only_lshsql else []
    for name in names_hidden:
        sys.modules[name] = None  # an import of it raises ImportError
    try:
        yield
    finally:
        for name in names_hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
