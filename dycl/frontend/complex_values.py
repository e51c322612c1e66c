"""Complex tensors as real arithmetic, in a run's exported FX program before torch-mlir
imports it (`lower`), so that no complex dtype reaches the IR, the passes or the backends.

A complex tensor of shape `[*s]` is its real view (`torch.view_as_real`): a real tensor of
shape `[*s, 2]`, the real part at `[..., 0]`, the imaginary part at `[..., 1]`, of the
matching real dtype (complex64 -> float32, complex128 -> float64, complex32 -> float16).
So `view_as_complex(x)` is `x`, `view_as_real(z)` is `z`, a complex multiply is
`(ar*br - ai*bi, ar*bi + ai*br)`, `polar(r, t)` is `(r*cos t, r*sin t)`, and views,
slices, selects, concatenations act on the leading dims (a negative dim counts from the
end of the complex shape). A complex input, constant, buffer or output of a run is its real
view there too: the frontend's type of a complex example is that of its real view
(`values.tensor_type`), and the weight store holds the real view of a complex buffer
(`WeightStore.from_module`). Every op on complex values that has no lowering below is
refused (`ComplexOpRefused`) at the statement that computes it.
"""

from __future__ import annotations

import operator
import re

import torch
from torch.export.graph_signature import InputKind
from torch.fx.node import map_arg

aten = torch.ops.aten

REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64, torch.complex32: torch.float16}
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in forward')


class ComplexOpRefused(Exception):
    """An op on complex values that DyCL does not lower to real arithmetic. `frames`: the
    (file, line) of each `forward` frame export recorded for it, outermost first."""

    def __init__(self, op: str, frames: list[tuple[str, int]]):
        super().__init__(op)
        self.op, self.frames = op, frames

    def explained(self, statement: str) -> tuple[str, str]:
        name = self.op if self.op.startswith("torch.") else f"torch.ops.{self.op}"
        return (
            f"`{statement}` computes `{name}` on complex values, which DyCL does not lower to real "
            "arithmetic (complex tensors compile as their real views: docs/conventions.md, \"Complex values\")",
            "compute it on the real and imaginary parts (`torch.view_as_real(z)`, `z.real`, `z.imag`); "
            "DyCL lowers view_as_complex/view_as_real, polar, complex, +, -, *, /, abs, conj, real, imag, "
            "angle and the views, slices, cat and stack of complex tensors",
        )


def is_complex(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_complex()


def real_view_shape(shape) -> list:
    """The shape of the real view of a complex tensor of `shape`."""
    return [*shape, 2]


def lower(program) -> None:
    """Rewrite `program` (an ExportedProgram) in place so that no node holds a complex value."""
    graph = program.graph
    if not any(_holds_complex(node) for node in graph.nodes):
        return
    _Lowering(program).run()
    program.graph_module.recompile()


def _holds_complex(node: torch.fx.Node) -> bool:
    value = node.meta.get("val")
    values = value if isinstance(value, (tuple, list)) else [value]
    return any(is_complex(v) for v in values)


def _fake_mode(graph):
    from torch._guards import detect_fake_mode

    return detect_fake_mode([n.meta.get("val") for n in graph.nodes])


def _norm(dim: int, rank: int) -> int:
    """A dim of a complex tensor of `rank` dims, counted from the start (its real view has one more)."""
    return dim + rank if dim < 0 else dim


class _Lowering:
    def __init__(self, program):
        self.program = program
        self.graph = program.graph
        self.fake_mode = _fake_mode(self.graph)
        self.rank: dict[torch.fx.Node, int] = {}  # complex node (now its real view) -> complex rank
        self.dtype: dict[torch.fx.Node, torch.dtype] = {}  # ... -> its complex dtype
        self.node: torch.fx.Node | None = None  # the node being lowered

    # ----- building -------------------------------------------------------------------

    def emit(self, op, *args, **kwargs) -> torch.fx.Node:
        new = self.graph.call_function(op, args, kwargs)
        values = map_arg((args, kwargs), lambda n: n.meta["val"])
        with self.fake_mode:
            new.meta["val"] = op(*values[0], **values[1])
        for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
            if key in self.node.meta:
                new.meta[key] = self.node.meta[key]
        return new

    def re(self, z):
        return self.emit(aten.select.int, z, -1, 0)

    def im(self, z):
        return self.emit(aten.select.int, z, -1, 1)

    def pack(self, real, imag):
        return self.emit(aten.stack.default, [real, imag], -1)

    def parts(self, value):
        """(real, imag) of a complex node; (value, None) of a real tensor or number."""
        if self.is_c(value):
            return self.re(value), self.im(value)
        return value, None

    def is_c(self, value) -> bool:
        return isinstance(value, torch.fx.Node) and value in self.rank

    def refuse(self, node: torch.fx.Node):
        frames = [(m["file"], int(m["line"])) for m in _FRAME.finditer(node.meta.get("stack_trace") or "")]
        name = str(node.target)
        return ComplexOpRefused(f"torch.ops.{name}" if isinstance(node.target, torch._ops.OpOverload) else name, frames)

    # ----- the pass -------------------------------------------------------------------

    def run(self) -> None:
        specs = {getattr(s.arg, "name", None): s for s in self.program.graph_signature.input_specs}
        for node in list(self.graph.nodes):
            self.node = node
            value = node.meta.get("val")
            if node.op == "placeholder":
                if is_complex(value):
                    self._real_input(node, specs.get(node.name))
                continue
            if node.op == "output":
                continue
            inputs = [a for a in node.all_input_nodes if a in self.rank]
            if not inputs and not _holds_complex(node):
                continue
            if node.op != "call_function":
                raise self.refuse(node)
            if node.target is aten._assert_tensor_metadata.default:
                self.graph.erase_node(node)
                continue
            handler = _LOWERINGS.get(node.target)
            if handler is None:
                raise self.refuse(node)
            with self.graph.inserting_before(node):
                new = handler(self, node, *node.args, **node.kwargs)
            if new is None:
                raise self.refuse(node)
            if is_complex(value):
                if not isinstance(new, torch.fx.Node) or new.meta["val"].dtype != REAL_OF[value.dtype]:
                    raise self.refuse(node)
                self.rank[new] = value.dim()
                self.dtype[new] = value.dtype
            self._replace(node, new)

    def _real_input(self, node, spec) -> None:
        value = node.meta["val"]
        with self.fake_mode:
            node.meta["val"] = torch.view_as_real(value)
        node.meta.pop("tensor_meta", None)  # (the importer reads it before `val`)
        self.rank[node], self.dtype[node] = value.dim(), value.dtype
        if spec is None:
            return
        tables = []
        if spec.kind in (InputKind.CONSTANT_TENSOR, InputKind.BUFFER):
            tables = [self.program.constants, self.program.state_dict]
        elif spec.kind == InputKind.PARAMETER:
            tables = [self.program.state_dict]
        for table in tables:
            if spec.target in table and is_complex(table[spec.target]):
                table[spec.target] = torch.view_as_real(table[spec.target].detach()).clone()

    def _replace(self, node, new) -> None:
        node.replace_all_uses_with(new)
        if new.op != "placeholder" and new.name != node.name:
            for spec in self.program.graph_signature.output_specs:
                if getattr(spec.arg, "name", None) == node.name:
                    spec.arg.name = new.name
        self.graph.erase_node(node)


# ----- lowerings: (lowering, node, *its args, **its kwargs) -> the node that replaces it ----


def _same(lw, node, x, *args, **kwargs):
    """An op that acts on a complex value elementwise or as a copy: the same op on its real view."""
    return lw.emit(node.target, x, *args, **kwargs)


def _reinterpreted(lw, node, x):
    """`view_as_complex(x)` is `x`, `view_as_real(z)` is `z`, as a node of its own (a copy
    the importer knows): the same node would be complex for one reader and real for another."""
    return lw.emit(aten.clone.default, x)


def _polar(lw, node, magnitude, angle):
    return lw.pack(lw.emit(aten.mul.Tensor, magnitude, lw.emit(aten.cos.default, angle)),
                   lw.emit(aten.mul.Tensor, magnitude, lw.emit(aten.sin.default, angle)))


def _complex(lw, node, real, imag):
    return _broadcast_pack(lw, node, real, imag)


def _scalar_ok(value) -> bool:
    return isinstance(value, (int, float, bool, torch.fx.Node))


def _expand_last(lw, value):
    """A real operand beside a real view: a tensor gets a trailing dim of 1."""
    if isinstance(value, torch.fx.Node):
        return lw.emit(aten.unsqueeze.default, value, -1)
    return value


def _mul(lw, node, a, b):
    if not (_scalar_ok(a) and _scalar_ok(b)):
        return None
    if lw.is_c(a) and lw.is_c(b):
        (ar, ai), (br, bi) = lw.parts(a), lw.parts(b)
        mul, add, sub = (lambda x, y, op=op: lw.emit(op, x, y) for op in (aten.mul.Tensor, aten.add.Tensor, aten.sub.Tensor))
        return lw.pack(sub(mul(ar, br), mul(ai, bi)), add(mul(ar, bi), mul(ai, br)))
    z, t = (a, b) if lw.is_c(a) else (b, a)
    return lw.emit(aten.mul.Tensor, z, _expand_last(lw, t))


def _div(lw, node, a, b):
    if not (_scalar_ok(a) and _scalar_ok(b)):
        return None
    if not lw.is_c(b):
        return lw.emit(aten.div.Tensor, a, _expand_last(lw, b))
    (ar, ai), (br, bi) = lw.parts(a), lw.parts(b)
    mul = lambda x, y: lw.emit(aten.mul.Tensor, x, y)
    denominator = lw.emit(aten.add.Tensor, mul(br, br), mul(bi, bi))
    if ai is None:  # a real numerator
        real, imag = mul(ar, br), lw.emit(aten.neg.default, mul(ar, bi))
    else:
        real = lw.emit(aten.add.Tensor, mul(ar, br), mul(ai, bi))
        imag = lw.emit(aten.sub.Tensor, mul(ai, br), mul(ar, bi))
    return lw.pack(lw.emit(aten.div.Tensor, real, denominator), lw.emit(aten.div.Tensor, imag, denominator))


def _add_or_sub(lw, node, a, b, alpha=1):
    if not (_scalar_ok(a) and _scalar_ok(b)) or not isinstance(alpha, (int, float)):
        return None
    op = node.target
    if lw.is_c(a) and lw.is_c(b):
        return lw.emit(op, a, b, alpha=alpha) if alpha != 1 else lw.emit(op, a, b)
    (ar, ai), (br, bi) = lw.parts(a), lw.parts(b)
    real = lw.emit(op, ar, br, alpha=alpha) if alpha != 1 else lw.emit(op, ar, br)
    if ai is not None:  # complex -/+ real: the imaginary part stays
        imag = ai
    else:  # real -/+ complex
        imag = lw.emit(aten.mul.Tensor, bi, -alpha if op is aten.sub.Tensor else alpha)
    return _broadcast_pack(lw, node, real, imag)


def _broadcast_pack(lw, node, real, imag):
    """(real, imag) as one real view of the node's complex shape (the part that did not meet
    the other operand is expanded to it: `x + z` of a real `x` wider than `z`)."""
    shape = list(node.meta["val"].shape)
    for k, part in enumerate((real, imag)):
        if str(list(part.meta["val"].shape)) != str(shape):
            if not all(isinstance(d, int) for d in shape):
                return None
            if k == 0:
                real = lw.emit(aten.expand.default, real, shape)
            else:
                imag = lw.emit(aten.expand.default, imag, shape)
    return lw.pack(real, imag)


def _conj(lw, node, z):
    return lw.pack(lw.re(z), lw.emit(aten.neg.default, lw.im(z)))


def _abs(lw, node, z):
    real, imag = lw.re(z), lw.im(z)
    squares = lw.emit(aten.add.Tensor, lw.emit(aten.mul.Tensor, real, real), lw.emit(aten.mul.Tensor, imag, imag))
    return lw.emit(aten.sqrt.default, squares)


def _angle(lw, node, z):
    return lw.emit(aten.atan2.default, lw.im(z), lw.re(z))


def _real(lw, node, z):
    return lw.re(z)


def _imag(lw, node, z):
    return lw.im(z)


def _shape_with_pair(lw, node, z, shape, *rest):
    return lw.emit(node.target, z, [*shape, 2], *rest)


def _at_dim(lw, node, z, dim=0, *rest):
    return lw.emit(node.target, z, _norm(dim, lw.rank[z]), *rest)


def _select(lw, node, z, dim, index):
    return lw.emit(aten.select.int, z, _norm(dim, lw.rank[z]), index)


def _unsqueeze(lw, node, z, dim):
    return lw.emit(aten.unsqueeze.default, z, _norm(dim, lw.rank[z] + 1))


def _squeeze_dims(lw, node, z, dims):
    dims = [dims] if isinstance(dims, int) else dims
    return lw.emit(node.target, z, [_norm(d, lw.rank[z]) for d in dims])


def _permute(lw, node, z, dims):
    rank = lw.rank[z]
    return lw.emit(aten.permute.default, z, [*(_norm(d, rank) for d in dims), rank])


def _transpose(lw, node, z, a, b):
    rank = lw.rank[z]
    return lw.emit(aten.transpose.int, z, _norm(a, rank), _norm(b, rank))


def _flatten(lw, node, z, start=0, end=-1):
    rank = lw.rank[z]
    return lw.emit(aten.flatten.using_ints, z, _norm(start, rank), _norm(end, rank))


def _cat(lw, node, tensors, dim=0):
    if not all(lw.is_c(t) for t in tensors):
        return None
    return lw.emit(aten.cat.default, list(tensors), _norm(dim, lw.rank[tensors[0]]))


def _stack(lw, node, tensors, dim=0):
    if not all(lw.is_c(t) for t in tensors):
        return None
    return lw.emit(aten.stack.default, list(tensors), _norm(dim, lw.rank[tensors[0]] + 1))


def _size(lw, node, z, dim):
    return lw.emit(aten.sym_size.int, z, _norm(dim, lw.rank[z]))


def _reduce(lw, node, z, dims=None, keepdim=False, dtype=None):
    if dtype is not None or not dims:
        return None
    return lw.emit(node.target, z, [_norm(d, lw.rank[z]) for d in dims], keepdim)


def _converted(lw, value, dtype: torch.dtype):
    """`value` (a node, complex or real) converted to `dtype` as torch converts it: complex
    to real keeps the real part, real to complex has a zero imaginary part."""
    if dtype.is_complex:
        real_dtype = REAL_OF[dtype]
        if lw.is_c(value):
            return lw.emit(aten._to_copy.default, value, dtype=real_dtype)
        real = lw.emit(aten._to_copy.default, value, dtype=real_dtype)
        return lw.pack(real, lw.emit(aten.zeros_like.default, real))
    return lw.emit(aten._to_copy.default, lw.re(value), dtype=dtype)


def _to_dtype(lw, node, x, dtype, non_blocking=False, copy=False, memory_format=None):
    return _converted(lw, x, dtype) if memory_format is None else None


def _to_copy(lw, node, x, **kwargs):
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs.get("memory_format") is not None:
        return None
    if dtype is None:
        return x if lw.is_c(x) else None
    return _converted(lw, x, dtype)


def _type_as(lw, node, x, other):
    return _converted(lw, x, lw.dtype[other] if lw.is_c(other) else other.meta["val"].dtype)


def _getitem(lw, node, *args):
    return None


_LOWERINGS = {
    aten.view_as_complex.default: _reinterpreted,
    aten.view_as_real.default: _reinterpreted,
    aten.polar.default: _polar,
    aten.complex.default: _complex,
    aten.mul.Tensor: _mul,
    aten.div.Tensor: _div,
    aten.add.Tensor: _add_or_sub,
    aten.sub.Tensor: _add_or_sub,
    aten.neg.default: _same,
    aten.clone.default: _same,
    aten.alias.default: _same,
    aten.lift_fresh_copy.default: _same,
    aten.contiguous.default: _same,
    aten.resolve_conj.default: lambda lw, node, z: z,
    aten.resolve_neg.default: lambda lw, node, z: z,
    aten.conj.default: _conj,
    aten._conj.default: _conj,
    aten.conj_physical.default: _conj,
    aten.abs.default: _abs,
    aten.angle.default: _angle,
    aten.real.default: _real,
    aten.imag.default: _imag,
    aten.view.default: _shape_with_pair,
    aten.reshape.default: _shape_with_pair,
    aten._unsafe_view.default: _shape_with_pair,
    aten.expand.default: _shape_with_pair,
    aten.slice.Tensor: _at_dim,
    aten.narrow.default: _at_dim,
    aten.select.int: _select,
    aten.unsqueeze.default: _unsqueeze,
    aten.squeeze.default: _same,  # (the trailing 2 is never squeezed)
    aten.squeeze.dim: _squeeze_dims,
    aten.squeeze.dims: _squeeze_dims,
    aten.permute.default: _permute,
    aten.transpose.int: _transpose,
    aten.flatten.using_ints: _flatten,
    aten.cat.default: _cat,
    aten.stack.default: _stack,
    aten.sym_size.int: _size,
    aten.sum.dim_IntList: _reduce,
    aten.mean.dim: _reduce,
    aten.to.dtype: _to_dtype,
    aten._to_copy.default: _to_copy,
    aten.type_as.default: _type_as,
    operator.getitem: _getitem,
}
