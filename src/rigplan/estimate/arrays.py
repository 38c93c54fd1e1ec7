"""Numbers that may be numpy arrays: the estimators evaluate one layout or many with the same code.

This module is the estimators' array namespace (`from rigplan.estimate import arrays as xp`): each
function takes plain Python numbers or numpy arrays. Given only Python numbers (one layout, as
`rigplan memory` asks) it computes in Python and returns Python numbers, with the value and type
numpy's 0-d result would have (a float where numpy promotes to float64, an int where it keeps
integers); given anything else it calls the numpy function of the same name. numpy is imported only
when an array or a numpy scalar arrives, so that one layout's estimate never loads it (numpy's
import is about half of `rigplan memory`'s start-up; benchmarks/cli_startup.py).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Num: TypeAlias = "float | npt.NDArray[np.float64]"
NumIn: TypeAlias = "int | float | npt.NDArray[Any]"

_PLAIN = frozenset({int, float, bool})
"""Types computed in Python; any other value (arrays, numpy scalars) goes to numpy."""

inf = math.inf


_NUMPY: list[Any] = []
"""The numpy module once imported (a list, so that no global statement is needed)."""


def numpy() -> Any:
    """The numpy module, imported on first use."""
    if not _NUMPY:
        import numpy as np

        _NUMPY.append(np)
    return _NUMPY[0]


def _promote(result: Any, *operands: Any) -> Any:
    """numpy's result type for Python operands: float64 when any operand is a float."""
    if type(result) is not float and any(type(v) is float for v in operands):
        return float(result)
    return result


def as_num(x: NumIn) -> Num:
    """A float, or a float64 array (the array itself when it is one already: estimators never write
    into their inputs)."""
    if type(x) in _PLAIN:
        return float(x)
    np = numpy()
    return np.asarray(x, dtype=np.float64) if isinstance(x, np.ndarray) else float(x)


def scalar_or_array(x: Any) -> Num:
    """A 0-d result back to a plain float; arrays stay arrays."""
    if type(x) in _PLAIN:
        return float(x)
    np = numpy()
    arr = np.asarray(x, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr


def asarray(x: Any) -> Any:
    """np.asarray(x); a Python number stays itself (its comparisons and arithmetic are numpy's)."""
    return x if type(x) in _PLAIN else numpy().asarray(x)


def asfloat(x: Any) -> Any:
    """np.asarray(x, dtype=np.float64); a Python number becomes a float."""
    if type(x) in _PLAIN:
        return float(x)
    np = numpy()
    return np.asarray(x, dtype=np.float64)


def where(condition: Any, a: Any, b: Any) -> Any:
    """np.where(condition, a, b)."""
    if type(condition) in _PLAIN and type(a) in _PLAIN and type(b) in _PLAIN:
        return _promote(a if condition else b, a, b)
    return numpy().where(condition, a, b)


def maximum(a: Any, b: Any) -> Any:
    """np.maximum(a, b) (NaN wins; on a tie, b: -0.0 and 0.0 come out as numpy gives them)."""
    if type(a) in _PLAIN and type(b) in _PLAIN:
        return _promote(a if a != a or a > b else b, a, b)
    return numpy().maximum(a, b)


def minimum(a: Any, b: Any) -> Any:
    """np.minimum(a, b) (NaN wins; on a tie, b)."""
    if type(a) in _PLAIN and type(b) in _PLAIN:
        return _promote(a if a != a or a < b else b, a, b)
    return numpy().minimum(a, b)


def clip(x: Any, low: Any, high: Any) -> Any:
    """np.clip(x, low, high): low where x < low, high where x > high, else x."""
    if type(x) in _PLAIN and type(low) in _PLAIN and type(high) in _PLAIN:
        return _promote(low if x < low else high if x > high else x, x, low, high)
    return numpy().clip(x, low, high)


def floor(x: Any) -> Any:
    """np.floor(x) (integers stay integers, as in numpy 2)."""
    if type(x) in _PLAIN:
        return _rounded(math.floor, x)
    return numpy().floor(x)


def ceil(x: Any) -> Any:
    """np.ceil(x) (integers stay integers, as in numpy 2)."""
    if type(x) in _PLAIN:
        return _rounded(math.ceil, x)
    return numpy().ceil(x)


def _rounded(rounding: Any, x: Any) -> Any:
    if type(x) is not float:
        return x
    if not math.isfinite(x):
        return x
    return float(rounding(x)) or math.copysign(0.0, x)  # IEEE: floor(-0.0) and ceil(-0.5) are -0.0


def divide(a: Any, b: Any) -> Any:
    """a / b with numpy's float semantics where b is 0 (inf or nan instead of ZeroDivisionError); call
    it under errstate where numpy would warn."""
    if type(a) in _PLAIN and type(b) in _PLAIN:
        if b:
            return a / b
        if a != a or not a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return numpy().divide(a, b)


def errstate(**kwargs: str) -> contextlib.AbstractContextManager[Any]:
    """np.errstate(**kwargs) when numpy is loaded (only arrays can need it then), else nothing to set."""
    import sys

    np = sys.modules.get("numpy")
    return np.errstate(**kwargs) if np is not None else contextlib.nullcontext()


def ndim(x: Any) -> int:
    """np.ndim(x)."""
    return 0 if type(x) in _PLAIN else int(numpy().ndim(x))


def shape(x: Any) -> tuple[int, ...]:
    """np.shape(x)."""
    return () if type(x) in _PLAIN else tuple(numpy().shape(x))


def broadcast_to(x: Any, to: tuple[int, ...]) -> Any:
    """np.broadcast_to(x, to); a Python number to shape () stays itself."""
    if type(x) in _PLAIN and to == ():
        return x
    return numpy().broadcast_to(x, to)


def zeros(to: tuple[int, ...]) -> Any:
    """np.zeros(to) (float64); 0.0 for shape ()."""
    return 0.0 if to == () else numpy().zeros(to)


def ones_like_float(x: Any) -> Any:
    """np.ones_like(np.asarray(x, dtype=np.float64))."""
    if type(x) in _PLAIN:
        return 1.0
    np = numpy()
    return np.ones_like(np.asarray(x, dtype=np.float64))


def any_true(x: Any) -> bool:
    """bool(np.any(x))."""
    return bool(x) if type(x) in _PLAIN else bool(numpy().any(x))


def all_true(x: Any) -> bool:
    """bool(np.all(x))."""
    return bool(x) if type(x) in _PLAIN else bool(numpy().all(x))


def largest(x: Any) -> Any:
    """np.max(x)."""
    return x if type(x) in _PLAIN else numpy().max(x)


def first_argmax(values: Sequence[Any]) -> Any:
    """Index of the largest of several equally shaped numbers, the first on a tie: np.argmax over
    np.stack(values) on axis 0, without building the stacked array (an axis-0 reduction of a
    stacked array is several times slower than elementwise comparisons)."""
    if all(type(v) in _PLAIN for v in values):
        best, index = float(values[0]), 0
        for k, value in enumerate(values[1:], start=1):
            if float(value) > best:
                best, index = float(value), k
        return index
    np = numpy()
    best_a = np.asarray(values[0], dtype=np.float64)
    index_a = np.zeros(np.shape(best_a), dtype=np.int64)
    for k, value in enumerate(values[1:], start=1):
        v = np.asarray(value, dtype=np.float64)
        better = v > best_a
        index_a = np.where(better, k, index_a)
        best_a = np.where(better, v, best_a)
    return index_a


def select(index: Any, values: Sequence[Any]) -> Any:
    """values[index] elementwise, as np.choose(index, values) gives it, by a chain of np.where."""
    if type(index) in _PLAIN and all(type(v) in _PLAIN for v in values):
        return float(values[int(index)])
    np = numpy()
    out = np.asarray(values[0], dtype=np.float64)
    for k, value in enumerate(values[1:], start=1):
        out = np.where(index == k, np.asarray(value, dtype=np.float64), out)
    return out


def distinct_rows(*columns: Any) -> tuple[Any, Any]:
    """(first index, row of each element) of the distinct tuples of small non-negative integer columns:
    compute on the firsts, then spread with np.take(result, row). The columns are packed into one int64
    key (mixed radix of their maxima), so one 1-D unique does the work. Arrays only (the plan search)."""
    np = numpy()
    key = np.zeros(np.shape(columns[0]), dtype=np.int64)
    for column in columns:
        values = np.asarray(column).astype(np.int64)
        key = key * (int(values.max(initial=0)) + 1) + values
    _, first, row = np.unique(key, return_index=True, return_inverse=True)
    return first, np.ravel(row)

