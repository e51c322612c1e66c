"""Reuse one export for runs that differ only in *which* (identically built) modules they call.

Unrolled ModuleLists and tail-duplicated branches capture the same statements again and
again on modules of the same structure (17 gated blocks of a SkipNet stage). torch.export
costs ~0.3 s per run; importing an exported program again costs milliseconds. A cached
program is re-imported with its weight names moved from the first run's module paths to
the new run's (`blocks.3.conv.weight` -> `blocks.4.conv.weight`).

Two runs share an export only if their statements, input types and the *structure* of
every module they touch are equal: same classes, same parameter/buffer shapes and dtypes,
same plain attributes (stride, threshold, ...), recursively.
"""

from __future__ import annotations

from typing import Any, Hashable

import torch

_SKIPPED_ATTRIBUTES = {"training"}


class _Unhashable:
    """A value that only equals itself (objects we cannot compare by value)."""

    def __init__(self, value):
        self.ident = id(value)

    def __eq__(self, other):
        return isinstance(other, _Unhashable) and other.ident == self.ident

    def __hash__(self):
        return self.ident


def value_signature(value: Any, modules: dict[int, Hashable]) -> Hashable:
    if isinstance(value, torch.nn.Module):
        return module_signature(value, modules)
    if isinstance(value, (bool, int, float, str, type(None))):
        return (type(value), value)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(value_signature(v, modules) for v in value))
    if isinstance(value, torch.Tensor):
        return _Unhashable(value)
    return _Unhashable(value)


def module_signature(module: torch.nn.Module, cache: dict[int, Hashable]) -> Hashable:
    found = cache.get(id(module))
    if found is not None:
        return found
    attributes = tuple(
        (name, value_signature(value, cache))
        for name, value in sorted(vars(module).items())
        if not name.startswith("_") and name not in _SKIPPED_ATTRIBUTES
    )
    tensors = tuple(
        (kind, name, None if t is None else (tuple(t.shape), t.dtype))
        for kind, table in (("p", module._parameters), ("b", module._buffers))
        for name, t in table.items()
    )
    # (a child may be None: `self.add_module("scene", None)`, `self.proj = None` after it was a module)
    children = tuple(
        (name, None if child is None else module_signature(child, cache)) for name, child in module._modules.items()
    )
    signature = (type(module), attributes, tensors, children)
    cache[id(module)] = signature
    return signature


class ExportCache:
    def __init__(self, model: torch.nn.Module):
        self._paths = {id(m): name for name, m in model.named_modules()}
        self._signatures: dict[int, Hashable] = {}
        self._programs: dict[Hashable, tuple[Any, list[str]]] = {}

    def key(self, code: str, input_signature: Hashable, called: list[torch.nn.Module]) -> Hashable | None:
        """None when the run's weights cannot be renamed (a module outside the model)."""
        outermost = self.outermost(called)
        if outermost is None:
            return None
        structure = tuple(module_signature(self._module(p), self._signatures) for p in outermost)
        return (code, input_signature, structure)

    def outermost(self, called: list[torch.nn.Module]) -> list[str] | None:
        paths = []
        for module in called:
            path = self._paths.get(id(module))
            if path is None or path == "":
                return None
            paths.append(path)
        ordered = list(dict.fromkeys(paths))
        return [p for p in ordered if not any(p.startswith(o + ".") for o in ordered if o != p)]

    def _module(self, path: str) -> torch.nn.Module:
        return self._root_lookup[path]

    def bind_root(self, model: torch.nn.Module) -> None:
        self._root_lookup = dict(model.named_modules())

    def get(self, key: Hashable):
        return self._programs.get(key)

    def put(self, key: Hashable, program, paths: list[str]) -> None:
        self._programs[key] = (program, paths)

    def signature(self, value: Any) -> Hashable:
        return value_signature(value, self._signatures)


def renaming(old_paths: list[str], new_paths: list[str]) -> dict[str, str]:
    return {old: new for old, new in zip(old_paths, new_paths) if old != new}


def rename(name: str, prefixes: dict[str, str]) -> str:
    for old, new in prefixes.items():
        if name.startswith(old + "."):
            return new + name[len(old):]
    return name
