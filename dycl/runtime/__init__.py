"""Load and run DyCL artifacts. Needs numpy and the backend's runtime (onnxruntime or
tvm) only: never torch, xdsl or torch_mlir."""

from dycl.runtime.artifact import ArtifactError
from dycl.runtime.model import CompiledModel, InputError


def load(directory, threads: int | None = None) -> CompiledModel:
    """Verify the artifact's sha256 hashes, then load its host program and sub-DNNs."""
    return CompiledModel(directory, threads=threads)


__all__ = ["ArtifactError", "CompiledModel", "InputError", "load"]
