"""Arrow arrays as numpy and back, read from and built on their buffers: pyarrow's own conversions
(to_numpy, pa.array) import pandas where it is installed, a cost every run would pay for nothing."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def integer_values(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray | None]:
    """An integer Arrow array's values (any value where null) and validity (None: no nulls) as numpy, read
    from its buffers. Other types (Spark's pandas path passes float64) are converted."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if not pa.types.is_integer(array.type):
        values = array.to_numpy(zero_copy_only=False)
        return values, None if not array.null_count else ~np.isnan(values)
    dtype = _numpy_dtype(array.type)
    start, n = array.offset, len(array)
    data = array.buffers()[1]
    values = np.frombuffer(data, dtype=dtype)[start : start + n] if data is not None else np.zeros(n, dtype)
    return values, valid_rows(array) if array.null_count else None


def _numpy_dtype(arrow_type: pa.DataType) -> np.dtype:
    signed = pa.types.is_signed_integer(arrow_type)
    return np.dtype(f"{'i' if signed else 'u'}{arrow_type.bit_width // 8}")


def integer_array(values, valid: np.ndarray | None = None, arrow_type: pa.DataType | None = None) -> pa.Array:
    """An integer Arrow array (BIGINT unless `arrow_type` says) from numpy or Python values, null where
    `valid` is False."""
    arrow_type = arrow_type or pa.int64()
    values = np.ascontiguousarray(values, dtype=_numpy_dtype(arrow_type))
    bitmap = None if valid is None or valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(arrow_type, len(values), [bitmap, pa.py_buffer(values)])


def valid_rows(array: pa.Array) -> np.ndarray:
    """Which rows of an array are valid (not null), as numpy booleans, from its validity bitmap."""
    bitmap = array.buffers()[0]
    if bitmap is None:  # no bitmap: no nulls, or an array of type null, where every row is
        return np.full(len(array), not array.null_count, np.bool_)
    return _bits(bitmap, array.offset, len(array))


def boolean_values(array: pa.Array) -> np.ndarray:
    """A boolean Arrow array's values as numpy booleans (any value where null), from its data bitmap."""
    return _bits(array.buffers()[1], array.offset, len(array))


def _bits(bitmap: pa.Buffer, start: int, n: int) -> np.ndarray:
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), count=start + n, bitorder="little")
    return bits[start:].view(np.bool_)
