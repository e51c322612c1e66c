"""Backends: each sub-DNN of an HCFG -> a file a static deep-learning compiler made.

Every backend is registered once, in `get_all_backends`, by name and through two lazy
factories (as `dycl.passes` and `xdsl.transforms` register passes): its `Backend` class,
which imports torch and the compiler, and its runner factory, which needs numpy and the
backend's own runtime only, so that `dycl.runtime` loads an artifact without torch. This
module imports neither; `compile_subdnns` and the `SubDNN` names load on first use.

`compile_subdnns(subdnns_of(module), weights, backend, options)` is the entry point;
`BackendError` names the sub-DNN and the op a backend cannot take.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dycl.backends.backend import Backend
from dycl.backends.compiled import CompiledSubDNN
from dycl.backends.errors import BackendError

if TYPE_CHECKING:
    from dycl.runtime.runners import RunnerFactory


@dataclass(frozen=True)
class RegisteredBackend:
    compiler: Callable[[], type[Backend]]
    runner: Callable[[], RunnerFactory]


def get_all_backends() -> dict[str, RegisteredBackend]:
    """Return DyCL's backends; a backend's modules are imported only when it is used."""

    def get_onnxruntime():
        from dycl.backends.onnxruntime import OnnxRuntimeBackend

        return OnnxRuntimeBackend

    def get_onnxruntime_runner():
        from dycl.runtime.runners import ort_runner

        return ort_runner

    def get_tvm():
        from dycl.backends.tvm import TvmBackend

        return TvmBackend

    def get_tvm_runner():
        from dycl.runtime.runners import tvm_runner

        return tvm_runner

    return {
        "onnxruntime": RegisteredBackend(get_onnxruntime, get_onnxruntime_runner),
        "tvm": RegisteredBackend(get_tvm, get_tvm_runner),
    }


BACKENDS = tuple(get_all_backends())


def _registered(name: str) -> RegisteredBackend:
    backends = get_all_backends()
    if name not in backends:
        raise ValueError(f"unknown backend '{name}': choose {' or '.join(repr(n) for n in backends)}")
    return backends[name]


def backend_class(name: str) -> type[Backend]:
    return _registered(name).compiler()


def runner_factory(name: str) -> RunnerFactory:
    return _registered(name).runner()


def backend_options(backend: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """`options` over the backend's defaults; a name it does not know is a TypeError."""
    return backend_class(backend).from_options(options).option_values()


# name -> defining module, imported on first use (they import xDSL).
_LAZY = {
    "compile_subdnns": "dycl.backends.driver",
    "SubDNN": "dycl.backends.subdnn",
    "TensorSpec": "dycl.backends.subdnn",
    "subdnns_of": "dycl.backends.subdnn",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'dycl.backends' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "CompiledSubDNN",
    "RegisteredBackend",
    "SubDNN",
    "TensorSpec",
    "backend_class",
    "backend_options",
    "compile_subdnns",
    "get_all_backends",
    "runner_factory",
    "subdnns_of",
]
