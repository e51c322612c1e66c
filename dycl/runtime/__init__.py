"""Load and run DyCL artifacts. Needs numpy and the backend's runtime (onnxruntime or
tvm) only: never torch, xdsl or torch_mlir. Signing and verifying artifacts also need the
optional package model-signing (`pip install 'dycl[sign]'`)."""

import os
from pathlib import Path

from dycl.runtime.artifact import ArtifactError
from dycl.runtime.model import CompiledModel, InputError
from dycl.runtime.options import RuntimeOptions
from dycl.runtime.signing import sign_artifact


def load(
    directory,
    threads: int | None = None,
    runtime: RuntimeOptions | None = None,
    verify_key: str | os.PathLike | None = None,
) -> CompiledModel:
    """Verify the artifact's sha256 hashes, then load its host program and sub-DNNs.

    `runtime` says how its sub-DNNs run (threads, ONNX Runtime's thread pools);
    `threads` is a shorthand for `runtime.threads`. With `verify_key` (an elliptic-curve
    public key PEM), an artifact whose signature is missing or does not match is refused
    with an `ArtifactError` before any file of it is opened."""
    return CompiledModel(directory, threads=threads, runtime=runtime, verify_key=verify_key)


def sign(directory, key: str | os.PathLike) -> Path:
    """Sign the artifact in `directory` with an elliptic-curve private key PEM: writes
    `model.sig`, which `load(directory, verify_key=...)` checks."""
    return sign_artifact(directory, key)


__all__ = ["ArtifactError", "CompiledModel", "InputError", "RuntimeOptions", "load", "sign"]
