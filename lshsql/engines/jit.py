"""numba's njit for lshsql's compiled kernels (minhash, oph, digests, overlap, dedup's shingles). numba
loads its numpy support at the first compilation or cache load, and that looks for SciPy's BLAS, importing
scipy.linalg where SciPy is installed, for np.dot and np.linalg, which no kernel calls. Here numba's numpy
support is imported first, with scipy.linalg hidden in a process that runs only lshsql (lshsql/imports.py)."""

from __future__ import annotations

from lshsql.imports import hidden

with hidden(("scipy.linalg",)):
    import numba.np.arraymath  # noqa: F401

from numba import njit  # noqa: E402

__all__ = ["njit"]
