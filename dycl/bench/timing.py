"""Interleaved timing: every system runs every path input once per round, order rotated.

A *sweep* is one call on each path input, in order; its time is reported as the mean
latency per inference over the path inputs (so every path weighs the same, whatever its
cost). Systems take part in rounds with a stride: a system too slow for every round (TVM
untuned) runs in every k-th round, still interleaved with the others. The result per
system is the median and the interquartile range of its sweep means over the rounds it
ran, plus the median per path input.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import psutil

Call = Callable[[], object]


@dataclass
class Timing:
    """One system's times on one network, in milliseconds."""

    sweeps_ms: list[float] = field(default_factory=list)  # mean per inference, one per round
    per_input_ms: list[list[float]] = field(default_factory=list)  # [input][round]
    foreign_cores: list[float] = field(default_factory=list)  # other processes' CPU during each turn (cores)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.sweeps_ms)

    @property
    def iqr_ms(self) -> tuple[float, float]:
        return quartiles(self.sweeps_ms)

    def to_json(self) -> dict:
        q1, q3 = self.iqr_ms
        return {
            "median_ms": self.median_ms,
            "q1_ms": q1,
            "q3_ms": q3,
            "rounds": len(self.sweeps_ms),
            "per_input_median_ms": [statistics.median(t) for t in self.per_input_ms],
            "foreign_cores_median": statistics.median(self.foreign_cores) if self.foreign_cores else math.nan,
            "foreign_cores_max": max(self.foreign_cores, default=math.nan),
        }


UNSTABLE_IQR = 2.0
"""A system whose interquartile range over rounds exceeds this many times its median did
not measure one thing (the machine's load changed under it): the report flags its row and
leaves every ratio it takes part in out of the geomeans."""


def unstable(median: float, q1: float, q3: float) -> bool:
    return math.isfinite(median) and median > 0 and q3 - q1 > UNSTABLE_IQR * median


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    if len(values) < 2:
        return (values[0], values[0]) if values else (math.nan, math.nan)
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def sweep_seconds(calls: Sequence[Call], repeat: int = 1) -> float:
    """Wall time of `repeat` sweeps (used for warm-up and to size the rounds)."""
    start = time.perf_counter()
    for _ in range(repeat):
        for call in calls:
            call()
    return (time.perf_counter() - start) / repeat


def plan_rounds(
    sweep_s: Mapping[str, float], budget_s: float, min_rounds: int, max_rounds: int
) -> tuple[int, dict[str, int]]:
    """(total rounds, stride per system) so that the timed part takes about `budget_s`.

    Fast systems run in every round; a system whose sweeps would eat more than its share
    runs every `stride`-th round, but at least `min_rounds` times."""
    share = budget_s / max(len(sweep_s), 1)
    wanted = {name: max(min_rounds, min(max_rounds, int(share / max(s, 1e-9)))) for name, s in sweep_s.items()}
    total = max(wanted.values())
    strides = {name: max(1, total // w) for name, w in wanted.items()}
    return total, strides


def interleaved(
    systems: Mapping[str, Sequence[Call]],
    rounds: int,
    strides: Mapping[str, int] | None = None,
    pause_s: float = 0.02,
    warm_up: bool = False,
) -> dict[str, Timing]:
    """Time `rounds` rounds. Round r runs the systems in an order rotated by r; inside a
    system's turn, each path input once. Garbage collection is off during a round.

    With `warm_up`, a turn first makes its calls once untimed, then times them: the
    steady state of a server that answers one call after another. Without it, a turn's
    first call pays for caches and thread pools that the systems before it left cold, and
    a system of few calls per turn pays it most (run_many at N = 32: one call).

    `pause_s` of sleep separates two systems' turns: ONNX Runtime's intra-op worker threads
    (one pool per session, so one per DyCL sub-DNN) spin-wait after a run and measurably
    slow down whatever runs next on a 2-core machine; the pause lets them go to sleep.

    Each turn also records the CPU other processes used meanwhile (`foreign_cores`: their
    CPU seconds over the turn's wall seconds): a system whose threads meet at barriers
    (torch's OpenMP pool) slows down many times over when another process takes a core,
    and this says whether a slow round had company."""
    names = list(systems)
    strides = strides or {}
    timings = {name: Timing(per_input_ms=[[] for _ in systems[name]]) for name in names}
    clock = time.perf_counter
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        gc.collect()
        gc.disable()
        try:
            for name in order:
                if r % strides.get(name, 1):
                    continue
                if pause_s:
                    time.sleep(pause_s)
                if warm_up:
                    for call in systems[name]:
                        call()
                timing = timings[name]
                total = 0.0
                before = _cpu_seconds()
                turn = clock()
                for i, call in enumerate(systems[name]):
                    start = clock()
                    call()
                    elapsed = clock() - start
                    timing.per_input_ms[i].append(elapsed * 1e3)
                    total += elapsed
                turn = clock() - turn
                after = _cpu_seconds()
                timing.sweeps_ms.append(total * 1e3 / len(systems[name]))
                timing.foreign_cores.append(max(0.0, (after[0] - before[0]) - (after[1] - before[1])) / turn)
        finally:
            gc.enable()
    return timings


def _cpu_seconds() -> tuple[float, float]:
    """(CPU seconds the whole machine has been busy, CPU seconds of this process)."""
    machine = psutil.cpu_times()
    own = psutil.Process().cpu_times()
    busy = sum(machine) - machine.idle - getattr(machine, "iowait", 0.0)
    return busy, own.user + own.system


def geomean(values: Sequence[float]) -> float:
    values = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not values:
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))
