"""Module attributes that forward assigns: variables for the duration of one call.

Research code keeps per-call values on the module: `self.hidden = self.init_hidden(b)` at
the top of forward, read by a gate helper; `self.gate_probs = []`, filled by the blocks.
Within one call such an attribute is a variable like any other, and the frontend treats it
as one:

- `annotate` marks each access `obj.attr` (obj: a module reached from a function's `self`;
  attr: an instance attribute, not a parameter, buffer, submodule or method) with the name of
  its variable (`__attr3_hidden`). Liveness reads the mark: a store defines the variable, a
  load uses it.
- `bind`, right before a statement is compiled, turns marked accesses into that variable:
  stores always; loads once the call has assigned it on the path being compiled. A load
  before that reads the module's own value (configuration such as `self.threshold`).
- State that persists from one call to the next (an attribute read from the module and
  assigned later in the same call, or read after an `if` that assigns it on some paths only)
  raises `state.PersistentState` when the importer keeps state (`keeps_state`): it compiles
  again with the attribute as a slot of the call (state.py), bound at the entry. Code that
  runs inside a captured block and reads such an attribute is refused (`poisoned`).

An attribute that the call assigns before any read is a variable of the call only: PyTorch
leaves its last value on the module, a compiled model does not keep it (it is not state).
"""

from __future__ import annotations

import ast
import copy
import inspect
import types
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from dycl.frontend import nodes
from dycl.frontend.callees import is_module_list, module_named, wrapped
from dycl.frontend.container_statements import CONTAINER_METHOD_NAMES
from dycl.frontend.helper_objects import HelperObjects, is_helper_object
from dycl.frontend import values as V



@dataclass(frozen=True)
class Attribute:
    name: str  # the variable
    owner: torch.nn.Module
    attr: str

    @property
    def text(self) -> str:
        return f"self.{self.attr}"


class _Partial:
    """An attribute assigned on some paths only: the others hold the module's old value."""

    def __repr__(self) -> str:
        return "PARTIAL"


PARTIAL = V.Const(_Partial())

_ABSENT = object()


class ModuleAttributes:
    """The attribute variables of one compiled call (one per module and attribute)."""

    def __init__(self, keeps_state: bool = False):
        # keeps_state: state that persists across calls raises `state.PersistentState` (the
        # importer compiles again with it as a slot of the call) instead of a refusal
        self.keeps_state = keeps_state
        self.append_only: set[str] = set()  # variables of lists kept across calls (state.py)
        self._by_key: dict[tuple[int, str], Attribute] = {}
        self.by_name: dict[str, Attribute] = {}
        self.read_from_module: dict[str, ast.AST] = {}  # variable -> the first load of the module's value
        self.assigned: set[str] = set()  # attribute names some code assigns (`hidden`)
        self.attribute_names: set[str] = set()  # the attribute names that have variables (`hidden`)
        self.objects = HelperObjects()  # the attributes of plain objects forward builds (helper_objects.py)

    # ----- marking ----------------------------------------------------------------------

    def annotate(self, stmts: list[ast.stmt], self_name: str, receiver) -> None:
        """Mark the attribute accesses of a function body whose `self` is `receiver` (in place);
        a helper object's attributes become their variables (helper_objects.py)."""
        if is_helper_object(receiver):
            self.objects.annotate(stmts, self_name, receiver)
            return
        if not isinstance(receiver, torch.nn.Module):
            return
        for stmt in stmts:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Attribute):
                    owner = module_named(node.value, self_name, receiver)
                    if owner is not None and self._is_state(owner, node.attr):
                        node.dycl_local = self._variable(owner, node.attr).name
                        if isinstance(node.ctx, ast.Store):
                            self.assigned.add(node.attr)
        if self.append_only:
            from dycl.frontend.state import hoist_appended_items

            hoist_appended_items(stmts, self.append_only)

    def preregister(self, model: torch.nn.Module) -> None:
        """A variable for every attribute that a method of the user's modules assigns
        (`self.hidden = ...`, `self.control.hidden = ...`), before anything is compiled: a
        helper inlined later may read what forward's liveness must then keep."""
        from dycl.frontend.rewrite import parse_function

        self.objects.preregister([function for module in model.modules() for function in _methods(module)])
        for module in model.modules():
            for function in _methods(module):
                try:
                    fdef = parse_function(function).node
                except Exception:  # no source (a lambda, a generated method): never inlined
                    continue
                if not fdef.args.args:
                    continue
                self_name = fdef.args.args[0].arg
                for node in ast.walk(fdef):
                    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                        owner = module_named(node.value, self_name, module)
                        if owner is not None and self._is_state(owner, node.attr):
                            self._variable(owner, node.attr)
                            self.assigned.add(node.attr)

    def state_variable(self, owner: torch.nn.Module, attr: str, append: bool = False) -> str:
        """The variable of an attribute the call takes in and gives back (state.py)."""
        name = self._variable(owner, attr).name
        self.assigned.add(attr)
        if append:
            self.append_only.add(name)
        return name

    def _is_state(self, owner: torch.nn.Module, attr: str) -> bool:
        """An attribute with a variable: an instance attribute, or a registered buffer that
        is state kept across calls (a slot: `state_variable` made its variable)."""
        return _is_state(owner, attr) or attr in owner._buffers and (id(owner), attr) in self._by_key

    def variables(self) -> set[str]:
        return set(self.by_name) | self.objects.variables()

    def _variable(self, owner: torch.nn.Module, attr: str) -> Attribute:
        key = (id(owner), attr)
        if key not in self._by_key:
            name = f"{nodes.ATTRIBUTE_PREFIX}{len(self._by_key)}_{attr}"
            self._by_key[key] = self.by_name[name] = Attribute(name, owner, attr)
            self.attribute_names.add(attr)
        return self._by_key[key]

    # ----- compiling ----------------------------------------------------------------------

    def bind(self, stmt: ast.stmt, env: dict, error, written=frozenset()) -> ast.stmt:
        """`stmt` with its marked accesses turned into variables where the call assigned them
        (on this path, or earlier in the same run: `written`), and the attributes of helper
        objects into theirs (`helper_objects.py`). Only the statement's own expressions:
        nested statement lists are bound when they are compiled."""
        stmt = self.objects.bind(stmt, env, error)
        if not self.by_name or not (_has_marks(stmt) or _names_attribute(stmt, self.attribute_names)):
            return stmt
        bound = self._bind(stmt, _Binder(self, env, written, error))
        if self.append_only:
            from dycl.frontend.state import check_append_only

            check_append_only(bound, self.append_only, self.describe, error)
        return bound

    def _bind(self, stmt: ast.stmt, binder: "_Binder") -> ast.stmt:
        header = nodes.header_rewritten(stmt, binder.visit)
        if header is not None:
            return header
        if isinstance(stmt, (nodes.Label, nodes.Jump, nodes.BindConst)):
            return stmt
        return binder.visit(copy.deepcopy(stmt))

    def concerns(self, fdef: ast.FunctionDef) -> bool:
        """Whether a helper must be compiled by DyCL (inlined), not run inside a captured
        block: it assigns an attribute, reads one by the name of one that code assigns
        (configuration that nothing assigns, `self.threshold`, is read where it runs), or
        changes a container an attribute holds (`self.gate_instances.append(g)`: run on
        examples, it would change the module's own list; compiled, it is refused)."""
        for node in ast.walk(fdef):
            if isinstance(node, ast.Attribute) and (isinstance(node.ctx, ast.Store) or node.attr in self.assigned):
                return True
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CONTAINER_METHOD_NAMES
                    and isinstance(node.func.value, ast.Attribute)):
                return True
        return False

    def is_variable(self, name: str) -> bool:
        return name in self.by_name

    def describe(self, name: str) -> str:
        return self.by_name[name].text if name in self.by_name else name

    def _found_state(self, name: str, node: ast.AST) -> None:
        attribute = self.by_name[name]
        if self.keeps_state and attribute.attr in attribute.owner.__dict__:  # (else eager fails without a value)
            from dycl.frontend.state import PersistentState

            raise PersistentState(attribute.owner, attribute.attr, node)

    def refuse_persistent(self, name: str, node: ast.AST, error):
        self._found_state(name, node)
        text = self.describe(name)
        first = self.read_from_module.get(name)
        where = f" (line {first.lineno})" if getattr(first, "lineno", None) else ""
        return error(
            node, f"`{text}` is read before this call assigns it{where}, then assigned: module "
            "state that persists from one call to the next",
            f"assign `{text}` in forward before its first read (for example "
            f"`{text} = self.init_hidden(x.size(0))` at the top of forward), or pass the value "
            "in as an argument and return the new one",
        )

    def refuse_partial(self, name: str, node: ast.AST, error):
        self._found_state(name, node)
        text = self.describe(name)
        return error(
            node, f"`{text}` is read where this call assigned it on some paths only (the "
            "others read the module's value from an earlier call)",
            f"assign `{text}` on every path before the read (for example before the `if` or loop)",
        )

    @contextmanager
    def poisoned(self, env: dict, written=frozenset()):
        """While user code runs on example values: attributes this call assigned (before
        the run, or in it: `written`) hold a value that refuses every use (code that DyCL
        runs as a captured block would read the module's value, not the call's)."""
        installed, buffers = [], []
        for name, attribute in self.by_name.items():
            if not _assigned(env.get(name, V.MISSING)) and name not in written:
                continue
            owner = attribute.owner
            if attribute.attr in owner._buffers:
                # a buffer kept across calls: code run as one block reads and changes this
                # call's value, which its example stands for (export: `capture.py`)
                example = getattr(env.get(name), "example", None)
                if isinstance(example, torch.Tensor) and name not in written:
                    buffers.append((owner, attribute.attr, owner._buffers[attribute.attr]))
                    owner._buffers[attribute.attr] = example
                continue
            installed.append((owner, attribute.attr, owner.__dict__.get(attribute.attr, _ABSENT)))
            owner.__dict__[attribute.attr] = Poisoned(attribute.text)
        try:
            yield [owner.__dict__[attr] for owner, attr, _ in installed]
        finally:
            for owner, attr, old in reversed(buffers):
                owner._buffers[attr] = old
            for owner, attr, old in reversed(installed):
                if old is _ABSENT:
                    owner.__dict__.pop(attr, None)
                else:
                    owner.__dict__[attr] = old


class _Binder(ast.NodeTransformer):
    def __init__(self, attributes: ModuleAttributes, env: dict, written, error):
        self.attributes = attributes
        self.env = env
        self.written = written
        self.error = error

    def visit_Assign(self, node: ast.Assign):
        node.value = self.visit(node.value)  # (Python evaluates the value before it stores)
        node.targets = [self.visit(target) for target in node.targets]
        return node

    def visit_AugAssign(self, node: ast.AugAssign):
        name = self._variable_of(node.target) if isinstance(node.target, ast.Attribute) else None
        if name is not None and not self._assigned(name, node):
            raise self.attributes.refuse_persistent(name, node, self.error)  # `self.count += 1`
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute):
        name = self._variable_of(node)
        if name is None:
            return self.generic_visit(node)
        if isinstance(node.ctx, ast.Del):
            raise self.error(node, f"`del {self.attributes.describe(name)}`", "assign None instead, or keep the value in a local variable")
        if isinstance(node.ctx, ast.Store):
            if name in self.attributes.append_only:  # (`self.gate_probs = []`: a per-call list)
                from dycl.frontend.state import Demoted

                attribute = self.attributes.by_name[name]
                raise Demoted(attribute.owner, attribute.attr)
            if name in self.attributes.read_from_module:
                raise self.attributes.refuse_persistent(name, node, self.error)
            return ast.copy_location(ast.Name(name, ast.Store()), node)
        if self._assigned(name, node):
            return ast.copy_location(ast.Name(name, ast.Load()), node)
        self.attributes.read_from_module.setdefault(name, node)
        return self.generic_visit(node)

    def visit_ListComp(self, node: ast.ListComp):
        """`[g.saved_action for g in self.gate_instances]` over modules known here, whose
        element reads an attribute variable of the item: one element per module, each
        reading its own module's variable (`[__attr3_saved_action, __attr7_saved_action]`)."""
        unrolled = _unrolled_over_modules(node, self._constant_of, self.attributes)
        return self.visit(unrolled) if unrolled is not None else self.generic_visit(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp):
        """`sum(h.saved_log_prob for h in self.heads)`: the same, as a generator over the
        unrolled list, when computing an element ahead of the consumer changes nothing (it
        only reads attributes of the item and calls their methods, no other function)."""
        unrolled = _unrolled_over_modules(node, self._constant_of, self.attributes)
        if unrolled is None:
            return self.generic_visit(node)
        item = f"__item{nodes.fresh_id()}"
        generator = ast.comprehension(target=ast.Name(item, ast.Store()), iter=self.visit(unrolled), ifs=[], is_async=0)
        return nodes.located(ast.GeneratorExp(elt=ast.Name(item, ast.Load()), generators=[generator]), node)

    def _variable_of(self, node: ast.Attribute) -> str | None:
        """The attribute variable `node` accesses: its mark (`self.hidden`), or the variable
        of a module this call reaches through a reference known here (`g.saved_action` with
        `g` a module of a loop over modules, `self.gate_instances[0].saved_action`)."""
        name = getattr(node, "dycl_local", None)
        if name is not None or node.attr not in self.attributes.attribute_names:
            return name
        owner = self._constant_of(node.value)
        attribute = self.attributes._by_key.get((id(owner), node.attr)) if isinstance(owner, torch.nn.Module) else None
        return attribute.name if attribute is not None else None

    def _constant_of(self, expr: ast.expr):
        """The object `expr` names when it is known here: a variable bound to a constant, a
        submodule or a module list of it, an item of one at a constant index; else None."""
        if isinstance(expr, ast.Name):
            value = self.env.get(expr.id)
            return value.value if isinstance(value, V.Const) else None
        if isinstance(expr, ast.Attribute) and getattr(expr, "dycl_local", None) is None:
            base = self._constant_of(expr.value)
            if isinstance(base, torch.nn.Module):
                found = base._modules.get(expr.attr, base.__dict__.get(expr.attr))
                return found if isinstance(found, torch.nn.Module) or is_module_list(found) else None
        index = _constant_index(expr.slice) if isinstance(expr, ast.Subscript) else None
        if index is not None:
            base = self._constant_of(expr.value)
            if is_module_list(base) or isinstance(base, (torch.nn.ModuleList, torch.nn.Sequential)):
                try:
                    return base[index]
                except IndexError:
                    return None
        return None

    def _assigned(self, name: str, node: ast.AST) -> bool:
        value = self.env.get(name, V.MISSING)
        if value is PARTIAL and name not in self.written:
            raise self.attributes.refuse_partial(name, node, self.error)
        return name in self.written or value is not V.MISSING


class AttributeStateRead(Exception):
    """User code running inside a captured block used an attribute this call assigned."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


class Poisoned:
    """Stands in for an attribute the call assigned while user code runs in a captured block:
    any use of it means that code would read the module's value, not the call's."""

    def __init__(self, text: str):
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "touched", False)

    def _touch(self, *args, **kwargs):
        object.__setattr__(self, "touched", True)
        raise AttributeStateRead(self.text)

    __getattr__ = __bool__ = __len__ = __iter__ = __getitem__ = __call__ = _touch
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _touch
    __matmul__ = __neg__ = __lt__ = __le__ = __gt__ = __ge__ = __index__ = __int__ = __float__ = _touch

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for value in [*args, *(kwargs or {}).values()]:
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(item, Poisoned):
                    item._touch()
        raise AttributeStateRead("an attribute")


def _methods(module: torch.nn.Module) -> list[types.FunctionType]:
    """The functions a call may run with `module` as `self`: its classes' methods (but
    `__init__` and torch's own) and methods bound to it on the instance (`self.forward =
    self.only_forward`, or a function of another class bound with `types.MethodType`)."""
    methods = [
        function for klass in type(module).__mro__ if klass.__module__.partition(".")[0] not in ("torch", "builtins")
        for name, function in vars(klass).items() if isinstance(function, types.FunctionType) and name != "__init__"
    ]
    bound = [value.__func__ for value in vars(module).values()
             if isinstance(value, types.MethodType) and value.__self__ is module and isinstance(value.__func__, types.FunctionType)]
    methods += [function for function in bound if function not in methods]
    # (what a decorated method's wrapper runs: `fn` of `def eval_decorator(fn)`)
    return methods + [inner for function in methods for inner in wrapped(function) if inner not in methods]


def _is_state(owner: torch.nn.Module, attr: str) -> bool:
    """An instance attribute (or one forward creates), not a weight, submodule or method."""
    if attr.startswith("__") or attr in owner._parameters or attr in owner._buffers or attr in owner._modules:
        return False
    if attr in owner.__dict__:
        return not is_module_list(owner.__dict__[attr])  # (`self.gate_instances`: modules, not state)
    on_class = inspect.getattr_static(type(owner), attr, _ABSENT)
    return on_class is _ABSENT or not (callable(on_class) or hasattr(on_class, "__get__"))


def _unrolled_over_modules(comp: ast.ListComp | ast.GeneratorExp, constant_of, attributes: ModuleAttributes) -> ast.List | None:
    """`[e(g) for g in mods]` as `[e(mods[0]), e(mods[1]), ...]` when `mods` is a list of
    modules known here and `e` reads an attribute variable of some item (`g.saved_action`),
    else None. Python evaluates `mods` once and `e` per item in order; the list is constant,
    so reading `mods[k]` instead of the item is the same. (A generator's element must call
    nothing but methods of what it reads from the item: `_reads_only`.)"""
    if len(comp.generators) != 1:
        return None
    generator = comp.generators[0]
    if generator.ifs or generator.is_async or not isinstance(generator.target, ast.Name):
        return None
    modules = constant_of(generator.iter)
    if not (is_module_list(modules) or isinstance(modules, (torch.nn.ModuleList, torch.nn.Sequential))):
        return None
    target = generator.target.id
    if any(isinstance(n, ast.comprehension) and target in {t.id for t in ast.walk(n.target) if isinstance(t, ast.Name)}
           for n in ast.walk(comp.elt)):
        return None  # (an inner comprehension rebinds the name)
    read = {n.attr for n in ast.walk(comp.elt) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == target}
    if not any((id(module), attr) in attributes._by_key for module in modules for attr in read):
        return None
    if isinstance(comp, ast.GeneratorExp) and not _reads_only(comp.elt, target, attributes.attribute_names):
        return None

    class Item(ast.NodeTransformer):
        def __init__(self, k: int):
            self.k = k

        def visit_Name(self, node: ast.Name):
            if node.id != target:
                return node
            item = ast.Subscript(value=copy.deepcopy(generator.iter), slice=ast.Constant(self.k), ctx=ast.Load())
            return ast.copy_location(item, node)

    elements = [Item(k).visit(copy.deepcopy(comp.elt)) for k in range(len(modules))]
    unrolled = ast.copy_location(ast.List(elts=elements, ctx=ast.Load()), comp)
    for node in ast.walk(unrolled):
        if "lineno" in node._attributes and not hasattr(node, "lineno"):
            ast.copy_location(node, comp)
    return unrolled


def _reads_only(expr: ast.expr, target: str, variables: set[str]) -> bool:
    """Whether evaluating `expr` calls nothing but methods of attribute variables read from
    `target` (`h.saved_log_prob.float()`: the item's own modules are never called) and
    assigns nothing: computed early, it is the same."""
    def first_attribute(node) -> str | None:
        while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
            inner = node.func if isinstance(node, ast.Call) else node.value
            if isinstance(node, ast.Attribute) and isinstance(inner, ast.Name) and inner.id == target:
                return node.attr
            node = inner
        return None

    for node in ast.walk(expr):
        if isinstance(node, (ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Lambda)):
            return False
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Attribute) and first_attribute(node.func.value) in variables):
            return False
    return True


def _constant_index(node: ast.expr) -> int | None:
    """The int an index written as a literal denotes (`0`, `-1`), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant_index(node.operand)
        return -inner if inner is not None else None
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _assigned(value) -> bool:
    return value is not V.MISSING and value is not PARTIAL


def _has_marks(stmt: ast.AST) -> bool:
    return any(getattr(n, "dycl_local", None) for n in ast.walk(stmt))


def _names_attribute(stmt: ast.AST, names: set[str]) -> bool:
    """Whether `stmt` reads or writes an attribute by the name of one that has a variable (it
    may reach that variable through a module known here: `g.saved_action`)."""
    return any(isinstance(n, ast.Attribute) and n.attr in names for n in ast.walk(stmt))


__all__ = ["ModuleAttributes", "PARTIAL", "Poisoned", "AttributeStateRead"]

