"""Apache TVM backend: sub-DNN -> torch.export -> Relax -> `tvm.compile` -> `.so`.

Untuned Relax code for CPU is naive (10-80x slower than ONNX Runtime here): TVM's default
CPU pipeline legalizes and fuses but schedules nothing. Speed comes from MetaSchedule
(`dycl.backends.tuning`): given a `database` directory, the build lowers to the fused
functions tuning saw and applies every record the database holds for them (both through
`dycl.backends.tvm_schedules`).
"""

from __future__ import annotations

import math
import os
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dycl.backends.backend import Backend
from dycl.backends.compiled import CompiledSubDNN, blame_op, op_names_of
from dycl.backends.errors import BackendError
from dycl.backends.fx_rebuild import TO_THE_END, empty_tensors_as_constants, exports, runtime_dims_of, ties_forced
from dycl.backends.subdnn import SubDNN
from dycl.backends.tvm_schedules import apply_database, fuse_for_schedules, scheduled_functions
from dycl.backends.tvm_stores import store_at_indices

NAME = "tvm"


@dataclass(frozen=True)
class TvmOptions:
    target: Any = "llvm"
    """A TVM target (its string, dict or `tvm.target.Target`); "llvm": this machine's CPU."""
    database: str = ""
    """A MetaSchedule database directory whose records the build applies (`dycl.compile`'s
    `tune=` sets it); "" = TVM's default pipeline, untuned."""


class TvmBackend(Backend):
    name = NAME
    Options = TvmOptions
    tool_packages = ("torch", "apache-tvm")
    dynamic_batch = True
    options: TvmOptions

    def compile(self, subdnn: SubDNN, weights: Mapping[str, Any]) -> CompiledSubDNN:
        """A batchable sub-DNN (`run_many` may batch it) is built with a symbolic dim 0,
        untuned; a tuned build keeps one request's rows, the shapes MetaSchedule tuned (its
        schedules are for static shapes: one request at a time stays as fast as tuned)."""
        if subdnn.batch_rows is not None and self.options.database:
            compiled = self._compile(subdnn.static(), weights)
            compiled.meta["batchable"] = False
            return compiled
        if subdnn.batch_rows is not None:
            try:
                return self._compile(subdnn, weights)  # dim 0 a Relax symbolic size
            except BackendError:  # something in it needs a static dim 0: one request per call
                compiled = self._compile(subdnn.static(), weights)
                compiled.meta["batchable"] = False
                return compiled
        return self._compile(subdnn, weights)

    def _compile(self, subdnn: SubDNN, weights: Mapping[str, Any]) -> CompiledSubDNN:
        mod = to_relax(subdnn, weights)
        target = target_of(self.options.target, tuned=bool(self.options.database))
        try:
            executable, tuned_functions = _build(mod, target, self.options.database)
            with tempfile.TemporaryDirectory(prefix="dycl-tvm-") as tmp:
                library = Path(tmp) / f"{subdnn.name}.so"
                executable.export_library(str(library))
                library_bytes = library.read_bytes()
        except BackendError:
            raise
        except Exception as err:
            raise BackendError(NAME, subdnn.name, f"TVM compile failed: {str(err).strip()[:500]}") from err
        return CompiledSubDNN(
            name=subdnn.name,
            backend=NAME,
            files={f"{subdnn.name}.so": library_bytes},
            meta={
                "file": f"{subdnn.name}.so",
                "n_outputs": len(subdnn.outputs),
                "tuned": tuned_functions > 0,
                "tuned_functions": tuned_functions,
            },
        )


def _build(mod, target, database: str):
    """(executable, functions scheduled from the database). Untuned: TVM's default
    pipeline, the correctness path. Tuned: the lowering tuning saw, the database's best
    schedules, then TVM's lowering passes only (its default pipeline would fuse the
    scheduled functions again, into ones no record matches)."""
    import tvm

    if not database:
        return tvm.compile(mod, target=target), 0
    mod = apply_database(fuse_for_schedules(mod, target), target, database)
    # relax.pipeline.dataflow_lower_passes looks these up in cpu_generic, which (TVM 0.27)
    # does not export them; the CPU backend's own module has them.
    from tvm.relax.backend.cpu_generic import pipeline as cpu

    lowering = tvm.transform.Sequential([*cpu.dataflow_lower_passes(target), *cpu.finalize_passes(target)])
    return tvm.compile(mod, target=target, relax_pipeline=lowering), scheduled_functions(mod)


def target_of(target: Any = "llvm", tuned: bool = False):
    """The `tvm.target.Target` of a `target` option; "llvm" is this machine's CPU.

    Tuned, that is its own CPU model (`-mcpu`), whose vector width MetaSchedule's schedules
    are built for: a conv tuned for a Zen 5 runs 4.7x faster than one tuned for baseline
    x86-64 (SSE2). Untuned code is plain llvm: TVM's naive loops ran 1.8x slower with the
    CPU model here. MetaSchedule also needs the core count in the target."""
    import tvm

    if isinstance(target, str) and target == "llvm":
        spec = {"kind": "llvm", "num-cores": os.cpu_count() or 1}
        if tuned:
            spec["mcpu"] = tvm.target.codegen.llvm_get_system_cpu()
        return tvm.target.Target(spec)
    return tvm.target.Target(target)


def to_relax(subdnn: SubDNN, weights: Mapping[str, Any]):
    from tvm.relax.frontend.torch.exported_program_translator import ExportedProgramImporter

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # `from_exported_program`'s own steps, with converters that know their importer:
            # inside a kept if's arms Relax calls them without it (`convert(node)`)
            importer = ExportedProgramImporter()
            program = _decomposed(subdnn, weights)
            _in_every_graph(program, _fold_alpha)
            _in_every_graph(program, _compare_bools_as_numbers)
            _in_every_graph(program, _bool_arithmetic_as_logic)
            _in_every_graph(program, _divisions_by_a_zero_number)
            _in_every_graph(program, _wrap_negative_indices)
            _in_every_graph(program, _skip_legacy_empty_cat_operands)
            _in_every_graph(program, _whole_slice_scatters_as_their_source)
            _in_every_graph(program, empty_tensors_as_constants)  # (again: decompositions make new ones)
            return importer.from_exported_program(program, False, False, False, _converters(importer))
    except BackendError:
        raise
    except Exception as err:
        text = str(err)
        op = blame_op(op_names_of(subdnn.ir_text), text)
        raise BackendError(NAME, subdnn.name, f"Relax import failed: {text.strip()[:500]}", op) from err


def _decomposed(subdnn: SubDNN, weights: Mapping[str, Any]):
    """The sub-DNN exported and decomposed, the best export whose decompositions keep its
    dims known only at run time as they were. They re-trace under export's guards:
    `x[:3 - len(done)]` exported where the slice is empty (`done` of 3 rows) guards
    `Eq(3 - s, 0)` and makes `s` 3. Compiled, that sub-DNN would answer for that size only,
    and TVM never checks the size of an input it does not read (beam search returned no
    scores for every count): if every export is changed so, a compile error, never a silent
    one."""
    for program in exports(subdnn, weights, NAME):
        kept = runtime_dims_of(subdnn, program)
        _in_every_graph(program, _cast_scalar_operands)
        decomposed = program.run_decompositions()
        dims = runtime_dims_of(subdnn, decomposed)
        if dims == kept or (kept is not None and dims is not None and ties_forced(subdnn, weights, kept, dims, NAME)):
            return decomposed
    raise BackendError(
        NAME, subdnn.name,
        "TVM's decompositions fixed a dim known only at run time, or tied it to another (torch.export's guards at "
        "each example size): the sub-DNN would be right for those sizes only")


# (`clamp.Tensor` decomposes to maximum/minimum after the casts: a bound that enters as a
# 0-d f64 tensor, `x.clamp(max=n / 4)`, is cast here)
_ELEMENTWISE = {"add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "rsub.Tensor", "where.self",
                "maximum.default", "minimum.default", "pow.Tensor_Tensor", "remainder.Tensor",
                "clamp.Tensor", "clamp_min.Tensor", "clamp_max.Tensor"}


# Arithmetic whose tensor operands PyTorch promotes to the result's dtype (not `where`,
# whose bool operand is the condition).
_ARITHMETIC = (_ELEMENTWISE - {"where.self"}) | {
    "add.Scalar", "sub.Scalar", "mul.Scalar", "div.Scalar", "rsub.Scalar", "remainder.Scalar", "pow.Tensor_Scalar",
}


def _in_every_graph(program, rewrite) -> None:
    """`rewrite(graph_module)` in place on the top graph and on the arms of every kept if
    (`torch.cond`'s branch submodules)."""
    import torch

    for module in program.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            rewrite(module)


def _cast_scalar_operands(graph_module) -> None:
    """A 0-d tensor of another floating dtype than the result of an elementwise op (a host
    float entering as a 0-d f64 tensor: `z += k`) computes in the result's dtype in PyTorch;
    Relax promotes to the wider one. A bool tensor in arithmetic is promoted to the result's
    dtype in PyTorch; Relax's add rejects it. Cast such operands first."""
    import torch

    graph = graph_module.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        result = node.meta.get("val")
        if not isinstance(result, torch.Tensor):
            continue
        name = node.target.__name__
        for operand in node.all_input_nodes:
            value = operand.meta.get("val")
            if not isinstance(value, torch.Tensor) or value.dtype == result.dtype:
                continue
            float_scalar = name in _ELEMENTWISE and result.is_floating_point() and value.dim() == 0 and value.is_floating_point()
            # a bool operand of arithmetic (`(c < 0) + 0`, `sum([c < t for c in scores])`)
            # is promoted to the result's dtype in PyTorch; Relax rejects the mix
            promoted_bool = name in _ARITHMETIC and value.dtype == torch.bool
            # an int tensor with a float (`0.01 * k`, `k / 4`) computes in the float dtype in
            # PyTorch; Relax computed in int64 (`0.5 * k` gave 0: a wrong answer, fuzz 128001)
            promoted_int = name in _ARITHMETIC and result.is_floating_point() and not value.is_floating_point()
            if float_scalar or promoted_bool or promoted_int:
                with graph.inserting_before(node):
                    cast = graph.call_function(torch.ops.aten._to_copy.default, (operand,), {"dtype": result.dtype})
                cast.meta["val"] = value.to(result.dtype)
                node.replace_input_with(operand, cast)
    graph_module.recompile()


_SCALAR_COMPARISONS = {"eq.Scalar", "ne.Scalar", "lt.Scalar", "le.Scalar", "gt.Scalar", "ge.Scalar"}
_TENSOR_COMPARISONS = {"eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor", "ge.Tensor"}


def _compare_bools_as_numbers(graph_module) -> None:
    """A bool tensor compared with a number (`torch.count_nonzero(mask)` decomposes to
    `sum(mask != 0)`; `mask == 0`): TVM compares `i1` values with a float compare, which
    LLVM rejects (fuzz seed 320040; two bool tensors, `(c).eq(torch.tensor(True))`: 320140).
    The bools are cast to the number's kind first (int64 for an int, float64 for a float: 0
    and 1 compare exactly with any scalar; the other tensor's dtype, as PyTorch promotes)."""
    import torch

    graph = graph_module.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        name = node.target.__name__
        if name not in _SCALAR_COMPARISONS | _TENSOR_COMPARISONS:
            continue
        values = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in node.args[:2]]
        if not any(isinstance(v, torch.Tensor) and v.dtype == torch.bool for v in values):
            continue
        other = next((v.dtype for v in values if isinstance(v, torch.Tensor) and v.dtype != torch.bool), None)
        dtype = other or (torch.float64 if isinstance(values[1], float) else torch.int64)
        for operand, value in zip(node.args[:2], values):
            if not (isinstance(value, torch.Tensor) and value.dtype == torch.bool):
                continue
            with graph.inserting_before(node):
                cast = graph.call_function(torch.ops.aten._to_copy.default, (operand,), {"dtype": dtype})
            cast.meta["val"] = value.to(dtype)
            node.replace_input_with(operand, cast)
    graph_module.recompile()


_BOOL_ARITHMETIC = {"mul.Tensor": "bitwise_and.Tensor", "add.Tensor": "bitwise_or.Tensor"}


def _divisions_by_a_zero_number(graph_module) -> None:
    """`x / 0` with a number 0 (a sub-DNN made for a dim of size 0: `hs.sum(1) / hs.size(1)`):
    TVM folds the constant divisor and stops the compile (Divide by zero). PyTorch's true
    division gives `x * inf` with the zero's sign (inf, -inf, and NaN for 0 / 0), so it is
    written so; a tensor 0 is not folded and stays a division."""
    import math

    import torch

    aten = torch.ops.aten
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target not in (aten.div.Tensor, aten.div.Scalar) or len(node.args) != 2:
            continue
        result, divisor = node.meta.get("val"), node.args[1]
        if not (isinstance(result, torch.Tensor) and result.dtype.is_floating_point):
            continue
        if isinstance(divisor, bool) or not isinstance(divisor, (int, float)) or divisor != 0:
            continue
        node.target = aten.mul.Tensor if node.target is aten.div.Tensor else aten.mul.Scalar
        node.args = (node.args[0], math.copysign(math.inf, divisor))
    graph_module.recompile()


def _bool_arithmetic_as_logic(graph_module) -> None:
    """A product (sum) of bool tensors is a bool tensor in PyTorch, their `and` (`or`):
    `torch.isclose` decomposes to `mul(eq, ne)`. TVM lowers an `i1` multiply through a float
    check that fails the compile (fuzz seed 340000: `(c).double().allclose(...)`). Written
    as the bitwise op of the same bools."""
    import torch

    aten = torch.ops.aten
    graph = graph_module.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        logic = _BOOL_ARITHMETIC.get(node.target.__name__)
        result = node.meta.get("val")
        if logic is None or not isinstance(result, torch.Tensor) or result.dtype != torch.bool:
            continue
        operands = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in node.args[:2]]
        if not all(isinstance(v, torch.Tensor) and v.dtype == torch.bool for v in operands):
            continue
        node.target = getattr(aten, logic.split(".")[0]).Tensor
        node.kwargs = {}  # (an alpha of 1; any other is folded before: `_fold_alpha`)
    graph_module.recompile()


# (the fold runs after the decompositions, which turn `rsub` into `sub` with its operands
# swapped: an rsub's alpha scales its first operand, and never reaches this table)
_WITH_ALPHA = {"add.Tensor", "sub.Tensor", "add.Scalar", "sub.Scalar"}


def _fold_alpha(graph_module) -> None:
    """`a + alpha * b` as `add(a, mul(b, alpha))`: Relax's converters for add/sub drop
    `alpha` (`y.add_(t, alpha=-0.5)` gave `y + t`: fuzz seed 114000, a wrong answer)."""
    import torch

    graph = graph_module.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        if node.target.__name__ not in _WITH_ALPHA:
            continue
        alpha = node.kwargs.get("alpha", node.args[2] if len(node.args) > 2 else 1)
        if alpha == 1:
            continue
        other = node.args[1]
        if isinstance(other, torch.fx.Node):
            with graph.inserting_before(node):
                scaled = graph.call_function(torch.ops.aten.mul.Tensor, (other, alpha))
            value = other.meta.get("val")
            if isinstance(value, torch.Tensor):
                scaled.meta["val"] = value * alpha
        else:
            scaled = other * alpha
        node.args = (node.args[0], scaled)
        node.kwargs = {k: v for k, v in node.kwargs.items() if k != "alpha"}
    graph_module.recompile()


def _skip_legacy_empty_cat_operands(graph_module) -> None:
    """`torch.cat([torch.tensor([]), k], dim=-2)`: PyTorch skips a 1-d operand of 0 items
    among operands of another rank (its legacy rule: transformers' `DynamicLayer` starts
    as such a tensor), Relax refuses ranks that differ. Such operands are dropped."""
    import torch

    aten = torch.ops.aten
    for node in list(graph_module.graph.nodes):
        if node.op != "call_function" or node.target is not aten.cat.default:
            continue
        operands = list(node.args[0])
        metas = [o.meta.get("val") if isinstance(o, torch.fx.Node) else None for o in operands]
        if any(m is None for m in metas) or all(m.dim() == 1 for m in metas):
            continue
        kept = [o for o, m in zip(operands, metas) if not (m.dim() == 1 and isinstance(m.shape[0], int) and m.shape[0] == 0)]
        if kept and len(kept) < len(operands):
            node.args = (kept, *node.args[1:])
    graph_module.graph.lint()
    graph_module.recompile()


def _whole_slice_scatters_as_their_source(graph_module) -> None:
    """`slice_scatter(x, src, dim, 0, INT64_MAX)` (a store through a view of a whole dim,
    `x[:, 1] = 1.0` functionalized) is `src`, which has `x`'s shape: TOPI's `slice_scatter`
    needs the dim's size as a constant, and a runtime dim has none (its build failed)."""
    import torch

    def argument(node, k, name):
        return node.args[k] if len(node.args) > k else node.kwargs.get(name)

    for node in list(graph_module.graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten.slice_scatter.default:
            continue
        source, start, end, step = (argument(node, k, name) for k, name in ((1, "src"), (3, "start"), (4, "end"), (5, "step")))
        whole = start in (None, 0) and (end is None or isinstance(end, int) and end >= TO_THE_END) and step in (None, 1)
        value, stored = node.meta.get("val"), source.meta.get("val") if isinstance(source, torch.fx.Node) else None
        if whole and isinstance(stored, torch.Tensor) and isinstance(value, torch.Tensor) and stored.dtype == value.dtype:
            node.replace_all_uses_with(source)
            graph_module.graph.erase_node(node)
    graph_module.graph.lint()
    graph_module.recompile()


def _wrap_negative_indices(graph_module) -> None:
    """`y[idx]` and `y[idx] = v` with an index tensor that may hold negative values (from the
    end, in PyTorch): Relax gathers with `take` in its fast mode, which reads out of bounds
    there: garbage, a silent wrong answer. Each int index of a dim of size `n` (static, or the
    dim's runtime size) becomes `idx % n` (the same position; Python's `%` is never negative)."""
    import torch

    aten = torch.ops.aten
    graph = graph_module.graph
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in (aten.index.Tensor, aten.index_put.default):
            continue
        target, indices = node.args[:2]
        tensor = target.meta.get("val") if isinstance(target, torch.fx.Node) else None
        if tensor is None:
            continue
        wrapped = list(indices)
        for k, index in enumerate(indices):
            meta = index.meta.get("val") if isinstance(index, torch.fx.Node) else None
            if meta is None or meta.dtype == torch.bool or k >= tensor.dim():
                continue
            if tensor.shape[k] == 0:
                continue  # (no index is in bounds there, eager raises: `% 0` failed TVM's compile)
            with graph.inserting_before(node):
                size = tensor.shape[k]
                if not isinstance(size, int):  # (a runtime dim: `x[:, [-1]]` of a sequence that grows)
                    size = graph.call_function(aten.sym_size.int, (target, k))
                    size.meta["val"] = tensor.shape[k]
                wrapped[k] = graph.call_function(aten.remainder.Scalar, (index, size))
            wrapped[k].meta["val"] = meta.remainder(tensor.shape[k])
        node.args = (target, wrapped, *node.args[2:])
    graph_module.recompile()


def _converters(importer) -> dict:
    """Ops the Relax torch frontend lacks, mapped onto Relax ops (fuzzing found `x.amax()`;
    the mutation tests a masked store; the research corpus `t.any()` and a dtype cast
    decompositions leave; packed sequences an int `clamp` with one bound, `h[-1]` and a
    `full` of nan; issue 34 a slice to a runtime size and a pad by one). Each takes
    `(node, importer)` at the top level and `(node)` inside the arms of an `If`."""
    from tvm import relax, tirx

    def reduction(relax_op):
        def convert(node, _importer=None):
            args = importer.retrieve_args(node)
            dims = args[1] if len(args) > 1 else node.kwargs.get("dim", [])
            keepdim = args[2] if len(args) > 2 else node.kwargs.get("keepdim", False)
            return importer.block_builder.emit(relax_op(args[0], list(dims) or None, keepdims=keepdim))

        return convert

    def index_put(node, _importer=None):
        """A store at integer index tensors (`hx[idx] = v`, `x[:, idx] += v`) as `scatter_nd`
        (`dycl.backends.tvm_stores`: Relax's own converter fails at an index of a runtime
        length); a masked store (`p[p >= 0.5] = 1.0`, functionalized to `index_put` with a
        bool mask), which Relax's converter rejects, as a `where`."""
        import torch

        indices, values = node.args[1], node.args[2].meta.get("val")
        target = node.args[0].meta.get("val")
        metas = [index.meta.get("val") if index is not None else None for index in indices]
        if metas and all(m is None or m.dtype not in (torch.bool, torch.uint8) for m in metas) and any(m is not None for m in metas):
            return store_at_indices(importer, node)
        mask = metas[0] if len(indices) == 1 else None
        if (
            mask is None or target is None or values is None or mask.dtype != torch.bool
            or values.numel() != 1 or tuple(mask.shape) != tuple(target.shape[: mask.dim()])
        ):
            return importer._index_put(node)
        args = importer.retrieve_args(node)
        accumulate = args[3] if len(args) > 3 else node.kwargs.get("accumulate", False)
        emit = importer.block_builder.emit
        where = args[1][0]
        if mask.dim() < target.dim():
            where = emit(relax.op.reshape(where, [*mask.shape] + [1] * (target.dim() - mask.dim())))
        value = emit(relax.op.astype(relax.op.reshape(args[2], []), str(target.dtype).removeprefix("torch.")))
        new = emit(relax.op.add(args[0], value)) if accumulate else value
        return emit(relax.op.where(where, new, args[0]))

    def any_element(node, _importer=None):
        """`t.any()`: whether some element is nonzero (the ACT halting test)."""
        (tensor,) = importer.retrieve_args(node)[:1]
        emit = importer.block_builder.emit
        dtype = str(node.args[0].meta["val"].dtype).removeprefix("torch.")
        # (a bool tensor is its own test: LLVM rejects the float compare TVM makes of `!= False`)
        nonzero = tensor if dtype == "bool" else emit(relax.op.not_equal(tensor, relax.const(0, dtype)))
        # (the max of no elements is int8's least value, true as a bool: compared with 0, an
        # empty tensor has no nonzero element, and `all()`, decomposed to `not any(not x)`, holds)
        largest = emit(relax.op.max(emit(relax.op.astype(nonzero, "int8"))))
        return emit(relax.op.greater(largest, relax.const(0, "int8")))

    def clamp(node, _importer=None):
        """`t.clamp(max=k)` of an int tensor: Relax's converter makes a missing bound
        infinite, which TVM cannot hold as an int ("Cannot convert infinity to BigInt");
        the dtype's own limit bounds the same."""
        import torch

        dtype = node.args[0].meta["val"].dtype
        if dtype.is_floating_point or dtype == torch.bool:
            return importer._clamp(node)
        limits = torch.iinfo(dtype)
        low = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        high = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
        node.args = (node.args[0], limits.min if low is None else low, limits.max if high is None else high)
        node.kwargs = {}
        return importer._clamp(node)

    def select(node, _importer=None):
        """`h[-1]` in a sub-DNN: Relax's converter takes index -1 as it is, and `take` in its
        default mode reads out of bounds there: garbage, a silent wrong answer. The index
        counts from the end (`wrap` where the dim is symbolic)."""
        tensor = importer.retrieve_args(node)[0]
        dim, index = node.args[1], node.args[2]
        mode = "fast"
        if index < 0:
            size = node.args[0].meta["val"].shape[dim]
            if isinstance(size, int):
                index += size
            else:
                mode = "wrap"
        return importer.block_builder.emit(relax.op.take(tensor, relax.const(index, "int64"), dim, mode=mode))

    def slice_to_a_size(node, _importer=None):
        """`pos_emb[:, :t]` with `t` a runtime size that torch.export proved at most the dim
        (minGPT's context crop: `t <= block_size`, from the sum with the `t` tokens): Relax's
        converter clips the end, and `min(t, 4)` is a length that Relax cannot match with
        `t` (the sum then has no shape, which the VM cannot build). The slice is in bounds
        there: its length is `t`, as torch says. Only an end that is a size itself (never
        negative, whatever export assumed of its range: sub-DNNs also run at sizes 0 and 1)."""
        import torch

        dim = node.args[1] if len(node.args) > 1 else 0
        start = node.args[2] if len(node.args) > 2 else None
        end = node.args[3] if len(node.args) > 3 else None
        step = node.args[4] if len(node.args) > 4 else 1
        result = node.meta.get("val")
        bound = end.meta.get("val") if isinstance(end, torch.fx.Node) else None
        in_bounds = (
            isinstance(result, torch.Tensor) and isinstance(bound, torch.SymInt) and bound.node.expr.is_Symbol
            and start in (None, 0) and step == 1
            and isinstance(result.shape[dim], torch.SymInt) and result.shape[dim].node.expr == bound.node.expr
        )
        if not in_bounds:
            return importer._slice(node)
        args = importer.retrieve_args(node)
        axis = dim % result.dim()
        return importer.block_builder.emit(relax.op.strided_slice(args[0], [axis], [0], [args[3]], [1], assume_inbound=True))

    def pad_by_sizes(node, _importer=None):
        """`F.pad(seqs, (0, max_len - seqs.size(1)))`: a width known only at run time, which
        Relax's `nn.pad` cannot take (its widths are static). Written as a `concat` with
        fills of the widths' lengths, then a slice of the padded length: a negative width
        crops in PyTorch (its fill is then empty and the slice cuts), so every sign is exact."""
        args = importer.retrieve_args(node)
        tensor, widths = args[0], list(args[1])
        if all(isinstance(w, int) for w in widths):
            return importer._constant_pad_nd(node)
        value = args[2] if len(args) > 2 else node.kwargs.get("value", 0)
        emit = importer.block_builder.emit
        dtype = str(node.meta["val"].dtype).removeprefix("torch.")
        fill = relax.const(0 if value is None else value, dtype)
        ndim = len(importer.shape_of(tensor))

        def length(width):  # (a fill is never negative: a negative width crops instead)
            return max(width, 0) if isinstance(width, int) else tirx.Max(width.astype("int64"), tirx.IntImm("int64", 0))

        for k in range(len(widths) // 2):  # (pairs from the last dim back, as PyTorch lists them)
            before, after = widths[2 * k], widths[2 * k + 1]
            if before == 0 and after == 0:
                continue
            axis = ndim - 1 - k
            shape = list(importer.shape_of(tensor))
            pieces = [tensor]
            if not (isinstance(before, int) and before <= 0):
                pieces.insert(0, emit(relax.op.full(relax.ShapeExpr([*shape[:axis], length(before), *shape[axis + 1:]]), fill, dtype)))
            if not (isinstance(after, int) and after <= 0):
                pieces.append(emit(relax.op.full(relax.ShapeExpr([*shape[:axis], length(after), *shape[axis + 1:]]), fill, dtype)))
            padded = emit(relax.op.concat(pieces, axis=axis)) if len(pieces) > 1 else tensor
            begin = length(-before if isinstance(before, int) else 0 - before)
            end = begin + shape[axis] + before + after
            tensor = emit(relax.op.strided_slice(padded, [axis], [begin], [end], [1], assume_inbound=True))
        return tensor

    def full(node, _importer=None):
        """`torch.full(shape, -inf)` (and the nan a mean of nothing is): Relax's converter
        fails on a fill that is not finite ("argument of type 'PrimType' is not iterable");
        a constant broadcast to the shape is the same tensor."""
        fill = node.args[1]
        if not isinstance(fill, float) or math.isfinite(fill):
            return importer._full(node)
        dtype = str(node.meta["val"].dtype).removeprefix("torch.")
        shape = relax.ShapeExpr(list(node.args[0]))
        return importer.block_builder.emit(relax.op.broadcast_to(relax.const(fill, dtype), shape))

    def scalar_tensor(node, _importer=None):
        """`torch.scalar_tensor(n)` of a size known only at run time (transformers' mask
        code, `torch.scalar_tensor(past_length)`): Relax's converter makes a constant, which a
        TIR expression is not; the size read at run time (`shape_to_tensor`) instead."""
        value = importer.retrieve_args(node)[0]
        if isinstance(value, int | float | tirx.IntImm | tirx.FloatImm):
            return importer._scalar_tensor(node)
        emit = importer.block_builder.emit
        dtype = str(node.meta["val"].dtype).removeprefix("torch.")
        as_int64 = value if str(value.ty) == "int64" else value.astype("int64")  # (a TIR expression of the sizes)
        read = emit(relax.op.reshape(emit(relax.op.shape_to_tensor(relax.ShapeExpr([as_int64]))), []))
        return read if dtype == "int64" else emit(relax.op.astype(read, dtype))

    def divide_rounding(node, _importer=None):
        """`t // 6` (`div` with a rounding mode) on an int64 tensor: Relax's converter makes
        the Python int an int32 constant, which its floor_divide rejects beside int64. Both
        operands in the result's dtype, as PyTorch computes it."""
        args = importer.retrieve_args(node)
        emit = importer.block_builder.emit
        dtype = str(node.meta["val"].dtype).removeprefix("torch.")
        mode = node.kwargs.get("rounding_mode", args[2] if len(args) > 2 else None)

        def operand(value):
            if not isinstance(value, relax.Expr):
                return relax.const(value, dtype)
            return value if value.ty.dtype == dtype else emit(relax.op.astype(value, dtype))

        lhs, rhs = operand(args[0]), operand(args[1])
        if mode == "floor":
            return emit(relax.op.floor_divide(lhs, rhs))
        quotient = emit(relax.op.divide(lhs, rhs))
        return emit(relax.op.trunc(quotient)) if mode == "trunc" and dtype.startswith("float") else quotient

    def convert_element_type(node, _importer=None):
        """`prims.convert_element_type` (a dtype cast decompositions leave)."""
        args = importer.retrieve_args(node)
        return importer.block_builder.emit(relax.op.astype(args[0], str(node.args[1]).removeprefix("torch.")))

    def symbolic(tir_op):
        """`torch.sym_min(4, n)` / `sym_max` of sizes (the clamped bounds of a slice of a
        runtime dim, `fx_rebuild`): a TIR expression of the size variables."""

        def convert(node, _importer=None):
            return tir_op(*[tirx.IntImm("int64", a) if isinstance(a, int) else a for a in importer.retrieve_args(node)])

        return convert

    return {
        "sym_min": symbolic(tirx.Min),
        "sym_max": symbolic(tirx.Max),
        "amax.default": reduction(relax.op.max),
        "amin.default": reduction(relax.op.min),
        "any.default": any_element,
        "clamp.default": clamp,
        "full.default": full,
        "convert_element_type.default": convert_element_type,
        "div.Tensor_mode": divide_rounding,
        "index_put.default": index_put,
        "select.int": select,
        "constant_pad_nd.default": pad_by_sizes,
        "slice.Tensor": slice_to_a_size,
        "scalar_tensor.default": scalar_tensor,
    }
