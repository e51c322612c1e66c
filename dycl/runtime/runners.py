"""Callables for compiled sub-DNNs: `runner(*arrays) -> list of arrays`.

Host code calls these once per sub-DNN call, so they do as little as possible: the ORT
session is created once, input/output names are prepared, numpy arrays go straight to
`sess.run` (io-binding with RunOptions and `run_with_ort_values` measured ~35 us per
call here; plain `sess.run` ~5 us). The one exception is a call that gives the sub-DNN a
buffer to write in place (`rt.in_place`, the manifest's `in_place`): it runs through the
native IOBinding, kept per thread and rebound only where the arrays changed (a few us more
than `sess.run`, against a copy of the cache saved). TVM inputs go in through DLPack without
a copy when the buffer allows it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, Protocol

import numpy as np

from dycl.runtime.options import ORT_THREAD_POOLS, RuntimeOptions, default_threads

Runner = Callable[..., list]


class RunnerFactory(Protocol):
    """Loads one compiled sub-DNN file; `meta` is its manifest record. `options.threads`
    is resolved (an int)."""

    def __call__(self, path: Path, meta: Mapping[str, Any], options: RuntimeOptions) -> Runner: ...


# A sub-DNN with fewer multiply-accumulates than this (manifest "macs", from
# dycl.backends.cost) runs on one thread: waking a second intra-op thread costs more than
# it saves. Measured here (2 threads vs 1, idle machine): 1.3-1.4x slower under 0.2 M
# MACs, even at 1-4 M, 0.75-0.8x from 4.7 M (a SkipNet block) up. ONNX Runtime only:
# TVM runs every sub-DNN on its calling thread's one pool.
SINGLE_THREAD_MACS = 2_000_000


def threads_for(record: Mapping[str, Any], threads: int) -> int:
    """A sub-DNN's intra-op threads: at most its record's `threads` (`dycl.threads`, set by
    a pass such as dycl-single-thread), else one under `SINGLE_THREAD_MACS`, else `threads`."""
    if (cap := record.get("threads")) is not None:
        return max(1, min(int(cap), threads))
    macs = record.get("macs")
    if macs is not None and macs < SINGLE_THREAD_MACS:
        return 1
    return threads


# ------------------------------------------------------------------- ONNX Runtime

# ONNX Runtime's global thread pool is one per process, and once it exists onnxruntime
# takes no other kind of session (`RuntimeOptions.ort_thread_pool`): so whether this
# process made it is process state, recorded here, not an option.
_global_pool_threads: int | None = None
"""Size of the global pool this process created (-1: it existed already), else None."""


def ort_global_pool() -> int | None:
    """The global intra-op pool's size if DyCL created it in this process (-1 if someone
    else had), else None."""
    return _global_pool_threads


def _shared_pool(options: RuntimeOptions) -> bool:
    """Whether a new session must run on the global pool, creating it on first use."""
    global _global_pool_threads
    if _global_pool_threads is not None:
        return True  # once it exists, onnxruntime accepts no other kind of session
    if options.ort_thread_pool == "session":
        return False
    if options.ort_thread_pool != "shared":
        raise ValueError(f"ort_thread_pool must be one of {ORT_THREAD_POOLS}, not {options.ort_thread_pool!r}")
    import onnxruntime as ort

    try:
        ort.set_global_thread_pool_sizes(options.threads, 1)
        _global_pool_threads = options.threads
    except Exception as err:  # created before, outside DyCL: use it, whatever its size
        if "already" not in str(err):
            raise
        _global_pool_threads = -1
    return True


def ort_session_options(options: RuntimeOptions, threads: int):
    """Options of a sub-DNN session with `threads` intra-op threads; on the shared pool
    (sized `options.threads`) the pool decides."""
    import onnxruntime as ort

    session_options = ort.SessionOptions()
    if _shared_pool(options):
        # Pool sizes set here would be ignored, with a warning on every session.
        session_options.use_per_session_threads = False
    else:
        session_options.intra_op_num_threads = threads
        session_options.inter_op_num_threads = 1
        session_options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if options.ort_spinning else "0"
        )
    session_options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session_options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session_options.log_severity_level = 3
    return session_options


def ort_runner(path: Path, meta: Mapping[str, Any], options: RuntimeOptions) -> Runner:
    threads = threads_for(meta, options.threads)
    runner = _ort_session_runner(path, meta, options, threads)
    if (threads < options.threads and meta.get("batchable") and meta.get("threads") is None
            and not meta.get("in_place") and ort_global_pool() is None):
        return _wider_when_batched(runner, meta["macs"], lambda: _ort_session_runner(path, meta, options, options.threads))
    return runner


# A call of many rows of a small sub-DNN (`run_many`'s batched calls) runs on every thread
# from this many multiply-accumulates in all. Measured (a Caption-ResNeXt decoding step,
# 1.8 M MACs a row; 1 thread / 2 threads, ms): 0.15 / 0.17 at 2 rows, 0.42 / 0.43 at 8,
# 0.81 / 0.65 at 16, 1.62 / 1.08 at 32. Where one row is small enough for one thread,
# the second one pays off later than `SINGLE_THREAD_MACS`.
WIDE_BATCH_MACS = 16_000_000


def _wider_when_batched(narrow: Runner, macs: int, open_wide: Callable[[], Runner]) -> Runner:
    """`narrow` (one thread: the sub-DNN is small at one row), but a call of enough rows for
    `WIDE_BATCH_MACS` runs on a session with every thread, opened at the first such call."""
    rows_for_wide = -(-WIDE_BATCH_MACS // max(macs, 1))
    wide: Runner | None = None

    def run(*args):
        nonlocal wide
        if args[0].shape[0] < rows_for_wide:
            return narrow(*args)
        if wide is None:  # (two threads may both open one: the spare is dropped)
            wide = open_wide()
            run.wide_session = wide.session
        return wide(*args)

    run.session, run.wide_session = narrow.session, None
    return run


def _ort_session_runner(path: Path, meta: Mapping[str, Any], options: RuntimeOptions, threads: int) -> Runner:
    import onnxruntime as ort

    session_options = ort_session_options(options, threads)
    session = ort.InferenceSession(str(path), session_options, providers=["CPUExecutionProvider"])
    present = {i.name for i in session.get_inputs()}
    names = [n if n in present else None for n in meta["input_names"]]
    outputs = list(meta["output_names"])
    run = _fast_run(session)

    # The exporter may drop an argument the graph does not read; skip its position.
    if len(names) == 1 and names[0] is not None and not meta.get("in_place"):
        (n0,) = names

        def run1(a):
            return run(outputs, {n0: a}, None)

        run1.session = session
        return run1
    if len(names) == 2 and None not in names and not meta.get("in_place"):
        n0, n1 = names

        def run2(a, b):
            return run(outputs, {n0: a, n1: b}, None)

        run2.session = session
        return run2
    kept = [(i, n) for i, n in enumerate(names) if n is not None]

    def run_n(*args):
        return run(outputs, {n: args[i] for i, n in kept}, None)

    run_n.session = session
    if meta.get("in_place"):
        run_n.in_place = _in_place_variants(session, meta, names, run_n)
    return run_n


def _in_place_variants(session, meta: Mapping[str, Any], names: list[str | None], functional: Runner):
    """`variant(given) -> runner` for a call site that gives the sub-DNN the buffers of the
    arguments at positions `given` (the host program's fact: codegen, `rt.in_place`). The
    runner writes each output the manifest's `in_place` pairs with a given argument into
    that argument's buffer and returns the argument itself there; an output no given
    argument pairs with runs as before."""
    pairs = {j: i for j, i in meta["in_place"]}
    cache: dict[tuple[int, ...], Runner] = {}

    def variant(given) -> Runner:
        key = tuple(sorted(given))
        if key not in cache:
            aliased = {j: i for j, i in pairs.items() if i in key}
            cache[key] = _in_place_runner(session, meta, names, aliased, functional) if aliased else functional
        return cache[key]

    return variant


def _in_place_runner(session, meta: Mapping[str, Any], names: list[str | None], aliased: Mapping[int, int],
                     functional: Runner) -> Runner:
    """A runner through ONNX Runtime's IOBinding that binds each output in `aliased` (output
    -> argument position) to that argument's own buffer, and returns the argument itself
    there. A binding records an address, a shape and a dtype; each thread keeps its own,
    and binds a given argument again only when it is another array (the one a call wrote in
    place comes back as the next call's). The other arguments are bound as arrays, the
    other outputs left to ONNX Runtime to allocate (bound anew each call: a bound output
    that ran once would be written again in place). A given argument that cannot be bound
    as it lies (not a C-contiguous, aligned, writeable array of the recorded dtype) makes
    that call functional."""
    from onnxruntime.capi.onnxruntime_inference_collection import OrtDevice

    cpu = OrtDevice.make("cpu", 0)._get_c_device()
    output_names = list(meta["output_names"])
    input_dtypes = [np.dtype(spec["dtype"]) for spec in meta["inputs"]]
    given = [(i, names[i]) for i in sorted(set(aliased.values()))]
    others = [(i, n) for i, n in enumerate(names) if n is not None and i not in aliased.values()]
    allocated = [(j, n) for j, n in enumerate(output_names) if j not in aliased]
    written = [(j, output_names[j], i) for j, i in aliased.items()]
    native = session._sess
    local = threading.local()

    def run(*args):
        for i, _ in given:
            a = args[i]
            if not (type(a) is np.ndarray and a.dtype == input_dtypes[i] and a.flags.c_contiguous
                    and a.flags.writeable and a.flags.aligned):
                return functional(*args)
        binding = getattr(local, "binding", None)
        if binding is None:
            binding = local.binding = session.io_binding()._iobinding
            local.bound = {}
            for name in output_names:  # (outputs keep the position of their first binding)
                binding.bind_output(name, cpu)
        bound = local.bound  # name -> the array bound there (kept: its address stays valid)
        for i, name in given:
            a = args[i]
            if bound.get(name) is not a:
                binding.bind_input(name, cpu, a.dtype, a.shape, a.ctypes.data)
                bound[name] = a
        for i, name in others:
            binding.bind_input(name, np.asarray(args[i]))
        for j, name, i in written:
            a = args[i]
            if bound.get((j, name)) is not a:
                binding.bind_output(name, cpu, a.dtype, a.shape, a.ctypes.data)
                bound[(j, name)] = a
        for _, name in allocated:
            binding.bind_output(name, cpu)
        native.run_with_iobinding(binding, None)
        values = binding.get_outputs() if allocated else ()
        results: list = [None] * len(output_names)
        for j, _ in allocated:
            results[j] = values[j].numpy()
        for j, _, i in written:
            results[j] = args[i]
        return results

    run.session = session
    return run


def _fast_run(session):
    """The C++ session's `run`. `InferenceSession.run` first validates input names, graph
    capture and OrtValue ownership in Python on every call (measured 2-15 us here); our
    names are checked once at load and we pass only numpy arrays, so skip straight to it."""
    native = getattr(session, "_sess", None)
    if native is not None and hasattr(native, "run"):
        return native.run
    return session.run


# --------------------------------------------------------------------------- TVM


def _compact(array: np.ndarray) -> bool:
    """Row-major strides in every dim. numpy calls an array C-contiguous whatever the stride
    of a dim of size 1 (`x[:, None]`, a host unsqueeze of a nonzero column, has stride 0
    there), which TVM's compact check rejects."""
    stride = array.itemsize
    for size, step in zip(reversed(array.shape), reversed(array.strides)):
        if step != stride:
            return False
        stride *= size
    return True


def _to_tvm(tvm, array: np.ndarray):
    # from_dlpack wants a 64-byte-aligned, compact, writeable buffer (a misaligned one
    # segfaulted here); anything else is copied into TVM-owned memory.
    if (
        array.flags.c_contiguous
        and _compact(array)
        and array.flags.writeable
        and array.ctypes.data % 64 == 0
    ):
        return tvm.runtime.from_dlpack(array)
    # (not np.ascontiguousarray: it turns a 0-d array into a 1-d one, which TVM rejects)
    return tvm.runtime.tensor(np.array(array, order="C", copy=True))


# TVM keeps one thread pool per calling thread, and has no per-call thread count.
# `runtime.config_threadpool(1, n)` (mode 1: TVM's default "big cores" affinity) sets how
# many workers the calling thread's pool uses, up to the count the pool was created with:
# the TVM_NUM_THREADS environment variable's (else half the cores), read when the thread
# first runs TVM code. That ceiling is what stays process-wide; a runner sets it to every
# core if it is unset, so that each model gets its own `threads` on the thread that calls
# it (TVM 0.27; `tvm.runtime.num_threads()` reports the count in use).
_tvm_pool = threading.local()
"""`.threads`: the worker count this thread's TVM pool was last configured with."""


def _use_tvm_threads(configure: Callable[[int, int], None], threads: int) -> None:
    if getattr(_tvm_pool, "threads", None) != threads:
        configure(1, threads)
        _tvm_pool.threads = threads


def tvm_runner(path: Path, meta: Mapping[str, Any], options: RuntimeOptions) -> Runner:
    os.environ.setdefault("TVM_NUM_THREADS", str(default_threads()))  # the ceiling: see above
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
    configure = tvm.get_global_func("runtime.config_threadpool")
    threads = options.threads

    def run(*arrays):
        _use_tvm_threads(configure, threads)
        result = main_function()(*[to_tvm(tvm, a) for a in arrays])
        if isinstance(result, tensor_type):
            return [from_dlpack(result)]
        return [from_dlpack(r) for r in result]

    return run
