"""The model's return structure rebuilt from a host function's flat results, as the func
attribute `dycl.output_tree` (the artifact's manifest keeps a copy) describes it: a result
index, `{"tuple": [...]}`, `{"list": [...]}`, `{"dict": [[key, tree], ...]}`, `{"none": []}`
for a returned None, and `{"optional": [k, tree]}` for a value that is None where result `k`
(a bool) is false.
No tree at all means the function's one result, or the tuple of several."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def unflatten(tree: Any, results: Sequence[Any]) -> Any:
    """The structure `tree` describes, with `results` at its leaves (ValueError: not a tree)."""
    if tree is None:
        return results[0] if len(results) == 1 else tuple(results)
    if isinstance(tree, int):
        return results[tree]
    if "none" in tree:
        return None
    if "optional" in tree:
        present, value = tree["optional"]
        return unflatten(value, results) if bool(results[present]) else None
    if "tuple" in tree:
        return tuple(unflatten(sub, results) for sub in tree["tuple"])
    if "list" in tree:
        return [unflatten(sub, results) for sub in tree["list"]]
    if "dict" in tree:
        return {key: unflatten(sub, results) for key, sub in tree["dict"]}
    raise ValueError(f"bad output tree node {tree!r}")
