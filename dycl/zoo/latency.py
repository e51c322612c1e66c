"""Eager latency of every zoo network: batch 1, 2 threads (``--threads``), no_grad.

``python -m dycl.zoo.latency [--runs 50] [names...]`` prints a markdown table: the median over
at least ``--runs`` timed calls spread evenly over the path inputs (paths differ in cost), the
medians of the fastest and the slowest path, and the slowest path's best call (close to the
uncontended cost when other processes share the cores).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch

from dycl.zoo import EVALUATION, REGISTRY


def eager_latency_ms(name: str, runs: int = 50,
                     warmup: int = 3) -> tuple[float, float, float, float]:
    """(median over all calls, fastest path's median, slowest path's median, slowest path's
    best call), in ms."""
    entry = REGISTRY[name]
    model = entry.build(0)
    inputs = entry.path_inputs()
    per_input = max(math.ceil(runs / len(inputs)), 5)
    all_times: list[float] = []
    path_times = []
    with torch.no_grad():
        for args in inputs:
            for _ in range(warmup):
                model(*args)
            times = []
            for _ in range(per_input):
                start = time.perf_counter()
                model(*args)
                times.append((time.perf_counter() - start) * 1e3)
            all_times += times
            path_times.append((statistics.median(times), min(times)))
    slowest = max(path_times)
    return statistics.median(all_times), min(path_times)[0], slowest[0], slowest[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument("names", nargs="*", default=list(EVALUATION))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print("| network | median ms | fastest path ms | slowest path ms | slowest path, best ms |")
    print("|---|---|---|---|---|")
    for name in args.names:
        median, fastest, slowest, best = eager_latency_ms(name, args.runs)
        print(f"| `{name}` | {median:.1f} | {fastest:.1f} | {slowest:.1f} | {best:.1f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
