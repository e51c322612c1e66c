"""Callables for compiled sub-DNNs: `runner(*arrays) -> list of arrays`.

Host code calls these once per sub-DNN call, so they do as little as possible: the ORT
session is created once, input/output names are prepared, numpy arrays go straight to
`sess.run` (io-binding with RunOptions and `run_with_ort_values` measured ~35 us per
call here; plain `sess.run` ~5 us). TVM inputs go in through DLPack without a copy when
the buffer allows it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

import numpy as np

Runner = Callable[..., list]


# A sub-DNN with fewer multiply-accumulates than this (manifest "macs", from
# dycl.backends.cost) runs on one thread: waking a second intra-op thread costs more than
# it saves. Measured here (2 threads vs 1, idle machine): 1.3-1.4x slower under 0.2 M
# MACs, even at 1-4 M, 0.75-0.8x from 4.7 M (a SkipNet block) up. ONNX Runtime only:
# TVM's thread pool is one per process.
SINGLE_THREAD_MACS = 2_000_000

# ONNX Runtime's intra-op workers spin-wait after each run by default. DyCL holds one
# session (one thread pool) per sub-DNN, so 20-40 pools would spin against each other and
# against the host program; off unless a caller (dycl-bench --ort-spinning) turns it on.
ORT_SPINNING = False

# Where a session's intra-op threads come from. "session" (the default): each session has
# its own pool (`threads_for` threads, none below SINGLE_THREAD_MACS). "shared": every
# session DyCL creates runs on ONNX Runtime's process-wide pool
# (`onnxruntime.set_global_thread_pool_sizes(threads, 1)`, `use_per_session_threads =
# False`). Not the default, because in onnxruntime's Python API (1.31) the global pool
# - spin-waits after every run and nothing turns that off (`session.intra_op.allow_spinning`
#   and `session.force_spinning_stop` apply to per-session pools only; measured: ~24 ms of
#   CPU in the 50 ms after a burst, the same as a spinning per-session pool);
# - is created once per process, with one size, and cannot be replaced;
# - once it exists, onnxruntime refuses every session of the process that asks for its own
#   pool ("use_per_session_threads must be false when using a global thread pool"),
#   including the export check of a later `dycl.compile` and the user's own sessions.
# `python -m dycl.bench.pools` measures both (docs/bench.md).
ORT_THREAD_POOL = "session"
ORT_THREAD_POOLS = ("session", "shared")

_global_pool_threads: int | None = None
"""Size of the global pool this process created (-1: it existed already), else None."""


def ort_global_pool() -> int | None:
    """The global intra-op pool's size if DyCL created it in this process (-1 if someone
    else had), else None."""
    return _global_pool_threads


def _shared_pool(threads: int) -> bool:
    """Whether a new session must run on the global pool, creating it on first use."""
    global _global_pool_threads
    if _global_pool_threads is not None:
        return True  # once it exists, onnxruntime accepts no other kind of session
    if ORT_THREAD_POOL == "session":
        return False
    if ORT_THREAD_POOL != "shared":
        raise ValueError(f"ORT_THREAD_POOL must be one of {ORT_THREAD_POOLS}, not {ORT_THREAD_POOL!r}")
    import onnxruntime as ort

    try:
        ort.set_global_thread_pool_sizes(threads, 1)
        _global_pool_threads = threads
    except Exception as err:  # created before, outside DyCL: use it, whatever its size
        if "already" not in str(err):
            raise
        _global_pool_threads = -1
    return True


def default_threads() -> int:
    return os.cpu_count() or 1


def threads_for(record: Mapping[str, Any], threads: int) -> int:
    macs = record.get("macs")
    if macs is not None and macs < SINGLE_THREAD_MACS:
        return 1
    return threads


# ------------------------------------------------------------------- ONNX Runtime


def ort_session_options(threads: int, pool_threads: int | None = None):
    """Options of a sub-DNN session with `threads` intra-op threads; on the shared pool
    (`ORT_THREAD_POOL`, sized `pool_threads`, default `threads`) the pool decides."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if _shared_pool(pool_threads or threads):
        # Pool sizes set here would be ignored, with a warning on every session.
        options.use_per_session_threads = False
    else:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if ORT_SPINNING else "0")
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return options


def ort_runner(path: Path, meta: Mapping[str, Any], n_inputs: int, threads: int) -> Runner:
    import onnxruntime as ort

    options = ort_session_options(threads_for(meta, threads), pool_threads=threads)
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    present = {i.name for i in session.get_inputs()}
    names = [n if n in present else None for n in meta["input_names"]]
    outputs = list(meta["output_names"])
    run = _fast_run(session)

    # The exporter may drop an argument the graph does not read; skip its position.
    if len(names) == 1 and names[0] is not None:
        (n0,) = names

        def run1(a):
            return run(outputs, {n0: a}, None)

        run1.session = session
        return run1
    if len(names) == 2 and None not in names:
        n0, n1 = names

        def run2(a, b):
            return run(outputs, {n0: a, n1: b}, None)

        run2.session = session
        return run2
    kept = [(i, n) for i, n in enumerate(names) if n is not None]

    def run_n(*args):
        return run(outputs, {n: args[i] for i, n in kept}, None)

    run_n.session = session
    return run_n


def _fast_run(session):
    """The C++ session's `run`. `InferenceSession.run` first validates input names, graph
    capture and OrtValue ownership in Python on every call (measured 2-15 us here); our
    names are checked once at load and we pass only numpy arrays, so skip straight to it."""
    native = getattr(session, "_sess", None)
    if native is not None and hasattr(native, "run"):
        return native.run
    return session.run


# --------------------------------------------------------------------------- TVM


def _to_tvm(tvm, array: np.ndarray):
    # from_dlpack wants a 64-byte-aligned, contiguous, writeable buffer (a misaligned one
    # segfaulted here); anything else is copied into TVM-owned memory.
    if (
        array.flags.c_contiguous
        and array.flags.writeable
        and array.ctypes.data % 64 == 0
    ):
        return tvm.runtime.from_dlpack(array)
    # (not np.ascontiguousarray: it turns a 0-d array into a 1-d one, which TVM rejects)
    return tvm.runtime.tensor(np.array(array, order="C", copy=True))


def tvm_runner(path: Path, meta: Mapping[str, Any], n_inputs: int, threads: int) -> Runner:
    os.environ.setdefault("TVM_NUM_THREADS", str(threads))
    import tvm
    from tvm import relax

    library = tvm.runtime.load_module(str(path))
    local = threading.local()  # a VirtualMachine is not safe to share between threads

    def main_function():
        fn = getattr(local, "fn", None)
        if fn is None:
            vm = relax.VirtualMachine(library, tvm.cpu())
            fn = local.fn = vm["main"]
        return fn

    to_tvm = _to_tvm
    from_dlpack = np.from_dlpack
    tensor_type = tvm.runtime.Tensor

    def run(*arrays):
        result = main_function()(*[to_tvm(tvm, a) for a in arrays])
        if isinstance(result, tensor_type):
            return [from_dlpack(result)]
        return [from_dlpack(r) for r in result]

    return run


RUNNERS: dict[str, Callable[..., Runner]] = {"onnxruntime": ort_runner, "tvm": tvm_runner}
