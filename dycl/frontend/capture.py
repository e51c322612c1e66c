"""Capture one straight-line statement run: `torch.export` it and import it with torch-mlir.

Each run becomes a private `func.func` in the importer's module; the host builder calls it
and `stitch.py` later inlines the body into `forward`. Parameters and buffers become
`dycl.param` references (never literals), small tensor constants inline `dense<...>` literals
(`run_weights.py`). Between export and import the program is checked (`export_sizes.py`)
and rewritten (`export_rewrites.py`).
"""


from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import torch
from torch.export import Dim
from torch.export.graph_signature import ConstantArgument, OutputKind, SymBoolArgument
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_dialect
from torch_mlir.extras.fx_decomp_util import get_decomposition_table
from torch_mlir.extras.fx_importer import SYMBOLIC_OP_TO_TORCH_OP, FxImporter
from xdsl.ir import Attribute

from dycl.dialects.torch_ops import NO_VALUE, refused_random
from dycl.frontend import complex_values
from dycl.frontend.build import RandomOpRefused, check_host_op
from dycl.frontend.export_cache import ExportCache, rename, renaming
from dycl.frontend.export_rewrites import (
    DECOMPOSITIONS,
    DETACHES,
    floats_as_number_outputs,
    functionalize,
    mutations_as_outputs,
    retarget_calls,
    sizes_as_tensors,
    topk_of_a_runtime_k,
)
from dycl.frontend.export_sizes import check_int_inputs_used, check_static_sizes, runtime_size_ranges
from dycl.frontend.hop import HopImporter
from dycl.frontend.run_weights import RunModule, WeightReferences, anchor_input, lifts_model_weights, module_skeleton, tied_names
from dycl.frontend.values import parse_type


def new_context() -> ir.Context:
    context = ir.Context()
    torch_dialect.register_dialect(context)
    # torch_c.to_i1 and dycl.param are not registered in torch-mlir's Python context.
    context.allow_unregistered_dialects = True
    return context


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
    hooks: WeightReferences = field(default_factory=WeightReferences)

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
            examples, dynamic_dims = [anchor_input()], [[]]
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
        skeleton = module_skeleton(self.model, called_modules) if called_modules is not None else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = None
            if skeleton is not None:
                wrapper = RunModule(self.model, skeleton, run, anchored).eval()
                program = torch.export.export(wrapper, tuple(examples), strict=False, **shapes)
                if lifts_model_weights(program, self._weight_ids):
                    program = None
            if program is None:
                key = None  # weights reached outside the called modules: do not rename them
                wrapper = RunModule(self.model, self.model, run, anchored).eval()
                program = torch.export.export(wrapper, tuple(examples), strict=False, **shapes)
            elif any(isinstance(value, torch.Tensor) for value in program.constants.values()):
                # tensors baked in as constants (a module outside the model, which the call
                # record does not see): another run of the same code may hold other ones
                key = None
            topk_of_a_runtime_k(program)
            check_int_inputs_used(program, fixed_ints)
            check_static_sizes(program)
            sizes_as_tensors(program)
            retarget_calls(program, DETACHES, torch.ops.aten.alias.default)
            program = functionalize(program)
            retarget_calls(program, {torch.ops.aten.alias.default}, torch.ops.aten.clone.default)
            complex_values.lower(program)
            program = self._decompose_unknown_ops(program)
            mutated, buffers = mutations_as_outputs(program, self.state_buffers)
            if any(isinstance(spec.arg, SymBoolArgument) for spec in program.graph_signature.output_specs):
                raise SizeTest()
            floats_as_number_outputs(program)
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
        groups, ranges = runtime_size_ranges(program)
        return CapturedRun(
            name, result_types[count:], constant[count:], list(mutated), result_types[:count], groups, values[count:],
            [rename(b, renames) for b in buffers], ranges,
        )

    def _decompose_unknown_ops(self, program):
        """Decompose only the ops torch-mlir has no named op for (keeps linear/conv2d).
        Each round retraces the whole program (seconds for a transformer with a runtime
        dim), so it stops as soon as a round leaves the same unknown ops it was given."""
        table = {**get_decomposition_table(), **DECOMPOSITIONS}
        given: set = set()
        for _ in range(4):
            unknown = {
                node.target
                for node in program.graph.nodes
                if node.op == "call_function"
                and isinstance(node.target, torch._ops.OpOverload)
                and self._is_unknown(node.target)
                and node.target in table
            }
            if not unknown or unknown == given:
                return program
            program = program.run_decompositions({op: table[op] for op in unknown})
            given = unknown
        return program

    def _is_unknown(self, op: torch._ops.OpOverload) -> bool:
        if op in SYMBOLIC_OP_TO_TORCH_OP:  # (a size query: the importer reads it as `aten.size.int`)
            return False
        schema = op._schema
        namespace, _, name = schema.name.partition("::")
        mlir_name = f"torch.{namespace}.{name}"
        if schema.overload_name:
            mlir_name += f".{schema.overload_name}"
        if mlir_name not in self._missing_ops:
            self._missing_ops[mlir_name] = not self.context.is_registered_operation(mlir_name)
        return self._missing_ops[mlir_name]
