"""How a loaded model runs its sub-DNNs: given to `dycl.load` (or `dycl.compile`), and
from there to every runner factory. No module global changes it."""

from __future__ import annotations

import os
from dataclasses import dataclass

ORT_THREAD_POOLS = ("session", "shared")


@dataclass(frozen=True)
class RuntimeOptions:
    threads: int | None = None
    """Intra-op threads of every sub-DNN (fewer for small ones, see `runners.threads_for`);
    None: what the artifact's manifest asks for, else every core."""

    ort_spinning: bool = False
    """Whether ONNX Runtime's intra-op workers spin-wait after each run (its own default).
    DyCL holds one session, so one thread pool, per sub-DNN: 20-40 pools would spin
    against each other and against the host program, so it is off (dycl-bench
    --ort-spinning turns it on)."""

    ort_thread_pool: str = "session"
    """Where a session's intra-op threads come from (one of `ORT_THREAD_POOLS`).

    "session": each session has its own pool (`threads_for` threads, none below
    `runners.SINGLE_THREAD_MACS`). "shared": every session DyCL creates runs on ONNX
    Runtime's process-wide pool (`onnxruntime.set_global_thread_pool_sizes(threads, 1)`,
    `use_per_session_threads = False`). Not the default, because in onnxruntime's Python
    API (1.31) the global pool
    - spin-waits after every run and nothing turns that off
      (`session.intra_op.allow_spinning` and `session.force_spinning_stop` apply to
      per-session pools only; measured: ~24 ms of CPU in the 50 ms after a burst, the same
      as a spinning per-session pool);
    - is created once per process, with one size, and cannot be replaced;
    - once it exists, onnxruntime refuses every session of the process that asks for its
      own pool ("use_per_session_threads must be false when using a global thread pool"),
      including the export check of a later `dycl.compile` and the user's own sessions;
      so from then on every model the process loads joins it, whatever its options say.
    `python -m dycl.bench.pools` measures both (docs/bench.md).
    """


def default_threads() -> int:
    return os.cpu_count() or 1
