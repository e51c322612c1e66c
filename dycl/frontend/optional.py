"""Forward's inputs as a tree of arguments, and optional inputs: one compiled model for None
and for a value.

A parameter is *optional* when it defaults to None or is annotated `Optional[T]` (`T |
None`, `Union[T, None]`): `def forward(self, x, top_k: Optional[int] = None)`, `mask=None`.
Where its example gives a value, the model is compiled for both kinds: the parameter is a
`values.Maybe` whose `present` is a bool argument of the host function (the runtime passes
False and a placeholder of the value's type for None), so `if top_k is not None:` is an
`scf.if` on it, compiled both ways as any test of a `Maybe`. Where its example is None, the
value's kind must come from somewhere else: an annotated Python scalar (`Optional[int]`,
`float`, `bool`) is compiled from a representative value (`REPRESENTATIVE`), which is sound
because an int, float or bool input is a runtime value in every statement (a run that export
specialised on its value is refused: `export_sizes.check_int_inputs_used`); a tensor's shape is
unknown, so the model is compiled for None only and the runtime refuses a value with an
`InputError` that says how to compile for it.

A statement that reads an optional input without an `is None` test (a run given it, `if
top_k:`) is refused for a `Maybe`; the importer then compiles again with every optional input
of the example's kind only (`fixed=True`), as before optional inputs were known: that model
refuses the other kind at call time.

The tree (func attribute `dycl.input_tree`, read by the runtime and the interpreter) is the
output tree's form: an int is an argument, `{"list"|"tuple": [...]}` a container passed item
by item, `{"optional": [k, <tree>]}` None where bool argument `k` is false, and `{"none":
[name, kind]}` an input compiled for None only (`kind`: what it was annotated, or "").
"""

from __future__ import annotations

import ast
import inspect
import types
import typing
from dataclasses import dataclass

import torch

from dycl.frontend import values as V

# The value an optional Python scalar input is compiled from when its example is None.
REPRESENTATIVE = {int: 2, float: 0.5, bool: False}
_KIND_NAMES = {int: "int", float: "float", bool: "bool", torch.Tensor: "tensor"}


@dataclass(frozen=True)
class OptionalParameter:
    """An optional parameter and the kind its annotation gives (None: not annotated, or
    not one DyCL knows)."""

    name: str
    kind: type | None


def optional_parameters(method, fdef) -> dict[str, OptionalParameter]:
    """The parameters of `method` (its parsed `fdef`) that may be None: a None default or
    an `Optional[...]` annotation."""
    try:
        hints = typing.get_type_hints(inspect.unwrap(getattr(method, "__func__", method)))
    except Exception:  # (a forward reference that does not resolve: no annotation)
        hints = {}
    positional = fdef.args.args
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(fdef.args.defaults):]], fdef.args.defaults))
    found = {}
    for arg in positional[1:]:
        name = arg.arg
        default = defaults.get(name)
        none_default = isinstance(default, ast.Constant) and default.value is None
        optional, kind = _optional_hint(hints.get(name))
        if none_default or optional:
            found[name] = OptionalParameter(name, kind)
    return found


def _optional_hint(hint) -> tuple[bool, type | None]:
    """(whether `hint` admits None, the one other kind it names)."""
    if hint is None:
        return False, None
    args = typing.get_args(hint)
    if typing.get_origin(hint) not in (typing.Union, types.UnionType) or type(None) not in args:
        return False, _known_kind(hint)
    others = [a for a in args if a is not type(None)]
    return True, _known_kind(others[0]) if len(others) == 1 else None


def _known_kind(hint) -> type | None:
    return hint if hint in _KIND_NAMES else None


class Inputs:
    """Forward's example inputs as a tree of host function arguments (`leaves`: (name,
    example) of each argument, in order)."""

    def __init__(self, compiler, fdef, optional: dict[str, OptionalParameter], fixed: bool):
        self.compiler, self.fdef = compiler, fdef
        self.optional = {} if fixed else optional
        self.none_kinds = {name: p.kind for name, p in optional.items()}
        self.leaves: list[tuple[str, object]] = []
        self.maybes = False  # whether some input is compiled for None and a value

    def tree(self, name: str, example):
        parameter = self.optional.get(name)
        if parameter is not None and (example is not None or parameter.kind in REPRESENTATIVE):
            self.maybes = True
            present = self._leaf(f"{name}_present", example is not None)
            value = REPRESENTATIVE[parameter.kind] if example is None else example
            return {"optional": [present, self._flatten(name, value)]}
        return self._flatten(name, example)

    def _flatten(self, name: str, example):
        """Tensors are copied: a forward that mutates its input (refused) leaves the caller's alone."""
        if isinstance(example, (list, tuple)):
            kind = "list" if isinstance(example, list) else "tuple"
            return {kind: [self._flatten(f"{name}_{k}", e) for k, e in enumerate(example)]}
        if example is None:
            kind = self.none_kinds.get(name)
            return {"none": [name, _KIND_NAMES.get(kind, "")]}
        if not isinstance(example, (torch.Tensor, bool, int, float)):
            raise self.compiler.error(
                self.fdef, f"forward input `{name}` is a {type(example).__name__}",
                "pass tensors, Python ints/floats/bools, None, or lists and tuples of them",
            )
        if isinstance(example, torch.Tensor) and example.is_complex():
            raise self.compiler.error(
                self.fdef, f"forward input `{name}` is a complex tensor ({example.dtype})",
                f"pass its real view (`torch.view_as_real({name})`) and make it complex inside forward "
                f"(`torch.view_as_complex({name})`): DyCL computes complex values as their real views",
            )
        if isinstance(example, torch.Tensor):
            example = V.marked_like(example.clone(), example)
        return self._leaf(name, example)

    def _leaf(self, name: str, example) -> int:
        self.leaves.append((name, example))
        return len(self.leaves) - 1


def input_value(tree, arguments: list) -> V.EnvValue:
    """What a forward parameter holds at the entry, from its tree and the host arguments."""
    if tree is None:
        return V.Const(None)
    if isinstance(tree, int):
        return arguments[tree]
    (kind, items), = tree.items()
    if kind == "none":
        return V.Const(None)
    if kind == "optional":
        present, inner = items
        return V.Maybe(arguments[present], input_value(inner, arguments))
    return V.Tup(tuple(input_value(t, arguments) for t in items), kind)


__all__ = ["Inputs", "OptionalParameter", "REPRESENTATIVE", "input_value", "optional_parameters"]
