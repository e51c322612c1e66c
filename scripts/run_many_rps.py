"""Requests per second of `run_many` against one request at a time, per zoo network (ORT).

    PYTHONPATH=.shim python scripts/run_many_rps.py [--only a,b] [--n 32] [--rounds 7] [--split]

Each round times N requests (cycling through the zoo's path inputs, numpy in) through
`run_many`, then the same N one at a time (rounds interleaved); the median round of each
is reported, with the load average (the machine is shared: ratios from one run are what to read). `--split` adds
a `pipeline={"keep_branches": False}` compile's `run_many`. `--profile NAME` prints where
run_many's time goes for one network (cProfile, by function); `--breakdown A,B` splits
it into batched backend calls, per-request backend calls and the rest.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import time

import numpy as np
import torch

import dycl
from dycl.zoo import REGISTRY


def _requests(entry, n: int) -> list[tuple]:
    paths = [tuple(np.ascontiguousarray(a.numpy()) for a in args) for args in entry.path_inputs()]
    return [paths[k % len(paths)] for k in range(n)]


CLOCK = time.perf_counter
THREADS = None


def _median_seconds(runs: dict, rounds: int) -> dict:
    """Median seconds of each of `runs`, their rounds interleaved (the load drifts)."""
    times: dict = {name: [] for name in runs}
    for run in runs.values():
        run()  # warm up (run_many loads its own form on first use)
    for _ in range(rounds):
        for name, run in runs.items():
            start = CLOCK()
            run()
            times[name].append(CLOCK() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def _run_many_on_the_one_request_form(compiled, requests) -> list:
    """run_many as it was before it had a form of its own: the scheduler over the form that
    `compiled(*args)` runs (kept gates inside a sub-DNN, exit tests inside the blocks)."""
    from dycl.runtime.batching import Scheduler

    stepwise = compiled._host_module.bind_stepwise(compiled._constants)
    scheduler = Scheduler(compiled.subdnn_calls, compiled.manifest["subdnns"], {})
    return scheduler.run([stepwise(*args) for args in requests])


def measure(name: str, n: int, rounds: int, split: bool) -> dict:
    entry = REGISTRY[name]
    model = entry.build()
    requests = _requests(entry, n)
    row = {"network": name}
    forms = {"kept": None, **({"split": {"keep_branches": False}} if split else {})}
    for form, pipeline in forms.items():
        compiled = dycl.compile(model, entry.example_inputs(), progress=False, check=False, pipeline=pipeline,
                                threads=THREADS)
        runs = {f"run_many_{form}": lambda: compiled.run_many(requests)}
        if form == "kept":
            runs["one_at_a_time"] = lambda: [compiled(*args) for args in requests]
            runs["run_many_one_form"] = lambda: _run_many_on_the_one_request_form(compiled, requests)
        compiled.batch_stats.clear()
        row.update({name: n / seconds for name, seconds in _median_seconds(runs, rounds).items()})
        stats = compiled.batch_stats
        row[f"mean_batch_{form}"] = sum(s["requests"] for s in stats.values()) / max(1, sum(s["backend_calls"] for s in stats.values()))
    return row


def profile(name: str, n: int, pipeline) -> None:
    entry = REGISTRY[name]
    compiled = dycl.compile(entry.build(), entry.example_inputs(), progress=False, check=False, pipeline=pipeline)
    requests = _requests(entry, n)
    compiled.run_many(requests)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(20):
        compiled.run_many(requests)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def breakdown(name: str, n: int, rounds: int) -> None:
    """Where run_many's time goes: batched backend calls, per-request backend calls, and
    the rest (host programs, scheduling, concatenation and slicing)."""
    import collections

    entry = REGISTRY[name]
    compiled = dycl.compile(entry.build(), entry.example_inputs(), progress=False, check=False)
    requests = _requests(entry, n)
    compiled.run_many(requests)
    _, calls, records = compiled._run_many_form()
    batchable = {r["name"] for r in records if r["batchable"]}
    spent: dict = collections.defaultdict(float)
    count: dict = collections.Counter()

    def timed(key, run):
        def call(*args):
            start = time.perf_counter()
            try:
                return run(*args)
            finally:
                spent[key] += time.perf_counter() - start
                count[key] += 1
        return call

    for sub, run in list(calls.items()):
        calls[sub] = timed("batched" if sub in batchable else "per_request", run)
    start = time.perf_counter()
    for _ in range(rounds):
        compiled.run_many(requests)
    total = (time.perf_counter() - start) / rounds
    batched, per_request = spent["batched"] / rounds, spent["per_request"] / rounds
    print(f"{name}: run_many {total * 1e3:.1f} ms per {n}: backend batched {batched * 1e3:.1f} ms "
          f"({count['batched'] / rounds:.0f} calls), backend per request {per_request * 1e3:.1f} ms "
          f"({count['per_request'] / rounds:.0f} calls), host + scheduling + concatenation "
          f"{(total - batched - per_request) * 1e3:.1f} ms; loadavg {open('/proc/loadavg').read().split()[:3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(sorted(REGISTRY)))
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--split", action="store_true")
    parser.add_argument("--profile")
    parser.add_argument("--cpu-time", action="store_true",
                        help="one intra-op thread, and this process's CPU time instead of wall time (a loaded machine "
                             "deschedules the process; CPU time leaves that out)")
    parser.add_argument("--breakdown", help="networks (comma-separated): where run_many's time goes")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.cpu_time:
        global CLOCK, THREADS
        CLOCK, THREADS = time.process_time, 1
    if args.breakdown:
        for name in args.breakdown.split(","):
            breakdown(name, args.n, args.rounds)
        return
    if args.profile:
        profile(args.profile, args.n, {"keep_branches": False} if args.split else None)
        return
    print("loadavg", open("/proc/loadavg").read().strip(), flush=True)
    rows = []
    for name in args.only.split(","):
        row = measure(name, args.n, args.rounds, args.split)
        row["speedup"] = row["run_many_kept"] / row["one_at_a_time"]
        row["speedup_one_form"] = row["run_many_one_form"] / row["one_at_a_time"]
        rows.append(row)
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
    for key in ("speedup", "speedup_one_form"):
        print("geomean", key, round(float(np.exp(np.mean(np.log([r[key] for r in rows])))), 2))
    print("loadavg", open("/proc/loadavg").read().strip())


if __name__ == "__main__":
    main()
