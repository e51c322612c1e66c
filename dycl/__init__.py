"""DyCL: compile dynamic neural networks with static deep-learning compilers.

    import dycl
    compiled = dycl.compile(model, example_inputs, backend="onnxruntime")   # or "tvm"
    # ... checked against eager PyTorch on the example inputs (dycl.CompileMismatch if not)
    compiled.save("artifact_dir");  compiled = dycl.load("artifact_dir")
    dycl.sign("artifact_dir", "key.pem");  dycl.load("artifact_dir", verify_key="key.pub")

Names are imported lazily so that `import dycl` stays cheap and torch-free: a deployed
artifact is loaded with numpy and the backend runtime only.
"""

import importlib

_EXPORTS = {
    "compile": ("dycl.api", "compile"),
    "compile_module": ("dycl.api", "compile_module"),
    "load": ("dycl.runtime", "load"),
    "sign": ("dycl.runtime", "sign"),
    "FrontendError": ("dycl.frontend.errors", "FrontendError"),
    "import_module": ("dycl.frontend", "import_module"),
    "CompiledModel": ("dycl.runtime", "CompiledModel"),
    "ArtifactError": ("dycl.runtime", "ArtifactError"),
    "InputError": ("dycl.runtime", "InputError"),
    "BackendError": ("dycl.backends.errors", "BackendError"),
    "CompileError": ("dycl.api", "CompileError"),
    "CompileMismatch": ("dycl.api", "CompileMismatch"),
    "PipelineError": ("dycl.passes.compose", "PipelineError"),
    "TuneOptions": ("dycl.backends.tuning", "TuneOptions"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'dycl' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value
