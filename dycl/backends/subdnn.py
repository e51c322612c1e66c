"""What a backend needs to know about one sub-DNN, in a form that crosses processes.

A `SubDNN` carries the func as standalone IR text (so a pool worker can parse it), its
argument and result signatures, and the names of the weights it reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from dycl.backends.cost import estimated_macs
from dycl.dialects.dtypes import dtype_name
from dycl.dialects.dycl import THREADS_ATTR, ParamOp, is_batchable, is_subdnn, subdnn_threads
from dycl.dialects.torch import ValueTensorType
from dycl.ir import print_module


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int | None, ...]  # None: a dim known only at run time (`x[:k]`)
    dtype: str  # numpy/torch dtype name: "float32", "int64", "bool"

    def to_json(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype}


@dataclass(frozen=True)
class SubDNN:
    name: str
    ir_text: str  # a builtin.module holding only this func, generic form
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    weight_names: tuple[str, ...]
    macs: int = 0  # multiply-accumulates of its convolutions and products (backends.cost)
    threads: int | None = None  # at most this many intra-op threads (`dycl.threads`), else the runtime decides
    batch_rows: int | None = None
    """Rows per call at dim 0 of a batchable sub-DNN (dycl-mark-batchable): its inputs and
    outputs then have a dynamic dim 0 (None), so that one call can serve many requests."""

    def static(self) -> SubDNN:
        """The sub-DNN compiled for one request's rows only (a backend's fallback)."""
        if self.batch_rows is None:
            return self

        def fixed(specs):
            return tuple(TensorSpec((self.batch_rows, *s.shape[1:]), s.dtype) for s in specs)

        return replace(self, inputs=fixed(self.inputs), outputs=fixed(self.outputs), batch_rows=None)

    def content_key(self, weights: Mapping[str, np.ndarray]) -> str:
        """sha256 of what decides the compiled code: the IR (under a neutral name) and
        the bytes of every weight it reads."""
        digest = hashlib.sha256()
        digest.update(self.ir_text.replace(f'"{self.name}"', '"__subdnn__"').encode())
        for name in self.weight_names:
            array = np.ascontiguousarray(weights[name])
            digest.update(f"{name}:{array.dtype}:{array.shape}".encode())
            digest.update(array.tobytes())
        return digest.hexdigest()


def tensor_spec(type_, where: str) -> TensorSpec:
    if not isinstance(type_, ValueTensorType) or type_.shape is None or type_.element_type is None:
        raise ValueError(f"{where}: expected a !torch.vtensor of known rank and dtype, got {type_}")
    return TensorSpec(tuple(type_.shape), dtype_name(type_.element_type))


def subdnn_from_func(function: func.FuncOp) -> SubDNN:
    name = function.sym_name.data
    body_ops = list(function.walk())
    weight_names = tuple(dict.fromkeys(op.weight_name for op in body_ops if isinstance(op, ParamOp)))
    signature = function.function_type
    inputs = tuple(tensor_spec(t, f"@{name} argument {i}") for i, t in enumerate(signature.inputs))
    outputs = tuple(tensor_spec(t, f"@{name} result {i}") for i, t in enumerate(signature.outputs))
    clone = function.clone()
    clone.attributes.pop(THREADS_ATTR, None)  # how it runs, not what it computes: not in the cache key
    standalone = ModuleOp([clone])
    batch_rows = None
    if is_batchable(function):
        batch_rows = inputs[0].shape[0]
        inputs, outputs = (tuple(TensorSpec((None, *s.shape[1:]), s.dtype) for s in specs) for specs in (inputs, outputs))
    return SubDNN(
        name, print_module(standalone), inputs, outputs, weight_names, estimated_macs(function),
        threads=subdnn_threads(function), batch_rows=batch_rows,
    )


def subdnns_of(module: ModuleOp) -> Iterator[SubDNN]:
    for op in module.ops:
        if is_subdnn(op):
            yield subdnn_from_func(op)


def only_func(module: ModuleOp) -> func.FuncOp:
    (function,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return function


__all__ = ["SubDNN", "TensorSpec", "is_subdnn", "only_func", "subdnn_from_func", "subdnns_of", "tensor_spec"]
