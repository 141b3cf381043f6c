"""Imports a process that runs nothing but lshsql makes lean: NLTK's and numba's packages import parts of
SciPy, where it is installed, that no lshsql code calls, and pyarrow imports pandas at its first conversion
of Python or numpy values. In such a process (the `lshsql` command's, a worker of extract or ingest:
only_lshsql_here) those are hidden for the import that would load them; other processes import as they
are, since their own code may use them."""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
from collections.abc import Iterator

_only_lshsql = False  # set where no other code runs: the `lshsql` command, extract's and ingest's workers


def only_lshsql_here() -> None:
    """Called in a process that runs nothing but lshsql: imports may leave out what lshsql never calls."""
    global _only_lshsql
    _only_lshsql = True
    if "pyarrow.lib" in sys.modules:
        pyarrow_without_pandas()


def pyarrow_without_pandas() -> None:
    """In a process that runs only lshsql, pyarrow's first look for pandas (at its first conversion of
    Python or numpy values: pa.array, to_numpy, from_pydict) finds none, so pandas is not imported for
    conversions that have no use for it. pyarrow looks again at an explicit pandas conversion (to_pandas,
    from_pandas, as the Spark engine's driver makes), which then imports pandas as usual. Called where
    lshsql imports pyarrow (schemas.py) and by only_lshsql_here."""
    if not _only_lshsql or "pandas" in sys.modules:
        return
    from pyarrow.lib import _pandas_api

    finder = _Refuse(frozenset({"pandas"}))
    sys.meta_path.insert(0, finder)
    try:
        _pandas_api.have_pandas  # noqa: B018 - the look, made once per process
    finally:
        sys.meta_path.remove(finder)


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


class _Refuse(importlib.abc.MetaPathFinder):
    """A finder that refuses the import of the named modules, as if they were not installed: for a
    compiled importer (pyarrow's), which takes a None in sys.modules (hidden) for the module itself."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name in self.names:
            raise ModuleNotFoundError(f"No module named {name!r} (hidden)", name=name)
        return None
