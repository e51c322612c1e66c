"""Helpers for the HCFG pass tests: apply passes, random weights/inputs, equivalence, invariants."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import IntegerType
from xdsl.passes import PassPipeline

from dycl.dialects import torch as t
from dycl.dialects.dtypes import torch_dtype
from dycl.dialects.dycl import ParamOp, is_kept_if
from dycl.interpreter import run_function
from dycl.ir import parse_module, print_module
from dycl.passes import get_all_passes
from dycl.passes._common import (
    CONSTANT_OPS,
    CONTROL_OPS,
    host_functions,
    is_host_tensor_compute,
    is_tensor_compute,
    subdnn_functions,
)
from dycl.passes.outline import is_computation_free

SCALES = (0.01, 0.3, 1.0, 4.0, 20.0)


def apply(spec: str, module: builtin.ModuleOp | str) -> builtin.ModuleOp:
    """Run a pass pipeline on a copy of `module`; the result verifies and round-trips."""
    module = parse_module(module if isinstance(module, str) else print_module(module))
    PassPipeline.parse_spec(get_all_passes(), spec).apply(Context(allow_unregistered=True), module)
    module.verify()
    return parse_module(print_module(module))


def random_weights(module: builtin.ModuleOp, seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    weights = {}
    for op in module.walk():
        if isinstance(op, ParamOp) and op.weight_name not in weights:
            type_ = op.result.type
            weights[op.weight_name] = torch.randn(tuple(type_.shape), generator=gen).to(
                torch_dtype(type_.element_type)
            ) * 0.7
    return weights


def random_args(fn: func.FuncOp, n: int = 12, seed: int = 1) -> list[list]:
    """Argument lists at several scales; i1 / bool arguments alternate."""
    gen = torch.Generator().manual_seed(seed)
    result = []
    for k in range(n):
        args = []
        for type_ in fn.function_type.inputs:
            if isinstance(type_, t.ValueTensorType):
                dtype = torch_dtype(type_.element_type)
                shape = tuple(2 + k % 3 if d is None else d for d in type_.shape)  # (a runtime dim: 2..4)
                if dtype.is_floating_point:
                    x = torch.randn(shape, generator=gen) * SCALES[k % len(SCALES)]
                    args.append(x.to(dtype))
                else:
                    args.append(torch.randint(0, 5, shape, generator=gen).to(dtype))
            elif isinstance(type_, (IntegerType, t.BoolType)):
                args.append(bool((k // len(SCALES)) % 2 == (k % 2)))
            elif isinstance(type_, t.IntType):
                args.append(k % 4)
            elif isinstance(type_, t.FloatType):
                args.append(float(k) * 0.5)
            else:
                raise NotImplementedError(type_)
        result.append(args)
    return result


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def assert_equivalent(before, after, name: str, arg_lists: Sequence[list], weights) -> list:
    """Same results before and after on every argument list; returns the results."""
    outputs = []
    for args in arg_lists:
        want = run_function(before, args, weights, name=name)
        got = run_function(after, args, weights, name=name)
        assert same(got, want), f"@{name}: results differ on {args}"
        outputs.append(want)
    return outputs


def function_names(module: builtin.ModuleOp) -> list[str]:
    return [f.sym_name.data for f in host_functions(module)]


def check_hcfg(module: builtin.ModuleOp, allow_host_compute: bool = False) -> None:
    """The HCFG contract (conventions.md): ranked, straight-line sub-DNNs (a dim may be `?`:
    a runtime size); a host with control, calls, scalar/list ops and computation-free ops only."""
    for fn in subdnn_functions(module):
        assert fn.sym_visibility is not None and fn.sym_visibility.data == "private"
        for type_ in (*fn.function_type.inputs, *fn.function_type.outputs):
            assert isinstance(type_, t.ValueTensorType) and type_.shape is not None and type_.element_type is not None, f"@{fn.sym_name.data}: {type_}"
        for op in fn.body.block.ops:
            # The one region op a sub-DNN may hold: an scf.if dycl-keep-branches kept.
            assert not op.regions or is_kept_if(op), f"@{fn.sym_name.data}: region op {t.op_name(op)}"
        for op in fn.walk():
            if op is not fn and op.regions:
                assert is_kept_if(op), f"@{fn.sym_name.data}: region op {t.op_name(op)}"
            for r in op.results:
                if isinstance(r.type, t.ValueTensorType):
                    assert r.type.shape is not None
        assert len(list(fn.body.block.ops)) > 1
    for host in host_functions(module):
        for op in host.walk():
            if isinstance(op, (*CONTROL_OPS, *CONSTANT_OPS, func.FuncOp)):
                continue
            assert not is_tensor_compute(op) or is_computation_free(op), t.op_name(op)
            if not allow_host_compute:
                assert not is_host_tensor_compute(op), f"compute op left in the host: {t.op_name(op)}"
