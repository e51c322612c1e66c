"""How much time a compiled model spends outside its sub-DNNs.

`host_overhead(model, inputs)` replays recorded sub-DNN outputs instead of running the
sub-DNNs, so the measured time is only what DyCL adds: input checks, the generated host
code, the sub-DNN call wrappers' Python frames and the output structure.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from dycl.runtime.model import CompiledModel


def host_overhead(model: CompiledModel, inputs: Sequence[Any], repeat: int = 200) -> dict[str, float]:
    """Median per-call numbers over `repeat` calls of `model(*inputs)` with replayed sub-DNNs:
    `host_us` (whole call), `subdnn_calls`, `per_subdnn_call_us`, and the real `total_us`."""
    recorded: list[list] = []

    def recording(name, run):
        def call(*args):
            out = run(*args)
            recorded.append(out)
            return out

        return call

    model.rebind({n: recording(n, r) for n, r in model.subdnn_calls.items()})(*inputs)
    calls = len(recorded)
    position = [0]

    def replaying(name):
        def call(*args):
            out = recorded[position[0]]
            position[0] += 1
            return out

        return call

    replay = model.rebind({n: replaying(n) for n in model.subdnn_calls})

    def timed(fn) -> float:
        samples = []
        for _ in range(repeat):
            position[0] = 0
            start = time.perf_counter()
            fn(*inputs)
            samples.append(time.perf_counter() - start)
        return statistics.median(samples) * 1e6

    host_us = timed(replay)
    total_us = timed(model)
    return {
        "host_us": host_us,
        "subdnn_calls": calls,
        "per_subdnn_call_us": host_us / max(calls, 1),
        "total_us": total_us,
    }
