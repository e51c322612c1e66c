"""Eager latency of every zoo network: batch 1, 2 threads, no_grad, median of N runs.

``python -m dycl.zoo.latency [--runs 50] [names...]`` prints a markdown table. Each network is
timed on each of its path inputs in turn (paths differ in cost), after a few warm-up runs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from dycl.zoo import REGISTRY


def eager_latency_ms(name: str, runs: int = 50, warmup: int = 5) -> tuple[float, float, float]:
    """(median, fastest, slowest) per-call milliseconds over ``runs`` calls, cycling inputs."""
    entry = REGISTRY[name]
    model = entry.build(0)
    inputs = entry.path_inputs()
    times = []
    with torch.no_grad():
        for i in range(warmup):
            model(*inputs[i % len(inputs)])
        for i in range(runs):
            args = inputs[i % len(inputs)]
            start = time.perf_counter()
            model(*args)
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times), max(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("names", nargs="*", default=list(REGISTRY))
    args = parser.parse_args(argv)
    torch.set_num_threads(2)
    print("| network | median ms | min ms | max ms |\n|---|---|---|---|")
    for name in args.names:
        median, fastest, slowest = eager_latency_ms(name, args.runs)
        print(f"| `{name}` | {median:.1f} | {fastest:.1f} | {slowest:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
