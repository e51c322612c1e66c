"""Plain Python objects that forward builds and then uses: the sparse mixture of experts'
`SparseDispatcher` (`dispatcher = SparseDispatcher(self.num_experts, gates)`, then
`dispatcher.dispatch(x)`, `dispatcher.combine(expert_outputs)`).

Such an object is a helper whose attributes outlive the call that sets them. Within one
call of forward it is what module attributes that forward assigns are (attributes.py): its
attributes are variables of the call. The object itself is known at import (a `Const`
holding an instance made without running `__init__`); `obj.attr` is the variable of its
class and attribute (`__object0__gates`), a load or a store, in `__init__`, in its methods
and in forward alike (`bind`, before each statement is compiled). Building it inlines
`__init__` with `self` bound to the instance, after the class's variables are unbound (a
new object has no attributes); its methods are always inlined (`inlining.callee`).

One object of a class at a time: the variables are the class's, so a use of an object
built before the class's last one is refused (it would read the newer object's
attributes). The variables are found before compiling (`preregister`, from the classes
the model's methods build), so that liveness keeps them from one statement to the next.
A helper class is a class of the user's own code with a Python `__init__`: not a module,
an exception, a container, a library's class (`torch.distributions.Categorical` stays a
value one statement uses), and without `__new__`, `__slots__` or attribute hooks.
"""

from __future__ import annotations

import abc
import ast
import copy
import functools
import inspect
import types
import weakref
from dataclasses import dataclass, field

import torch

from dycl.frontend import library_calls, nodes
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text

_NOT_HELPERS = (torch.nn.Module, BaseException, tuple, list, dict, set, torch.Tensor)
_HOOKS = ("__getattr__", "__getattribute__", "__setattr__", "__delattr__", "__slots__", "__new__")
_ABSENT = object()


def is_helper_class(obj) -> bool:
    """Whether calling `obj` builds a helper object DyCL compiles (the module docstring)."""
    return isinstance(obj, type) and _helper_class(obj)


@functools.lru_cache(maxsize=None)
def _helper_class(obj: type) -> bool:
    if type(obj) not in (type, abc.ABCMeta) or issubclass(obj, _NOT_HELPERS):
        return False
    if library_calls.is_library_function(obj) or obj.__module__ == "builtins":
        return False
    own = [klass for klass in obj.__mro__ if klass is not object]
    if any(hook in vars(klass) for klass in own for hook in _HOOKS):
        return False
    return isinstance(inspect.getattr_static(obj, "__init__"), types.FunctionType)


# The objects `HelperObjects.build` made (by id): only those are helper objects, not an
# instance of a user's class that the model holds (a config object is a constant).
_BUILT: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()


def is_helper_object(value) -> bool:
    """Whether `value` is an object forward builds (made by `HelperObjects.build`)."""
    try:
        return _BUILT.get(id(value)) is value
    except TypeError:
        return False


@dataclass(frozen=True)
class New:
    """The receiver of a call that builds an object of `cls`: `inlining.expand_call` makes
    the instance (`build`) when it inlines `__init__`."""

    cls: type


@dataclass
class _Class:
    index: int
    attributes: dict[str, str] = field(default_factory=dict)  # attr -> its variable


class HelperObjects:
    """The helper classes of one compiled call, their attribute variables, and the object
    of each class built last."""

    def __init__(self):
        self._classes: dict[type, _Class] = {}
        self._current: dict[type, tuple[object, int]] = {}  # cls -> (the last object, its line)

    def variables(self) -> set[str]:
        return {name for record in self._classes.values() for name in record.attributes.values()}

    def preregister(self, functions) -> None:
        """The helper classes that `functions` (the model's methods), the plain functions
        they call and the classes' own methods build, with their attribute variables."""
        pending, seen = list(functions), set()
        while pending:
            function = pending.pop()
            if function in seen or library_calls.is_library_function(function):
                continue
            seen.add(function)
            fdef = _definition(function)
            if fdef is None:
                continue
            namespace = {**getattr(function, "__globals__", {}), **_closure(function)}
            for node in ast.walk(fdef):
                if not isinstance(node, ast.Call):
                    continue
                target = _resolve(node.func, namespace)
                if is_helper_class(target):
                    if target not in self._classes:
                        self._register(target)
                        pending.extend(_methods(target))
                elif isinstance(target, types.FunctionType):
                    pending.append(target)

    def _register(self, cls: type) -> None:
        record = self._classes[cls] = _Class(len(self._classes))
        for function in _methods(cls):
            fdef = _definition(function)
            if fdef is None or not fdef.args.args:
                continue
            self_name = fdef.args.args[0].arg
            for node in ast.walk(fdef):
                if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                        and isinstance(node.value, ast.Name) and node.value.id == self_name):
                    record.attributes.setdefault(node.attr, f"{nodes.OBJECT_PREFIX}{record.index}_{node.attr}")

    # ----- building an object ---------------------------------------------------------------

    def build(self, c, new: New, stmt: ast.stmt) -> tuple[object, list[ast.stmt], ast.stmt]:
        """(the new object, the statements that unbind its class's variables, the statement
        that binds the object where `stmt` puts it), for inlining `__init__` at `stmt`."""
        cls = new.cls
        if cls not in self._classes:  # (built where `preregister` did not look: a lambda, `getattr`)
            raise c.error(stmt, f"`{source_text(stmt)}` builds a `{cls.__name__}` where DyCL did not look for helper classes",
                          f"build it in forward, a method of the model or a function they call by name (`{cls.__name__}(...)`)")
        instance = object.__new__(cls)  # (its `__init__` is inlined: its attributes are variables)
        _BUILT[id(instance)] = instance
        self._current[cls] = (instance, stmt.lineno)
        unbound = [nodes.BindConst(name, V.UNDEF, stmt.lineno) for name in self._classes[cls].attributes.values()]
        if isinstance(stmt, ast.Expr):
            bind = ast.copy_location(ast.Expr(ast.Constant(None)), stmt)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            bind = nodes.BindConst(stmt.targets[0].id, instance, stmt.lineno)
        else:
            raise c.error(stmt, f"`{source_text(stmt)}` keeps a `{cls.__name__}` object elsewhere than in a variable",
                          f"bind it to a name (`obj = {cls.__name__}(...)`) and use it from there")
        return instance, unbound, bind

    # ----- using one -------------------------------------------------------------------------

    def annotate(self, stmts: list[ast.stmt], self_name: str, obj) -> None:
        """An inlined method's body (in place): `self.attr` of the object's attributes is
        their variable (Python's attribute stores, which the rewrite refuses elsewhere)."""
        record = self._classes.get(type(obj))
        if record is None:
            return
        renamer = _SelfAttributes(self_name, record.attributes)
        stmts[:] = [renamer.visit(stmt) for stmt in stmts]

    def bind(self, stmt: ast.stmt, env: dict, error) -> ast.stmt:
        """`stmt` with each `obj.attr` of a helper object's attribute turned into its variable
        (its own expressions only, as `ModuleAttributes.bind`)."""
        if not self._classes or not any(
            isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and _object_of(env.get(n.value.id)) is not None
            for n in ast.walk(stmt)
        ):
            return stmt
        binder = _Binder(self, env, error)
        header = nodes.header_rewritten(stmt, binder.visit)
        if header is not None:
            return header
        if isinstance(stmt, nodes.FrontendStmt):
            return stmt
        return nodes.written_as(binder.visit(copy.deepcopy(stmt)), stmt)

    def check_current(self, obj, node: ast.AST, error) -> None:
        """Refuse a use of an object built before the last one of its class."""
        last, line = self._current.get(type(obj), (None, 0))
        if last is not obj:
            name = type(obj).__name__
            raise error(node, f"`{source_text(node)}` uses a `{name}` built before the one built at line {line} "
                        f"(DyCL keeps the attributes of one `{name}` object at a time)",
                        f"use each `{name}` object before building the next one")

    def attribute(self, obj, attr: str) -> str | None:
        return self._classes[type(obj)].attributes.get(attr) if type(obj) in self._classes else None


class _Binder(ast.NodeTransformer):
    def __init__(self, objects: HelperObjects, env: dict, error):
        self.objects, self.env, self.error = objects, env, error

    def visit_Assign(self, node: ast.Assign):
        node.value = self.visit(node.value)  # (Python evaluates the value before it stores)
        node.targets = [self.visit(target) for target in node.targets]
        return node

    def visit_Attribute(self, node: ast.Attribute):
        obj = _object_of(self.env.get(node.value.id)) if isinstance(node.value, ast.Name) else None
        if obj is None:
            return self.generic_visit(node)
        self.objects.check_current(obj, node, self.error)
        name, cls = self.objects.attribute(obj, node.attr), type(obj).__name__
        if isinstance(node.ctx, ast.Del):
            raise self.error(node, f"`del {source_text(node)}` of a `{cls}` object's attribute", "assign None instead")
        if name is not None:
            return ast.copy_location(ast.Name(name, node.ctx), node)
        if isinstance(node.ctx, ast.Store):
            raise self.error(node, f"`{source_text(node)} = ...` sets an attribute that no method of `{cls}` sets",
                             f"set it in a method of `{cls}` (`self.{node.attr} = ...`)")
        if inspect.getattr_static(type(obj), node.attr, _ABSENT) is _ABSENT:
            raise self.error(node, f"`{source_text(node)}`: a `{cls}` object has no attribute `{node.attr}`")
        return node  # (a method or a class attribute: known at import)


class _SelfAttributes(ast.NodeTransformer):
    def __init__(self, self_name: str, attributes: dict[str, str]):
        self.self_name, self.attributes = self_name, attributes

    def visit_Attribute(self, node: ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == self.self_name and node.attr in self.attributes:
            return ast.copy_location(ast.Name(self.attributes[node.attr], node.ctx), node)
        return self.generic_visit(node)


def _object_of(value):
    return value.value if isinstance(value, V.Const) and is_helper_object(value.value) else None


def passes_object(call: ast.Call, env: dict) -> bool:
    """Whether a call is given a helper object (`self.route(dispatcher, x)`): it is inlined,
    as code run inside a captured block would not see the object's attributes."""
    arguments = [*call.args, *(k.value for k in call.keywords)]
    return any(isinstance(a, ast.Name) and _object_of(env.get(a.id)) is not None for a in arguments)


def _methods(cls: type) -> list[types.FunctionType]:
    return [f for klass in cls.__mro__ if klass is not object for f in vars(klass).values() if isinstance(f, types.FunctionType)]


def _definition(function) -> ast.FunctionDef | None:
    from dycl.frontend.rewrite import parse_function

    try:
        return parse_function(function).node
    except Exception:  # (no source: never inlined, nothing to find)
        return None


def _closure(function) -> dict:
    try:
        return inspect.getclosurevars(function).nonlocals if getattr(function, "__closure__", None) else {}
    except (TypeError, ValueError):
        return {}


def _resolve(node: ast.expr, namespace: dict):
    """What a callee's name (`SparseDispatcher`, `moe.SparseDispatcher`) is in `namespace`."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id, _ABSENT)
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, namespace)
        if owner is _ABSENT or isinstance(owner, torch.nn.Module):
            return _ABSENT
        try:
            return inspect.getattr_static(owner, node.attr, _ABSENT)
        except Exception:
            return _ABSENT
    return _ABSENT


__all__ = ["HelperObjects", "New", "is_helper_class", "is_helper_object", "passes_object"]
