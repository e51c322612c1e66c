"""State that outlives a call: module attributes that forward carries from one call to the next.

Research code keeps such state on the module: a streaming RNN's `self.hidden` (`if
self.hidden is None: self.hidden = ...`), a counter (`self.calls += 1`), the REINFORCE buffer
`self.saved_actions.append(action)`, filled in forward at inference too. A compiled model
owns these attributes and carries them exactly as PyTorch does:

- each one is a *slot*: the host function takes its value at the start of a call as extra
  arguments (after the model's inputs) and returns its value at the end as extra results
  (after the model's). The func attribute `dycl.state` (JSON, `record`) says which arguments
  and results belong to which attribute path (`"control.hidden"`);
- a list that forward only appends to (`self.saved_actions.append(a)`, `.extend(...)`) is an
  *append* slot: the call starts from an empty list and returns what it appended, which the
  runtime appends to the stored list (the items of earlier calls never enter the program).
  Any other use of such a list in forward is refused: the compiled call does not see them;
- a slot's kind comes from the module's value when compiling: a tensor, a Python int, float
  or bool, or None that becomes a tensor (an *optional* slot: a bool "present" argument and a
  tensor of the type the call assigns). What the call leaves must have the slot's kind and
  type, so that the next call can take it; a None slot learns its tensor type from the call.
  A tuple of tensors (an LSTM's `(h, c)`: `out, self.state = self.lstm(x, self.state)`) is
  one slot whose value is the tuple: an argument per item (after the "present" flag of a
  None-started one); `compiled.state[path]` is the tuple;
- optional slots that are None when compiling and that every call leaves as tensors are
  None together (at the first call) or present together (after it): they share one
  "present" flag in the program, so that `if self.h is None:` tells about `self.c` too
  (`present_with` in the record; the runtime refuses a state where they disagree).

A registered buffer that forward changes in place or assigns (a KV cache,
`self.cache_k[:bsz, start_pos:start_pos + seqlen] = xk`; `self.steps += 1`) is a tensor slot
too, never a weight: found in the methods' text (`_changed_tensors`) or where a run changes it
(`changed_weight`: `ChangedBuffer`, through an alias or a helper), and, in code run as one
captured block, read and written through export's lifted buffer (`buffer_values`,
`rebind_buffers`).

Which attributes are state is found while compiling: `attributes.ModuleAttributes` raises
`PersistentState` where an attribute is read from the module and assigned in the same call
(or read after being assigned on some paths only), and the importer compiles again with that
attribute as a slot (`import_module`); a None slot, once its type is known, and a slot whose
value the call may leave as None cause one more compile. Lists appended to in any method of
the model's classes are append slots from the start; one that forward assigns
(`self.gate_probs = []`, a per-call variable) is dropped again (`Demoted`).
"""

from __future__ import annotations

import ast
import copy
import types
from dataclasses import dataclass

import torch

from dycl.frontend import values as V
from dycl.frontend.callees import is_module_list, module_named, wrapped
from dycl.frontend.nodes import fresh_id
from dycl.frontend.errors import FrontendError

APPEND_METHODS = ("append", "extend")
MAX_ATTEMPTS = 12  # compiles of one forward while its state is found (each finds one more fact)


class Recompile(BaseException):
    """The importer must compile forward again with what this says about its state. (Not an
    Exception: no fallback of the compiler that tries another way may swallow it.)"""


class PersistentState(Recompile):
    """Compiling found an attribute whose value one call leaves for the next (`owner.attr`)."""

    def __init__(self, owner: torch.nn.Module, attr: str, node: ast.AST):
        super().__init__(attr)
        self.owner, self.attr, self.node = owner, attr, node


class Widened(Recompile):
    """A slot whose kind the call changes (a None that became a tensor): compile again."""


class ChangedBuffer(Recompile):
    """A run changed a registered buffer in place (export's `BUFFER_MUTATION`, or the example
    run changed it): forward keeps state in it. Compile again with the buffer as a slot."""

    def __init__(self, owner: torch.nn.Module, attr: str):
        super().__init__(attr)
        self.owner, self.attr = owner, attr


class Demoted(Recompile):
    """An append slot that forward assigns: a per-call variable, not a list kept across calls."""

    def __init__(self, owner: torch.nn.Module, attr: str):
        super().__init__(attr)
        self.owner, self.attr = owner, attr


@dataclass
class Slot:
    owner: torch.nn.Module
    attr: str
    path: str  # "control.hidden"
    kind: str  # "tensor" | "int" | "float" | "bool" | "optional" | "none" | "append"
    type: object = None  # the tensor type of a "tensor" or "optional" slot (a tuple of them: a tuple slot)
    present_with: Slot | None = None  # (an optional slot None exactly when this one is)
    started_none: bool = False  # (None in the module when compiled)
    ungrouped: bool = False  # (a call may leave it None: its own flag)

    @property
    def text(self) -> str:
        return f"self.{self.path}"

    @property
    def argument_name(self) -> str:
        return "state_" + self.path.replace(".", "_")

    @property
    def types(self) -> tuple:
        """The tensor types of its arguments (one per item of a tuple)."""
        return self.type if isinstance(self.type, tuple) else (self.type,)

    def leaves(self, value) -> list:
        return list(value) if isinstance(self.type, tuple) else [value]

    def names(self) -> list[str]:
        if not isinstance(self.type, tuple):
            return [self.argument_name]
        return [f"{self.argument_name}_{k}" for k in range(len(self.type))]

    def structured(self, leaves: list):
        return V.Tup(tuple(leaves), "tuple") if isinstance(self.type, tuple) else leaves[0]


class CallState:
    """The slots of one model's forward, kept across the importer's compiles."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self._paths = {id(module): prefix for prefix, module in model.named_modules()}
        self.slots: dict[tuple[int, str], Slot] = {}
        self.demoted: set[tuple[int, str]] = set()
        for owner, attr in _appended_lists(model):
            self.slots[(id(owner), attr)] = Slot(owner, attr, self._path(owner, attr), "append")
        for owner, attr in _changed_tensors(model):  # (`self.running.mul_(0.9)`, `self.cache_k[:b, p:p + n] = xk`)
            self._tensor_slot(owner, attr)
        self.attempts = 0

    def _tensor_slot(self, owner: torch.nn.Module, attr: str) -> None:
        value, path = value_of(owner, attr), self._path(owner, attr)
        self.slots[(id(owner), attr)] = Slot(owner, attr, path, "tensor", _type_of(value, path))

    def buffers(self) -> set[tuple[int, str]]:
        """(id(module), name) of the registered buffers that are slots."""
        return {key for key, slot in self.slots.items() if slot.attr in slot.owner._buffers}

    def buffer_paths(self) -> frozenset[str]:
        """The state_dict keys of the registered buffers that are slots."""
        return frozenset(slot.path for slot in self.slots.values() if slot.attr in slot.owner._buffers)

    def buffer_values(self, attributes, env: dict) -> dict:
        """path -> the IR value a buffer slot holds at this point of the call (what a
        captured block that reads the buffer reads)."""
        values = {}
        for slot in self.slots.values():
            value = env.get(attributes.state_variable(slot.owner, slot.attr))
            if slot.attr in slot.owner._buffers and isinstance(value, V.Dyn):
                values[slot.path] = value.value
        return values

    def rebind_buffers(self, compiler, env: dict, live, stmt, captured, values: list) -> list:
        """`values` (what a run returned) without the new values of the buffer slots it
        changed inside a captured block (its last results): those become the slots' values,
        and the values of every variable bound to the same memory (`_rebind_mutated`)."""
        if not captured.mutated_buffers:
            return values
        count = len(captured.mutated_buffers)
        by_path = {slot.path: slot for slot in self.slots.values()}
        mutations = []
        for path, value, type_ in zip(captured.mutated_buffers, values[-count:], captured.result_types[-count:]):
            slot = by_path[path]
            old = env[compiler.attributes.state_variable(slot.owner, slot.attr)]
            mutations.append((old, V.Dyn(value, type_, old.example)))
        compiler._rebind_mutated(env, live, stmt, mutations)
        return values[:-count]

    def changed_weight(self, name: str, refusal: FrontendError) -> BaseException:
        """What to raise for a run that changed the weight `name` (a state_dict key) in place:
        a buffer becomes a slot (compile again), a parameter is refused."""
        owner_path, _, attr = name.rpartition(".")
        try:
            owner = self.model.get_submodule(owner_path) if owner_path else self.model
        except AttributeError:
            return refusal
        if attr not in owner._buffers or (id(owner), attr) in self.slots:
            return refusal
        return ChangedBuffer(owner, attr)

    def _path(self, owner, attr: str) -> str:
        prefix = self._paths.get(id(owner), "")
        return f"{prefix}.{attr}" if prefix else attr

    # ----- between compiles ------------------------------------------------------------

    def add(self, found: PersistentState, error) -> None:
        """A new slot for the attribute `found` names, of the kind of its module value."""
        key = (id(found.owner), found.attr)
        value = value_of(found.owner, found.attr, _ABSENT)
        path = self._path(found.owner, found.attr)
        if key in self.slots or value is _ABSENT:
            raise error(found.node, f"`self.{path}` is module state that persists from one call to the next, "
                        "and forward assigns it before the module has a value for it",
                        f"give it a value in `__init__` (for example `self.{found.attr} = None`)")
        kind = _kind_of(value)
        if kind is None:
            raise error(found.node, f"`self.{path}`, a {type(value).__name__} that persists from one call to the next",
                        "keep a tensor, a tuple of tensors, a Python int/float/bool or None there (or a list that forward only appends to)")
        try:
            type_ = _type_of(value, path) if kind == "tensor" else None
        except UnsupportedState as refused:
            raise error(found.node, str(refused), refused.hint) from None
        self.slots[key] = Slot(found.owner, found.attr, path, kind, type_, started_none=value is None)
        if value is None:
            # its group starts over as None (the first call's case): one compile then learns
            # the types of all of them, which a call sets together
            for slot in self.slots.values():
                if slot.started_none and not slot.ungrouped and slot.kind == "optional":
                    slot.kind, slot.type = "none", None
        self._group_nones()

    def _group_nones(self) -> None:
        """Optional (and None) slots that are None when compiling share one "present" flag
        (the first's), until a call may leave one of them None (`widen` ungroups it)."""
        grouped = [s for s in self.slots.values() if s.started_none and s.kind in ("none", "optional") and not s.ungrouped]
        for slot in grouped:
            slot.present_with = grouped[0] if slot is not grouped[0] else None

    def demote(self, found: Demoted) -> None:
        key = (id(found.owner), found.attr)
        self.slots.pop(key, None)
        self.demoted.add(key)

    def next_attempt(self, error, node) -> None:
        self.attempts += 1
        if self.attempts > MAX_ATTEMPTS:
            raise error(node, "module state whose kind changes from call to call",
                        "give each attribute forward keeps one kind and shape on every call")

    # ----- compiling -------------------------------------------------------------------

    def register(self, attributes) -> None:
        """Make every slot an attribute variable of the call (`ModuleAttributes`)."""
        for slot in self.slots.values():
            attributes.state_variable(slot.owner, slot.attr, append=slot.kind == "append")

    def arguments(self) -> list[tuple[str, object]]:
        """(name, example) of the host function's extra arguments, slot by slot."""
        leaves = []
        for slot in self.slots.values():
            value = value_of(slot.owner, slot.attr)
            if slot.kind == "tensor":
                leaves += [(name, item.detach().clone()) for name, item in zip(slot.names(), slot.leaves(value))]
            elif slot.kind in ("int", "float", "bool"):
                leaves.append((slot.argument_name, value))
            elif slot.kind == "optional":
                present = value is not None
                examples = [v.detach().clone() for v in slot.leaves(value)] if present else [_zeros(t) for t in slot.types]
                leaves += [(slot.argument_name + "_present", present), *zip(slot.names(), examples)]
        return leaves

    def bind(self, attributes, env: dict, arguments: list) -> None:
        """Each slot's variable at the entry: its arguments (an append slot: an empty list)."""
        arguments = iter(arguments)
        presents: dict[int, V.Dyn] = {}
        for slot in self.slots.values():
            name = attributes.state_variable(slot.owner, slot.attr, append=slot.kind == "append")
            if slot.kind == "tensor":
                env[name] = slot.structured([next(arguments) for _ in slot.types])
            elif slot.kind in ("int", "float", "bool"):
                env[name] = next(arguments)
            elif slot.kind == "optional":
                present = next(arguments)
                if slot.present_with is not None:  # (None exactly when that one is: one flag)
                    present = presents[id(slot.present_with)]
                presents[id(slot)] = present
                env[name] = V.Maybe(present, slot.structured([next(arguments) for _ in slot.types]))
            elif slot.kind == "none":
                env[name] = V.Const(None)
            else:
                env[name] = V.Tup((), "list")

    def finals(self, attributes, env: dict) -> list:
        return [env.get(attributes.state_variable(s.owner, s.attr, append=s.kind == "append"), V.UNDEF)
                for s in self.slots.values()]

    def learn(self, found: Recompile, error) -> None:
        if isinstance(found, PersistentState):
            self.add(found, error)
        elif isinstance(found, ChangedBuffer):
            self._tensor_slot(found.owner, found.attr)
        elif isinstance(found, Demoted):
            self.demote(found)

    def widen(self, finals: list, error, node) -> bool:
        """Check what the call leaves in each slot against the slot's kind; True when a slot
        must change kind (a None that became a tensor, a tensor the call may leave None) and
        the forward must be compiled again."""
        changed = False
        final_of = {id(slot): final for slot, final in zip(self.slots.values(), finals)}
        for slot, final in zip(self.slots.values(), finals):
            if slot.kind == "append":
                continue
            if final is V.UNDEF:
                raise error(node, f"`{slot.text}` is not assigned on every path of forward")
            leaf_type, may_be_none = _leaf(final)
            leader = slot.present_with or slot
            grouped = slot.present_with is not None or any(s.present_with is slot for s in self.slots.values())
            if may_be_none and grouped and all(_same_presence(f, final_of[id(leader)]) for s, f in zip(self.slots.values(), finals)
                                                if s.present_with is leader):
                pass  # (None exactly where its group is: on every path the call sets all or none of them)
            elif may_be_none and grouped:
                # a call may leave it None: its None-ness is its own
                slot.ungrouped, changed = True, True
                for other in self.slots.values():
                    other.present_with = None
                self._group_nones()
            if slot.kind in ("tensor", "optional", "none") and leaf_type is not None and slot.type is None:
                slot.type = leaf_type
            if slot.kind in ("int", "float", "bool"):
                if leaf_type != V.type_of_example(_SCALAR_EXAMPLES[slot.kind]) or may_be_none:
                    raise self._changes(slot, final, error, node)
                continue
            if leaf_type is not None and leaf_type != slot.type or leaf_type is None and not may_be_none:
                raise self._changes(slot, final, error, node)
            wanted = "optional" if may_be_none or slot.kind in ("optional", "none") else "tensor"
            if leaf_type is None and slot.kind == "none":
                wanted = "none"
            if wanted != slot.kind:
                slot.kind, changed = wanted, True
        return changed

    def _changes(self, slot: Slot, final, error, node) -> FrontendError:
        what = slot.type if slot.kind in ("tensor", "optional") else slot.kind
        if isinstance(what, tuple):
            started = f"a tuple of {', '.join(V.describe_type(t) for t in what)}"
        else:
            started = V.describe_type(what) if not isinstance(what, str) else "a Python " + what
        return error(
            node, f"`{slot.text}` is module state kept from one call to the next, and a call leaves "
            f"{V.kind_of(final, detailed=True)} where the call started from {started}",
            f"give `{slot.text}` the same kind, shape and dtype at the end of every call as at its start",
        )

    def record(self, arg_offset: int, trees: list) -> list[dict]:
        """The JSON the func attribute `dycl.state` holds: per slot, its path, kind, the
        indices of its arguments and the output tree of its results."""
        entries, index = [], arg_offset
        for slot, tree in zip(self.slots.values(), trees):
            count = {"tensor": len(slot.types), "int": 1, "float": 1, "bool": 1, "optional": 1 + len(slot.types)}.get(slot.kind, 0)
            entry = {"path": slot.path, "kind": slot.kind, "args": list(range(index, index + count)), "tree": tree}
            if isinstance(slot.type, tuple) and slot.kind in ("tensor", "optional"):
                # (the runtime's kinds: a tuple's items each with their dtype and shape)
                entry["kind"] = "tuple" if slot.kind == "tensor" else "optional_tuple"
                entry["items"] = [{"dtype": _dtype_name(t), "shape": list(t.shape)} for t in slot.type]
            if slot.present_with is not None and slot.kind == "optional":
                entry["present_with"] = slot.present_with.path
            entries.append(entry)
            index += count
        return entries

    def initial_values(self) -> dict:
        """attribute path -> the module's value (what the compiled model starts from)."""
        return {slot.path: copy.deepcopy(value_of(slot.owner, slot.attr)) for slot in self.slots.values()}


_ABSENT = object()
_SCALAR_EXAMPLES = {"int": 0, "float": 0.0, "bool": False}


def changed_weight(state: CallState | None, name: str, refusal: FrontendError) -> BaseException:
    """What the compiler raises for a run that changed the weight `name` in place."""
    return refusal if state is None else state.changed_weight(name, refusal)


def value_of(owner: torch.nn.Module, attr: str, default=None):
    """The module's value of an attribute kept across calls: a registered buffer, or an
    instance attribute."""
    if attr in owner._buffers:
        return owner._buffers[attr]
    return owner.__dict__.get(attr, default)


def _kind_of(value) -> str | None:
    if isinstance(value, torch.Tensor) or _is_tensor_tuple(value):
        return "tensor"
    if value is None:
        return "none"
    for kind in ("bool", "int", "float"):  # (bool first: a bool is an int)
        if isinstance(value, {"bool": bool, "int": int, "float": float}[kind]):
            return kind
    return None


def _same_presence(a, b) -> bool:
    """Whether two final values are None on the same paths: their "present" flags are one
    value, or results of one `scf.if` that yields the same flags on each branch."""
    present = [v.present if isinstance(v, V.Maybe) else V.Const(v is not None and not (isinstance(v, V.Const) and v.value is None))
               for v in (a, b)]
    if all(isinstance(p, V.Const) for p in present):
        return present[0].value == present[1].value
    if not all(isinstance(p, V.Dyn) for p in present):
        return False
    return same_value(present[0].value, present[1].value)


def same_value(a, b, depth: int = 8) -> bool:
    """Whether two IR values are one value on every path: the same value, equal bool
    constants, or results of one `scf.if` whose branches yield such values."""
    if a == b:
        return True
    if depth == 0:
        return False
    a, b = a.maybe_downcast(), b.maybe_downcast()
    if not (hasattr(a, "result_number") and hasattr(b, "result_number")):
        return False
    op_a, op_b = a.owner, b.owner
    if op_a.name == op_b.name == "torch.constant.bool":
        return str(op_a.attributes["value"]) == str(op_b.attributes["value"])
    if op_a != op_b or op_a.name != "scf.if":
        return False
    for region in op_a.regions:
        block = region.blocks[0]
        yielded = list(block.operations[len(block.operations) - 1].operands)
        if not same_value(yielded[a.result_number], yielded[b.result_number], depth - 1):
            return False
    return True


def _is_tensor_tuple(value) -> bool:
    return isinstance(value, tuple) and bool(value) and all(isinstance(v, torch.Tensor) for v in value)


class UnsupportedState(ValueError):
    """Module state of a dtype the host IR has no type for (`self.phase`, complex64)."""

    def __init__(self, path: str, dtype):
        super().__init__(f"`self.{path}` is module state kept from one call to the next, a {str(dtype).removeprefix('torch.')} tensor, "
                         "a dtype DyCL does not compile")
        self.hint = "keep it as real tensors (`torch.view_as_real`), of a float, integer or bool dtype"


def _type_of(value, path: str):
    """The IR type of a tensor, a tuple of them for a tuple of tensors."""
    types = []
    for item in value if isinstance(value, tuple) else (value,):
        try:
            types.append(V.type_of_example(item))
        except ValueError:  # (dtypes.element_type: "unsupported dtype complex64")
            raise UnsupportedState(path, item.dtype) from None
    return tuple(types) if isinstance(value, tuple) else types[0]


def _dtype_name(type_) -> str:
    return str(torch.empty(0, dtype=V.tensor_dtype(type_)).numpy().dtype)


def _leaf(value) -> tuple[object, bool]:
    """(the IR type a final value holds, or None; whether it may be None); of a tuple of
    tensors, the tuple of their types."""
    if isinstance(value, V.Tup) and value.kind == "tuple" and value.items:
        items = [_leaf(item) for item in value.items]
        if all(isinstance(item, V.Dyn) and V.is_tensor_type(item.type) for item in value.items):
            return tuple(t for t, _ in items), False
        return None, False
    if isinstance(value, V.Maybe):
        inner, _ = _leaf(value.value)
        return inner, True
    if isinstance(value, V.Const):
        if value.value is None:
            return None, True
        try:
            return V.type_of_example(value.value), False
        except (TypeError, ValueError):
            return None, False
    if isinstance(value, V.Dyn):
        return value.type, False
    return None, False


def _zeros(type_) -> torch.Tensor:
    return torch.zeros(tuple(type_.shape), dtype=V.tensor_dtype(type_))


def _methods(model: torch.nn.Module):
    """(module, the parsed method, its `self` name) of every method of the model's own classes."""
    from dycl.frontend.rewrite import parse_function

    for module in model.modules():
        for klass in type(module).__mro__:
            if klass.__module__.partition(".")[0] in ("torch", "builtins"):
                continue
            for name, method in vars(klass).items():
                if not isinstance(method, types.FunctionType) or name == "__init__":
                    continue
                for function in [method, *wrapped(method)]:  # (a decorated method's wrapper runs them)
                    try:
                        fdef = parse_function(function).node
                    except Exception:  # no source: never compiled
                        continue
                    if fdef.args.args:
                        yield module, fdef, fdef.args.args[0].arg


def _appended_lists(model: torch.nn.Module) -> list[tuple[torch.nn.Module, str]]:
    """(module, attribute) of every list attribute that a method of the model's own classes
    appends to or extends (`self.saved_actions.append(a)`, `self.control.log.extend(xs)`)."""
    found = []
    for module, fdef, self_name in _methods(model):
        for node in ast.walk(fdef):
            receiver = _appended(node)
            if receiver is None:
                continue
            owner = module_named(receiver.value, self_name, module)
            value = owner.__dict__.get(receiver.attr) if owner is not None else None
            if type(value) is list and not is_module_list(value):  # (`self.gate_instances`: constant modules)
                if not any(o is owner and a == receiver.attr for o, a in found):
                    found.append((owner, receiver.attr))
    return found


def _changed_tensors(model: torch.nn.Module) -> list[tuple[torch.nn.Module, str]]:
    """(module, attribute) of every tensor attribute or registered buffer (not a parameter)
    that a method of the model's own classes changes in place or assigns: `self.running.mul_(0.9)`,
    `self.memory.data.zero_()`, `self.buf[0] = v`, `self.buf[:, k] += v`, `self.steps += 1`
    on a buffer. (A change through another name, `k_out = self.k_cache; k_out[i] = v`, is
    seen where it runs: `CallState.changed_weight`.)"""
    found = []
    for module, fdef, self_name in _methods(model):
        parents = {child: node for node in ast.walk(fdef) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(fdef):
            if not isinstance(node, ast.Attribute):
                continue
            owner = module_named(node.value, self_name, module)
            if owner is None:
                continue
            is_buffer = isinstance(owner._buffers.get(node.attr), torch.Tensor)
            if not (is_buffer or isinstance(owner.__dict__.get(node.attr), torch.Tensor)):
                continue
            use = parents.get(node)
            if isinstance(node.ctx, ast.Store):  # (a buffer assigned: `self.steps += 1`, `self.buf = ...`)
                in_place = is_buffer
            else:
                if isinstance(use, ast.Attribute) and use.attr == "data":
                    use = parents.get(use)
                in_place = (isinstance(use, ast.Attribute) and use.attr.endswith("_") and not use.attr.startswith("_")
                            or isinstance(use, ast.Subscript) and isinstance(use.ctx, ast.Store))
            if in_place and not any(o is owner and a == node.attr for o, a in found):
                found.append((owner, node.attr))
    return found


def _appended(node: ast.AST) -> ast.Attribute | None:
    """`X.attr` of a statement `X.attr.append(...)` / `.extend(...)`."""
    if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr in APPEND_METHODS and isinstance(node.value.func.value, ast.Attribute)):
        return node.value.func.value
    return None


def hoist_appended_items(stmts: list[ast.stmt], names: set[str]) -> None:
    """Consecutive `self.saved_actions.append(<expr>)` statements as `__item = <expr>` for
    each, then the appends (in place, in every statement list): the items are computed in
    the run of the statements before them, with the Python objects those made (`dist =
    Bernoulli(logits=...)`, then `append(dist.log_prob(a))`). Python computes the same:
    forward reads an append slot nowhere, so an earlier append cannot change a later item."""
    for holder in ast.walk(ast.Module(body=stmts, type_ignores=[])):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(holder, field, None)
            if not isinstance(body, list):
                continue
            k = 0
            while k < len(body):
                j = k
                while j < len(body) and getattr(_appended(body[j]), "dycl_local", None) in names:
                    j += 1
                if j == k:
                    k += 1
                    continue
                items = []
                for stmt in body[k:j]:
                    call = stmt.value
                    if len(call.args) == 1 and not call.keywords and not isinstance(call.args[0], ast.Name):
                        item = f"__item{fresh_id()}_{call.func.value.attr}"
                        items.append(ast.copy_location(ast.Assign(targets=[ast.Name(item, ast.Store())], value=call.args[0]), stmt))
                        call.args[0] = ast.copy_location(ast.Name(item, ast.Load()), call.args[0])
                body[k:k] = items
                k = j + len(items)


def check_append_only(stmt: ast.stmt, names: set[str], describe, error) -> None:
    """A statement DyCL compiles uses an append slot's variable (`names`) only as the
    receiver of a statement `.append(...)` / `.extend(...)`: the compiled call holds only the
    items it appends itself."""
    allowed = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute) \
                and node.value.func.attr in APPEND_METHODS and isinstance(node.value.func.value, ast.Name):
            allowed.add(id(node.value.func.value))
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and node.id in names and id(node) not in allowed:
            text = describe(node.id)
            raise error(
                node, f"`{text}` is read in forward, a list kept from one call to the next that the "
                "compiled model only appends to (each call holds only the items it appends)",
                f"only append to `{text}` in forward (read it from the compiled model's "
                f"`state['{text[len('self.'):]}']` afterwards), or keep what forward reads in a local list",
            )


__all__ = ["CallState", "UnsupportedState", "Recompile", "PersistentState", "ChangedBuffer", "Demoted", "Widened", "Slot",
           "check_append_only"]
