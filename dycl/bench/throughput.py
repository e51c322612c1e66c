"""The throughput table: N requests at once, served four ways.

The workload of a network is `requests` requests (default 32) drawn from its path inputs,
each path input equally often (the zoo's path inputs cycled, as the latency table weighs
them), in a seeded random order. At each N the requests arrive in groups of N:

    eager               PyTorch eager, one request at a time
    dycl-ort            DyCL+ORT, `compiled(*args)` one request at a time
    dycl-ort-run_many   DyCL+ORT as dycl-serve runs it: the artifact compiled with its run-many
                        form (`run_many_form=True`) and loaded back with `dycl.load`,
                        `served.run_many(group)` on each group of N
    static-batched-ort  the network without its dynamism at batch N, compiled whole by ORT
                        (`dycl.bench.static`), one call per group

Requests per second: the workload's size over the time to serve all of it. Latency: the N
requests of a group arrive together; a request's latency runs from then until its answer
is ready (one at a time, the k-th request of a group waits for the k − 1 before it;
batched, every request of a group waits for the whole call); the mean over requests. A
one-at-a-time system does the same work at every N, so it is timed once per round and
only its latency depends on N. Systems are timed interleaved (`dycl.bench.timing`):
medians over rounds. Each turn serves the workload once untimed, then once timed: a rate
is what a server under load sustains, and a cold turn charged its one call at N = 32
(after other systems had run) for caches and thread pools the steady state keeps warm.

Every answer is checked before timing: eager's against nothing, DyCL's (one at a time and
`run_many`) against eager per request, the static baseline's against the same static
network in eager PyTorch. A wrong answer (different structure, shape or integer output,
or a float off by more than `WRONG_ANSWER`) raises `WrongAnswer`: the table is not made.

`run_many_breakdown` splits the time of one `run_many` call into backend calls, batching
(grouping, concatenation, splitting), the host programs themselves (stepping the
generators) and the scheduler's own bookkeeping, by replaying `CompiledModel.run_many`
from outside with timed wrappers: the runtime's own path is not touched.
"""

from __future__ import annotations

import gc
import inspect
import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dycl.bench.numerics import leaves, max_abs_error
from dycl.bench.timing import interleaved, plan_rounds, quartiles, unstable
from dycl.runtime import RuntimeOptions

SYSTEMS = ("eager", "dycl-ort", "dycl-ort-run_many", "static-batched-ort")
ONE_AT_A_TIME = ("eager", "dycl-ort")
LABELS = {
    "eager": "eager",
    "dycl-ort": "DyCL+ORT",
    "dycl-ort-run_many": "DyCL+ORT run_many",
    "static-batched-ort": "static batched ORT",
}
SIZES = (1, 8, 32)

WRONG_ANSWER = 1e-3
"""Largest float difference an answer may have and still be right: above ONNX Runtime's
own rounding against eager (at most 2.2e-4 in the zoo, `sdn_mobilenet`), below what a
wrong path or a mixed-up request gives (1e-2 and more)."""


class WrongAnswer(AssertionError):
    """A system answered a request differently from its reference."""


def key(system: str, n: int) -> str:
    return f"{system}@{n}"


def request_mix(path_inputs: Sequence[tuple], count: int, seed: int = 0) -> list[tuple]:
    """`count` requests: the path inputs cycled (each equally often, up to one), shuffled
    with a fixed seed so that groups mix the paths."""
    cycled = [path_inputs[i % len(path_inputs)] for i in range(count)]
    random.Random(seed).shuffle(cycled)
    return [tuple(t.clone() for t in args) for args in cycled]


def check_answers(system: str, expected: Sequence[Any], got: Sequence[Any], tolerance: float = WRONG_ANSWER) -> float:
    """Max abs error of `got` against `expected`, request by request; `WrongAnswer` if a
    request's structure differs or its error exceeds `tolerance`."""
    if len(expected) != len(got):
        raise WrongAnswer(f"{system}: {len(got)} answers for {len(expected)} requests")
    worst = 0.0
    for index, (want, have) in enumerate(zip(expected, got)):
        error, why = max_abs_error(want, have)
        if why or not error <= tolerance:
            raise WrongAnswer(f"{system}: request {index}: {why or f'max abs error {error:.3g} > {tolerance:g}'}")
        worst = max(worst, error)
    return worst


def _numpy(args: tuple) -> tuple:
    return tuple(np.ascontiguousarray(t.detach().numpy()) for t in args)


def _groups(items: Sequence, n: int) -> list[list]:
    return [list(items[i:i + n]) for i in range(0, len(items), n)]


def _rows(outputs: Sequence[np.ndarray], count: int) -> list[list[np.ndarray]]:
    """A batched call's outputs, cut into one answer per row."""
    return [[np.asarray(o)[k:k + 1] for o in outputs] for k in range(count)]


def _split_rows(output: Any, count: int) -> list[list[torch.Tensor]]:
    """A batched eager output (a tensor or a tuple of them), cut into one answer per row."""
    tensors = leaves(output)
    return [[t[k:k + 1] for t in tensors] for k in range(count)]


def _queued_latency(service: Sequence[float], n: int) -> float:
    """Mean latency when requests with these service times arrive in groups of `n` and are
    served one after another."""
    waits = []
    for group in _groups(service, n):
        done = 0.0
        for seconds in group:
            done += seconds
            waits.append(done)
    return sum(waits) / len(waits)


def _mean_batch(stats: dict[str, dict[str, float]]) -> dict[str, Any]:
    requests = sum(s["requests"] for s in stats.values())
    calls = sum(s["backend_calls"] for s in stats.values())
    return {
        "overall": requests / calls if calls else math.nan,
        "subdnn_requests": requests,
        "backend_calls": calls,
        "per_subdnn": {name: s["mean_batch"] for name, s in stats.items()},
    }


def measure(
    network: str,
    model: torch.nn.Module,
    static_model: torch.nn.Module,
    compiled,
    served,
    path_inputs: Sequence[tuple],
    runtime: RuntimeOptions,
    static_dir: Path,
    sizes: Sequence[int] = SIZES,
    requests: int = 32,
    budget_seconds: float = 30.0,
    min_rounds: int = 3,
    max_rounds: int = 15,
    breakdown: bool = True,
    breakdown_repeat: int = 5,
    say: Callable[[str], None] = lambda text: None,
) -> dict[str, Any]:
    """The throughput part of one network's record: `{"throughput": {"<system>@<N>": rps},
    "throughput_details": {...}}` (see the module docstring). `compiled` is the DyCL+ORT
    `CompiledModel` one request at a time, `served` the artifact dycl-serve would load (its
    run-many form, `dycl.bench.systems.prepare_served`); `static_model` the network without its dynamism
    (`dycl.bench.static`), compiled here per N."""
    sizes = sorted(set(sizes))
    if any(requests % n for n in sizes):
        raise ValueError(f"{requests} requests do not split into groups of {sizes}")
    torch_requests = request_mix(path_inputs, requests)
    arrays = [_numpy(args) for args in torch_requests]
    systems = _checked_systems(network, model, static_model, compiled, served, torch_requests, arrays, sizes, runtime,
                               static_dir, say)

    sweeps = {}
    for name, calls in systems.calls.items():
        start = time.perf_counter()
        for call in calls:
            call()
        sweeps[name] = time.perf_counter() - start
    rounds, strides = plan_rounds(sweeps, budget_seconds, min_rounds, max_rounds)
    say(f"{network}: throughput: timing {rounds} rounds of {requests} requests per system and N; strides {strides}")
    # A slow system (eager) runs every k-th round, at least min_rounds. Requests per second is
    # a rate under load, so every turn is timed warm (see `interleaved`).
    timings = interleaved(systems.calls, rounds, strides, warm_up=True)

    throughput, latency_ms, per_round = _rates(timings, sizes, requests)
    ran = {name: [r for r in range(rounds) if r % strides.get(name, 1) == 0] for name in timings}
    by_round = {k: dict(zip(ran[_timed_as(k)], values)) for k, values in per_round.items()}
    top = sizes[-1]
    rate = lambda system, n: throughput[key(system, n)]  # noqa: E731
    divides = {f"run_many_vs_one_at_a_time@{n}": ("dycl-ort", n) for n in sizes}
    divides |= {f"run_many_vs_static@{n}": ("static-batched-ort", n) for n in sizes}
    divides[f"run_many_vs_eager@{top}"] = ("eager", top)
    ratios = {name: rate("dycl-ort-run_many", n) / rate(other, n) for name, (other, n) in divides.items()}
    unstable_rows = sorted(k for k, values in per_round.items() if unstable(throughput[k], *quartiles(values)))
    unstable_ratios = sorted(name for name, (other, n) in divides.items()
                             if {key("dycl-ort-run_many", n), key(other, n)} & set(unstable_rows))
    # The same ratios within each round that timed both, median over rounds: robust to drift
    # in the machine's load from one round to the next.
    paired = {}
    for n in sizes:
        for label, other in (("one_at_a_time", "dycl-ort"), ("static", "static-batched-ort")):
            mine, theirs = by_round[key("dycl-ort-run_many", n)], by_round[key(other, n)]
            common = [r for r in mine if r in theirs]
            if common:
                paired[f"run_many_vs_{label}@{n}"] = statistics.median(mine[r] / theirs[r] for r in common)
    details: dict[str, Any] = {
        "requests": requests,
        "sizes": sizes,
        "rounds": {name: len(timing.sweeps_ms) for name, timing in timings.items()},
        "path_inputs": len(path_inputs),
        "latency_ms": latency_ms,
        "throughput_iqr": {k: list(quartiles(v)) for k, v in per_round.items()},
        "throughput_per_round": per_round,
        "mean_batch": systems.mean_batch,
        "max_abs_error": systems.errors,
        "static": systems.static_cost,
        "ratios": ratios,
        "paired_ratios": paired,
        "unstable": unstable_rows,  # IQR over rounds > timing.UNSTABLE_IQR x median: flagged, not averaged in
        "unstable_ratios": unstable_ratios,
    }
    if breakdown:
        try:
            details["breakdown"] = {"n": top, **run_many_breakdown(served, _groups(arrays, top)[0], breakdown_repeat)}
        except Exception as err:  # a profile that cannot run is reported, not fatal
            details["breakdown"] = {"n": top, "error": f"{type(err).__name__}: {err}"}
    return {"throughput": throughput, "throughput_details": details}


@dataclass
class _Served:
    calls: dict[str, list[Callable[[], Any]]]  # "eager", "dycl-ort", "<batched system>@<N>" -> calls
    errors: dict[str, float]
    mean_batch: dict[str, Any]
    static_cost: dict[str, Any]


def _checked_systems(network, model, static_model, compiled, served_model, torch_requests, arrays, sizes, runtime,
                     static_dir, say) -> _Served:
    """Every system's calls over the workload, each answer checked first (`WrongAnswer`);
    run_many's batches and the static graphs' compile costs on the way."""
    from dycl.bench.static import batch_of, compile_static

    def eager_call(args):
        def call():
            with torch.no_grad():
                return model(*args)

        return call

    with torch.no_grad():
        expected = [model(*args) for args in torch_requests]
    served = _Served({"eager": [eager_call(args) for args in torch_requests],
                      "dycl-ort": [(lambda a=a: compiled(*a)) for a in arrays]}, {}, {}, {})
    served.errors["dycl-ort"] = check_answers("dycl-ort", expected, [compiled(*args) for args in arrays])
    for n in sizes:
        groups, torch_groups = _groups(arrays, n), _groups(torch_requests, n)
        system = key("dycl-ort-run_many", n)
        served_model.batch_stats.clear()
        answers = [answer for group in groups for answer in served_model.run_many(group)]
        served.errors[system] = check_answers(system, expected, answers)
        served.mean_batch[str(n)] = _mean_batch(served_model.batch_stats)
        served.calls[system] = [(lambda g=g: served_model.run_many(g)) for g in groups]

        system = key("static-batched-ort", n)
        start = time.perf_counter()
        run, cost = compile_static(network, static_model, batch_of(torch_groups[0]), runtime, static_dir)
        served.static_cost[str(n)] = cost | {"load_seconds": time.perf_counter() - start}
        with torch.no_grad():
            static_expected = [row for g in torch_groups for row in _split_rows(static_model(*batch_of(g)), n)]
        batches = [tuple(np.concatenate(column, axis=0) for column in zip(*group)) for group in groups]
        served.errors[system] = check_answers(system, static_expected, [row for b in batches for row in _rows(run(*b), n)])
        served.calls[system] = [(lambda b=b, run=run: run(*b)) for b in batches]
        say(f"{network}: throughput N={n}: answers checked; run_many mean batch {served.mean_batch[str(n)]['overall']:.2f}")
    return served


def _timed_as(system_at_n: str) -> str:
    """The name a "<system>@<N>" was timed under (one-at-a-time systems once for every N)."""
    system = system_at_n.split("@")[0]
    return system if system in ONE_AT_A_TIME else system_at_n


def _rates(timings: dict, sizes: Sequence[int], requests: int):
    """(requests/s, mean latency ms, requests/s in each round the system ran), each keyed
    "<system>@<N>"; medians over rounds."""
    throughput: dict[str, float] = {}
    latency_ms: dict[str, float] = {}
    per_round: dict[str, list[float]] = {}
    for system in ONE_AT_A_TIME:
        rounds = list(zip(*timings[system].per_input_ms))  # [round][request] ms
        rps = [requests * 1e3 / sum(times) for times in rounds]
        for n in sizes:
            throughput[key(system, n)] = statistics.median(rps)
            per_round[key(system, n)] = rps
            latency_ms[key(system, n)] = statistics.median(_queued_latency(times, n) for times in rounds)
    for system in ("dycl-ort-run_many", "static-batched-ort"):
        for n in sizes:
            timing = timings[key(system, n)]
            # sweeps_ms: the mean time of one group's call; every request of it waits for all of it
            rps = [n * 1e3 / ms for ms in timing.sweeps_ms]
            throughput[key(system, n)] = statistics.median(rps)
            per_round[key(system, n)] = rps
            latency_ms[key(system, n)] = timing.median_ms
    return throughput, latency_ms, per_round


# ------------------------------------------------------------------------------ breakdown

BREAKDOWN_PARTS = ("backend", "batching", "host_programs", "scheduler", "checks_and_outputs")
"""Where one run_many call's time goes:
backend             the sub-DNN runners (ONNX Runtime's `run` and the runner's own frame)
batching            the scheduler's answer to a sub-DNN's waiting calls minus its backend
                    calls: grouping by shape, concatenation, splitting the results
host_programs       the generated host code itself: creating and stepping each request's
                    generator (`bind_stepwise`) between two sub-DNN calls
scheduler           the rest of `Scheduler.run`: picking the next sub-DNN, the waiting set
checks_and_outputs  run_many's input checks and the rebuilding of each output structure"""


def run_many_breakdown(compiled, requests: Sequence[tuple], repeat: int = 5) -> dict[str, Any]:
    """Median over `repeat` calls of where `compiled.run_many(requests)`'s time goes
    (`BREAKDOWN_PARTS`, ms per call), from a replay of `CompiledModel.run_many` with timed
    wrappers around the runners, the host generators and `Scheduler.answer`; its answers
    are checked equal to run_many's. `instrumented_ms` is the replay's total (the
    wrappers cost a little), `run_many_ms` the plain call's, timed beside it."""
    from dycl.runtime.batching import Scheduler

    if compiled.stateful or getattr(compiled._host_module, "bind_stepwise", None) is None:
        return {"skipped": "run_many runs this model request by request (stateful, or no stepwise host)"}
    clock = time.perf_counter
    spent = {"backend": 0.0, "answer": 0.0, "host": 0.0}
    counts = {"backend_calls": 0, "host_steps": 0}

    def timed_runner(run):
        def call(*args):
            start = clock()
            try:
                return run(*args)
            finally:
                spent["backend"] += clock() - start
                counts["backend_calls"] += 1

        return call

    class TimedScheduler(Scheduler):
        def answer(self, *args, **kwargs):
            start = clock()
            try:
                return super().answer(*args, **kwargs)
            finally:
                spent["answer"] += clock() - start

    def timed_program(program):
        value = None
        while True:
            start = clock()
            try:
                call = program.send(value)
            except StopIteration as stop:
                spent["host"] += clock() - start
                counts["host_steps"] += 1
                return stop.value
            spent["host"] += clock() - start
            counts["host_steps"] += 1
            value = yield call

    # the form run_many runs: the artifact's run-many form where it has one
    stepwise, calls, records = compiled._run_many_form()
    runners = {name: timed_runner(run) for name, run in calls.items()}
    timed_answer = "answer" in vars(Scheduler)

    def replay():
        start = clock()
        prepared = [compiled._checked_inputs(tuple(args)) for args in requests]
        checked = clock()
        programs = []
        for args, _ in prepared:
            made = clock()
            program = stepwise(*args)
            spent["host"] += clock() - made
            programs.append(timed_program(program) if inspect.isgenerator(program) else program)
        scheduled = clock()
        results = TimedScheduler(runners, records, {}).run(programs)
        ran = clock()
        outputs = [compiled._outputs(r, torch_in) for r, (_, torch_in) in zip(results, prepared)]
        done = clock()
        return outputs, {"total": done - start, "checks_and_outputs": (checked - start) + (done - ran),
                         "schedule": ran - scheduled}

    plain = compiled.run_many(requests)
    replayed, _ = replay()
    for want, have in zip(plain, replayed):
        if any(not np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(leaves(want), leaves(have))):
            raise WrongAnswer("the run_many replay of the breakdown answers differently from run_many")
    samples: dict[str, list[float]] = {part: [] for part in (*BREAKDOWN_PARTS, "instrumented", "run_many")}
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = clock()
            compiled.run_many(requests)
            samples["run_many"].append(clock() - start)
            for name in spent:
                spent[name] = 0.0
            counts.update(backend_calls=0, host_steps=0)
            _, parts = replay()
        finally:
            gc.enable()
        samples["instrumented"].append(parts["total"])
        samples["backend"].append(spent["backend"])
        samples["batching"].append(spent["answer"] - spent["backend"] if timed_answer else math.nan)
        samples["host_programs"].append(spent["host"])
        samples["scheduler"].append(parts["schedule"] - spent["host"] - (spent["answer"] if timed_answer else spent["backend"]))
        samples["checks_and_outputs"].append(parts["checks_and_outputs"])
    result = {f"{part}_ms": statistics.median(values) * 1e3 for part, values in samples.items()}
    result |= {"requests": len(requests), "backend_calls": counts["backend_calls"], "host_steps": counts["host_steps"],
               "repeat": repeat}
    return result
