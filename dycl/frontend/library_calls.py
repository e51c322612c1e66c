"""Calls into libraries the user cannot change (torch, transformers, ...): captured whole
inside a run, never inlined statement by statement.

A transformers model's forward branches on its configuration, on None and on shapes, which
torch.export traces soundly (it specialises configuration and None, records shape guards
as range constraints, and raises on control flow on tensor data instead of freezing it).
Its inputs and outputs are pytree nodes (a `DynamicCache`, a `ModelOutput`), values whose
leaves are tensors (`pytree_values.py`); transformers registers its caches for export on
request (`register_library_trees`)."""

from __future__ import annotations

import linecache
import os
import sys
import traceback

from dycl.frontend.errors import FrontendError

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


# Libraries whose calls are captured whole and whose own lines a refusal names (torch's
# frames are export's machinery, not the program's).
_NAMED_LIBRARIES = ("transformers",)


def refusal_in_library(error: BaseException, via: str) -> FrontendError | None:
    """Export's failure inside a library's own code (transformers' `generate` branching on
    tensor data), refused at the library's innermost line that the failure passed through,
    quoting it; `via` quotes the user's statement that called it. None when the failure
    did not pass through such a library."""
    roots = [_package_root(name) for name in _NAMED_LIBRARIES]
    frames = [f for f in traceback.extract_tb(error.__traceback__) if any(root and f.filename.startswith(root) for root in roots)]
    if not frames:
        return None
    frame = frames[-1]
    text = str(error).strip()
    data_dependent = "data-dependent" in text.lower() or "guard" in text.lower()
    reason = ("branches on a tensor's value (control flow on data), which one captured block cannot hold"
              if data_dependent else f"cannot be captured as a tensor program (torch.export raised {type(error).__name__})")
    return FrontendError(
        f"`{_quoted(frame)}` in `{frame.name}` {reason}; reached from `{via}`",
        "write the loop in forward (call the model once per step, as the greedy loop in DyCL's "
        "README does), so that DyCL compiles the control flow",
        file=frame.filename, line=frame.lineno or 0,
    )


def _quoted(frame: traceback.FrameSummary, limit: int = 160) -> str:
    """The source of what the frame was running (its lines, whitespace collapsed)."""
    last = getattr(frame, "end_lineno", None) or frame.lineno
    lines = []
    for n in range(frame.lineno, last + 1):  # (up to the end of a statement's header)
        lines.append(linecache.getline(frame.filename, n).strip())
        if lines[-1].endswith(":"):
            break
    text = " ".join(lines) or (frame.line or "")
    text = " ".join(text.split()).replace("( ", "(").replace(" )", ")")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _package_root(name: str) -> str | None:
    module = sys.modules.get(name)
    paths = list(getattr(module, "__path__", []) or [])
    return os.path.join(paths[0], "") if paths else None
