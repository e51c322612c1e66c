"""Compile every sub-DNN of an HCFG: from the cache, in this process, or in a pool.

Independent sub-DNNs compile in parallel in a pool of worker processes sized to the
machine (`dycl.backends.worker`: fresh interpreters, as torch and fork do not mix, that
never re-run the user's script). Each worker pays a torch import and a first-export
warm-up of several seconds, so a few sub-DNNs compile in this process instead. A backend
with `compile_batch` (ONNX Runtime: one export for all) compiles in this process unless
the caller asks for jobs.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dycl.backends.cache import CompileCache, cache_key, cache_root
from dycl.backends.compiled import CompiledSubDNN
from dycl.backends.subdnn import SubDNN
from dycl.backends.worker import read_frame, write_frame

# Below this many sub-DNNs to compile, a pool costs more (worker start-up) than it saves.
MIN_JOBS_FOR_POOL = 8


def backend_module(backend: str):
    if backend == "onnxruntime":
        from dycl.backends import onnxruntime as module
    elif backend == "tvm":
        from dycl.backends import tvm as module
    else:
        raise ValueError(f"unknown backend '{backend}': choose 'onnxruntime' or 'tvm'")
    return module


def backend_options(backend: str, options: Mapping[str, Any]) -> dict[str, Any]:
    defaults = backend_module(backend).DEFAULT_OPTIONS
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        known = ", ".join(sorted(defaults)) or "none"
        raise TypeError(f"unknown {backend} backend option(s) {unknown}; known: {known}")
    return {**defaults, **options}


def _compile_one(
    backend: str,
    subdnn: SubDNN,
    weights: Mapping[str, np.ndarray],
    options: Mapping[str, Any],
    tuning_dir: str | None,
) -> CompiledSubDNN:
    """Runs in a worker or in-process."""
    start = time.perf_counter()
    module = backend_module(backend)
    if backend == "tvm":
        compiled = module.compile_subdnn(subdnn, weights, options, Path(tuning_dir) if tuning_dir else None)
    else:
        compiled = module.compile_subdnn(subdnn, weights, options)
    compiled.seconds = time.perf_counter() - start
    return compiled


def _compile_batch(batch, subdnns: list[SubDNN], arrays, options) -> dict[str, CompiledSubDNN]:
    start = time.perf_counter()
    used = {n: arrays[n] for s in subdnns for n in s.weight_names}
    compiled = batch(subdnns, used, options)
    share = (time.perf_counter() - start) / len(subdnns)  # the wall time, split evenly
    for result in compiled.values():
        result.seconds = share
    return compiled


def compile_subdnns(
    subdnns: Sequence[SubDNN],
    weights: Mapping[str, Any],
    backend: str = "onnxruntime",
    options: Mapping[str, Any] | None = None,
    *,
    jobs: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    progress: bool = True,
) -> dict[str, CompiledSubDNN]:
    """Compile each sub-DNN; returns name -> CompiledSubDNN in the given order."""
    options = backend_options(backend, options or {})
    cache = CompileCache(cache_root(cache_dir), enabled=use_cache)
    arrays = {name: _as_numpy(value) for name, value in weights.items()}

    results: dict[str, CompiledSubDNN] = {}
    pending: list[tuple[SubDNN, str, str]] = []  # (sub-DNN, cache key, content key)
    for subdnn in subdnns:
        missing = [n for n in subdnn.weight_names if n not in arrays]
        if missing:
            from dycl.backends.errors import BackendError

            raise BackendError(backend, subdnn.name, f"weights missing from the store: {missing}")
        content = subdnn.content_key(arrays)
        key = cache_key(content, backend, options)
        hit = cache.get(backend, key, subdnn.name)
        if hit is not None:
            results[subdnn.name] = hit
        else:
            pending.append((subdnn, key, content))

    def job_args(item):
        subdnn, _, content = item
        used = {n: arrays[n] for n in subdnn.weight_names}
        tuning = str(cache.tuning_dir(content)) if backend == "tvm" else None
        return (backend, subdnn, used, options, tuning)

    batch = getattr(backend_module(backend), "compile_batch", None)
    workers = min(jobs or os.cpu_count() or 1, len(pending))
    # A backend that compiles many sub-DNNs in one go beats a pool's start-up cost;
    # it still gets the pool when the caller asks for more than one job.
    wants_pool = jobs is not None if batch else (jobs is not None or len(pending) >= MIN_JOBS_FOR_POOL)
    bar = _progress_bar(len(subdnns), len(results), backend, progress)
    try:
        if workers > 1 and wants_pool:
            compiled = _compile_in_pool(pending, job_args, workers, bar)
        elif batch is not None and pending:
            compiled = _compile_batch(batch, [item[0] for item in pending], arrays, options)
            bar.update(len(pending))
        else:
            compiled = {}
            for item in pending:
                compiled[item[0].name] = _compile_one(*job_args(item))
                bar.update(1)
    finally:
        bar.close()
    for subdnn, key, _ in pending:
        cache.put(key, compiled[subdnn.name])
        results[subdnn.name] = compiled[subdnn.name]
    return {s.name: results[s.name] for s in subdnns}


def _compile_in_pool(pending, job_args, workers: int, bar) -> dict[str, CompiledSubDNN]:
    """Compile in `workers` subprocesses (`python -m dycl.backends.worker`)."""
    # Biggest first, so one large sub-DNN does not start last and finish alone.
    order = sorted(pending, key=lambda item: -len(item[0].ir_text))
    jobs: queue.Queue = queue.Queue()
    for item in order:
        jobs.put(item)
    compiled: dict[str, CompiledSubDNN] = {}
    errors: list[BaseException] = []
    lock = threading.Lock()

    def serve() -> None:
        process = subprocess.Popen(
            [sys.executable, "-m", "dycl.backends.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        try:
            while not errors:
                try:
                    item = jobs.get_nowait()
                except queue.Empty:
                    return
                name = item[0].name
                write_frame(process.stdin, (name, job_args(item)))
                reply = read_frame(process.stdout)
                if reply is None:  # the worker died (killed, out of memory): compile here
                    result = _compile_one(*job_args(item))
                else:
                    _, ok, result = reply
                    if not ok:
                        raise result
                with lock:
                    compiled[name] = result
                    bar.update(1)
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller
            with lock:
                errors.append(err)
        finally:
            process.stdin.close()
            process.wait()

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return compiled


def _progress_bar(total: int, done: int, backend: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=done,
        desc=f"dycl: compiling sub-DNNs ({backend})",
        unit="sub-DNN",
        disable=not enabled or total == done,
        file=sys.stderr,
        leave=False,
    )


def _as_numpy(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    detach = getattr(value, "detach", None)
    if detach is not None:  # a torch tensor
        return detach().cpu().numpy()
    return np.asarray(value)
