"""Compile every sub-DNN of an HCFG: from the cache, in this process, or in a pool.

Independent sub-DNNs compile in parallel in a pool of worker processes sized to the
machine (`dycl.backends.worker`: fresh interpreters, as torch and fork do not mix, that
never re-run the user's script). Each worker pays a torch import and a first-export
warm-up of several seconds, so a few sub-DNNs compile in this process instead. A backend
that `batches` (ONNX Runtime: one export for all) compiles in this process unless the
caller asks for jobs. The backend itself comes from the registry (`dycl.backends`).
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dycl.backends import backend_class
from dycl.backends.cache import CompileCache, cache_key, cache_root
from dycl.backends.compiled import CompiledSubDNN
from dycl.backends.errors import BackendError
from dycl.backends.jobs import CompileJob, read_frame, write_frame

if TYPE_CHECKING:
    from dycl.backends.backend import Backend
    from dycl.backends.subdnn import SubDNN

# Below this many sub-DNNs to compile, a pool costs more (worker start-up) than it saves.
MIN_JOBS_FOR_POOL = 8


def _compile_batch(backend: Backend, subdnns: list[SubDNN], arrays) -> dict[str, CompiledSubDNN]:
    start = time.perf_counter()
    used = {n: arrays[n] for s in subdnns for n in s.weight_names}
    compiled = backend.compile_batch(subdnns, used)
    share = (time.perf_counter() - start) / len(subdnns)  # the wall time, split evenly
    for result in compiled.values():
        result.seconds = share
    return compiled


def compile_subdnns(
    subdnns: Sequence[SubDNN],
    weights: Mapping[str, Any],
    backend: str,
    options: Mapping[str, Any] | None = None,
    *,
    jobs: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    progress: bool = True,
) -> dict[str, CompiledSubDNN]:
    """Compile each sub-DNN; returns name -> CompiledSubDNN in the given order."""
    compiler = backend_class(backend).from_options(options or {})
    cache = CompileCache(cache_root(cache_dir), enabled=use_cache)
    arrays = {name: _as_numpy(value) for name, value in weights.items()}

    results: dict[str, CompiledSubDNN] = {}
    pending: list[tuple[SubDNN, str]] = []  # (sub-DNN, cache key)
    for subdnn in subdnns:
        missing = [n for n in subdnn.weight_names if n not in arrays]
        if missing:
            raise BackendError(backend, subdnn.name, f"weights missing from the store: {missing}")
        content = subdnn.content_key(arrays)
        key = cache_key(content, backend, compiler.option_values())
        hit = cache.get(backend, key, subdnn.name)
        if hit is not None:
            results[subdnn.name] = hit
        else:
            pending.append((subdnn, key))

    def job(item) -> CompileJob:
        subdnn, _ = item
        used = {n: arrays[n] for n in subdnn.weight_names}
        return CompileJob(compiler, subdnn, used)

    workers = min(jobs or os.cpu_count() or 1, len(pending))
    # A backend that compiles many sub-DNNs in one go beats a pool's start-up cost;
    # it still gets the pool when the caller asks for more than one job.
    wants_pool = jobs is not None if compiler.batches else (jobs is not None or len(pending) >= MIN_JOBS_FOR_POOL)
    bar = _progress_bar(len(subdnns), len(results), backend, progress)
    try:
        if workers > 1 and wants_pool:
            compiled = _compile_in_pool([job(item) for item in pending], workers, bar)
        elif compiler.batches and pending:
            compiled = _compile_batch(compiler, [item[0] for item in pending], arrays)
            bar.update(len(pending))
        else:
            compiled = {}
            for item in pending:
                compiled[item[0].name] = job(item).run()
                bar.update(1)
    finally:
        bar.close()
    for subdnn, key in pending:
        cache.put(key, compiled[subdnn.name])
        results[subdnn.name] = compiled[subdnn.name]
    return {s.name: results[s.name] for s in subdnns}


def _compile_in_pool(pending: list[CompileJob], workers: int, bar) -> dict[str, CompiledSubDNN]:
    """Compile in `workers` subprocesses (`python -m dycl.backends.worker`)."""
    # Biggest first, so one large sub-DNN does not start last and finish alone.
    order = sorted(pending, key=lambda job: -len(job.subdnn.ir_text))
    jobs: queue.Queue[CompileJob] = queue.Queue()
    for job in order:
        jobs.put(job)
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
                    job = jobs.get_nowait()
                except queue.Empty:
                    return
                name = job.subdnn.name
                write_frame(process.stdin, (name, job))
                reply = read_frame(process.stdout)
                if reply is None:  # the worker died (killed, out of memory): compile here
                    result = job.run()
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
