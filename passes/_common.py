"""What the HCFG passes agree on: op classes, shape joins, located diagnostics.

Shared by dycl-shape-infer, dycl-outline, dycl-hoist-free, dycl-dedup and `dycl.hcfg`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.printer import Printer
from xdsl.rewriter import Rewriter
from xdsl.transforms.dead_code_elimination import would_be_trivially_dead
from xdsl.utils.exceptions import PassFailedException

from dycl.dialects import torch as t
from dycl.dialects.dycl import SUBDNN_ATTR, ParamOp, is_kept_if, is_subdnn, mark_subdnn
from dycl.dialects.torch_ops import (
    SIZE_ARITHMETIC,
    SIZE_QUERY,
    Category,
    has_value_semantics,
    is_torch_op,
    op_info,
)

CONTROL_OPS = (scf.IfOp, scf.ForOp, scf.WhileOp)
"""The region ops the host IR may contain."""

CONSTANT_OPS = (
    t.ConstantIntOp,
    t.ConstantFloatOp,
    t.ConstantBoolOp,
    t.ConstantNoneOp,
    t.ConstantStrOp,
    t.ConstantDeviceOp,
    t.ValueTensorLiteralOp,
    ParamOp,
    arith.ConstantOp,
)
"""Ops that are cloned wherever they are used (a sub-DNN gets its own copy)."""


# ------------------------------------------------------------------ functions


def host_functions(module: ModuleOp) -> Iterator[func.FuncOp]:
    """The functions that hold control flow: every defined func that is not a sub-DNN."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and not is_subdnn(op) and not op.is_declaration:
            yield check_function(op)


def subdnn_functions(module: ModuleOp) -> list[func.FuncOp]:
    return [check_function(op) for op in module.ops if is_subdnn(op)]


def check_functions(module: ModuleOp) -> None:
    """Every host function and sub-DNN is one block (see `check_function`)."""
    for op in module.ops:
        if is_subdnn(op) or (isinstance(op, func.FuncOp) and not op.is_declaration):
            check_function(op)


def check_function(fn: func.FuncOp) -> func.FuncOp:
    """`fn`, if its body is one block that ends in `func.return`: the HCFG passes handle
    structured control flow only (`scf` ops), and a sub-DNN is never a declaration.
    Multi-block bodies verify in xDSL (`cf`-style IR) but made the passes' `fn.body.block`
    raise ValueError; an unknown op in place of `func.return` verifies too (xDSL takes any
    unregistered op for a terminator) and failed an assertion in dycl-hoist-free."""
    kind = "sub-DNN" if is_subdnn(fn) else "function"
    if len(fn.body.blocks) != 1:
        what = "no body" if not fn.body.blocks else f"{len(fn.body.blocks)} blocks"
        raise HCFGError(
            f"@{fn.sym_name.data}: a {kind} with {what}: DyCL's passes need one block per function "
            "(structured control flow with scf ops)"
        )
    last = fn.body.block.last_op
    if not isinstance(last, func.ReturnOp):
        raise error(last or fn, f"a {kind} that does not end in func.return")
    return fn


class SubDNNPattern(RewritePattern, ABC):
    """A rewrite of one sub-DNN `func.func` (together with its call sites)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, fn: func.FuncOp, rewriter: PatternRewriter):
        # A sub-DNN's calls are found in the module that holds it: a func held by anything
        # else (malformed IR) is not one the pipeline made, and is left to the verifier.
        if is_subdnn(fn) and isinstance(fn.parent_op(), ModuleOp):
            self.rewrite_subdnn(fn, rewriter)

    @abstractmethod
    def rewrite_subdnn(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None: ...


class CallIndex:
    """The `func.call`s of each callee, found by one walk of the host functions, for a pass
    whose patterns ask for a sub-DNN's call sites at every visit (`call_sites` would walk
    every host function each time: quadratic in the program). A pass that replaces calls
    says so (`replaced`); erased calls drop out by themselves."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.calls: dict[str, list[func.CallOp]] | None = None

    def of(self, name: str) -> list[func.CallOp]:
        if self.calls is None:
            self.calls = calls_by_callee(self.module)
        live = [call for call in self.calls.get(name, ()) if self.module.is_ancestor(call)]
        self.calls[name] = live
        return live

    def replaced(self, name: str, calls: list[func.CallOp]) -> None:
        if self.calls is not None:
            self.calls[name] = list(calls)


_CALL_INDEX: ContextVar[CallIndex | None] = ContextVar("dycl_call_index", default=None)


@contextmanager
def indexed_calls(module: ModuleOp) -> Iterator[CallIndex]:
    """Within it, `call_sites` of `module`'s functions reads one `CallIndex`."""
    index = CallIndex(module)
    token = _CALL_INDEX.set(index)
    try:
        yield index
    finally:
        _CALL_INDEX.reset(token)


def replaced_calls(fn: func.FuncOp, calls: list[func.CallOp]) -> None:
    """`fn`'s call sites are now `calls` (new ops replacing the old ones)."""
    index = _CALL_INDEX.get()
    if index is not None and index.module is fn.parent_op():
        index.replaced(fn.sym_name.data, calls)


def call_sites(fn: func.FuncOp) -> list[func.CallOp]:
    """Every `func.call` of `fn` in the module's host functions, in program order."""
    module = fn.parent_op()
    assert module is not None
    name = fn.sym_name.data
    index = _CALL_INDEX.get()
    if index is not None and index.module is module:
        return index.of(name)
    return [
        op
        for host in module.ops
        if isinstance(host, func.FuncOp) and not is_subdnn(host)
        for op in host.walk()
        if isinstance(op, func.CallOp) and op.callee.root_reference.data == name
    ]


def calls_by_callee(module: ModuleOp) -> dict[str, list[func.CallOp]]:
    """Every `func.call` in the host functions, by callee name, in program order."""
    calls: dict[str, list[func.CallOp]] = {}
    for host in host_functions(module):
        for op in host.walk():
            if isinstance(op, func.CallOp):
                calls.setdefault(op.callee.root_reference.data, []).append(op)
    return calls


# ----------------------------------------------------------------- op classes


def is_constant(value: SSAValue) -> bool:
    """A value a clone of its defining ops reproduces anywhere: constants, weight
    references, literals, and lists of those."""
    owner = value.owner
    if isinstance(owner, CONSTANT_OPS):
        return True
    if isinstance(owner, t.ListConstructOp):
        return all(is_constant(e) for e in owner.elements)
    return False


def is_tensor(value: SSAValue) -> bool:
    return isinstance(value.type, t.ValueTensorType)


def is_static_tensor_type(type_: Attribute) -> bool:
    return isinstance(type_, t.ValueTensorType) and type_.has_static_shape


def tensor_list_operand(value: SSAValue) -> t.ListConstructOp | None:
    """The `ListConstruct` of tensors (and constants) feeding `value`, if any (what a
    concatenation reads): it travels with its user into a sub-DNN."""
    owner = value.owner
    if isinstance(owner, t.ListConstructOp) and not is_constant(value):
        if all(is_tensor(e) or is_constant(e) for e in owner.elements):
            return owner
    return None


def size_leaves(value: SSAValue) -> list[SSAValue] | None:
    """The tensors whose sizes an int (or a list of ints) is computed from, when it is
    computed from sizes alone: `torch.aten.size.int` of a tensor at a constant dim, the int
    arithmetic of `SIZE_ARITHMETIC` on such ints and constants, and lists of those (the
    shape of `x.view(1, prompt.size(0), 4, 64)`). Else None. A sub-DNN may compute such a
    value itself from those tensors, as its backend computes sizes (a symbolic dim), so the
    op that reads it need not wait for the host (dycl-outline)."""
    if is_tensor(value):
        return None
    if is_constant(value):
        return []
    owner = value.owner
    if not isinstance(owner, Operation) or len(owner.results) != 1:
        return None
    name = t.op_name(owner)
    if name == SIZE_QUERY:
        source, dim = owner.operands
        return [source] if is_tensor(source) and is_constant(dim) else None
    if name in SIZE_ARITHMETIC or isinstance(owner, t.ListConstructOp):
        leaves: list[SSAValue] = []
        for operand in owner.operands:
            if (more := size_leaves(operand)) is None:
                return None
            leaves += [leaf for leaf in more if leaf not in leaves]
        return leaves
    return None


def is_size_operand(value: SSAValue) -> bool:
    """A non-constant int or int list computed from tensor sizes alone (`size_leaves`)."""
    return not is_constant(value) and size_leaves(value) is not None


def is_tensor_compute(op: Operation, sizes: bool = False) -> bool:
    """A torch op a sub-DNN may contain: tensor results only, tensor operands, constant
    scalars or lists of tensors; no regions; not a host-level scalar/list op. Also an op
    returning a list of tensors that only unpacks read (a split, an unbind), and such an
    unpack. With `sizes`, also one that reads ints computed from tensor sizes
    (`is_size_operand`), which a sub-DNN computes itself (dycl-outline clones them in)."""
    if op.regions or isinstance(
        op, (*CONSTANT_OPS, t.ListConstructOp, t.BoolTensorOp, t.TensorStaticInfoCastOp)
    ):
        return False
    info = op_info(op)
    if info.category.host_only:
        return False  # (a size from the data is known where the host runs it; a draw is the host's)
    if info.unpacks:
        source = op.operands[0].owner if len(op.operands) == 1 else None
        return (
            isinstance(source, Operation)
            and all(is_tensor(r) for r in op.results)
            and is_tensor_compute(source, sizes)
        )
    if not is_torch_op(op) or info.python is not None:
        return False
    if not op.results or not (
        all(is_tensor(r) for r in op.results) or _is_unpacked_tensor_list(op)
    ):
        return False
    for operand in op.operands:
        if is_tensor(operand) or is_constant(operand) or (sizes and is_size_operand(operand)):
            continue
        if tensor_list_operand(operand) is None:
            return False
    return True


def _is_unpacked_tensor_list(op: Operation) -> bool:
    if len(op.results) != 1:
        return False
    result = op.results[0]
    if not (isinstance(result.type, t.ListType) and isinstance(result.type.element, t.ValueTensorType)):
        return False
    return bool(result.uses) and all(op_info(use.operation).unpacks for use in result.uses)


def is_host_tensor_compute(op: Operation) -> bool:
    """A torch op computing a tensor that is not computation-free: it belongs in a sub-DNN.
    After dycl-outline only ops reading a run-time scalar (a `!torch.int` from `.item()` or
    a loop counter) can be left like this in the host."""
    if op.regions or isinstance(
        op, (*CONSTANT_OPS, t.ListConstructOp, t.BoolTensorOp, t.TensorStaticInfoCastOp)
    ):
        return False
    info = op_info(op)
    if not is_torch_op(op) or info.python is not None:
        return False
    # Tensor ops of a host list (data-dependent length) stay in the host, and so do ops
    # whose size depends on the data and random draws.
    if info.category.computation_free or info.reads_tensor_list or info.category.host_only:
        return False
    return any(is_tensor(r) for r in op.results)


def op_operand_values(op: Operation, sizes: bool = False) -> Iterator[SSAValue]:
    """The op's operands, looking through tensor `ListConstruct`s to their elements. For a
    kept `scf.if` (`dycl.keep`), what it reads as a whole: the tensor its condition chain
    reads, then every value its arms read from outside it. With `sizes`, an int computed
    from tensor sizes (`is_size_operand`) is the tensors it reads the sizes of: what the op
    reads once it is in a sub-DNN, where the int is computed again."""
    operands = op.operands
    if is_kept_if(op):
        chain = condition_chain(op)
        assert chain is not None, "a kept scf.if reads its condition through Bool.Tensor"
        operands = (chain[0].a, *free_values(op))
    for operand in operands:
        if sizes and is_size_operand(operand):
            yield from size_leaves(operand) or ()
            continue
        if (lst := tensor_list_operand(operand)) is not None:
            yield from lst.elements
        yield operand


def condition_chain(op: scf.IfOp) -> tuple[t.BoolTensorOp, Operation] | None:
    """The `torch.aten.Bool.Tensor` and `torch_c.to_i1` that make the if's condition from a
    tensor (`to_i1(Bool.Tensor(%p))`), if that is where it comes from."""
    to_i1 = op.cond.owner
    if not isinstance(to_i1, t.ToI1Op):
        return None
    bool_tensor = to_i1.operands[0].owner
    if not isinstance(bool_tensor, t.BoolTensorOp):
        return None
    return bool_tensor, to_i1


def kept_if_of_chain(op: Operation) -> Operation | None:
    """The kept `scf.if` whose condition chain `op` is (a `torch.aten.Bool.Tensor` or
    `torch_c.to_i1` with that if as its only eventual user), else None."""
    if not isinstance(op, (t.BoolTensorOp, t.ToI1Op)):
        return None
    user = op.results[0].get_user_of_unique_use()
    if isinstance(op, t.BoolTensorOp):
        return kept_if_of_chain(user) if isinstance(user, t.ToI1Op) else None
    if user is not None and is_kept_if(user) and user.operands[0] is op.results[0]:
        return user
    return None


def free_values(op: Operation) -> list[SSAValue]:
    """The values `op`'s regions read that are defined outside `op`, in first-use order
    (`scf` regions are not isolated from above)."""
    inner: set[SSAValue] = set()
    seen: dict[SSAValue, None] = {}
    for nested in op.walk():
        if nested is not op:
            inner.update(nested.results)
        for region in nested.regions:
            for block in region.blocks:
                inner.update(block.args)
    for nested in op.walk():
        if nested is op:
            continue
        for operand in nested.operands:
            if operand not in inner:
                seen.setdefault(operand)
    return list(seen)


# --------------------------------------------------------- cloning, dead ops


def clone_into(
    value: SSAValue, mapping: dict[SSAValue, SSAValue], builder: list[Operation]
) -> SSAValue:
    """The value inside a new function: mapped, or a clone of its constant/list
    producer (recursively), appended to `builder`."""
    if value in mapping:
        return mapping[value]
    owner = value.owner
    assert isinstance(owner, Operation), "live-ins must be mapped before use"
    for operand in owner.operands:
        clone_into(operand, mapping, builder)
    append_clone(owner, mapping, builder)
    return mapping[value]


def append_clone(
    op: Operation, mapping: dict[SSAValue, SSAValue], builder: list[Operation]
) -> None:
    """Append a copy of `op` reading mapped operands; map its results to the copy's."""
    clone = op.clone(value_mapper=mapping)
    builder.append(clone)
    mapping.update(zip(op.results, clone.results))


def is_dead(op: Operation) -> bool:
    """Nothing reads the op's results and it has no other effect: a torch, torch_c or
    dycl op (value semantics: xDSL's dead-code elimination keeps these unregistered ops,
    whose effects it cannot know), or an op whose traits tell xDSL it is free of effects."""
    if op.regions or any(r.uses for r in op.results):
        return False
    return has_value_semantics(op) or would_be_trivially_dead(op)


def erase_dead_ops(
    block: Block,
    rewriter: PatternRewriter | None = None,
    kinds: tuple[type[Operation], ...] = (Operation,),
) -> None:
    """Erase the dead ops (`is_dead`) of `block` and its regions, last to first, so that
    an op whose only reader was dead goes too; only ops of `kinds`. Terminators stay."""
    for op in reversed(list(block.ops)):
        for region in op.regions:
            for inner in region.blocks:
                erase_dead_ops(inner, rewriter, kinds)
        if op is block.last_op or not isinstance(op, kinds) or not is_dead(op):
            continue
        if rewriter is None:
            Rewriter.erase_op(op)
        else:
            rewriter.erase(op)


# ------------------------------------------------------------- shapes, bytes

_ELEMENT_BYTES = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
                  "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


def tensor_bytes(type_: Attribute) -> int | None:
    """Bytes of a statically shaped tensor, else None."""
    from dycl.dialects.dtypes import dtype_name

    if not is_static_tensor_type(type_) or type_.element_type is None:
        return None
    count = 1
    for d in type_.shape:
        count *= d
    try:
        return count * _ELEMENT_BYTES[dtype_name(type_.element_type)]
    except (KeyError, ValueError):
        return None


def join_types(a: Attribute, b: Attribute) -> Attribute:
    """The least specific type of two tensor types, per dimension: `[1,3] | [1,7] = [1,?]`.
    Non-tensor types are returned unchanged (`a`)."""
    if a == b or not (isinstance(a, t.ValueTensorType) and isinstance(b, t.ValueTensorType)):
        return a
    dtype = a.element_type if a.element_type == b.element_type else None
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return t.ValueTensorType(None, dtype)
    return t.ValueTensorType(
        [x if x == y else None for x, y in zip(a.shape, b.shape)], dtype
    )


def refines(specific: Attribute, general: Attribute) -> bool:
    """`specific` is `general` with some unknown dims (or the dtype) made known."""
    if specific == general:
        return True
    if not (isinstance(specific, t.ValueTensorType) and isinstance(general, t.ValueTensorType)):
        return False
    return join_types(specific, general) == general


def format_type(type_: Attribute) -> str:
    if isinstance(type_, t.ValueTensorType):
        shape = type_.shape
        dims = "*" if shape is None else "x".join("?" if d is None else str(d) for d in shape)
        return f"{dims}" + (f":{_dtype_or(type_)}" if type_.element_type else "")
    return str(type_).removeprefix("!torch.")


def _dtype_or(type_: t.ValueTensorType) -> str:
    from dycl.dialects.dtypes import dtype_name

    try:
        return dtype_name(type_.element_type)
    except ValueError:
        return str(type_.element_type)


# --------------------------------------------------------------- diagnostics


class HCFGError(PassFailedException):
    """Malformed or unsupported IR met by an HCFG pass, with the op's location."""


def locate(op: Operation) -> str:
    """Where `op` is: its source location when it has one, else its path from the
    function: `@forward: op 5 (scf.for) / body / op 1 (torch.aten.mm)`."""
    if isinstance(op.location, FileLineColLoc):
        loc = op.location
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    path: list[str] = []
    current: Operation = op
    while True:
        parent = current.parent_op()
        block = current.parent_block()
        if parent is None or block is None or isinstance(parent, ModuleOp):
            return " / ".join(reversed(path)) if path else t.op_name(op)
        index = list(block.ops).index(current)
        path.append(f"op {index} ({t.op_name(current)})")
        if isinstance(parent, func.FuncOp):
            return f"@{parent.sym_name.data}: " + " / ".join(reversed(path))
        region_index = parent.regions.index(current.parent_region())
        names = REGION_NAMES.get(type(parent), ())
        path.append(names[region_index] if region_index < len(names) else f"region {region_index}")
        current = parent


REGION_NAMES: dict[type[Operation], tuple[str, ...]] = {
    scf.IfOp: ("then", "else"),
    scf.ForOp: ("body",),
    scf.WhileOp: ("before", "after"),
}
"""What the regions of each control op are called in diagnostics and summaries."""


def op_text(op: Operation, limit: int = 200) -> str:
    """One line of the op in generic form (regions elided)."""
    import io

    out = io.StringIO()
    printer = Printer(stream=out, print_generic_format=True)
    if op.regions:
        results = ", ".join(f"%{r.name_hint or '?'}" for r in op.results)
        operands = ", ".join(f"%{o.name_hint or '?'}" for o in op.operands)
        head = f"{results} = " if results else ""
        return f'{head}"{t.op_name(op)}"({operands}) ({len(op.regions)} regions)'
    printer.print_op(op)
    text = " ".join(out.getvalue().split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error(op: Operation, message: str) -> HCFGError:
    return HCFGError(f"{locate(op)}: {message}: {op_text(op)}")


def iter_blocks(op: Operation) -> Iterable:
    for region in op.regions:
        yield from region.blocks
