"""One worker process of a campaign: checks programs and prints one JSON line per event.

    python -m dycl.fuzz.worker check SEED... [--backend B] [--tvm-every K] [--no-mutation] [--no-research]
    python -m dycl.fuzz.worker shrink SEED --backend B --out DIR [--no-mutation] [--no-research]

Lines: {"start": seed} before a program, then its Outcome as JSON. The parent
(`dycl.fuzz.campaign`) reads them with a deadline and restarts a worker that hangs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path


def _quiet() -> None:
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    import torch

    torch.set_num_threads(1)


def _say(record) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def backend_for(seed: int, backend: str | None, tvm_every: int) -> str | None:
    if backend == "interpreter":
        return None
    if tvm_every and seed % tvm_every == 0:
        return "tvm"
    return backend


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dycl.fuzz.worker")
    parser.add_argument("action", choices=("check", "shrink"))
    parser.add_argument("seeds", type=int, nargs="+")
    parser.add_argument("--backend", default="onnxruntime")
    parser.add_argument("--tvm-every", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--max-checks", type=int, default=120)
    parser.add_argument("--no-mutation", action="store_true")
    parser.add_argument("--no-research", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("DYCL_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "dycl-fuzz"))
    _quiet()
    from dycl.fuzz.generate import generate
    from dycl.fuzz.oracle import check_program

    mutation, research = not args.no_mutation, not args.no_research
    if args.action == "check":
        for seed in args.seeds:
            _say({"start": seed})
            outcome = check_program(generate(seed, mutation=mutation, research=research), backend_for(seed, args.backend, args.tvm_every))
            _say(outcome.to_json())
        return 0

    from dycl.fuzz.regression import write_regression
    from dycl.fuzz.shrink import shrink

    (seed,) = args.seeds
    backend = backend_for(seed, args.backend, args.tvm_every)
    first = check_program(generate(seed, mutation=mutation, research=research), backend)
    if not first.failed:
        _say({"shrunk": seed, "status": first.status})
        return 0
    signature = first.signature()
    # a failure before the backends is reproduced without them (much faster)
    oracle_backend = None if first.status in ("frontend-error", "frontend-misplaced", "frontend-crash", "state-not-refused",
                                              "pipeline-error", "hcfg-mismatch", "generator-error") else backend
    small = shrink(generate(seed, mutation=mutation, research=research), lambda p: check_program(p, oracle_backend).signature() == signature, args.max_checks)
    final = check_program(small, oracle_backend)
    path = write_regression(small, final.status, final.detail, oracle_backend, args.out) if args.out else None
    _say({"shrunk": seed, "status": final.status, "detail": final.detail, "test": str(path) if path else None})
    return 0


if __name__ == "__main__":
    sys.exit(main())
