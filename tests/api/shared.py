"""Fixtures shared by the backend, codegen, runtime and API tests.

One compile cache per test session (never ~/.cache), and the hand-written HCFG samples
compiled once per backend.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile

import pytest

from dycl.backends import BACKENDS  # noqa: F401 - the tests' parameter list

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

# Block torch (and the compiler stack) in a subprocess: the deployed runtime must not need it.
NO_TORCH_PRELUDE = """
import sys
class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "torch_mlir", "xdsl", "onnx", "onnxscript"):
            raise ImportError(f"{name} is blocked in this test")
sys.meta_path.insert(0, _Blocker())
"""


@pytest.fixture(scope="session")
def sample_weights():
    from tests.foundation.samples import weights

    return weights()


@pytest.fixture(scope="session")
def compiled_samples(sample_weights):
    """{(sample, backend): CompiledModel} for the hand-written host IR samples."""
    from dycl.api import compile_module
    from dycl.ir import parse_module
    from tests.foundation.samples import SAMPLES

    cache = {}

    def get(sample: str, backend: str = "onnxruntime"):
        key = (sample, backend)
        if key not in cache:
            module = parse_module(SAMPLES[sample])
            cache[key] = compile_module(module, sample_weights, backend, progress=False)
        return cache[key]

    return get


def flat(value):
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from flat(item)
    else:
        yield value


def max_error(expected, actual) -> float:
    """Max abs difference over tensor leaves; non-tensor leaves must be equal."""
    import numpy as np
    import torch

    exp, act = list(flat(expected)), list(flat(actual))
    assert len(exp) == len(act), f"structure differs: {expected!r} vs {actual!r}"
    error = 0.0
    for e, a in zip(exp, act):
        if isinstance(e, torch.Tensor):
            a = torch.as_tensor(np.asarray(a)) if not isinstance(a, torch.Tensor) else a
            assert tuple(e.shape) == tuple(a.shape), (e.shape, a.shape)
            if e.numel():
                error = max(error, (e.double() - a.double()).abs().max().item())
        else:
            assert e == a, f"{e!r} != {a!r}"
    return error


# ------------------------------------------------------------------ signed artifacts


# The `sign` extra (in `dev`): model-signing, and pyOpenSSL, which it imports undeclared.
# Looked up, not imported: importing it takes seconds.
needs_signing = pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("model_signing", "OpenSSL")),
    reason="the optional package model-signing is not installed (pip install -e '.[sign]')",
)


def write_key_pair(directory, name, curve):
    """An elliptic-curve key pair as model-signing reads it: PKCS#8 private, SPKI public PEM."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(curve())
    private, public = directory / f"{name}.pem", directory / f"{name}.pub"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public
