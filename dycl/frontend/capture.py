"""Capture one straight-line statement run: `torch.export` it and import it with torch-mlir.

Each run becomes a private `func.func` in the importer's module; the host builder calls it
and `stitch.py` later inlines the body into `forward`. Parameters and buffers become
`dycl.param` references (never literals), small tensor constants inline `dense<...>` literals.
"""

from __future__ import annotations

import functools
import operator
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch
from torch.export import Dim
from torch.export.graph_signature import ConstantArgument, InputKind, OutputKind, SymBoolArgument, SymFloatArgument, SymIntArgument
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_dialect
from torch_mlir.extras.fx_decomp_util import get_decomposition_table
from torch_mlir.extras.fx_importer import FxImporter, FxImporterHooks, InputInfo
from xdsl.ir import Attribute

from dycl.dialects.torch_ops import NO_VALUE, refused_random
from dycl.frontend import complex_values
from dycl.frontend.build import RandomOpRefused, check_host_op
from dycl.frontend.export_cache import ExportCache, rename, renaming
from dycl.frontend.hop import HopImporter
from dycl.frontend.values import parse_type

# Name of the submodule under which a run wrapper holds the user's model; export names
# its parameters `model.<state_dict key>`.
_MODEL_ATTR = "model"

# A tensor constant created inside forward larger than this is almost certainly a weight
# the model forgot to register: refuse to write it into the IR.
MAX_LITERAL_ELEMENTS = 4096


def new_context() -> ir.Context:
    context = ir.Context()
    torch_dialect.register_dialect(context)
    # torch_c.to_i1 and dycl.param are not registered in torch-mlir's Python context.
    context.allow_unregistered_dialects = True
    return context


class _WeightReferences(FxImporterHooks):
    """Parameters and buffers become `dycl.param` ops named by their state_dict key."""

    def __init__(self):
        self.names: set[str] = set()
        # While a cached export is imported again: its module paths -> this run's paths.
        self.renames: dict[str, str] = {}
        # A weight with two names (tied: `self.lm_head.weight = self.wte.weight`) -> the one
        # `named_parameters()` keeps, under which the weight store holds it.
        self.canonical: dict[str, str] = {}

    def resolve_input(self, gni, value, info: InputInfo):
        name = rename(info.input_spec.target.removeprefix(_MODEL_ATTR + "."), self.renames)
        name = self.canonical.get(name, name)
        self.names.add(name)
        return ir.Operation.create(
            "dycl.param",
            results=[info.ir_type],
            attributes={"name": ir.StringAttr.get(name)},
        ).result

    def resolve_literal(self, gni, literal, info):
        if not isinstance(literal, torch.Tensor):
            return None
        if literal.numel() > MAX_LITERAL_ELEMENTS:
            raise ValueError(
                f"a {tuple(literal.shape)} tensor constant is created inside forward; "
                "register it as a buffer so that it goes to the weight store"
            )
        # (not np.ascontiguousarray: it makes a 0-d value 1-d, a tensor<1xf32> for a `[]` type)
        array = literal.detach().cpu().numpy().copy(order="C")
        # signless=False: si64 elements, as the vtensor type says (torch-mlir's convention).
        attr = ir.DenseElementsAttr.get(array, signless=False, shape=list(array.shape))
        vtensor = gni._cc.tensor_to_vtensor_type(literal)
        return ir.Operation.create(
            "torch.vtensor.literal", results=[vtensor], attributes={"value": attr}
        ).result


class _RunModule(torch.nn.Module):
    """Calls one run with the original model as `self`; takes and returns flat tensors/ints.

    `weights` is the model itself or a skeleton holding only the submodules the run calls,
    at their own paths, so that export lifts (and names) only the parameters it uses.
    """

    def __init__(self, model: torch.nn.Module, weights: torch.nn.Module, run: Callable, anchored: bool = False):
        super().__init__()
        setattr(self, _MODEL_ATTR, weights)
        self._model = [model]  # a list: not registered as a submodule
        self._run = run
        self._anchored = anchored  # the last input is an `_anchor()`, which the run does not take

    def forward(self, *flat_inputs):
        return self._run(self._model[0], *(flat_inputs[:-1] if self._anchored else flat_inputs))


def _anchor() -> torch.Tensor:
    """The input a run of no inputs is exported with, and ignores. torch.export inserts the
    constants it lifts (a module's tensor attributes, buffers outside the exported modules)
    before the graph's first user input; in a graph with none it inserts them before the
    graph's first node, which is often one of those constants, removed once lifted: every
    constant after it is lost ("Argument 'lifted_tensor_1' ... used before it has been
    defined"), as for `a = self.timing_signal; b = self.position_signal`. The imported
    func keeps it as an unused last argument, which `splice` never binds."""
    return torch.zeros(())


def tied_names(model: torch.nn.Module) -> dict[str, str]:
    """Each other name of a parameter or buffer that has several (weight tying: one tensor
    at `wte.weight` and `lm_head.weight`) -> the name `named_parameters()` and
    `named_buffers()` keep. A run whose skeleton reaches the weight through the other
    module names it by that module's path."""
    first: dict[int, str] = {}
    tied = {}
    for table in (model.named_parameters(remove_duplicate=False), model.named_buffers(remove_duplicate=False)):
        for name, tensor in table:
            kept = first.setdefault(id(tensor), name)
            if kept != name:
                tied[name] = kept
    return tied


def _skeleton(model: torch.nn.Module, used: list[torch.nn.Module]) -> torch.nn.Module | None:
    """Plain modules mirroring the paths of the `used` submodules (None: use the whole model)."""
    paths = {id(m): name for name, m in model.named_modules()}
    names = sorted({paths[id(m)] for m in used if id(m) in paths})
    if "" in names:
        return None
    # Keep only the outermost: a called module brings its children along.
    names = [n for n in names if not any(n.startswith(o + ".") for o in names if o != n)]
    root = torch.nn.Module()
    for name in names:
        holder = root
        *parents, leaf = name.split(".")
        for part in parents:
            if part not in holder._modules:
                holder._modules[part] = torch.nn.Module()
            holder = holder._modules[part]
        holder._modules[leaf] = model.get_submodule(name)
    return root


def _lifts_model_weights(program, weight_ids: set[int]) -> bool:
    """True if export captured a parameter/buffer as a constant (the skeleton missed it)."""
    return any(id(value) in weight_ids for value in program.constants.values())


@dataclass
class CapturedRun:
    func_name: str
    result_types: list[Attribute]
    constant: list[bool]  # per result: export found it constant (a Python scalar output)
    # Flat inputs the run mutates in place; the spliced values start with their new values.
    mutated_inputs: list[int] = field(default_factory=list)
    mutated_types: list[Attribute] = field(default_factory=list)
    # The dims known only at run time, grouped by the size export found them to share:
    # each group lists (flat input position, dim) pairs that are one size.
    runtime_sizes: list[list[tuple[int, int]]] = field(default_factory=list)
    # per result: the value of a constant result (None for the others)
    constant_values: list = field(default_factory=list)
    # the registered buffers that are state slots (state.py) the run changes in place, by
    # path: their new values are its last results, after the user outputs
    mutated_buffers: list[str] = field(default_factory=list)
    # per group of `runtime_sizes`: the sizes (lowest, highest or None) the run is right
    # for. Export compares a size with constants (`x[:, -4:]` is 4 long from 4 columns on)
    # and keeps the answer the example gives: the run holds only where that answer does.
    size_ranges: list[tuple[int, int | None]] = field(default_factory=list)

    def range_of(self, group: int) -> tuple[int, int | None]:
        return self.size_ranges[group] if group < len(self.size_ranges) else (2, None)

    def same_constant(self, other: CapturedRun, k: int) -> bool:
        """Whether result `k` is the same constant in both runs (`0` and `0`, not `0` and `False`)."""
        a, b = self.constant_values[k], other.constant_values[k]
        return self.constant[k] and other.constant[k] and type(a) is type(b) and a == b


class SizeTest(Exception):
    """A run would return a test of a size known only at run time (`q.shape[1] > 3` merged
    into the run that made `q`): export keeps it symbolic, torch-mlir cannot return a
    symbolic bool, and the host reads sizes anyway. The statements are compiled one by one,
    the test on the host."""


class SpecializedInput(Exception):
    """Export replaced a runtime int input by its example value (it is 0 or 1, or was used
    where the graph needs a constant): the run would be right on this example only."""

    def __init__(self, position: int):
        super().__init__(position)
        self.position = position


class WeightMutation(Exception):
    """A run mutates a parameter or buffer in place (state that outlives the call)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _is_tensor(value: ir.Value) -> bool:
    return str(value.type).startswith("!torch.vtensor")


_NUMBER_TYPES = frozenset({"!torch.int", "!torch.float", "!torch.bool", "!torch.number"})


_SHAPE_QUERIES = frozenset({"torch.aten.size.int", "torch.aten.numel", "torch.aten.dim", "torch.aten.len.Tensor"})


def _makes_host_scalar(op: ir.Operation, reads_host_scalar: bool) -> bool:
    """Whether `op` makes a number the host computes: from host numbers, from tensor values
    (`.item()`), or the size of a dim known only at run time (`h.size(1)`); read where an op
    takes a Scalar (`full_like(x, n)`), such a number keeps the op in the host."""
    name = op.operation.name
    if not any(str(r.type) in _NUMBER_TYPES for r in op.results) or name.startswith("torch.constant."):
        return False
    tensors = [v for v in op.operands if _is_tensor(v)]
    if name in _SHAPE_QUERIES:
        return reads_host_scalar or any("?" in str(v.type) for v in tensors)
    return reads_host_scalar or bool(tensors)


def _constant_operand(op: ir.Operation, k: int):
    """The Python value of `op`'s operand k when a `torch.constant.*` op makes it (a bool,
    int, float or None), else NO_VALUE."""
    operands = op.operation.operands
    owner = getattr(operands[k].owner, "operation", None) if k < len(operands) else None  # (None: a block argument)
    name = owner.name if owner is not None else ""
    if name == "torch.constant.none":
        return None
    if name not in ("torch.constant.bool", "torch.constant.int", "torch.constant.float"):
        return NO_VALUE
    value = owner.attributes["value"]
    if name == "torch.constant.bool":
        return ir.BoolAttr(value).value
    return ir.IntegerAttr(value).value if name == "torch.constant.int" else ir.FloatAttr(value).value


@dataclass
class RunCapturer:
    """One FxImporter (one MLIR context and module) shared by every run of a model."""

    model: torch.nn.Module
    hooks: _WeightReferences = field(default_factory=_WeightReferences)

    def __post_init__(self):
        self.context = new_context()
        self.importer = FxImporter(
            context=self.context, hooks=self.hooks, graph_node_importer_cls=HopImporter
        )
        self._count = 0
        self._missing_ops: dict[str, bool] = {}
        self._weight_ids = {
            id(t) for t in [*self.model.parameters(), *self.model.buffers()]
        }
        self.cache = ExportCache(self.model)
        self.cache.bind_root(self.model)
        self.hooks.canonical = tied_names(self.model)
        # Registered buffers that are state kept across calls (paths): a run reads their
        # current value (`state_values`, path -> IR value, set before each run is spliced)
        # where export lifted the buffer, and returns its new value where export reports a
        # `BUFFER_MUTATION` (code DyCL runs as one captured block: a hooked submodule).
        self.state_buffers: frozenset[str] = frozenset()
        self.state_values: dict[str, ir.Value] = {}

    @property
    def module(self) -> ir.Module:
        return self.importer.module

    def capture(
        self,
        run: Callable,
        examples: Sequence,
        dynamic_dims: Sequence[Sequence[int]],
        called_modules: Sequence[torch.nn.Module] | None = None,
        cache_key: tuple | None = None,
        fixed_ints: frozenset[int] = frozenset(),
        tied: Mapping[tuple[int, int], int] | None = None,
    ) -> CapturedRun:
        """Export `run(model, *examples)` (tensors and ints) and import it as a private func.

        `dynamic_dims[i]` lists the dims of tensor input i that are unknown in the host IR;
        int inputs are always symbolic (they are data-dependent host values), but for those
        at `fixed_ints`, which the caller calls the run for only when they have their example's value.
        The dims of `tied` ((input, dim) -> a tie) that share a tie are exported as one size.
        """
        anchored = not examples
        if anchored:
            examples, dynamic_dims = [_anchor()], [[]]
        # a complex example that views a real tensor (`view_as_complex(x.reshape(1, -1, 2))`
        # held by a variable): torch's fake tensors rebuild it as `view_as_complex(base)`, which
        # fails where the base's last dim is not 2; a copy has a storage of its own
        examples = [e.clone() if complex_values.is_complex(e) and e._is_view() else e for e in examples]
        specs = []
        tied = tied or {}
        one_size = {tie: Dim(f"tied{tie}") for tie in set(tied.values())}
        for position, (example, dims) in enumerate(zip(examples, dynamic_dims)):
            if isinstance(example, torch.Tensor):
                specs.append({d: one_size[tied[position, d]] if (position, d) in tied else Dim.DYNAMIC for d in dims} or None)
            else:
                specs.append(Dim.DYNAMIC)
        shapes = {"dynamic_shapes": (tuple(specs),)} if specs else {}
        key = paths = None
        if cache_key is not None and called_modules is not None:
            key = self.cache.key(*cache_key, list(called_modules))
            paths = self.cache.outermost(list(called_modules))
        cached = self.cache.get(key) if key is not None else None
        if cached is not None:
            (program, mutated, buffers), old_paths = cached
            return self._import(program, mutated, renaming(old_paths, paths), buffers)
        skeleton = _skeleton(self.model, called_modules) if called_modules is not None else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = None
            if skeleton is not None:
                wrapper = _RunModule(self.model, skeleton, run, anchored).eval()
                program = torch.export.export(wrapper, tuple(examples), strict=False, **shapes)
                if _lifts_model_weights(program, self._weight_ids):
                    program = None
            if program is None:
                key = None  # weights reached outside the called modules: do not rename them
                wrapper = _RunModule(self.model, self.model, run, anchored).eval()
                program = torch.export.export(wrapper, tuple(examples), strict=False, **shapes)
            elif any(isinstance(value, torch.Tensor) for value in program.constants.values()):
                # tensors baked in as constants (a module outside the model, which the call
                # record does not see): another run of the same code may hold other ones
                key = None
            _topk_of_a_runtime_k(program)
            _check_int_inputs_used(program, fixed_ints)
            _check_static_sizes(program)
            _sizes_as_tensors(program)
            _retarget(program, _DETACHES, torch.ops.aten.alias.default)
            program = _functionalize(program)
            _retarget(program, {torch.ops.aten.alias.default}, torch.ops.aten.clone.default)
            complex_values.lower(program)
            program = self._decompose_unknown_ops(program)
            mutated, buffers = _mutations_as_outputs(program, self.state_buffers)
            if any(isinstance(spec.arg, SymBoolArgument) for spec in program.graph_signature.output_specs):
                raise SizeTest()
            _floats_as_number_outputs(program)
        if key is not None:
            self.cache.put(key, (program, mutated, buffers), paths)
        return self._import(program, mutated, {}, buffers)

    def computes_with(self, func_name: str, position: int) -> bool:
        """Whether a captured run does tensor math (not only views, copies and queries) with
        its input at `position`, or with what views and queries made of it."""
        from dycl.dialects.torch_ops import Category, op_info

        free = (Category.TENSOR_QUERY, Category.HOST, Category.CONSTANT)  # (its size is a host int)
        func = self.importer.symbol_table[func_name]
        pending, seen = [func.regions[0].blocks[0].arguments[position]], set()
        while pending:
            for use in pending.pop().uses:
                op = use.owner
                name = op.operation.name
                if name == "func.return" or id(op) in seen:
                    continue
                seen.add(id(op))
                category = op_info(name).category
                if not (category.computation_free or category in free):
                    return True
                pending.extend(op.results)
        return False

    def only_returns(self, func_name: str, position: int) -> bool:
        """Whether a captured run does nothing with its input at `position` but return it."""
        func = self.importer.symbol_table[func_name]
        argument = func.regions[0].blocks[0].arguments[position]
        return all(use.owner.operation.name == "func.return" for use in argument.uses)

    def splice(self, func_name: str, operands: Sequence[ir.Value]) -> list[ir.Value]:
        """Move a run's body to the current insertion point (its arguments become
        `operands`), erase its func and return what it returned; an op of it that would stay
        in the host program untranslated raises `build.NoHostTranslation`. Calls it makes (branches of
        an imported torch.cond) stay calls until `stitch.py` inlines them."""
        func = self.importer.symbol_table[func_name]
        block = func.regions[0].blocks[0]
        host_scalars = [a for a in block.arguments if not _is_tensor(a)]
        for op in list(block.operations):
            name = op.operation.name
            if name == "dycl.param" and ir.StringAttr(op.attributes["name"]).value in self.state_buffers:
                # (a buffer kept across calls: its value in this call, never the weight)
                op.result.replace_all_uses_with(self.state_values[ir.StringAttr(op.attributes["name"]).value])
                op.operation.erase()
                continue
            if name == "torch.operator":  # (an op torch-mlir has no named op for: `torch.operator "aten.is_same_size"`)
                name = ir.StringAttr(op.attributes["name"]).value
                name = name if name.startswith("torch.") else "torch." + name
            if refused_random(name, functools.partial(_constant_operand, op)):
                raise RandomOpRefused(name)
            reads_host_scalar = any(v in host_scalars for v in op.operands)
            check_host_op(name, [str(r.type) for r in op.results], reads_host_scalar)
            if _makes_host_scalar(op, reads_host_scalar):
                host_scalars.extend(op.results)
        for argument, operand in zip(block.arguments, operands):
            argument.replace_all_uses_with(operand)
        *body, ret = list(block.operations)
        results = list(ret.operands)
        here = ir.InsertionPoint.current
        for op in body:
            op.detach_from_parent()
            here.insert(op)
        self.importer.symbol_table.erase(func)
        return results

    def _import(self, program, mutated: list[int], renames: dict[str, str], buffers: list[str]) -> CapturedRun:
        self._count += 1
        name = f"run{self._count}"
        self.hooks.renames = renames
        try:
            func = self.importer.import_program(program, func_name=name, func_visibility="private")
        finally:
            self.hooks.renames = {}
        result_types = [parse_type(str(t)) for t in func.type.results]
        outputs = [spec.arg for spec in program.graph_signature.output_specs if spec.kind == OutputKind.USER_OUTPUT]
        constant = [isinstance(arg, ConstantArgument) for arg in outputs]
        values = [arg.value if isinstance(arg, ConstantArgument) else None for arg in outputs]
        count = len(mutated)  # the first results are the mutated inputs' new values
        groups, ranges = _runtime_sizes(program)
        return CapturedRun(
            name, result_types[count:], constant[count:], list(mutated), result_types[:count], groups, values[count:],
            [rename(b, renames) for b in buffers], ranges,
        )

    def _decompose_unknown_ops(self, program):
        """Decompose only the ops torch-mlir has no named op for (keeps linear/conv2d)."""
        table = {**get_decomposition_table(), **_DECOMPOSITIONS}
        for _ in range(4):
            unknown = {
                node.target
                for node in program.graph.nodes
                if node.op == "call_function"
                and isinstance(node.target, torch._ops.OpOverload)
                and self._is_unknown(node.target)
                and node.target in table
            }
            if not unknown:
                return program
            program = program.run_decompositions({op: table[op] for op in unknown})
        return program

    def _is_unknown(self, op: torch._ops.OpOverload) -> bool:
        schema = op._schema
        namespace, _, name = schema.name.partition("::")
        mlir_name = f"torch.{namespace}.{name}"
        if schema.overload_name:
            mlir_name += f".{schema.overload_name}"
        if mlir_name not in self._missing_ops:
            self._missing_ops[mlir_name] = not self.context.is_registered_operation(mlir_name)
        return self._missing_ops[mlir_name]


def _batch_norm_no_training(input, weight, bias, running_mean, running_var, momentum, eps):
    """Eval-mode batch norm as arithmetic. A functionalized run (one with an in-place op)
    holds `_native_batch_norm_legit_no_training`, which torch-mlir has no op for, and whose
    torch-mlir decomposition (`_native_batch_norm_legit`) mutates the running statistics."""
    shape = [1, -1] + [1] * (input.dim() - 2)
    scale = torch.rsqrt(running_var + eps)
    if weight is not None:
        scale = scale * weight
    out = (input - running_mean.view(shape)) * scale.view(shape)
    if bias is not None:
        out = out + bias.view(shape)
    empty = input.new_zeros((0,))
    return out, empty, empty


_DECOMPOSITIONS = {torch.ops.aten._native_batch_norm_legit_no_training.default: _batch_norm_no_training}


def _user_inputs(program) -> list[tuple[object, object]]:
    """(input spec, placeholder node or None) of each user input, in the run's order."""
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    return [(spec, placeholders.get(getattr(spec.arg, "name", None)))
            for spec in program.graph_signature.input_specs if spec.kind == InputKind.USER_INPUT]


def _runtime_sizes(program) -> tuple[list[list[tuple[int, int | None]]], list[tuple[int, int | None]]]:
    """The symbolic dims of the program's tensor inputs, grouped by their size symbol, and
    the range of sizes export assumed for each group (lowest, highest or None). An int
    input joins its symbol's group as (position, None); an int alone in its group counts
    where export assumed it is not 0 or 1 (`torch.zeros(1, n) + x` broadcasts nothing only
    for n >= 2): the run is then right for n >= 2 only, as for a dim."""
    groups: dict[str, list[tuple[int, int | None]]] = {}
    ints: dict[str, list[tuple[int, None]]] = {}
    symbols: dict[str, Any] = {}
    for position, (_, node) in enumerate(_user_inputs(program)):
        value = node.meta.get("val") if node is not None else None
        if isinstance(value, torch.SymInt) and value.node.expr.free_symbols:
            assumed = program.range_constraints.get(value.node.expr)
            if str(value.node.expr) in groups or assumed is not None and assumed.lower > 0:
                groups.setdefault(str(value.node.expr), [])
                symbols[str(value.node.expr)] = value.node.expr
            ints.setdefault(str(value.node.expr), []).append((position, None))
        if not isinstance(value, torch.Tensor):
            continue
        for dim, size in enumerate(value.shape):
            if isinstance(size, torch.SymInt) and size.node.expr.free_symbols:
                groups.setdefault(str(size.node.expr), []).append((position, dim))
                symbols[str(size.node.expr)] = size.node.expr
    members = [[*members, *ints.get(symbol, [])] for symbol, members in groups.items()]
    return members, [_assumed_range(program, symbols[symbol]) for symbol in groups]


def _assumed_range(program, expr) -> tuple[int, int | None]:
    """The sizes export assumed a group's size expression takes: (2, None), the sizes of
    at least 2 that the size tests split off, unless export bounded it by comparing it with
    a constant. A compound size (`2 * s`) holds where each of its symbols' range does; it
    is reported as (2, None) only when none is bounded."""
    free = list(expr.free_symbols)
    bounds = [program.range_constraints.get(symbol) for symbol in free]
    if len(free) != 1 or expr != free[0]:
        bounded = any(b is not None and (_finite(b.lower) and int(b.lower) > 2 or _finite(b.upper)) for b in bounds)
        return (3, 2) if bounded else (2, None)  # (an empty range: no interval is sound)
    bound = bounds[0]
    if bound is None:
        return (2, None)
    lower = max(int(bound.lower), 2) if _finite(bound.lower) else 2
    return lower, int(bound.upper) if _finite(bound.upper) else None


def _finite(bound) -> bool:
    """Whether a range bound is a number (sympy says `int_oo` is finite)."""
    from torch.utils._sympy.numbers import int_oo

    return bound not in (int_oo, -int_oo) and bool(bound.is_finite)


class DataDependentShape(Exception):
    """A tensor inside a run whose size depends on tensor values (`x[mask]`, `nonzero`, a
    size from `.tolist()`). `frames`: the (file, line) of each `forward` frame export
    recorded for the op that made it, outermost first."""

    def __init__(self, op: str, from_mask: bool, frames: list[tuple[str, int]]):
        super().__init__(op)
        self.op, self.from_mask, self.frames = op, from_mask, frames


# Ops whose result size is the count of selected items (the others take a size as an argument).
_SELECTING_OPS = frozenset({
    "aten.nonzero.default", "aten.nonzero_numpy.default", "aten.where.default", "aten.masked_select.default",
    "aten.index.Tensor", "aten._unique2.default",
    "aten.unique_consecutive.default", "aten.unique_dim.default", "aten.repeat_interleave.Tensor",
    "aten.repeat_interleave.self_Tensor",
})
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in forward')


def _check_static_sizes(program) -> None:
    """Sub-DNNs have static shapes: a size export could only name by an unbacked symbol (it
    depends on the data) cannot be compiled; refuse it here, at the user's statement."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    for node in program.graph.nodes:
        values = node.meta.get("val")
        values = values if isinstance(values, (tuple, list)) else [values]  # (`_unique2` makes three)
        if any(isinstance(value, torch.Tensor) and free_unbacked_symbols(value) for value in values):
            frames = [(m["file"], int(m["line"])) for m in _FRAME.finditer(node.meta.get("stack_trace") or "")]
            raise DataDependentShape(str(node.target), str(node.target) in _SELECTING_OPS, frames)


class IntArithmetic(SpecializedInput):
    """A runtime int is a number in tensor math (`h * k`): a sub-DNN cannot take it."""


# What a symbolic int may feed inside a run: indices, sizes and int arithmetic on them.
_INDEX_OPS = frozenset({
    torch.ops.aten.select.int, torch.ops.aten.slice.Tensor, torch.ops.aten.narrow.default,
    torch.ops.aten.sym_size.int, torch.ops.aten.view.default, torch.ops.aten.reshape.default,
    torch.ops.aten.expand.default, torch.ops.aten.zeros.default, torch.ops.aten.ones.default,
    torch.ops.aten.full.default, torch.ops.aten.arange.default, torch.ops.aten.arange.start,
})


def _check_int_inputs_used(program, fixed_ints: frozenset[int] = frozenset()) -> None:
    """A runtime int the graph never reads was specialized to its example value; one used
    as a number in tensor math must enter as a tensor. (`fixed_ints`: the positions of ints
    the run is captured for one value of, which export may specialize.)"""
    from torch.export.graph_signature import SymIntArgument

    for position, (spec, node) in enumerate(_user_inputs(program)):
        if not isinstance(spec.arg, SymIntArgument) or position in fixed_ints:
            continue
        value = node.meta.get("val")
        if not node.users or (isinstance(value, torch.SymInt) and not value.node.expr.free_symbols):
            # unused, or replaced by its example: export specializes an int whose example
            # is 0 or 1 when a guard needs its value (`x[:, i] += v` stores at a constant i)
            raise SpecializedInput(position)
        pending, seen = list(node.users), set()
        while pending:
            user = pending.pop()
            if user in seen:
                continue
            seen.add(user)
            if not isinstance(user.target, torch._ops.OpOverload):  # operator.add & co. on ints
                # (`n / 4` is a SymFloat, and what reads it reads the int)
                if user.op == "call_function" and isinstance(user.meta.get("val"), _SYMBOLIC_NUMBERS):
                    pending.extend(user.users)
                continue
            if user.target not in _INDEX_OPS:
                raise IntArithmetic(position)


def _topk_of_a_runtime_k(program) -> None:
    """The values of `torch.topk(x, k)` with k a runtime int (nanoGPT's `topk(logits,
    min(top_k, n))`) are the first k of `torch.sort(x, descending=largest)`: the sort goes to
    a sub-DNN, the slice at k is a view the host takes. Only where the values alone are read
    and sorted (the default): the indices of equal values, and the order of `sorted=False`,
    are topk's own, which torch leaves unspecified. (k past the dim raises as in eager: export
    bounded k by the dim's size, `size_ranges`.)"""
    from torch._guards import detect_fake_mode

    graph, fake_mode = program.graph, None
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten.topk.default:
            continue
        x, k, dim, largest, ordered = (*node.args, *[None] * 5)[:5]
        dim = node.kwargs.get("dim", -1 if dim is None else dim)
        largest = node.kwargs.get("largest", True if largest is None else largest)
        ordered = node.kwargs.get("sorted", True if ordered is None else ordered)
        items = {user.args[1]: user for user in node.users if user.target is operator.getitem}
        fixed = k.meta.get("val") if isinstance(k, torch.fx.Node) else None
        if isinstance(fixed, (int, torch.SymInt)) and _symbolic_number(k) is None:
            # (an int the run is captured for one value of, `fixed_ints`: that value)
            node.update_arg(1, int(fixed))
            continue
        if _symbolic_number(k) is None or not ordered or len(items) != len(node.users) or items.get(1, None) is not None and items[1].users:
            continue
        if 0 not in items:
            continue
        fake_mode = fake_mode or detect_fake_mode([n.meta.get("val") for n in graph.nodes])
        with graph.inserting_before(node), fake_mode:
            ordered_values = graph.call_function(torch.ops.aten.sort.default, (x, dim, largest))
            ordered_values.meta["val"] = torch.ops.aten.sort.default(x.meta["val"], dim, largest)
            values = graph.call_function(operator.getitem, (ordered_values, 0))
            values.meta["val"] = ordered_values.meta["val"][0]
        # (the values' node becomes the slice: the graph signature names its outputs' nodes)
        items[0].target, items[0].args, items[0].kwargs = torch.ops.aten.slice.Tensor, (values, dim, 0, k), {}
        if 1 in items:
            graph.erase_node(items[1])
        graph.erase_node(node)
    if fake_mode is not None:
        program.graph_module.recompile()


def _functionalize(program):
    """Value semantics for in-place ops (`relu_`, `index_put_`, stores through views).

    `torch.export` keeps mutation in its graph (`copy_` into a `select` of an input, `add_`);
    imported as is, a mutating op whose result nobody reads would be dropped as dead code.
    Functionalization rewrites them into out-of-place ops, and what a run mutates outside
    itself becomes explicit: an input or a weight mutation in the graph signature.
    """
    if not any(
        node.op == "call_function"
        and isinstance(node.target, torch._ops.OpOverload)
        and node.target._schema.is_mutable
        for node in program.graph.nodes
    ):
        return program
    return program.run_decompositions({})


def _floats_as_number_outputs(program) -> None:
    """A runtime float the run returns (`x.sum(1).tolist()` of a float tensor, `.item()`)
    is a result of type `!torch.float`. FxImporter imports a symbolic number's node by its
    value's type, but takes only the int kind of argument as an output: the float's output
    is named as that kind, its node (and so its type) unchanged."""
    for spec in program.graph_signature.output_specs:
        if spec.kind == OutputKind.USER_OUTPUT and isinstance(spec.arg, SymFloatArgument):
            spec.arg = SymIntArgument(name=spec.arg.name)


def _mutations_as_outputs(program, state_buffers: frozenset[str] = frozenset()) -> tuple[list[int], list[str]]:
    """Turn input mutations into plain outputs (the host rebinds the mutated variables);
    returns the mutated user inputs' positions, and the paths of the buffers kept across
    calls (`state_buffers`) the run changes, whose new values become its last outputs. Any
    other weight mutation is refused."""
    signature = program.graph_signature
    buffers = []
    for spec in signature.output_specs:
        if spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION):
            name = spec.target.removeprefix(_MODEL_ATTR + ".")
            if spec.kind != OutputKind.BUFFER_MUTATION or name not in state_buffers:
                raise WeightMutation(name)
            buffers.append(name)
    if buffers:
        _buffer_mutations_last(program)
    user_inputs = [spec.arg.name for spec in signature.input_specs if spec.kind == InputKind.USER_INPUT]
    mutated = []
    for position, spec in enumerate(signature.output_specs):
        if spec.kind == OutputKind.USER_INPUT_MUTATION:
            # export lists mutations before user outputs; results are spliced in this order
            assert position == len(mutated), "an input mutation after a user output"
            mutated.append(user_inputs.index(spec.target))
            spec.kind, spec.target = OutputKind.USER_OUTPUT, None
    return mutated, buffers


def _buffer_mutations_last(program) -> None:
    """Move the `BUFFER_MUTATION` outputs after the user outputs, as user outputs."""
    signature = program.graph_signature
    output = next(node for node in program.graph.nodes if node.op == "output")
    values = list(output.args[0])
    specs = list(signature.output_specs)
    order = sorted(range(len(specs)), key=lambda k: specs[k].kind == OutputKind.BUFFER_MUTATION)
    for k in order:
        if specs[k].kind == OutputKind.BUFFER_MUTATION:
            specs[k].kind, specs[k].target = OutputKind.USER_OUTPUT, None
    signature.output_specs[:] = [specs[k] for k in order]
    output.args = (tuple(values[k] for k in order),)


# `.detach()` in code export sees (a helper, a submodule) and `detach_` (`torch.tensor(...)`
# exports as lift_fresh_copy + detach_, which would import as an opaque `torch.operator`).
# At inference both are the tensor itself, memory included: `x.detach().clamp_(0)` changes
# `x`. So they become `alias` (a view functionalization follows) before functionalization,
# and, once the graph has value semantics, a copy the importer knows.
_DETACHES = {torch.ops.aten.detach_.default, torch.ops.aten.detach.default}


def _sizes_as_tensors(program) -> None:
    """A size known only at run time that is a number in tensor math (`h.sum(1) / h.size(1)`,
    `x[idx].mean(0) * idx.numel()`, `x * (h.size(1) / 4)`) enters that math as a 0-d tensor.

    Export passes the SymInt itself (`aten.div.Tensor(sum, sym_size)`); imported so, the op
    would read a host int, and a sub-DNN takes only tensors. `aten.scalar_tensor` (which the
    host program computes) makes the 0-d tensor, in the dtype that gives the result eager
    PyTorch gives with the Python number (`_dtype_of_a_python_number_beside`). A number where
    the op takes a Scalar (`torch.clamp(x, max=n)`) stays a host value, which `splice` refuses."""
    from torch._guards import detect_fake_mode

    graph = program.graph
    fake_mode = None
    for node in list(graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        schema = node.target._schema.arguments
        positional = [(schema[k], k, arg) for k, arg in enumerate(node.args) if k < len(schema)]
        named = {a.name: a for a in schema}
        keyword = [(named[name], name, arg) for name, arg in node.kwargs.items() if name in named]
        # (each dtype from the operands as export wrote them, before any is replaced)
        sizes = [(at, arg, _dtype_of_a_python_number_beside(node, _symbolic_number(arg)))
                 for argument, at, arg in positional + keyword
                 if isinstance(argument.type, torch.TensorType) and _symbolic_number(arg) is not None]
        if not sizes:
            continue
        fake_mode = fake_mode or detect_fake_mode([n.meta.get("val") for n in graph.nodes])
        for at, size, dtype in sizes:
            with graph.inserting_before(node), fake_mode:
                tensor = graph.call_function(torch.ops.aten.scalar_tensor.default, (size,), {"dtype": dtype})
                tensor.meta["val"] = torch.ops.aten.scalar_tensor.default(size.meta["val"], dtype=dtype)
            if isinstance(at, int):
                node.update_arg(at, tensor)
            else:
                node.update_kwarg(at, tensor)
    if fake_mode is not None:
        program.graph_module.recompile()


_SYMBOLIC_NUMBERS = (torch.SymInt, torch.SymFloat, torch.SymBool)


def _symbolic_number(arg) -> torch.SymInt | torch.SymFloat | None:
    value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
    if isinstance(value, (torch.SymInt, torch.SymFloat)) and value.node.expr.free_symbols:
        return value
    return None


def _dtype_of_a_python_number_beside(node: torch.fx.Node, number) -> torch.dtype:
    """The dtype of a 0-d tensor that promotes with `node`'s tensor operands as the Python
    number does: 0-d tensors of one kind (integer, float) promote among themselves, and a
    Python number of a kind the operands have takes their dtype."""
    dtypes = [a.meta["val"].dtype for a in (*node.args, *node.kwargs.values())
              if isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.Tensor)]
    if isinstance(number, torch.SymFloat):
        same_kind = [d for d in dtypes if d.is_floating_point]
        fallback = torch.get_default_dtype()  # (`int_tensor / 2.5` is float32)
    else:
        same_kind = [d for d in dtypes if not d.is_floating_point and not d.is_complex and d != torch.bool]
        fallback = torch.int64  # (a float operand wins; `bool_tensor * 3` is int64)
        if len(same_kind) < len([d for d in dtypes if d != torch.bool]):
            return fallback
    if not same_kind:
        return fallback
    dtype = same_kind[0]
    for other in same_kind[1:]:
        dtype = torch.promote_types(dtype, other)
    return dtype


def _retarget(program, sources, target) -> None:
    """Every call of an op in `sources` calls `target` instead (the node and its name stay)."""
    for node in program.graph.nodes:
        if node.op == "call_function" and node.target in sources:
            node.target = target

