"""MetaSchedule's database as the TVM build and tuning both see it: the lowering whose fused
TIR functions are its workloads, and applying its records. One home below both
`dycl.backends.tvm` (which builds with the records) and `dycl.backends.tuning` (which
searches for them), so the two lower a sub-DNN the same way and the keys match.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tvm


def open_database(directory: str | os.PathLike):
    """The JSON database in `directory` (created if missing), matched by structural equality."""
    from tvm.s_tir import meta_schedule as ms

    Path(directory).mkdir(parents=True, exist_ok=True)
    return ms.database.JSONDatabase(work_dir=str(directory), module_equality="structural")


def fuse_for_schedules(mod: tvm.IRModule, target: tvm.target.Target) -> tvm.IRModule:
    """Relax -> fused TIR functions, the unit MetaSchedule tunes. Tuning and building both
    lower through here, so the database's workloads are the build's functions."""
    import tvm
    from tvm import relax

    passes = [
        # Batch norm as element-wise arithmetic, so it fuses into the conv before it.
        relax.transform.DecomposeOpsForInference(),
        relax.transform.CanonicalizeBindings(),
        *relax.pipeline.library_dispatch_passes(target),
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
    ]
    with target:
        return tvm.transform.Sequential(passes)(mod)


def apply_database(mod: tvm.IRModule, target: tvm.target.Target, directory: str | os.PathLike) -> tvm.IRModule:
    """Replace every function the database holds a record for by its best schedule."""
    from tvm import relax

    with target, open_database(directory):
        return relax.transform.MetaScheduleApplyDatabase()(mod)


def scheduled_functions(mod: tvm.IRModule) -> int:
    """How many TIR functions of `mod` carry a schedule (from the database)."""
    from tvm import tirx

    return sum(
        1 for _, function in mod.functions_items()
        if isinstance(function, tirx.PrimFunc) and bool(function.attrs and function.attrs.get("tirx.is_scheduled", False))
    )
