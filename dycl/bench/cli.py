"""dycl-bench: DyCL against PyTorch eager, torch.compile and the oracle static path on the zoo.

    dycl-bench                       # every zoo network, every system (~30 min on an idle 2-core machine)
    dycl-bench --only sdn_resnet,blockdrop --threads 2
    dycl-bench --quick               # two networks, eager / DyCL+ORT (+ablation) / oracle ORT, < 1 min
    dycl-bench --throughput only     # the throughput table alone (N = 1, 8, 32 requests at once)
    dycl-bench --decode              # the decode table alone: gpt_decode, per token / request / cache length

Writes <out>/<stem>.json (machine, versions, every number), <stem>.md (tables) and
<stem>.png (speed-up over eager per network and system). Speed is measured here and only
here: tests run `--quick` and assert nothing about it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from dycl.runtime.options import ORT_THREAD_POOLS

QUICK_NETWORKS = ("blockdrop", "skipnet_ff")
QUICK_SYSTEMS = ("eager", "dycl-ort", "dycl-ort-nohoist", "dycl-ort-merge", "dycl-ort-split", "oracle-ort", "oracle-ort-decided")


def _set_threads(threads: int) -> None:
    # The TVM oracle's thread count, and the ceiling of DyCL's TVM runners (see
    # dycl.runtime.runners): TVM reads it when a thread first runs TVM code.
    os.environ["TVM_NUM_THREADS"] = str(threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))


def _default_cache():
    from dycl.backends.cache import cache_root

    return cache_root(None)


def parser() -> argparse.ArgumentParser:
    from dycl.bench.systems import ALL_SYSTEMS

    p = argparse.ArgumentParser(prog="dycl-bench", description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated zoo networks (default: all nine)")
    p.add_argument("--systems", help=f"comma-separated systems (default: all but dycl-tvm-tuned; known: {', '.join(ALL_SYSTEMS)})")
    p.add_argument("--threads", type=int, default=2, help="threads for every system (torch, ORT intra-op, TVM)")
    p.add_argument("--quick", action="store_true", help=f"smoke run: {', '.join(QUICK_NETWORKS)}; {', '.join(QUICK_SYSTEMS)}")
    p.add_argument("--budget", type=float, help="seconds of timed rounds per network (default 45; quick 6)")
    p.add_argument("--min-rounds", type=int, help="rounds for the slowest system (default 3)")
    p.add_argument("--max-rounds", type=int, help="rounds for fast systems (default 40; quick 5)")
    p.add_argument("--tuned", action="store_true",
                   help="also DyCL+TVM tuned: built with the records of the shared MetaSchedule database in the user's cache")
    p.add_argument("--tune-minutes", type=float, default=0.0, metavar="N",
                   help="dycl-tvm-tuned: tune each network for N minutes into the shared database first "
                   "(default 0: use the records already there); implies --tuned")
    p.add_argument("--cache-dir", help="compile cache for DyCL sub-DNNs and oracle graphs, kept between runs "
                   "(default: a fresh one per network, so compile cost is cold; --quick: the user's DyCL cache)")
    p.add_argument("--limit", action="append", default=[], metavar="SYSTEMS=NETWORKS",
                   help="run these systems only on these networks, e.g. 'dycl-tvm,oracle-tvm=blockdrop,skipnet_ff' (repeatable)")
    p.add_argument("--cold-costs", metavar="RUN.json", action="append",
                   help="an earlier dycl-bench JSON whose cold compile costs to report where this run hit the cache")
    p.add_argument("--out", default="benchmarks/results", help="output directory (default benchmarks/results)")
    p.add_argument("--stem", help="output file name stem (default bench-<date>, quick-<date>)")
    p.add_argument("--ort-spinning", action="store_true",
                   help="turn ORT intra-op spin-waiting on (the runtime leaves it off: see docs/bench.md)")
    p.add_argument("--ort-pool", choices=ORT_THREAD_POOLS, default="session",
                   help="ORT intra-op threads: one pool per session (the runtime's default) or ORT's process-wide "
                   "pool for every session of the run, DyCL's and the oracle's (RuntimeOptions.ort_thread_pool; "
                   "it spins after runs, see docs/bench.md)")
    p.add_argument("--throughput", choices=("on", "off", "only"),
                   help="the throughput table (requests/s of eager, DyCL+ORT one at a time and run_many, and the "
                   "static batched baseline at N requests at once): after the latency tables (on), not at all (off), "
                   "or alone (only: eager and DyCL+ORT are compiled, no latency rounds). Default: on, --quick: off")
    p.add_argument("--throughput-sizes", default="1,8,32", metavar="N,N,...",
                   help="requests arriving at once (default 1,8,32)")
    p.add_argument("--throughput-requests", type=int, metavar="R",
                   help="requests per system and N in each round, a multiple of every N (default: the largest N)")
    p.add_argument("--throughput-budget", type=float, default=30.0, metavar="S",
                   help="seconds of timed throughput rounds per network (default 30)")
    p.add_argument("--no-breakdown", action="store_true",
                   help="skip the breakdown of where run_many's time goes at the largest N")
    p.add_argument("--rest", type=float, default=0.0, metavar="SECONDS",
                   help="idle seconds before each network but the first (default 0): on this machine small "
                   "two-thread work sometimes runs much slower for a while after sustained load, and the late "
                   "networks of a full run have measured slower than the same networks first (docs/bench.md)")
    p.add_argument("--same-process", action="store_true",
                   help="measure every network in this process (default: each in a fresh one, so that nothing a "
                   "network left behind, caches, sessions or heap, touches the next; --quick: one process)")
    p.add_argument("--decode", action="store_true",
                   help="the decode table alone (dycl.bench.decode: gpt_decode's greedy decoding; eager, torch.compile, "
                   "DyCL+ORT, DyCL+TVM, the Optimum-style ORT loop and gpt-fast's formulation by hand on ORT; "
                   "--systems, --threads, --budget, --min-rounds, --max-rounds, --cache-dir, --out and --stem apply)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.threads < 1:
        print("dycl-bench: error: --threads must be at least 1", file=sys.stderr)
        return 2
    _set_threads(args.threads)
    if args.decode:
        return _decode(args)

    from dycl.bench import report
    from dycl.bench.run import Settings, bench
    from dycl.bench.systems import ALL_SYSTEMS
    from dycl.runtime import RuntimeOptions
    from dycl.zoo import EVALUATION, REGISTRY

    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
    else:
        names = list(QUICK_NETWORKS if args.quick else EVALUATION)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        print(f"dycl-bench: error: unknown network(s) {', '.join(unknown)}; known: {', '.join(REGISTRY)}", file=sys.stderr)
        return 2
    if args.systems:
        systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
    else:
        systems = QUICK_SYSTEMS if args.quick else tuple(s for s in ALL_SYSTEMS if s != "dycl-tvm-tuned")
    if (args.tuned or args.tune_minutes) and "dycl-tvm-tuned" not in systems:
        systems += ("dycl-tvm-tuned",)
    bad = [s for s in systems if s not in ALL_SYSTEMS]
    if bad:
        print(f"dycl-bench: error: unknown system(s) {', '.join(bad)}; known: {', '.join(ALL_SYSTEMS)}", file=sys.stderr)
        return 2
    if "eager" not in systems:
        systems = ("eager", *systems)  # every ratio and error is against eager

    throughput = args.throughput or ("off" if args.quick else "on")
    try:
        sizes = tuple(sorted({int(n) for n in args.throughput_sizes.split(",") if n.strip()}))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        print(f"dycl-bench: error: --throughput-sizes wants positive integers, got '{args.throughput_sizes}'", file=sys.stderr)
        return 2
    if throughput == "only":
        systems = ("eager", "dycl-ort")
    requests = args.throughput_requests or max(sizes)
    if requests < 1 or any(requests % n for n in sizes):
        print(f"dycl-bench: error: --throughput-requests {requests} is not a multiple of every N in {sizes}", file=sys.stderr)
        return 2

    limits: dict[str, tuple[str, ...]] = {}
    for text in args.limit:
        left, sep, right = text.partition("=")
        if not sep:
            print(f"dycl-bench: error: --limit wants SYSTEMS=NETWORKS, got '{text}'", file=sys.stderr)
            return 2
        for system in (s.strip() for s in left.split(",") if s.strip()):
            limits[system] = tuple(n.strip() for n in right.split(",") if n.strip())
    settings = Settings(
        runtime=RuntimeOptions(threads=args.threads, ort_spinning=args.ort_spinning, ort_thread_pool=args.ort_pool),
        systems=systems,
        budget_seconds=args.budget if args.budget is not None else (6.0 if args.quick else 45.0),
        min_rounds=args.min_rounds or 3,
        max_rounds=args.max_rounds or (5 if args.quick else 40),
        cache_dir=args.cache_dir or (str(_default_cache()) if args.quick else None),
        profile_repeat=5 if args.quick else 20,
        log=not args.quiet,
        limits=limits,
        tune_minutes=args.tune_minutes,
        throughput=throughput,
        throughput_sizes=sizes,
        throughput_requests=requests,
        throughput_budget_seconds=args.throughput_budget,
        breakdown=not args.no_breakdown,
        own_process=not (args.quick or args.same_process),
        rest_seconds=args.rest,
    )
    stem = args.stem or f"{'quick' if args.quick else 'bench'}-{time.strftime('%Y%m%d-%H%M')}"
    result = {
        "machine": report.machine(),
        "config": {
            "threads": settings.runtime.threads,
            "batch": 1,
            "systems": list(settings.systems),
            "networks": names,
            "quick": args.quick,
            "budget_seconds_per_network": settings.budget_seconds,
            "min_rounds": settings.min_rounds,
            "max_rounds": settings.max_rounds,
            "limits": {k: list(v) for k, v in limits.items()},
            "tune_minutes_per_network": args.tune_minutes,
            "ort_intra_op_spinning": bool(args.ort_spinning),
            "ort_thread_pool": args.ort_pool,
            "own_process_per_network": settings.own_process,
            "rest_seconds_between_networks": settings.rest_seconds,
            "timing": "per round, each system runs each path input once (systems in rotated order); "
                      "a round's value is the mean per-inference time over the path inputs; "
                      "median and IQR over rounds. DyCL and oracles take numpy, eager/torch.compile torch tensors.",
            "load_average_start": [round(x, 2) for x in os.getloadavg()],
            "throughput": {
                "table": throughput,
                "sizes": list(sizes),
                "requests": requests,
                "budget_seconds_per_network": args.throughput_budget,
                "breakdown": not args.no_breakdown,
                "timing": "the requests are the network's path inputs cycled, in a seeded random order, arriving "
                          "in groups of N; one-at-a-time systems serve them one after another, run_many and the "
                          "static batched graph one call per group; requests/s = requests / time to serve all; "
                          "latency = mean over requests of the time from their group's arrival to their answer; "
                          "medians over interleaved rounds",
            },
        },
        "networks": [],
    }
    start = time.perf_counter()

    def save(records):
        result["networks"] = records
        result["summary"] = report.summary(records)
        result["config"]["wall_seconds"] = time.perf_counter() - start
        result["config"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        return report.write(result, args.out, stem)

    cold = None
    if args.cold_costs:
        import json

        cold = {"networks": []}
        result["config"]["cold_costs_from"] = []
        for path in args.cold_costs:
            with open(path) as stream:
                earlier = json.load(stream)
            cold["networks"] += earlier.get("networks", [])
            result["config"]["cold_costs_from"].append(
                {"file": path, "load_average_start": earlier.get("config", {}).get("load_average_start"),
                 "date_utc": earlier.get("machine", {}).get("date_utc")})

    def save_with_cold(records):
        if cold is not None:
            report.merge_cold_costs(records, cold)
        return save(records)

    records = bench(names, settings, on_record=save_with_cold)
    paths = save_with_cold(records)
    print(report.markdown(result))
    print(f"dycl-bench: wrote {paths['json']}, {paths['md']}, {paths['png']} ({time.perf_counter() - start:.0f} s)")
    latency_ok = throughput == "only" or all("ratios" in r for r in records)
    throughput_ok = throughput == "off" or all("throughput" in r for r in records)
    return 0 if latency_ok and throughput_ok else 1


def _decode(args) -> int:
    from dycl.bench.decode import SYSTEMS, DecodeSettings, markdown, run
    from dycl.runtime import RuntimeOptions

    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip()) if args.systems else SYSTEMS
    bad = [s for s in systems if s not in SYSTEMS]
    if bad:
        print(f"dycl-bench: error: unknown decode system(s) {', '.join(bad)}; known: {', '.join(SYSTEMS)}", file=sys.stderr)
        return 2
    if "eager" not in systems:
        systems = ("eager", *systems)  # (every ratio is against eager, every token checked against it)
    settings = DecodeSettings(
        runtime=RuntimeOptions(threads=args.threads, ort_spinning=args.ort_spinning, ort_thread_pool=args.ort_pool),
        systems=systems,
        budget_seconds=args.budget if args.budget is not None else (6.0 if args.quick else 60.0),
        min_rounds=args.min_rounds or 3,
        max_rounds=args.max_rounds or (5 if args.quick else 30),
        length_rounds=3 if args.quick else 7,
        cache_dir=args.cache_dir,
        log=not args.quiet,
    )
    stem = args.stem or f"decode-{time.strftime('%Y%m%d-%H%M')}"
    result, paths = run(settings, args.out, stem)
    print(markdown(result["decode"], settings.runtime.threads))
    print(f"dycl-bench: wrote {paths['json']}, {paths['md']} ({result['config']['wall_seconds']:.0f} s)")
    return 0 if not result["decode"]["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
