"""Numbers that may be numpy arrays: the estimators evaluate one layout or many with the same code."""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

Num: TypeAlias = float | npt.NDArray[np.float64]
NumIn: TypeAlias = int | float | npt.NDArray[Any]


def as_num(x: NumIn) -> Num:
    """A float, or a float64 array."""
    return x.astype(np.float64) if isinstance(x, np.ndarray) else float(x)


def scalar_or_array(x: Any) -> Num:
    """A 0-d result back to a plain float; arrays stay arrays."""
    arr = np.asarray(x, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr
