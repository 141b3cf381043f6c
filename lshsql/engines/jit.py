"""numba's njit for lshsql's compiled kernels (minhash, oph, digests, overlap, dedup's shingles). numba
loads its numpy support at the first compilation or cache load, and that imports scipy.linalg, where SciPy
is installed, to see whether np.convolve and np.correlate may use its BLAS; no kernel calls them. In a
process that runs only lshsql (lshsql/imports.py) numba and its numpy support are imported here, first,
with SciPy hidden: those two functions then keep numba's own loop for the process's life (a kernel that
calls them would not use BLAS), and np.dot or np.linalg would still import SciPy when compiled. Other
processes import numba as numba does, when a kernel first runs."""

from __future__ import annotations

from lshsql.imports import hidden, only_lshsql

with hidden(("scipy", "scipy.linalg")):  # numba's own import checks SciPy's version where it is installed
    from numba import njit

    if only_lshsql():
        import numba.np.arraymath  # noqa: F401

__all__ = ["njit"]
