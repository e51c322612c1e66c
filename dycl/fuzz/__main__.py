"""`python -m dycl.fuzz`: a fuzzing campaign.

    python -m dycl.fuzz --count 2000 --seed 0                 # random programs vs eager (ONNX Runtime)
    python -m dycl.fuzz --count 0 --ir-mutations 10000 --seed 0   # malformed IR through dycl-opt
    python -m dycl.fuzz --count 200 --seed 5000 --tvm-every 20 --shrink --out fuzz-out/
    python -m dycl.fuzz --count 500 --seed 0 --form issue34 --resume --out fuzz-out/   # issue 34's forms; resumable

Program seeds are SEED, SEED+1, ...; mutation case i is reproducible from (SEED, i). Every
outcome is appended to OUT/programs.jsonl / OUT/mutations.jsonl, the summary to
OUT/summary.json. With --shrink, each distinct failure is shrunk to a minimal program and
saved as an xfail(strict) regression test (default directory tests/fuzz/regressions/).
Exit code: 0 when everything passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from dycl.backends import BACKENDS


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dycl.fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20, help="random programs to check")
    parser.add_argument("--seed", type=int, default=0, help="first program seed; seed of the IR mutations")
    parser.add_argument("--backend", default="onnxruntime", choices=(*BACKENDS, "interpreter"))
    parser.add_argument("--no-mutation", action="store_true", help="programs without tensor mutation (as before it existed)")
    parser.add_argument("--no-research", action="store_true",
                        help="programs without research-code constructs (as before they existed)")
    parser.add_argument("--tvm-every", type=int, default=50, help="seeds divisible by this also use TVM (0: never)")
    parser.add_argument("--ir-mutations", type=int, default=0, help="malformed-IR cases for dycl-opt")
    parser.add_argument("--ir-seeds", type=Path, nargs="*", default=[Path("lit_tests")], help=".mlir files or directories")
    parser.add_argument("--ir-timeout", type=float, default=10.0, help="seconds per dycl-opt run")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per program")
    parser.add_argument("--chunk", type=int, default=10, help="programs per worker process")
    parser.add_argument("--form", default=None,
                        help="only the seeds (from SEED on) whose program has one of these forms (comma-separated; "
                             "`issue34`: those of dycl.fuzz.forms.ISSUE_34): COUNT of them")
    parser.add_argument("--resume", action="store_true",
                        help="skip the seeds OUT/programs.jsonl already has (the summary counts them all)")
    parser.add_argument("--shrink", action="store_true", help="shrink each distinct failure into a regression test")
    parser.add_argument("--regressions", type=Path, default=Path("tests/fuzz/regressions"))
    parser.add_argument("--out", type=Path, default=Path("fuzz-out"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"seed": args.seed, "started": time.strftime("%Y-%m-%d %H:%M:%S")}
    failed = False

    if args.count:
        failed |= _programs(args, summary)
    if args.ir_mutations:
        failed |= _mutations(args, summary)
    summary["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 1 if failed else 0


def _seeds_with_form(args) -> list[int]:
    """The first COUNT seeds from SEED on whose program has one of the forms `args.form`
    names (`dycl.fuzz.forms.tags`)."""
    from dycl.fuzz.forms import ISSUE_34, tags
    from dycl.fuzz.generate import generate

    wanted = {f for name in args.form.split(",") for f in (ISSUE_34 if name == "issue34" else (name,))}
    seeds, seed = [], args.seed
    while len(seeds) < args.count:
        if wanted & set(tags(generate(seed, mutation=not args.no_mutation, research=not args.no_research))):
            seeds.append(seed)
        seed += 1
    return seeds


def _programs(args, summary) -> bool:
    from dycl.fuzz.campaign import check_seeds, failed, shrink_seed, summarize

    previous = []
    if args.resume and (args.out / "programs.jsonl").exists():  # a campaign run in chunks
        previous = [json.loads(line) for line in (args.out / "programs.jsonl").read_text().splitlines() if line.strip()]
    log = open(args.out / "programs.jsonl", "a")

    def report(outcome):
        log.write(json.dumps(outcome) + "\n")
        log.flush()
        status = outcome["status"] + (" (by design)" if outcome.get("by_design") else "")
        mark = "." if outcome["status"] == "ok" else f"\n{outcome['seed']}: {status}: {outcome.get('detail', '')[:200]}\n"
        print(mark, end="", flush=True, file=sys.stderr)

    seeds = list(range(args.seed, args.seed + args.count)) if args.form is None else _seeds_with_form(args)
    done = {o["seed"] for o in previous}
    outcomes = [o for o in previous if o["seed"] in seeds]
    outcomes += check_seeds([s for s in seeds if s not in done], args.backend, args.tvm_every, args.chunk, args.timeout,
                            report, not args.no_mutation, not args.no_research)
    log.close()
    summary["programs"] = summarize(outcomes) | {"seeds": f"{seeds[0]}..{seeds[-1]}"}
    failures = [o for o in outcomes if failed(o)]
    if args.shrink:
        shrunk, seen = [], set()
        for outcome in failures:
            key = (outcome["status"], outcome.get("detail", "")[:60])
            if key in seen or outcome["status"] in ("timeout", "worker-crash"):
                continue
            seen.add(key)
            shrunk.append(shrink_seed(outcome["seed"], args.backend, args.tvm_every, args.regressions,
                                      mutation=not args.no_mutation, research=not args.no_research))
        summary["programs"]["shrunk"] = shrunk
    return bool(failures)


def _mutations(args, summary) -> bool:
    from dycl.fuzz.ir_campaign import load_seeds, run_mutations

    seeds = load_seeds(args.ir_seeds)
    log = open(args.out / "mutations.jsonl", "a")

    def report(case, result):
        if result.status in ("ok", "diagnostic"):
            return
        log.write(json.dumps({"seed": case.seed, "index": case.index, "source": case.source, "mutation": case.mutation,
                              "pipeline": case.pipeline, "status": result.status, "error_type": result.error_type,
                              "stderr": result.stderr[:2000]}) + "\n")
        log.flush()

    statuses, failures = run_mutations(args.ir_mutations, args.seed, seeds, args.ir_timeout, report)
    log.close()
    summary["mutations"] = {"cases": args.ir_mutations, "seed": args.seed, "seed_files": len(seeds),
                            "statuses": dict(statuses), "failures": len(failures)}
    return bool(failures)


if __name__ == "__main__":
    sys.exit(main())
