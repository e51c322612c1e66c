"""Benchmark one zoo network: prepare every system, check its numbers against eager, time
them interleaved, and return one JSON-ready record."""

from __future__ import annotations

import math
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from dycl.bench import systems as S
from dycl.bench.numerics import errors_against
from dycl.bench.timing import interleaved, plan_rounds, sweep_seconds, unstable
from dycl.runtime import RuntimeOptions


@dataclass(frozen=True)
class Settings:
    runtime: RuntimeOptions = RuntimeOptions(threads=2)  # DyCL's and the oracles'; threads for every system
    systems: tuple[str, ...] = ("eager", "torch.compile", "dycl-ort", "dycl-ort-nohoist", "dycl-ort-merge",
                                "dycl-ort-split", "dycl-tvm", "oracle-ort", "oracle-ort-decided", "oracle-tvm")
    budget_seconds: float = 45.0  # timed rounds per network (all systems together)
    min_rounds: int = 3
    max_rounds: int = 40
    cache_dir: str | None = None  # None: a fresh directory per network (cold compiles)
    profile_repeat: int = 20
    log: bool = True
    limits: dict[str, tuple[str, ...]] | None = None  # system -> the only networks it runs on
    tune_minutes: float = 0.0  # dycl-tvm-tuned: MetaSchedule minutes per network before building
    throughput: str = "off"  # the throughput table: "on" (after the latency table), "off", or "only"
    throughput_sizes: tuple[int, ...] = (1, 8, 32)  # N: requests arriving at once
    throughput_requests: int = 32  # requests per system, N and round (a multiple of every N)
    throughput_budget_seconds: float = 30.0  # timed rounds of the throughput table per network
    throughput_max_rounds: int = 15
    breakdown: bool = True  # where run_many's time goes at the largest N (dycl.bench.throughput)
    own_process: bool = False  # each network in a fresh process (`bench`)
    rest_seconds: float = 0.0  # idle time before each network but the first (`bench`)


def _say(settings: Settings, text: str) -> None:
    if settings.log:
        print(f"[dycl-bench {time.strftime('%H:%M:%S')}] {text}", flush=True)


def bench_network(name: str, settings: Settings) -> dict:
    from dycl.zoo import REGISTRY

    entry = REGISTRY[name]
    torch.set_num_threads(settings.runtime.threads)
    start = time.perf_counter()
    model = entry.build(0)
    path_inputs = entry.path_inputs()
    paths = entry.paths(model, path_inputs)
    record: dict = {
        "network": name,
        "family": entry.family,
        "path_inputs": len(path_inputs),
        "distinct_paths": len({repr(p) for p in paths}),
        "build_seconds": time.perf_counter() - start,
        "systems": {},
        "failures": {},
    }
    _say(settings, f"{name}: {len(path_inputs)} path inputs, {record['distinct_paths']} distinct paths")
    cache_dir = settings.cache_dir or tempfile.mkdtemp(prefix=f"dycl-bench-cache-{name}-")

    prepared: dict[str, S.Prepared] = {}

    def attempt(system: str, make):
        t = time.perf_counter()
        try:
            prepared[system] = make()
            _say(settings, f"{name}: {system} ready in {time.perf_counter() - t:.1f} s")
        except Exception as err:  # a system that cannot take the network is a result, not a crash
            record["failures"][system] = f"{type(err).__name__}: {str(err).strip()[:400]}"
            _say(settings, f"{name}: {system} FAILED: {record['failures'][system]}")
            traceback.print_exc()

    wanted = list(settings.systems)
    if settings.throughput == "only":  # the throughput table alone needs eager and DyCL+ORT
        wanted = ["eager", "dycl-ort"]
    elif settings.throughput == "on" and "dycl-ort" not in wanted:
        wanted.append("dycl-ort")
    for system, networks in (settings.limits or {}).items():
        if system in wanted and name not in networks:
            wanted.remove(system)
            record["failures"][system] = "not run on this network in this run (--limit)"
    attempt("eager", lambda: S.prepare_eager(model, path_inputs))
    program = None
    if any(s.startswith("dycl-") for s in wanted):
        program, frontend_seconds = S.import_program(model, entry.example_inputs())
        record["frontend_seconds"] = frontend_seconds
        _say(settings, f"{name}: frontend {frontend_seconds:.1f} s")
        for system in S.DYCL_SYSTEMS:
            if system in wanted:
                attempt(system, lambda s=system: S.prepare_dycl(
                    s, program, frontend_seconds, path_inputs, settings.runtime, cache_dir))
        if "dycl-tvm-tuned" in wanted:
            attempt("dycl-tvm-tuned", lambda: S.prepare_dycl(
                "dycl-tvm-tuned", program, frontend_seconds, path_inputs, settings.runtime, cache_dir,
                tune=S.shared_tuning(settings.tune_minutes)))
    for system in S.ORACLES:
        if system in wanted:
            attempt(system, lambda s=system: S.prepare_oracle(
                s, name, model, path_inputs, paths, settings.runtime, settings.cache_dir))
    if "torch.compile" in wanted:  # last: dynamo's caches are process-wide
        attempt("torch.compile", lambda: S.prepare_torch_compile(model, path_inputs))

    if "eager" not in prepared:
        raise RuntimeError(f"{name}: eager itself failed: {record['failures'].get('eager')}")

    if settings.throughput != "only":
        _latency(record, prepared, path_inputs, settings)
    if settings.throughput in ("on", "only"):
        _throughput(record, entry, model, program, prepared, path_inputs, settings, cache_dir)
    for p in prepared.values():
        p.handle = None
    return record


def _latency(record: dict, prepared: dict[str, S.Prepared], path_inputs: list, settings: Settings) -> None:
    """The latency tables: errors against eager, interleaved timing, host profile, ratios."""
    name = record["network"]
    # Numbers first (this is also the first warm-up call of every system).
    eager_calls = prepared["eager"].calls
    for system, p in prepared.items():
        record["systems"][system] = {"cost": p.cost, "info": p.info, "errors": errors_against(eager_calls, p.calls)}
        err = record["systems"][system]["errors"]["max_abs_error"]
        if not (err <= 1e-4):
            _say(settings, f"{name}: {system} max abs error {err:.3g} vs eager (above 1e-4)")

    # Warm-up sweep that also sizes the rounds.
    sweep_s = {system: sweep_seconds(p.calls) for system, p in prepared.items()}
    rounds, strides = plan_rounds(sweep_s, settings.budget_seconds, settings.min_rounds, settings.max_rounds)
    _say(settings, f"{name}: timing {rounds} rounds; strides {strides}")
    t = time.perf_counter()
    timings = interleaved({s: p.calls for s, p in prepared.items()}, rounds, strides)
    record["timing_seconds"] = time.perf_counter() - t
    for system, timing in timings.items():
        record["systems"][system]["time"] = timing.to_json()

    for system in S.DYCL_SYSTEMS:
        if system in prepared:
            try:
                record["systems"][system]["host"] = S.host_profile(prepared[system], path_inputs, settings.profile_repeat)
            except Exception as err:
                record["systems"][system]["host"] = {"error": f"{type(err).__name__}: {err}"}
    derive(record)
    summary = ", ".join(
        f"{s} {v['time']['median_ms']:.2f} ms" for s, v in record["systems"].items() if "time" in v
    )
    _say(settings, f"{name}: {summary}")


def _throughput(record: dict, entry, model, program, prepared: dict[str, S.Prepared], path_inputs: list,
                settings: Settings, cache_dir: str) -> None:
    """The throughput table's part of the record (dycl.bench.throughput); a system that
    cannot run it, or a wrong answer, is a failure of the record's "throughput". run_many
    is timed on the artifact dycl-serve would load: compiled again with its run-many form
    (its extra compile cost is `throughput_details["served"]`)."""
    from dycl.bench.static import static_variant
    from dycl.bench.throughput import measure

    name = record["network"]
    if "dycl-ort" not in prepared:
        record["failures"]["throughput"] = "DyCL+ORT did not compile"
        return
    start = time.perf_counter()
    try:
        served, served_cost, artifact = S.prepare_served(program, settings.runtime, cache_dir)  # noqa: F841 (owns the directory)
        _say(settings, f"{name}: run-many form: {served_cost['run_many_subdnn_count']} more sub-DNNs, "
                       f"compiled in {served_cost['compile_seconds']:.1f} s")
        record.update(measure(
            name, model, static_variant(entry.family, model), prepared["dycl-ort"].handle, served, path_inputs,
            settings.runtime, Path(cache_dir), sizes=settings.throughput_sizes, requests=settings.throughput_requests,
            budget_seconds=settings.throughput_budget_seconds, min_rounds=settings.min_rounds,
            max_rounds=max(settings.min_rounds, settings.throughput_max_rounds), breakdown=settings.breakdown,
            say=lambda text: _say(settings, text)))
        record["throughput_details"]["served"] = served_cost
    except Exception as err:  # a wrong answer (WrongAnswer) included: no table for this network
        record["failures"]["throughput"] = f"{type(err).__name__}: {str(err).strip()[:400]}"
        _say(settings, f"{name}: throughput FAILED: {record['failures']['throughput']}")
        traceback.print_exc()
        return
    record["throughput_seconds"] = time.perf_counter() - start
    top = max(settings.throughput_sizes)
    _say(settings, f"{name}: throughput @{top}: " + ", ".join(
        f"{k.split('@')[0]} {v:.0f}/s" for k, v in record["throughput"].items() if k.endswith(f"@{top}")))


def _median(record: dict, system: str) -> float:
    entry = record["systems"].get(system, {})
    return entry.get("time", {}).get("median_ms", math.nan)


PAIRED_RATIOS = {  # name -> (numerator system, denominator system), of their median times
    "dynamism_overhead_ort": ("dycl-ort", "oracle-ort"),
    "overhead_past_decisions_ort": ("dycl-ort", "oracle-ort-decided"),
    "dynamism_overhead_tvm": ("dycl-tvm", "oracle-tvm"),
    "tvm_tuned_vs_ort": ("dycl-tvm-tuned", "dycl-ort"),
    "hoist_free_speedup": ("dycl-ort-nohoist", "dycl-ort"),
    "merge_calls_speedup": ("dycl-ort", "dycl-ort-merge"),
    "keep_branches_speedup": ("dycl-ort-split", "dycl-ort"),
}


def derive(record: dict) -> None:
    """Ratios the tables report: speed-up over eager and torch.compile, dynamism overhead
    (DyCL / oracle with the same backend), its part past deciding the path (DyCL / the
    oracle with its decisions), hoist-free, merge-calls and keep-branches ablations; the
    ratios that divide a system whose rounds were unstable are listed apart."""
    divides: dict[str, tuple[str, str]] = {}
    for system in record["systems"]:
        divides[f"{system}/speedup_vs_eager"] = ("eager", system)
        if system != "torch.compile":
            divides[f"{system}/speedup_vs_torch_compile"] = ("torch.compile", system)
    divides |= PAIRED_RATIOS
    ratios = {key: _median(record, top) / _median(record, bottom) for key, (top, bottom) in divides.items()}
    record["ratios"] = ratios
    flagged = unstable_systems(record)
    record["unstable_systems"] = flagged
    record["unstable_ratios"] = sorted(key for key, pair in divides.items() if set(pair) & set(flagged))


def unstable_systems(record: dict) -> list[str]:
    """The systems of a record whose rounds did not measure one thing (`timing.unstable`)."""
    return [system for system, entry in record["systems"].items()
            if "time" in entry and unstable(entry["time"]["median_ms"], entry["time"]["q1_ms"], entry["time"]["q3_ms"])]


def _error_record(name: str, err: Exception) -> dict:
    return {"network": name, "error": f"{type(err).__name__}: {str(err)[:400]}", "systems": {}, "failures": {}}


def _bench_or_error(name: str, settings: Settings) -> dict:
    try:
        return bench_network(name, settings)
    except Exception as err:
        traceback.print_exc()
        return _error_record(name, err)


def _in_own_process(name: str, settings: Settings) -> dict:
    """`bench_network` in a fresh (spawned) process, so that nothing an earlier network left
    in the process (torch.compile's caches, ORT sessions and their pools, the heap) touches
    this one's times. (A network late in a full run can still measure slower than benched
    alone: at times this machine runs small two-thread work much slower, whatever the
    process; `bench`, docs/bench.md "How it times".)"""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        try:
            return pool.submit(_bench_or_error, name, settings).result()
        except Exception as err:  # the process died (a crash in native code): a result, not the end of the run
            return _error_record(name, err)


def bench(names: Sequence[str], settings: Settings, on_record=None) -> list[dict]:
    """Each network's record, in order, with `settings.rest_seconds` of idle before every
    network but the first (`--rest`): on this 2-core VM small two-thread work sometimes runs
    much slower for a while (eager BlockDrop 6.9 against 2.9 ms; once after ten minutes of
    tests, back to normal about 90 s after they ended), and the networks late in a full run
    have measured slower than the same networks first (docs/bench.md)."""
    records = []
    for name in names:
        if records and settings.rest_seconds:
            _say(settings, f"resting {settings.rest_seconds:.0f} s before {name}")
            time.sleep(settings.rest_seconds)
        record = _in_own_process(name, settings) if settings.own_process else _bench_or_error(name, settings)
        records.append(record)
        if on_record is not None:
            on_record(records)
    return records
