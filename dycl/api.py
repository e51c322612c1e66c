"""`dycl.compile` and `dycl.load`: the public API.

    compiled = dycl.compile(model, example_inputs, backend="onnxruntime")   # or "tvm"
    out = compiled(*inputs)             # torch in -> torch out, numpy in -> numpy out
    compiled.save("artifact/");  compiled = dycl.load("artifact/")          # load needs no torch

compile = frontend (host IR) -> dycl-pipeline (HCFG) -> backends (sub-DNNs) + codegen
(host.py) -> an artifact directory -> the runtime -> a self-check against eager PyTorch on
the example inputs (`check=True`, recorded in the manifest). What you run after `compile`
is exactly what `load` gives you from the saved directory.

Errors: `dycl.compile` raises DyCL's own errors (`FrontendError`, `PipelineError`,
`BackendError`, `InputError`, `ArtifactError`, `CompileMismatch`) unchanged, wraps any other exception of a
stage in a `CompileError` naming the stage (chained: the original is `__cause__`), and
raises `TypeError`/`ValueError` for bad arguments (unknown backend or backend option, a
bad `passes=` spec) before anything runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from dycl.backends.tuning import TuneOptions
from dycl.runtime import ArtifactError, CompiledModel, InputError, RuntimeOptions, load

__all__ = [
    "compile",
    "compile_module",
    "load",
    "check_against_eager",
    "compare_outputs",
    "CompiledModel",
    "CompileError",
    "CompileMismatch",
    "ArtifactError",
    "InputError",
    "TuneOptions",
]

# What "the same output" means everywhere in DyCL's checks (the README's "wrong" = not allclose).
RTOL = 1e-3
ATOL = 1e-4


class CompileError(RuntimeError):
    """`dycl.compile` failed inside one stage (`stage`: frontend, passes, codegen, backend,
    artifact or check) with an error that is not one of DyCL's own; the original exception
    is `__cause__` and its `Type: message` is in this message."""

    def __init__(self, stage: str, message: str):
        self.stage = stage
        super().__init__(message)

    @classmethod
    def wrap(cls, stage: str, error: BaseException) -> "CompileError":
        text = str(error)
        what = f"{type(error).__name__}: {text}" if text else type(error).__name__
        return cls(stage, f"dycl.compile failed in the {stage} stage: {what}")

    def __reduce__(self):
        return (CompileError, (self.stage, str(self)))


class CompileMismatch(CompileError):
    """The compiled model's output differs from eager PyTorch's on the same inputs.

    `path` names the first differing output (`output`, `output[1][0]`), `reason` says how
    (`shape (1, 7) vs eager (1, 3)`, `max abs error 0.41 exceeds allclose(...)`, ...)."""

    def __init__(self, path: str, reason: str, inputs: str = "the example inputs"):
        self.path = path
        self.reason = reason
        self.inputs = inputs
        super().__init__(
            "check",
            f"the compiled model differs from eager PyTorch on {inputs}: {path}: {reason} "
            f"(check=False skips this self-check)",
        )

    def __reduce__(self):
        return (CompileMismatch, (self.path, self.reason, self.inputs))


def compile(  # noqa: A001 - the public name the design asks for
    model,
    example_inputs: Sequence[Any] | Any,
    backend: str = "onnxruntime",
    *,
    method: str = "forward",
    check: bool = True,
    threads: int | None = None,
    runtime: RuntimeOptions | None = None,
    jobs: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    progress: bool = True,
    pipeline: Mapping[str, Any] | None = None,
    passes: str | Sequence[Any] | None = None,
    tune: TuneOptions | None = None,
    run_many_form: bool = False,
    **backend_options: Any,
) -> CompiledModel:
    """Compile `model.<method>` for `backend`.

    backend_options: onnxruntime: `opset`; tvm: `target`, `database` (a MetaSchedule
    database whose records the build applies; `tune` sets it).
    tune: tvm only: MetaSchedule tuning (`dycl.TuneOptions`: a budget in minutes, RPC
    tracker) into one database shared by every network under the compile cache; the
    build applies every record matching a sub-DNN's functions. `compile_report["tuning"]`
    says what it did.
    check: after compiling, run eager PyTorch (eval mode, no_grad, on clones of the example
    inputs) and the compiled model on the example inputs and raise `CompileMismatch` if any
    output differs (structure, shape, dtype, Python value, or not allclose(rtol=1e-3,
    atol=1e-4)). The result is `manifest["check"]` (kept by save/load) and
    `compile_report["check_seconds"]`. `check=False` skips it (`{"ran": false}`). A model
    that draws random numbers (`torch.bernoulli`, run by the host program with torch's law,
    not its stream) is run and compared too, but a difference is recorded (`"passed":
    false`, `"draws"`: the random ops), not raised: samples of two generators differ.
    threads: runtime threads (default: all cores; sub-DNNs under 2 M multiply-accumulates
    run on one). runtime: how the compiled model runs (`dycl.runtime.RuntimeOptions`;
    `threads` is a shorthand for its `threads`). jobs: compile processes (default: TVM uses all cores when there are enough
    sub-DNNs to pay for the pool; ONNX Runtime exports all sub-DNNs at once in-process).
    pipeline: options of `dycl-pipeline` (min_ops, max_trip_count, weights_as_args,
    merge_calls, keep_branches; `backend` defaults to this compile's backend).
    passes: the passes to run instead of `dycl-pipeline`: a pipeline spec in dycl-opt syntax
    (`"dycl-pipeline,dycl-single-thread{max-macs=5000000}"`; passes that other packages
    register under the entry point group `dycl.passes` included) or a sequence of
    `xdsl.passes.ModulePass` instances (docs/passes.md). An unknown pass or a bad option is
    a ValueError before anything runs. Whatever the passes, their output is checked against
    the HCFG contract: a module that breaks it is a `dycl.PipelineError` naming the rule,
    the function and op, and the last pass that ran. (A `dycl-pipeline` in a spec keeps
    branches by ONNX Runtime's costs unless it says `{backend=tvm}`.)
    run_many_form: for serving many requests at once (`run_many`, dycl-serve) on a backend
    that batches: also compile a form of the program for `run_many` (gates kept in a
    sub-DNN go to the host, exit tests are split out of row-wise sub-DNNs) when it differs
    from the one-request form. Off by default: gated and early-exit networks compile once,
    and `run_many` batches only what the one-request form can (docs/architecture.md).
    """
    with _stage("backend"):
        from dycl.backends import backend_options as check_options
    options = check_options(backend, backend_options)  # bad arguments fail before the slow steps
    _check_tune(backend, tune)
    passes = _pipeline_passes(passes, pipeline, backend)
    start = time.perf_counter()
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    inputs = tuple(_as_torch(v) for v in example_inputs)
    # Cloned before the frontend runs the model: a forward that mutates its inputs must not
    # change what the check feeds eager PyTorch and the compiled model.
    check_inputs = _clone(inputs) if check else None
    with _stage("frontend"):
        from dycl.frontend import import_module

        program = import_module(model, inputs, method=method)
    frontend_seconds = time.perf_counter() - start
    compiled = _compile(
        program.module,
        program.weights,
        backend,
        options,
        entry=program.function_name,
        threads=threads,
        runtime=runtime,
        jobs=jobs,
        cache_dir=cache_dir,
        use_cache=use_cache,
        progress=progress,
        passes=passes,
        run_pipeline=True,
        stage=_stage,
        tune=tune,
        state=program.state,
        run_many_form=run_many_form,
    )
    if check:
        with _stage("check"):
            record = check_against_eager(model, compiled, check_inputs, method=method, draws=random_draws(program.module))
    else:
        record = {"ran": False}
    with _stage("artifact"):
        from dycl.runtime.artifact import update_manifest

        compiled.manifest = update_manifest(compiled.directory, {"check": record})
    report = compiled.compile_report
    report["frontend_seconds"] = frontend_seconds
    report["check_seconds"] = record.get("seconds", 0.0)
    report["check"] = record
    report["total_seconds"] = time.perf_counter() - start
    return compiled


def compile_module(
    module,
    weights: Mapping[str, Any],
    backend: str = "onnxruntime",
    *,
    entry: str = "forward",
    threads: int | None = None,
    runtime: RuntimeOptions | None = None,
    jobs: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    progress: bool = True,
    pipeline: Mapping[str, Any] | None = None,
    passes: str | Sequence[Any] | None = None,
    run_pipeline: bool = True,
    tune: TuneOptions | None = None,
    state: Mapping[str, Any] | None = None,
    run_many_form: bool = False,
    **backend_options: Any,
) -> CompiledModel:
    """Compile host IR (an xDSL module, as the frontend writes it) with its weights.

    `pipeline`, `passes` and `run_many_form` as in `compile`. With `run_pipeline=False` no pass runs: the
    module must already be an HCFG (a `PipelineError` says where it is not).
    state: the initial values of the attributes the func's `dycl.state` lists (path ->
    value); a None/list attribute not given starts as None/[].
    Unlike `compile`, errors pass through as raised (no self-check: there is no model)."""
    from dycl.backends import backend_options as check_options

    options = check_options(backend, backend_options)  # fail before the slow steps
    _check_tune(backend, tune)
    passes = _pipeline_passes(passes, pipeline, backend)
    return _compile(
        module, weights, backend, options, entry=entry, threads=threads, runtime=runtime, jobs=jobs, cache_dir=cache_dir,
        use_cache=use_cache, progress=progress, passes=passes, run_pipeline=run_pipeline, stage=_no_stage, tune=tune,
        state=state, run_many_form=run_many_form,
    )


def _pipeline_passes(passes, pipeline: Mapping[str, Any] | None, backend: str) -> tuple:
    """The passes to run: `passes` parsed (ValueError/TypeError now, before the slow steps),
    or dycl-pipeline with the `pipeline` options; the backend's costs decide which branches
    stay inside a sub-DNN."""
    from dycl.passes.compose import parse_passes
    from dycl.passes.pipeline import PipelinePass

    if passes is None:
        return (PipelinePass(**{"backend": backend, **(pipeline or {})}),)
    if pipeline is not None:
        raise ValueError("pipeline= sets the options of dycl-pipeline; with passes=, write them in the spec "
                         "(`dycl-pipeline{merge-calls=true}`) or pass a PipelinePass(...)")
    return parse_passes(passes)


def _check_tune(backend: str, tune: TuneOptions | None) -> None:
    if tune is None:
        return
    if backend != "tvm":
        raise ValueError(f"tune= is for backend 'tvm' (MetaSchedule), not '{backend}'")
    if not isinstance(tune, TuneOptions):
        raise TypeError(f"tune= takes a dycl.TuneOptions, got {type(tune).__name__}")


def _compile(
    module, weights, backend, options, *, entry, threads, runtime, jobs, cache_dir, use_cache, progress, passes,
    run_pipeline, stage: Callable[[str], contextlib.AbstractContextManager], tune: TuneOptions | None = None,
    state: Mapping[str, Any] | None = None, run_many_form: bool = False,
) -> CompiledModel:
    report: dict[str, Any] = {"backend": backend}
    start = time.perf_counter()
    with stage("passes"):
        from dycl.ir import make_context
        from dycl.passes.compose import run_passes

        host_ir = module.clone() if run_pipeline and run_many_form and _batches(backend) else None
        run_passes(make_context(), module, passes if run_pipeline else ())
        _mark_batchable(module, backend)
        many = _run_many_form(module, host_ir, passes, entry) if host_ir is not None else None
    report["pipeline_seconds"] = time.perf_counter() - start

    with stage("codegen"):
        from dycl.codegen import generate_host

        host = generate_host(module, entry)
        many_host = generate_host(many, entry) if many is not None else None
    with stage("backend"):
        from dycl.backends import compile_subdnns, subdnns_of

        subdnns = list(subdnns_of(module))
        many_subdnns = list(subdnns_of(many)) if many is not None else []
        if tune is not None:
            from dycl.backends.tuning import tune_subdnns

            start = time.perf_counter()
            options, tuning = tune_subdnns(subdnns, weights, options, tune, cache_dir=cache_dir, progress=progress)
            report["tuning"] = {**tuning.to_json(), "seconds": time.perf_counter() - start}
        start = time.perf_counter()
        compiled = compile_subdnns(
            subdnns + many_subdnns, weights, backend, options, jobs=jobs, cache_dir=cache_dir, use_cache=use_cache,
            progress=progress,
        )
        report["backend_seconds"] = time.perf_counter() - start
    writable = {s.name: {i for _, i in compiled[s.name].meta["in_place"]}
                for s in subdnns if compiled[s.name].meta.get("in_place")}
    if writable:  # the host program gives these sub-DNNs the buffers they may write in place
        with stage("codegen"):
            host = generate_host(module, entry, writable)
    report["subdnn_count"] = len(subdnns)
    report["run_many_subdnn_count"] = len(many_subdnns)
    report["cached_subdnns"] = sum(c.cached for c in compiled.values())

    if runtime is not None:
        threads = threads or runtime.threads  # what a later dycl.load of the artifact uses
    with stage("artifact"):
        directory = tempfile.mkdtemp(prefix="dycl-artifact-")
        try:
            write_compiled_artifact(directory, module, entry, host, subdnns, compiled, weights, backend, options, threads, state,
                                    run_many=(many_host, many_subdnns, many) if many_host is not None else None)
            model = CompiledModel(directory, threads=threads, runtime=runtime)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
    weakref.finalize(model, shutil.rmtree, directory, ignore_errors=True)
    model.hcfg = _hcfg(module)
    model.hcfg_module = module
    model.compile_report.update(report)
    return model


@contextlib.contextmanager
def _stage(name: str) -> Iterator[None]:
    """DyCL's own errors pass through; any other exception becomes a CompileError naming the stage."""
    try:
        yield
    except Exception as err:
        if isinstance(err, _own_errors()):
            raise
        raise CompileError.wrap(name, err) from err


def _own_errors() -> tuple[type[BaseException], ...]:
    own: list[type[BaseException]] = [InputError, ArtifactError, CompileError]
    # A module that was never imported raised none of its errors (and importing it here could fail).
    for module, name in (("dycl.frontend.errors", "FrontendError"), ("dycl.backends.errors", "BackendError"),
                         ("dycl.passes.compose", "PipelineError")):
        if module in sys.modules:
            own.append(getattr(sys.modules[module], name))
    return tuple(own)


@contextlib.contextmanager
def _no_stage(name: str) -> Iterator[None]:
    yield


# ------------------------------------------------------------------ the self-check


def check_against_eager(
    model,
    compiled: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    method: str = "forward",
    rtol: float = RTOL,
    atol: float = ATOL,
    inputs_label: str = "the example inputs",
    draws: Sequence[str] = (),
) -> dict[str, Any]:
    """Run eager PyTorch (`model` in eval mode, under no_grad) and `compiled` on separate
    clones of `inputs`; raise `CompileMismatch` at the first output that differs (see
    `compare_outputs`); a model with a form of its own for `run_many` is run through it
    too. Returns the record `dycl.compile` stores as `manifest["check"]`:
    ran, passed, max_abs_error, rtol, atol, eager_seconds and compiled_seconds (one call
    each) and seconds (the whole check). `draws`: the random ops the model runs; with any,
    a difference is the record's `"passed": false` (and `"difference"`), not an error."""
    import torch

    start = time.perf_counter()
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    inputs = tuple(_as_torch(v) for v in inputs)
    if hasattr(model, "eval"):
        model.eval()  # as the frontend compiled it
    forward = model if method == "forward" else getattr(model, method)
    eager_args, compiled_args = _clone(inputs), _clone(inputs)
    # A model that keeps state across calls: the state after the call is compared too, and
    # both are put back as they were (the module's attributes, the compiled model's state)
    paths = list(compiled.state) if getattr(compiled, "stateful", False) else []
    kept = _keep_attributes(model, paths)
    try:
        eager_start = time.perf_counter()
        with torch.no_grad():
            expected = forward(*eager_args)
        eager_seconds = time.perf_counter() - eager_start
        compiled_start = time.perf_counter()
        actual = compiled(*compiled_args)
        compiled_seconds = time.perf_counter() - compiled_start
        error, difference = compare_outputs(expected, actual, rtol=rtol, atol=atol)
        if difference is None and not paths and "run_many" in getattr(compiled, "manifest", {}):
            # run_many's own form (its gates in the host, exit tests split out) is checked too
            (many,) = compiled.run_many([_clone(inputs)])
            many_error, difference = compare_outputs(expected, many, rtol=rtol, atol=atol, path="run_many")
            error = max(error, many_error)
        if difference is None and paths:
            eager_state = {path: _attribute(model, path) for path in paths}
            state_error, difference = compare_outputs(eager_state, compiled.state, rtol=rtol, atol=atol, path="state")
            error = max(error, state_error)
    finally:
        _restore_attributes(kept)
        if paths:
            compiled.reset_state()
    if difference is not None and not draws:
        raise CompileMismatch(*difference, inputs=inputs_label)
    drawn = {"draws": sorted(set(draws))} if draws else {}
    if difference is not None:
        drawn["difference"] = list(difference)
    return {
        "ran": True,
        "passed": difference is None,
        **drawn,
        "max_abs_error": error,
        "rtol": rtol,
        "atol": atol,
        "eager_seconds": eager_seconds,
        "compiled_seconds": compiled_seconds,
        "seconds": time.perf_counter() - start,
    }


def random_draws(module) -> list[str]:
    """The random ops (the op registry's category RANDOM) that host IR `module` runs."""
    from dycl.dialects.torch import op_name
    from dycl.dialects.torch_ops import Category, op_info

    return [op_name(op) for op in module.walk() if op_info(op).category is Category.RANDOM]


def _attribute(model, path: str):
    owner, _, attr = path.rpartition(".")
    return getattr(model.get_submodule(owner) if owner else model, attr)


def _keep_attributes(model, paths: Sequence[str]) -> list:
    """(module, attribute, the object, a copy of its contents) for each state attribute."""
    import torch

    kept = []
    for path in paths:
        owner_path, _, attr = path.rpartition(".")
        owner = model.get_submodule(owner_path) if owner_path else model
        value = owner._buffers[attr] if attr in owner._buffers else owner.__dict__.get(attr)
        snapshot = value.detach().clone() if isinstance(value, torch.Tensor) else list(value) if isinstance(value, list) else None
        kept.append((owner, attr, value, snapshot))
    return kept


def _restore_attributes(kept: list) -> None:
    import torch

    for owner, attr, value, snapshot in kept:
        if isinstance(value, torch.Tensor):
            with torch.no_grad():
                value.copy_(snapshot)  # (a change in place, `self.hidden.zero_()`)
        elif isinstance(value, list):
            value[:] = snapshot  # (the caller's list object stays the module's)
        if attr in owner._buffers:  # (a registered buffer forward changes)
            owner._buffers[attr] = value
        else:
            owner.__dict__[attr] = value


def compare_outputs(
    expected: Any, actual: Any, *, rtol: float = RTOL, atol: float = ATOL, path: str = "output"
) -> tuple[float, tuple[str, str] | None]:
    """Compare a compiled model's output with eager PyTorch's: the one comparison DyCL's
    checks use (`dycl.compile(check=True)`, `dycl-compile --check`).

    Returns (max abs error over the float leaves compared, None) when they agree, or
    (..., (path, reason)) for the first leaf, in order, that differs: the structure
    (tuple/list, length, tensor vs Python scalar), a tensor's shape or dtype, an int/bool
    value (exactly), or a value that is not allclose(actual, expected, rtol, atol) (NaNs
    in the same places agree). `actual` may hold numpy arrays and numpy scalars."""
    state = {"error": 0.0}
    difference = _compare(expected, actual, path, rtol, atol, state)
    return state["error"], difference


def _compare(expected, actual, path, rtol, atol, state) -> tuple[str, str] | None:
    e_kind, a_kind = _kind(expected), _kind(actual)
    if e_kind in ("tuple", "list"):
        if a_kind != e_kind:
            return path, f"{_describe(actual)} vs eager {_describe(expected)}"
        if len(actual) != len(expected):
            return path, f"{e_kind} of length {len(actual)} vs eager {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            difference = _compare(e, a, f"{path}[{i}]", rtol, atol, state)
            if difference is not None:
                return difference
        return None
    if e_kind == "dict":
        if a_kind != e_kind or list(actual) != list(expected):
            return path, f"{_describe(actual)} vs eager {_describe(expected)}"
        for key, e in expected.items():
            difference = _compare(e, actual[key], f"{path}[{key!r}]", rtol, atol, state)
            if difference is not None:
                return difference
        return None
    if a_kind != e_kind:
        return path, f"{_describe(actual)} vs eager {_describe(expected)}"
    if e_kind == "tensor":
        return _compare_tensors(expected, _as_tensor(actual), path, rtol, atol, state)
    if e_kind == "float":
        e, a = float(expected), float(actual)
        if e != e and a != a:  # both NaN
            return None
        error = abs(a - e) if a != e else 0.0
        if not error <= atol + rtol * abs(e):
            return path, f"{a!r} vs eager {e!r}: abs error {error:.3g} exceeds allclose(rtol={rtol:g}, atol={atol:g})"
        state["error"] = max(state["error"], error)
        return None
    if e_kind in ("int", "bool"):
        if _python(actual) != _python(expected):
            return path, f"{_python(actual)!r} vs eager {_python(expected)!r}"
        return None
    if actual != expected:
        return path, f"{actual!r} vs eager {expected!r}"
    return None


def _compare_tensors(expected, actual, path, rtol, atol, state) -> tuple[str, str] | None:
    import torch

    if tuple(actual.shape) != tuple(expected.shape):
        return path, f"shape {tuple(actual.shape)} vs eager {tuple(expected.shape)}"
    if actual.dtype != expected.dtype:
        return path, f"dtype {actual.dtype} vs eager {expected.dtype}"
    if not expected.numel():
        return None
    e, a = expected.detach().cpu(), actual.detach().cpu()
    if not (e.is_floating_point() or e.is_complex()):
        differs = a != e
        if bool(differs.any()):
            index = tuple(int(i) for i in differs.nonzero()[0])
            return path, (
                f"{int(differs.sum())} of {e.numel()} elements differ "
                f"(first at index {index}: {a[index].item()!r} vs eager {e[index].item()!r})"
            )
        return None
    wide = torch.complex128 if e.is_complex() else torch.float64
    e, a = e.to(wide), a.to(wide)
    agree = (a == e) | (torch.isnan(a) & torch.isnan(e))  # equal infs and NaNs in the same places agree
    error = torch.where(agree, 0.0, (a - e).abs())
    error = torch.where(torch.isnan(error), float("inf"), error)  # NaN on one side only
    excess = torch.where(torch.isinf(error), float("inf"), error - (atol + rtol * e.abs()))
    excess = torch.where(agree, float("-inf"), excess)
    worst = float(error.max())
    if bool((excess > 0).any()):
        index = tuple(int(i) for i in torch.unravel_index(excess.argmax(), tuple(e.shape)))
        return path, (
            f"max abs error {worst:.3g} exceeds allclose(rtol={rtol:g}, atol={atol:g}) at "
            f"{int((excess > 0).sum())} of {e.numel()} elements "
            f"(e.g. index {index}: {a[index].item():.6g} vs eager {e[index].item():.6g})"
        )
    state["error"] = max(state["error"], worst)
    return None


def _kind(value: Any) -> str:
    import torch

    if isinstance(value, (torch.Tensor, np.ndarray)):
        return "tensor"
    if isinstance(value, tuple):
        return "tuple"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "dict"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if value is None:
        return "None"
    return type(value).__name__


def _describe(value: Any) -> str:
    kind = _kind(value)
    if kind == "tensor":
        return f"a tensor of shape {tuple(value.shape)}"
    if kind in ("tuple", "list"):
        return f"a {kind} of length {len(value)}"
    if kind == "dict":
        return f"a dict with keys {list(value)}"
    if kind in ("int", "bool", "float"):
        return f"a Python {kind} ({_python(value)!r})"
    return repr(value)


def _python(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _as_tensor(value: Any):
    import torch

    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value))  # a writable copy: from_numpy warns on read-only arrays
    return value


def _clone(value: Any) -> Any:
    detach = getattr(value, "detach", None)
    if detach is not None and hasattr(value, "clone"):
        return detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple):
        return tuple(_clone(v) for v in value)
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def _batches(backend: str) -> bool:
    """The backend compiles batchable sub-DNNs with a dynamic dim 0 (`run_many` batches)."""
    from dycl.backends import backend_class

    return backend_class(backend).dynamic_batch


def _mark_batchable(module, backend: str) -> None:
    """Mark the sub-DNNs `run_many` may batch, when the backend compiles them batched."""
    if _batches(backend):
        from dycl.ir import make_context
        from dycl.passes.mark_batchable import MarkBatchablePass

        MarkBatchablePass().apply(make_context(), module)


RUN_MANY_PREFIX = "many_"
"""The sub-DNNs of the run_many form are named `many_<name>` beside the one-request form's."""


def _run_many_form(hcfg, host_ir, passes, entry: str):
    """The HCFG `run_many` runs, when it differs from `hcfg` (the one-request form), else None.

    Gates kept inside a sub-DNN (an ONNX `If`) cannot follow a batch, so this form reruns
    the pipeline on the host IR with keep-branches off (the gates go to the host); then
    dycl-reduce-by-row computes a test of a whole one-row tensor (an exit test) row by row,
    dycl-hoist-free gives the host the squeezes that leaves at a sub-DNN's end, and
    dycl-split-batchable moves what still reads the whole batch out of row-wise sub-DNNs.
    Host gates and split parts cost a backend call per request each, which one request at
    a time would pay for nothing: `compiled(*args)` keeps running `hcfg`.
    docs/architecture.md, "Many requests at once"."""
    from dataclasses import replace

    from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
    from xdsl.dialects.func import CallOp

    from dycl.dialects.dycl import is_subdnn
    from dycl.ir import make_context, print_module
    from dycl.passes.compose import run_passes
    from dycl.passes.hoist_free import HoistFreePass
    from dycl.passes.mark_batchable import MarkBatchablePass
    from dycl.passes.pipeline import PipelinePass
    from dycl.passes.reduce_by_row import ReduceByRowPass
    from dycl.passes.split_batchable import SplitBatchablePass

    if _state_slots(_function(hcfg, entry)):
        return None  # a stateful model runs its requests in order, one at a time
    kept = any(op.regions for f in hcfg.ops if is_subdnn(f) for op in f.walk() if op is not f)
    split_passes = [replace(p, keep_branches=False) if isinstance(p, PipelinePass) else p for p in passes]
    if kept and split_passes != list(passes):
        many = host_ir
        run_passes(make_context(), many, split_passes)
    else:
        many = hcfg.clone()
    for step in (ReduceByRowPass(), HoistFreePass(), SplitBatchablePass(), MarkBatchablePass()):
        step.apply(make_context(), many)
    if print_module(many) == print_module(hcfg):
        return None
    renamed = {f.sym_name.data: RUN_MANY_PREFIX + f.sym_name.data for f in many.ops if is_subdnn(f)}
    for op in many.walk():
        if is_subdnn(op):
            op.sym_name = StringAttr(renamed[op.sym_name.data])
        elif isinstance(op, CallOp) and op.callee.root_reference.data in renamed:
            op.properties["callee"] = SymbolRefAttr(renamed[op.callee.root_reference.data])
    return many


def _host_files(host, weights, name: str) -> dict[str, bytes]:
    """`<name>.py` and, if it reads any, `constants<suffix>.npz` of a host program."""
    files: dict[str, bytes] = {f"{name}.py": host.source.encode()}
    constants = dict(host.constants)
    for key in host.weight_names:
        constants[key] = np.asarray(_as_numpy(weights[key]))
    if constants:
        buffer = io.BytesIO()
        np.savez(buffer, **constants)
        files[name.replace("host", "constants") + ".npz"] = buffer.getvalue()
    return files


def _subdnn_records(subdnns, compiled, files: dict[str, bytes], module=None) -> list[dict[str, Any]]:
    row_bytes = _row_bytes(module) if module is not None else {}
    records = []
    for subdnn in subdnns:
        result = compiled[subdnn.name]
        files.update(result.files)
        records.append(
            {
                "name": subdnn.name,
                # one request's shapes; "batchable": the compiled file takes any rows at dim 0
                "inputs": [s.to_json() for s in subdnn.static().inputs],
                "outputs": [s.to_json() for s in subdnn.static().outputs],
                "macs": subdnn.macs,
                **({"threads": subdnn.threads} if subdnn.threads is not None else {}),
                "batchable": subdnn.batch_rows is not None,
                **({"row_bytes": row_bytes[subdnn.name]} if subdnn.batch_rows is not None and subdnn.name in row_bytes else {}),
                **result.meta,
            }
        )
    return records


def _row_bytes(module) -> dict[str, int]:
    """Per batchable sub-DNN, its largest tensor's bytes per row (the scheduler caps a
    batched call's rows by it: `dycl.runtime.batching.BATCH_BYTES`)."""
    from dycl.dialects.dycl import is_batchable
    from dycl.passes.mark_batchable import batch_rows, peak_row_bytes

    return {f.sym_name.data: peak_row_bytes(f, batch_rows(f) or 1) for f in module.ops if is_batchable(f)}


def write_compiled_artifact(directory, module, entry, host, subdnns, compiled, weights, backend, options, threads, state=None,
                            run_many=None):
    """run_many: (host program, sub-DNNs, HCFG) of the form `run_many` runs, if it has its own."""
    from dycl.runtime.artifact import write_artifact

    files = _host_files(host, weights, "host")
    constants = "constants.npz" in files
    records = _subdnn_records(subdnns, compiled, files, module)
    function = _function(module, entry)
    slots = _state_slots(function)
    state_arguments = sum(len(slot["args"]) for slot in slots)
    user_arguments = len(function.function_type.inputs) - state_arguments
    manifest = {
        "backend": backend,
        "backend_options": options,
        "entry": entry,
        "inputs": _input_signature(function, host.arg_names[:user_arguments]),
        "input_tree": _output_tree(function, "dycl.input_tree"),
        "outputs": {"count": len(function.function_type.outputs), "tree": _output_tree(function)},
        "host": "host.py",
        "constants": "constants.npz" if constants else None,
        "subdnns": records,
        "runtime": {"threads": threads},
    }
    defaults = _output_tree(function, "dycl.input_defaults")
    if defaults:  # (of the last inputs: a call may leave them out, as Python's may)
        manifest["input_defaults"] = defaults
    if run_many is not None:
        many_host, many_subdnns, many_host_ir = run_many
        many_files = _host_files(many_host, weights, "host_run_many")
        manifest["run_many"] = {
            "host": "host_run_many.py",
            "constants": "constants_run_many.npz" if "constants_run_many.npz" in many_files else None,
            "subdnns": _subdnn_records(many_subdnns, compiled, many_files, many_host_ir),
        }
        files.update(many_files)
    if slots:
        from dycl.runtime.state import to_bytes

        initial = _initial_state(slots, state or {})
        for slot in slots:  # the host program gives its buffer to a sub-DNN: the runtime keeps it its own
            if slot["kind"] == "tensor" and slot["args"][0] in host.given_arguments:
                slot["in_place"] = True
                if slot["tree"] in host.owned_results:  # (proven: no check at run time)
                    slot["own_result"] = True
        files["state_initial.npz"] = files["state.npz"] = to_bytes(initial)
        manifest["state"] = {"slots": slots, "initial": "state_initial.npz", "current": "state.npz"}
    write_artifact(directory, json.loads(json.dumps(manifest, default=str)), files)


def _state_slots(function) -> list[dict[str, Any]]:
    from dycl.interpreter import state_slots

    return state_slots(function)


def _initial_state(slots, values: Mapping[str, Any]) -> dict[str, Any]:
    from dycl.runtime.state import as_numpy

    def convert(value):
        if isinstance(value, (list, tuple)):
            items = [convert(v) for v in value]
            return items if isinstance(value, list) else tuple(items)
        if value is None or isinstance(value, (bool, int, float)):
            return value
        return as_numpy(value).copy()

    state = {}
    for slot in slots:
        path = slot["path"]
        if path not in values and slot["kind"] not in ("optional", "none", "append"):
            raise ValueError(f"no initial value for the state '{path}' (a {slot['kind']}): pass state={{'{path}': ...}}")
        state[path] = convert(values.get(path, [] if slot["kind"] == "append" else None))
    return state


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


def _output_tree(function, attribute: str = "dycl.output_tree"):
    from xdsl.dialects.builtin import StringAttr

    attr = function.attributes.get(attribute)
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
