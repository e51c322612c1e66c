"""ONNX Runtime thread pools: per-call latency of N small sessions called in sequence.

    python -m dycl.bench.pools                          # 2, 7, 37 sessions; block and tiny graphs
    python -m dycl.bench.pools --sessions 2,37 --rounds 40 --json out.json
    python -m dycl.bench.pools --models "" --networks skipnet_ff,blockdrop   # the runtime on zoo networks

DyCL's runtime holds one ONNX Runtime session per sub-DNN. This measures what that costs
per call, in the configurations the runtime can choose between:

    session/spin      one intra-op pool per session, workers spin-wait after a run (ORT default)
    session/nospin    one pool per session, `session.intra_op.allow_spinning` = 0
    shared/spin       every session on ORT's process-wide pool (`set_global_thread_pool_sizes`,
                      `use_per_session_threads = False`); the global pool spins (its default)
    shared/nospin     the same with `session.force_spinning_stop` = 1: the pool spins inside
                      a run but stops when the run returns
    single            one thread per session (no pool at all): the floor for overhead

Each configuration lives in its own worker process (the global pool is sized once per
process and cannot be replaced). A round asks every worker in turn (order rotated per round,
20 ms of sleep between workers, as dycl-bench does) to run chained inferences
through its first N sessions (`--calls` session calls per turn); a round's value is the wall time per session call. Reported:
median and IQR over rounds, per configuration and N, and the CPU time a worker burns in
the 10 ms after its burst (spin-waiting shows up there).

Graphs: `block` is a SkipNet residual block (two 3x3 convolutions, 16 channels, 32x32,
4.7 M multiply-accumulates: above the runtime's one-thread threshold), `tiny` a 64x64
MatMul + Relu (4 K MACs: all per-call overhead).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

CONFIGS = ("session/spin", "session/nospin", "shared/spin", "shared/nospin", "single")
MODELS = ("block", "tiny")


# ------------------------------------------------------------------------------ graphs


def write_model(kind: str, path: Path) -> None:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    if kind == "block":
        shape = [1, 16, 32, 32]
        w1 = numpy_helper.from_array((rng.standard_normal((16, 16, 3, 3)) * 0.05).astype(np.float32), "w1")
        w2 = numpy_helper.from_array((rng.standard_normal((16, 16, 3, 3)) * 0.05).astype(np.float32), "w2")
        nodes = [
            helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c1"], ["r1"]),
            helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
            helper.make_node("Add", ["c2", "x"], ["a"]),
            helper.make_node("Relu", ["a"], ["y"]),
        ]
        inits = [w1, w2]
    elif kind == "tiny":
        shape = [1, 64]
        w = numpy_helper.from_array((rng.standard_normal((64, 64)) * 0.1).astype(np.float32), "w")
        nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
        inits = [w]
    else:
        raise ValueError(f"unknown graph kind {kind!r}")
    graph = helper.make_graph(
        nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, str(path))


# ------------------------------------------------------------------------------ worker


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def worker(config: str, model_path: str, sessions: int, threads: int) -> None:
    """Serve `{"sessions": N, "n": k}` lines on stdin (k chained inferences through the first N
    sessions) with `{"us_per_call": ..., "idle_cpu_ms": ...}`."""
    import numpy as np
    import onnxruntime as ort

    pool, _, spin = config.partition("/")
    if pool == "shared":
        ort.set_global_thread_pool_sizes(threads, 1)

    def options():
        o = ort.SessionOptions()
        o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        o.log_severity_level = 3
        if pool == "shared":
            o.use_per_session_threads = False
            if spin == "nospin":
                o.add_session_config_entry("session.force_spinning_stop", "1")
        elif pool == "session":
            o.intra_op_num_threads = threads
            o.inter_op_num_threads = 1
            o.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin == "spin" else "0")
        else:  # single
            o.intra_op_num_threads = 1
            o.inter_op_num_threads = 1
        return o

    runs = []
    for _ in range(sessions):
        s = ort.InferenceSession(model_path, options(), providers=["CPUExecutionProvider"])
        runs.append(s._sess.run)
    shape = s.get_inputs()[0].shape
    x0 = np.random.default_rng(1).standard_normal(shape).astype(np.float32) * 0.1
    names = ["y"]
    print(json.dumps({"ready": True, "threads": len(os.listdir("/proc/self/task"))}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        n, calls = request["sessions"], request["n"]
        chain = runs[:n]
        start = time.perf_counter()
        for _ in range(calls):
            x = x0
            for run in chain:
                x = run(names, {"x": x}, None)[0]
        elapsed = time.perf_counter() - start
        cpu = _cpu_seconds()
        time.sleep(0.010)
        idle = _cpu_seconds() - cpu
        print(json.dumps({"us_per_call": elapsed / (calls * n) * 1e6, "idle_cpu_ms": idle * 1e3}), flush=True)


def network_worker(config: str, artifact: str, network: str, threads: int) -> None:
    """Serve `{"n": sweeps}` lines: load the DyCL artifact with `config`'s thread pools and
    time sweeps over the network's path inputs (ms per inference)."""
    import numpy as np

    from dycl.runtime import RuntimeOptions
    from dycl.runtime.model import CompiledModel
    from dycl.zoo import REGISTRY

    runtime = RuntimeOptions(
        threads=1 if config == "single" else threads, ort_thread_pool="shared" if config == "shared" else "session"
    )
    model = CompiledModel(artifact, runtime=runtime)
    inputs = [tuple(np.ascontiguousarray(t.detach().numpy()) for t in args) for args in REGISTRY[network].path_inputs()]
    for args in inputs:
        model(*args)
    print(json.dumps({"ready": True, "threads": len(os.listdir("/proc/self/task"))}), flush=True)
    for line in sys.stdin:
        sweeps = json.loads(line)["n"]
        start = time.perf_counter()
        for _ in range(sweeps):
            for args in inputs:
                model(*args)
        elapsed = time.perf_counter() - start
        cpu = _cpu_seconds()
        time.sleep(0.010)
        idle = _cpu_seconds() - cpu
        print(json.dumps({"ms_per_inference": elapsed / (sweeps * len(inputs)) * 1e3, "idle_cpu_ms": idle * 1e3}), flush=True)


# ------------------------------------------------------------------------- coordinator


def _interleave(commands: dict[str, list[str]], requests: Sequence[dict], rounds: int, key: str,
                log=None, label: str = "") -> tuple[dict, dict, dict]:
    """Start one worker per configuration; each round, ask each worker (rotated order, 20 ms
    apart) every request in turn. Returns {(config, request index): [values]}, the same for
    idle CPU, and each worker's ready line."""
    configs = list(commands)
    procs = {c: subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
             for c, cmd in commands.items()}
    samples = {(c, i): [] for c in configs for i in range(len(requests))}
    idle = {(c, i): [] for c in configs for i in range(len(requests))}
    info = {}
    try:
        for config, proc in procs.items():
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"pools worker {config} died before it was ready")
            info[config] = json.loads(line)

        def ask(config, request):
            proc = procs[config]
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            return json.loads(proc.stdout.readline())

        for config in configs:  # warm-up
            for request in requests:
                ask(config, {**request, "n": max(1, request["n"] // 5)})
        for r in range(rounds):
            order = configs[r % len(configs):] + configs[: r % len(configs)]
            for i, request in enumerate(requests):
                for config in order:
                    reply = ask(config, request)
                    samples[config, i].append(reply[key])
                    idle[config, i].append(reply["idle_cpu_ms"])
                    time.sleep(0.020)
            if log and (r + 1) % max(1, rounds // 5) == 0:
                log(f"[pools {label}] round {r + 1}/{rounds}")
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait(timeout=60)
    return samples, idle, info


def measure_network(network: str, configs: Sequence[str], threads: int, rounds: int, sweeps: int,
                    artifact: str | None = None, log=print) -> dict:
    """DyCL+ORT on a zoo network, one worker process per pool configuration."""
    tmp = None
    if artifact is None:
        import dycl
        from dycl.zoo import REGISTRY

        entry = REGISTRY[network]
        tmp = tempfile.TemporaryDirectory(prefix=f"dycl-pools-{network}-")
        compiled = dycl.compile(entry.build(0), entry.example_inputs(), backend="onnxruntime",
                                threads=threads, progress=False)
        artifact = str(compiled.save(Path(tmp.name) / "artifact"))
    try:
        commands = {c: [sys.executable, "-m", "dycl.bench.pools", "--worker-network", c, "--artifact", artifact,
                        "--network", network, "--threads", str(threads)] for c in configs}
        samples, idle, info = _interleave(commands, [{"n": sweeps}], rounds, "ms_per_inference", log, network)
    finally:
        if tmp is not None:
            tmp.cleanup()
    rows = []
    for config in configs:
        values = samples[config, 0]
        q1, q3 = _quartiles(values)
        rows.append({"network": network, "config": config, "median_ms": statistics.median(values), "q1_ms": q1,
                     "q3_ms": q3, "rounds": len(values), "idle_cpu_ms_10ms_after": statistics.median(idle[config, 0]),
                     "process_threads": info[config]["threads"]})
    return {"rows": rows}


def network_table(rows: Sequence[dict]) -> str:
    lines = ["| network | config | ms per inference (median) | IQR | CPU ms in the 10 ms after | threads in process |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['network']} | {r['config']} | {r['median_ms']:.3f} | {r['q1_ms']:.3f}–{r['q3_ms']:.3f} | "
                     f"{r['idle_cpu_ms_10ms_after']:.1f} | {r['process_threads']} |")
    return "\n".join(lines)



def _quartiles(values: Sequence[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def measure(model: str, configs: Sequence[str], counts: Sequence[int], threads: int, rounds: int,
            calls: int, log=print) -> dict:
    """Per-call latency of `model` chained through N sessions, per configuration and N."""
    with tempfile.TemporaryDirectory(prefix="dycl-pools-") as tmp:
        path = Path(tmp) / f"{model}.onnx"
        write_model(model, path)
        commands = {c: [sys.executable, "-m", "dycl.bench.pools", "--worker", c, "--model-path", str(path),
                        "--max-sessions", str(max(counts)), "--threads", str(threads)] for c in configs}
        requests = [{"n": max(1, calls // n), "sessions": n} for n in counts]
        samples, idle, info = _interleave(commands, requests, rounds, "us_per_call", log, model)
    rows = []
    for i, n in enumerate(counts):
        for config in configs:
            values = samples[config, i]
            q1, q3 = _quartiles(values)
            rows.append({
                "model": model, "config": config, "sessions": n, "median_us_per_call": statistics.median(values),
                "q1_us": q1, "q3_us": q3, "rounds": len(values),
                "idle_cpu_ms_10ms_after": statistics.median(idle[config, i]),
                "process_threads": info[config]["threads"],
            })
    return {"rows": rows}


def table(rows: Sequence[dict]) -> str:
    lines = ["| graph | sessions | config | µs per call (median) | IQR | CPU ms in the 10 ms after | threads in process |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['sessions']} | {r['config']} | {r['median_us_per_call']:.1f} | "
                     f"{r['q1_us']:.1f}–{r['q3_us']:.1f} | {r['idle_cpu_ms_10ms_after']:.1f} | {r['process_threads']} |")
    return "\n".join(lines)


NETWORK_CONFIGS = ("session", "shared", "single")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dycl.bench.pools", description=__doc__.splitlines()[0])
    p.add_argument("--sessions", default="2,7,37", help="comma-separated session counts (default 2,7,37)")
    p.add_argument("--models", default=",".join(MODELS), help=f"graphs: {', '.join(MODELS)} (empty: none)")
    p.add_argument("--configs", default=",".join(CONFIGS), help=f"configurations: {', '.join(CONFIGS)}")
    p.add_argument("--networks", default="", help="also DyCL+ORT on these zoo networks, one process per "
                   f"configuration of {', '.join(NETWORK_CONFIGS)} (compiled first, with the DyCL cache)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--calls", type=int, default=740, help="session calls per worker turn (calls // N chained inferences)")
    p.add_argument("--sweeps", type=int, default=20, help="network mode: sweeps over the path inputs per worker turn")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-network", help=argparse.SUPPRESS)
    p.add_argument("--model-path", help=argparse.SUPPRESS)
    p.add_argument("--artifact", help=argparse.SUPPRESS)
    p.add_argument("--network", help=argparse.SUPPRESS)
    p.add_argument("--max-sessions", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker, args.model_path, args.max_sessions, args.threads)
        return 0
    if args.worker_network:
        network_worker(args.worker_network, args.artifact, args.network, args.threads)
        return 0
    counts = [int(s) for s in args.sessions.split(",") if s.strip()]
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    bad = [c for c in configs if c not in CONFIGS]
    if bad:
        p.error(f"unknown configuration(s) {', '.join(bad)}; known: {', '.join(CONFIGS)}")
    result = {"load_average_start": [round(x, 2) for x in os.getloadavg()], "threads": args.threads,
              "rounds": args.rounds, "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "rows": [],
              "network_rows": []}
    for model in (m.strip() for m in args.models.split(",") if m.strip()):
        result["rows"] += measure(model, configs, counts, args.threads, args.rounds, args.calls)["rows"]
    for network in (n.strip() for n in args.networks.split(",") if n.strip()):
        result["network_rows"] += measure_network(network, NETWORK_CONFIGS, args.threads, args.rounds,
                                                  args.sweeps)["rows"]
    result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print(f"load average {result['load_average_start']} -> {result['load_average_end']}, {args.threads} threads, "
          f"{args.rounds} rounds, {result['date_utc']} UTC")
    if result["rows"]:
        print(table(result["rows"]))
    if result["network_rows"]:
        print(network_table(result["network_rows"]))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
