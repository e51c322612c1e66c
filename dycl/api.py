"""`dycl.compile` and `dycl.load`: the public API.

    compiled = dycl.compile(model, example_inputs, backend="onnxruntime")   # or "tvm"
    out = compiled(*inputs)             # torch in -> torch out, numpy in -> numpy out
    compiled.save("artifact/");  compiled = dycl.load("artifact/")          # load needs no torch

compile = frontend (host IR) -> dycl-pipeline (HCFG) -> backends (sub-DNNs) + codegen
(host.py) -> an artifact directory -> the runtime. What you run after `compile` is exactly
what `load` gives you from the saved directory.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dycl.runtime import ArtifactError, CompiledModel, InputError, load

__all__ = ["compile", "compile_module", "load", "CompiledModel", "ArtifactError", "InputError"]


def compile(  # noqa: A001 - the public name the design asks for
    model,
    example_inputs: Sequence[Any] | Any,
    backend: str = "onnxruntime",
    *,
    method: str = "forward",
    threads: int | None = None,
    jobs: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    progress: bool = True,
    pipeline: Mapping[str, Any] | None = None,
    **backend_options: Any,
) -> CompiledModel:
    """Compile `model.<method>` for `backend`.

    backend_options: onnxruntime: `opset`; tvm: `target`, `tune_seconds` (MetaSchedule
    budget per sub-DNN, 0 = untuned), `tune_trials_per_round`.
    threads: runtime threads (default: all cores; sub-DNNs under 2 M multiply-accumulates
    run on one). jobs: compile processes (default: TVM uses all cores when there are enough
    sub-DNNs to pay for the pool; ONNX Runtime exports all sub-DNNs at once in-process).
    pipeline: options of `dycl-pipeline` (min_ops, max_trip_count, weights_as_args).
    """
    from dycl.frontend import import_module

    start = time.perf_counter()
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    program = import_module(model, tuple(_as_torch(v) for v in example_inputs), method=method)
    frontend_seconds = time.perf_counter() - start
    compiled = compile_module(
        program.module,
        program.weights,
        backend,
        entry=program.function_name,
        threads=threads,
        jobs=jobs,
        cache_dir=cache_dir,
        use_cache=use_cache,
        progress=progress,
        pipeline=pipeline,
        **backend_options,
    )
    compiled.compile_report["frontend_seconds"] = frontend_seconds
    compiled.compile_report["total_seconds"] = time.perf_counter() - start
    return compiled


def compile_module(
    module,
    weights: Mapping[str, Any],
    backend: str = "onnxruntime",
    *,
    entry: str = "forward",
    threads: int | None = None,
    jobs: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    progress: bool = True,
    pipeline: Mapping[str, Any] | None = None,
    run_pipeline: bool = True,
    **backend_options: Any,
) -> CompiledModel:
    """Compile host IR (an xDSL module, as the frontend writes it) with its weights.

    With `run_pipeline=False` the module must already be an HCFG (after dycl-pipeline)."""
    from dycl.backends import backend_options as check_options
    from dycl.backends import compile_subdnns, subdnns_of
    from dycl.codegen import generate_host
    from dycl.ir import make_context

    options = check_options(backend, backend_options)  # fail before the slow steps
    report: dict[str, Any] = {"backend": backend}
    start = time.perf_counter()
    if run_pipeline:
        from dycl.passes.pipeline import PipelinePass

        PipelinePass(**(pipeline or {})).apply(make_context(), module)
    report["pipeline_seconds"] = time.perf_counter() - start

    host = generate_host(module, entry)
    subdnns = list(subdnns_of(module))
    start = time.perf_counter()
    compiled = compile_subdnns(
        subdnns, weights, backend, options, jobs=jobs, cache_dir=cache_dir, use_cache=use_cache, progress=progress
    )
    report["backend_seconds"] = time.perf_counter() - start
    report["subdnn_count"] = len(subdnns)
    report["cached_subdnns"] = sum(c.cached for c in compiled.values())

    directory = tempfile.mkdtemp(prefix="dycl-artifact-")
    try:
        write_compiled_artifact(directory, module, entry, host, subdnns, compiled, weights, backend, options, threads)
        model = CompiledModel(directory, threads=threads)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    weakref.finalize(model, shutil.rmtree, directory, ignore_errors=True)
    model.hcfg = _hcfg(module)
    model.hcfg_module = module
    model.compile_report.update(report)
    return model


def write_compiled_artifact(directory, module, entry, host, subdnns, compiled, weights, backend, options, threads):
    from dycl.runtime.artifact import write_artifact

    files: dict[str, bytes] = {"host.py": host.source.encode()}
    constants = dict(host.constants)
    for name in host.weight_names:
        constants[name] = np.asarray(_as_numpy(weights[name]))
    if constants:
        buffer = io.BytesIO()
        np.savez(buffer, **constants)
        files["constants.npz"] = buffer.getvalue()
    records = []
    for subdnn in subdnns:
        result = compiled[subdnn.name]
        files.update(result.files)
        records.append(
            {
                "name": subdnn.name,
                "inputs": [s.to_json() for s in subdnn.inputs],
                "outputs": [s.to_json() for s in subdnn.outputs],
                "macs": subdnn.macs,
                **result.meta,
            }
        )
    function = _function(module, entry)
    manifest = {
        "backend": backend,
        "backend_options": options,
        "entry": entry,
        "inputs": _input_signature(function, host.arg_names),
        "outputs": {"count": len(function.function_type.outputs), "tree": _output_tree(function)},
        "host": "host.py",
        "constants": "constants.npz" if constants else None,
        "subdnns": records,
        "runtime": {"threads": threads},
    }
    write_artifact(directory, json.loads(json.dumps(manifest, default=str)), files)


def _function(module, name: str):
    from xdsl.dialects import func

    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise KeyError(f"no function @{name}")


def _input_signature(function, names: Sequence[str]) -> list[dict[str, Any]]:
    from dycl.dialects import torch as t
    from dycl.dialects.dtypes import dtype_name

    kinds = {t.IntType: "int", t.FloatType: "float", t.BoolType: "bool"}
    signature = []
    for name, type_ in zip(names, function.function_type.inputs):
        if isinstance(type_, t.ValueTensorType):
            shape = type_.shape
            signature.append(
                {
                    "name": name,
                    "kind": "tensor",
                    "dtype": dtype_name(type_.element_type),
                    "shape": None if shape is None else list(shape),
                }
            )
        elif type(type_) in kinds:
            signature.append({"name": name, "kind": kinds[type(type_)]})
        else:
            raise TypeError(f"@{function.sym_name.data}: input '{name}' has type {type_}, which DyCL cannot take")
    return signature


def _output_tree(function):
    from xdsl.dialects.builtin import StringAttr

    attr = function.attributes.get("dycl.output_tree")
    return json.loads(attr.data) if isinstance(attr, StringAttr) else None


def _hcfg(module):
    try:
        from dycl.hcfg import HCFG

        return HCFG.from_module(module)
    except Exception:  # the summary is a convenience; the artifact does not depend on it
        return module


def _as_torch(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        import torch

        return torch.from_numpy(value)
    return value


def _as_numpy(value: Any) -> np.ndarray:
    detach = getattr(value, "detach", None)
    return detach().cpu().numpy() if detach is not None else np.asarray(value)
