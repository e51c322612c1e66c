"""Apache TVM backend: sub-DNN -> torch.export -> Relax -> `tvm.compile` -> `.so`.

Untuned Relax code for CPU is naive (10-80x slower than ONNX Runtime here), so the
backend offers MetaSchedule tuning with a wall-clock budget (`tune_seconds`). The tuning
database of a sub-DNN lives in the compile cache beside its compiled library, keyed by
the sub-DNN's content, so a second tuning run continues where the first stopped.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dycl.backends.compiled import CompiledSubDNN, blame_op, op_names_of
from dycl.backends.errors import BackendError
from dycl.backends.fx_rebuild import export
from dycl.backends.subdnn import SubDNN

NAME = "tvm"
DEFAULT_OPTIONS: dict[str, Any] = {
    "target": "llvm",
    "tune_seconds": 0.0,  # MetaSchedule budget per sub-DNN; 0 = untuned
    "tune_trials_per_round": 8,  # small rounds: the budget is checked between rounds
}


def _target(options: Mapping[str, Any]):
    import tvm

    target = options.get("target", "llvm")
    if isinstance(target, str) and target == "llvm":
        # MetaSchedule needs the core count in the target; plain llvm is what FACTS found fastest.
        return tvm.target.Target({"kind": "llvm", "num-cores": os.cpu_count() or 1})
    return tvm.target.Target(target)


def _to_relax(subdnn: SubDNN, weights: Mapping[str, Any]):
    from tvm.relax.frontend.torch import from_exported_program

    program = export(subdnn, weights, NAME)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return from_exported_program(program, keep_params_as_input=False, custom_convert_map=_converters())
    except Exception as err:
        text = str(err)
        op = blame_op(op_names_of(subdnn.ir_text), text)
        raise BackendError(NAME, subdnn.name, f"Relax import failed: {text.strip()[:500]}", op) from err


def _converters() -> dict:
    """Ops the Relax torch frontend lacks, mapped onto Relax ops (fuzzing found `x.amax()`)."""
    from tvm import relax

    def reduction(relax_op):
        def convert(node, importer):
            args = importer.retrieve_args(node)
            dims = args[1] if len(args) > 1 else node.kwargs.get("dim", [])
            keepdim = args[2] if len(args) > 2 else node.kwargs.get("keepdim", False)
            return importer.block_builder.emit(relax_op(args[0], list(dims) or None, keepdims=keepdim))

        return convert

    return {"amax.default": reduction(relax.op.max), "amin.default": reduction(relax.op.min)}


def _tune(mod, target, options: Mapping[str, Any], tuning_dir: Path):
    """MetaSchedule rounds until the budget is spent; returns the module with the best
    schedules of the database applied (untuned functions keep the default schedule)."""
    import logging

    from tvm import relax

    # MetaSchedule logs every round to stdout at DEBUG; its records stay in tuning_dir/logs.
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    budget = float(options.get("tune_seconds") or 0.0)
    trials = int(options.get("tune_trials_per_round", 8))
    tuning_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    while time.monotonic() - start < budget:
        relax.pipeline.static_shape_tuning_pipeline(
            trials, target, work_dir=str(tuning_dir), max_trials_per_task=trials
        )(mod)
    return relax.pipeline.static_shape_tuning_pipeline(0, target, work_dir=str(tuning_dir))(mod)


def compile_subdnn(
    subdnn: SubDNN,
    weights: Mapping[str, Any],
    options: Mapping[str, Any],
    tuning_dir: Path | None = None,
) -> CompiledSubDNN:
    import tvm

    mod = _to_relax(subdnn, weights)
    target = _target(options)
    tuned = float(options.get("tune_seconds") or 0.0) > 0
    try:
        if tuned:
            mod = _tune(mod, target, options, tuning_dir or Path(tempfile.mkdtemp(prefix="dycl-tune-")))
        executable = tvm.compile(mod, target=target)
        with tempfile.TemporaryDirectory(prefix="dycl-tvm-") as tmp:
            library = Path(tmp) / f"{subdnn.name}.so"
            executable.export_library(str(library))
            library_bytes = library.read_bytes()
    except BackendError:
        raise
    except Exception as err:
        raise BackendError(NAME, subdnn.name, f"TVM compile failed: {str(err).strip()[:500]}") from err
    return CompiledSubDNN(
        name=subdnn.name,
        backend=NAME,
        files={f"{subdnn.name}.so": library_bytes},
        meta={"file": f"{subdnn.name}.so", "n_outputs": len(subdnn.outputs), "tuned": tuned},
    )
