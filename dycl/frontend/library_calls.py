"""Calls into libraries the user cannot change (torch, transformers, ...): captured whole
inside a run, never inlined statement by statement.

A transformers model's forward branches on its configuration, on None and on shapes, which
torch.export traces soundly (it specialises configuration and None, records shape guards
as range constraints, and raises on control flow on tensor data instead of freezing it).
Its inputs and outputs are pytree nodes (a `DynamicCache`, a `ModelOutput`), values whose
leaves are tensors (`pytree_values.py`); transformers registers its caches for export on
request (`register_library_trees`)."""

from __future__ import annotations

import sys

# Functions from these packages are never inlined: their control flow is on Python values
# (configuration, None, shapes), which export specialises or guards.
LIBRARY_PACKAGES = frozenset({"torch", "numpy", "functools", "typing", "math", "transformers"})


def is_library_function(function) -> bool:
    return (getattr(function, "__module__", None) or "").partition(".")[0] in LIBRARY_PACKAGES


def register_library_trees() -> None:
    """Make the caches of transformers (when the program uses it) pytree nodes, as its own
    exporter does: a run then takes a cache apart into its tensors."""
    if "transformers" not in sys.modules:
        return
    try:
        from transformers.cache_utils import Cache
        from transformers.exporters.exporter_dynamo import register_pytree_node
    except ImportError:  # (a version without its exporter: caches stay Python objects, refused)
        return
    pending = [Cache]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls is not Cache:
            register_pytree_node(cls)
