"""Backends: each sub-DNN of an HCFG -> an ONNX Runtime model or a TVM library.

`compile_subdnns(subdnns_of(module), weights, backend, options)` is the entry point;
`BackendError` names the sub-DNN and the op a backend cannot take.
"""

from dycl.backends.compiled import CompiledSubDNN
from dycl.backends.driver import backend_options, compile_subdnns
from dycl.backends.errors import BackendError
from dycl.backends.subdnn import SubDNN, TensorSpec, subdnns_of

BACKENDS = ("onnxruntime", "tvm")

__all__ = [
    "BACKENDS",
    "BackendError",
    "CompiledSubDNN",
    "SubDNN",
    "TensorSpec",
    "backend_options",
    "compile_subdnns",
    "subdnns_of",
]
