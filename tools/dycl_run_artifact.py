"""`dycl-run <artifact dir>`: run a compiled artifact on .npy inputs or random ones.

Imports numpy and dycl.runtime only: this is what runs on a machine without torch.
"""

from __future__ import annotations

import statistics
import time

import numpy as np


def _random_input(spec: dict, rng: np.random.Generator):
    kind = spec["kind"]
    if kind == "tensor":
        shape = [1 if d is None else d for d in spec["shape"] or []]
        dtype = np.dtype(spec["dtype"])
        if dtype.kind == "f":
            return rng.standard_normal(shape).astype(dtype)
        if dtype.kind == "b":
            return rng.integers(0, 2, shape).astype(bool)
        return rng.integers(0, 10, shape).astype(dtype)
    return {"int": lambda: int(rng.integers(0, 10)), "float": lambda: float(rng.standard_normal()),
            "bool": lambda: bool(rng.integers(0, 2))}[kind]()


def _describe(value, indent: str = "") -> list[str]:
    if isinstance(value, np.ndarray):
        flat = value.reshape(-1)[:6].tolist()
        return [f"{indent}tensor{list(value.shape)} {value.dtype} {flat}"]
    if isinstance(value, (tuple, list)):
        lines = [f"{indent}{type(value).__name__} of {len(value)}:"]
        for item in value:
            lines += _describe(item, indent + "  ")
        return lines
    return [f"{indent}{value!r}"]


def _flat(value):
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _flat(item)
    else:
        yield value


def run_artifact(args) -> int:
    from dycl.runtime import InputError, load

    compiled = load(args.program, threads=args.threads, verify_key=args.verify_key)
    specs = compiled.manifest["inputs"]
    if args.random:
        rng = np.random.default_rng(args.seed)
        inputs = [_random_input(spec, rng) for spec in specs]
    else:
        if len(args.inputs) != len(specs):
            names = ", ".join(s["name"] for s in specs)
            raise InputError(f"{compiled.entry}() takes {len(specs)} input(s) ({names}); {len(args.inputs)} .npy given")
        inputs = []
        for spec, path in zip(specs, args.inputs):
            value = np.load(path, allow_pickle=False)
            inputs.append(value if spec["kind"] == "tensor" else value.item())
    result = compiled(*inputs)
    for line in _describe(result):
        print(line)
    if args.repeat:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            compiled(*inputs)
            times.append(time.perf_counter() - start)
        print(f"median latency: {statistics.median(times) * 1e3:.3f} ms over {args.repeat} calls")
    if args.save:
        np.savez(args.save, *[np.asarray(v) for v in _flat(result)])
    return 0
