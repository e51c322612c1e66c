"""Numeric error of a system's outputs against eager PyTorch, on every path input."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def leaves(value: Any) -> list:
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


def _array(value: Any):
    detach = getattr(value, "detach", None)
    if detach is not None:
        return detach().cpu().numpy()
    return value if isinstance(value, np.ndarray) else None


def max_abs_error(expected: Any, actual: Any) -> tuple[float, str | None]:
    """(max abs difference over all tensor leaves, None) or (inf, why) when the structure,
    a shape or a non-tensor leaf differs. Integer outputs count their difference too."""
    want, got = leaves(expected), leaves(actual)
    if len(want) != len(got):
        return math.inf, f"{len(got)} output leaves, eager has {len(want)}"
    error = 0.0
    for index, (e, a) in enumerate(zip(want, got)):
        ea, aa = _array(e), _array(a)
        if ea is None:
            if aa is not None and aa.size == 1:
                aa = aa.item()
            if e != a:
                return math.inf, f"output {index}: {a!r} != eager {e!r}"
            continue
        if aa is None:
            aa = np.asarray(a)
        if tuple(ea.shape) != tuple(aa.shape):
            return math.inf, f"output {index}: shape {tuple(aa.shape)} != eager {tuple(ea.shape)}"
        if ea.size:
            error = max(error, float(np.max(np.abs(ea.astype(np.float64) - aa.astype(np.float64)))))
    return error, None


def errors_against(eager_calls, calls) -> dict[str, Any]:
    """Run each path input once on both; max error over the inputs and per input."""
    per_input, notes = [], []
    for reference, call in zip(eager_calls, calls):
        error, why = max_abs_error(reference(), call())
        per_input.append(error)
        if why:
            notes.append(why)
    return {"max_abs_error": max(per_input) if per_input else math.nan, "per_input": per_input, "mismatches": notes}
