"""Numbers that may be numpy arrays: the estimators evaluate one layout or many with the same code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

Num: TypeAlias = "float | npt.NDArray[np.float64]"
NumIn: TypeAlias = "int | float | npt.NDArray[Any]"


def as_num(x: NumIn) -> Num:
    """A float, or a float64 array (the array itself when it is one already: estimators never write
    into their inputs)."""
    return np.asarray(x, dtype=np.float64) if isinstance(x, np.ndarray) else float(x)


def scalar_or_array(x: Any) -> Num:
    """A 0-d result back to a plain float; arrays stay arrays."""
    arr = np.asarray(x, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr


def first_argmax(values: Sequence[Any]) -> Any:
    """Index of the largest of several equally shaped numbers, the first on a tie: np.argmax over
    np.stack(values) on axis 0, without building the stacked array (an axis-0 reduction of a
    stacked array is several times slower than elementwise comparisons)."""
    best = np.asarray(values[0], dtype=np.float64)
    index = np.zeros(np.shape(best), dtype=np.int64)
    for k, value in enumerate(values[1:], start=1):
        v = np.asarray(value, dtype=np.float64)
        better = v > best
        index = np.where(better, k, index)
        best = np.where(better, v, best)
    return index


def select(index: Any, values: Sequence[Any]) -> Any:
    """values[index] elementwise, as np.choose(index, values) gives it, by a chain of np.where."""
    out = np.asarray(values[0], dtype=np.float64)
    for k, value in enumerate(values[1:], start=1):
        out = np.where(index == k, np.asarray(value, dtype=np.float64), out)
    return out


def distinct_rows(*columns: Any) -> tuple[Any, Any]:
    """(first index, row of each element) of the distinct tuples of small non-negative integer columns:
    compute on the firsts, then spread with np.take(result, row). The columns are packed into one int64
    key (mixed radix of their maxima), so one 1-D unique does the work."""
    key = np.zeros(np.shape(columns[0]), dtype=np.int64)
    for column in columns:
        values = np.asarray(column).astype(np.int64)
        key = key * (int(values.max(initial=0)) + 1) + values
    _, first, row = np.unique(key, return_index=True, return_inverse=True)
    return first, np.ravel(row)
