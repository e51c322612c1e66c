"""Load and run DyCL artifacts. Needs numpy and the backend's runtime (onnxruntime or
tvm) only: never torch, xdsl or torch_mlir."""

from dycl.runtime.artifact import ArtifactError
from dycl.runtime.model import CompiledModel, InputError
from dycl.runtime.options import RuntimeOptions


def load(directory, threads: int | None = None, runtime: RuntimeOptions | None = None) -> CompiledModel:
    """Verify the artifact's sha256 hashes, then load its host program and sub-DNNs.

    `runtime` says how its sub-DNNs run (threads, ONNX Runtime's thread pools);
    `threads` is a shorthand for `runtime.threads`."""
    return CompiledModel(directory, threads=threads, runtime=runtime)


__all__ = ["ArtifactError", "CompiledModel", "InputError", "RuntimeOptions", "load"]
