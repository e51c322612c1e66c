"""dycl-compile: compile a PyTorch model into a DyCL artifact directory.

    dycl-compile pkg.module:factory --example 'randn(1,3,32,32)' -o out/
    dycl-compile pkg.module:Model --example 'x: f32[1,16] = randn, n: i64 = 5' -o out/ --backend tvm
    dycl-compile zoo:sdn_resnet -o out/            # a bundled zoo network, its own example inputs
    dycl-compile zoo:skipnet_ff -o out/ --check    # ... checked against eager on every path, timed
    dycl-compile zoo:blockdrop -o out/ --backend tvm --tune-minutes 10   # MetaSchedule-tuned TVM
    dycl-compile zoo:sdn_vgg -o out/ --sign-key key.pem    # sign out/ (dycl-run out/ --verify-key key.pub)

The compiled model is checked against eager PyTorch on the example inputs by default
(`--no-check` skips it); a difference prints the first differing output and exits 1.

`factory` is a class or function that takes no arguments and returns an nn.Module.
Run the result with `dycl-run out/ --random` (no torch needed).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence

from dycl.backends import BACKENDS
from dycl.tools.exit_status import exit_status


def _load_model(target: str):
    """`pkg.module:factory` -> (model, default example inputs or None, path inputs or None)."""
    if target.startswith("zoo:"):
        from dycl.zoo import REGISTRY

        name = target.removeprefix("zoo:")
        if name not in REGISTRY:
            raise SystemExit(f"dycl-compile: error: no zoo network '{name}'; known: {', '.join(REGISTRY)}")
        entry = REGISTRY[name]
        return entry.build(0), entry.example_inputs(), entry.path_inputs()
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise SystemExit(f"dycl-compile: error: expected pkg.module:factory, got '{target}'")
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: modules in the current directory import
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise SystemExit(f"dycl-compile: error: cannot import {module_name}: {err}") from None
    factory = module
    for part in attribute.split("."):
        if not hasattr(factory, part):
            raise SystemExit(f"dycl-compile: error: {module_name} has no attribute '{attribute}'")
        factory = getattr(factory, part)
    model = factory()
    return model, None, None


def _median_ms(fn, input_sets, repeat: int) -> float:
    import statistics

    samples = []
    for args in input_sets:
        fn(*args)  # warm-up
        for _ in range(repeat):
            start = time.perf_counter()
            fn(*args)
            samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def check_and_time(model, compiled, input_sets, repeat: int = 20) -> dict:
    """`--check`: compare with eager PyTorch on every input set (dycl.api.check_against_eager:
    raises dycl.CompileMismatch at the first difference), then median latencies of both."""
    import torch

    from dycl.api import check_against_eager

    error = 0.0
    for i, args in enumerate(input_sets):
        label = "the example inputs" if len(input_sets) == 1 else f"input set {i} of {len(input_sets)}"
        error = max(error, check_against_eager(model, compiled, args, inputs_label=label)["max_abs_error"])
    with torch.no_grad():
        eager_ms = _median_ms(model, input_sets, repeat)
    dycl_ms = _median_ms(compiled, input_sets, repeat)
    return {"max_error": error, "eager_ms": eager_ms, "dycl_ms": dycl_ms, "speedup": eager_ms / dycl_ms}


def _examples(specs: list[str], seed: int):
    import torch

    from dycl.inputspec import example_values, parse_inputs

    parsed = [spec for text in specs for spec in parse_inputs(text)]
    values = example_values(parsed, seed=seed)
    return tuple(torch.from_numpy(v) if hasattr(v, "dtype") and hasattr(v, "shape") else v for v in values)


def _tune_options(args):
    """The TuneOptions the tuning flags ask for, or None (untuned)."""
    if args.tune_minutes is None:
        if args.rpc_tracker or args.rpc_key:
            raise SystemExit("dycl-compile: error: --rpc-tracker and --rpc-key go with --tune-minutes")
        return None
    if args.backend != "tvm":
        raise SystemExit("dycl-compile: error: --tune-minutes needs --backend tvm")
    from dycl.backends.tuning import TuneOptions

    try:
        return TuneOptions(minutes=args.tune_minutes, rpc_tracker=args.rpc_tracker, rpc_key=args.rpc_key)
    except ValueError as err:
        raise SystemExit(f"dycl-compile: error: {err}") from None


def _check_sign_key(key: str) -> None:
    """A key that cannot sign fails now, not after the compile."""
    from dycl.runtime import ArtifactError
    from dycl.runtime.signing import check_private_key

    try:
        check_private_key(key)
    except ArtifactError as err:
        raise SystemExit(f"dycl-compile: error: --sign-key: {err}") from None


def run(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dycl-compile", description=__doc__.split("\n")[0])
    parser.add_argument("model", help="pkg.module:factory (a callable returning an nn.Module), or zoo:<name>")
    parser.add_argument(
        "--example", action="append", default=[],
        help="example inputs, e.g. 'randn(1,3,32,32)' or 'x: f32[1,4] = randn, n: i64 = 5' (repeatable)",
    )
    parser.add_argument("-o", "--output", required=True, help="artifact directory to write")
    parser.add_argument("--backend", choices=BACKENDS, default="onnxruntime")
    parser.add_argument("--method", default="forward", help="the method to compile")
    parser.add_argument("--threads", type=int, help="runtime threads per sub-DNN (default: all cores)")
    parser.add_argument("--jobs", type=int, help="compile processes (default: all cores)")
    parser.add_argument(
        "--tune-minutes", type=float, metavar="N",
        help="tvm: tune with MetaSchedule for N minutes into the shared database under the compile cache, "
        "then build with every record it holds (0: tune nothing, use the records already there)",
    )
    parser.add_argument("--rpc-tracker", metavar="HOST:PORT", help="tvm tuning: measure candidates on this TVM RPC tracker's devices")
    parser.add_argument("--rpc-key", metavar="KEY", help="tvm tuning: the key the tracker's devices registered under")
    parser.add_argument("--no-cache", action="store_true", help="ignore the compile cache")
    parser.add_argument(
        "--no-keep-branches", action="store_true",
        help="the pure split: every branch decided in the host, none kept inside a sub-DNN (dycl-keep-branches)",
    )
    parser.add_argument(
        "--run-many-form", action="store_true",
        help="for serving many requests at once (run_many, dycl-serve): also compile a form with the gates "
        "in the host and exit tests split out, so that blocks batch across requests",
    )
    parser.add_argument(
        "--sign-key", metavar="KEY.pem",
        help="sign the artifact directory with this elliptic-curve private key (PEM; needs the `sign` extra); "
        "load it with dycl.load(dir, verify_key=PUB) or dycl-run DIR --verify-key PUB",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of random example values")
    parser.add_argument("--emit-hcfg", metavar="FILE.dot", help="also write the HCFG as Graphviz")
    parser.add_argument(
        "--check", action="store_true",
        help="compare with eager PyTorch (zoo: on inputs that take every path) and time both",
    )
    parser.add_argument(
        "--no-check", action="store_true",
        help="skip the self-check (compiled vs eager PyTorch on the example inputs) that runs by default",
    )
    args = parser.parse_args(argv)
    tune = _tune_options(args)  # bad flags fail before the model loads
    if args.sign_key:
        _check_sign_key(args.sign_key)

    import dycl

    model, default_examples, path_inputs = _load_model(args.model)
    if args.example:
        examples = _examples(args.example, args.seed)
    elif default_examples is not None:
        examples = default_examples
    else:
        raise SystemExit("dycl-compile: error: give example inputs with --example (e.g. --example 'randn(1,3,32,32)')")
    start = time.perf_counter()
    compiled = dycl.compile(
        model, examples, backend=args.backend, method=args.method, threads=args.threads,
        jobs=args.jobs, use_cache=not args.no_cache, check=not args.no_check, tune=tune,
        pipeline={"keep_branches": False} if args.no_keep_branches else None, run_many_form=args.run_many_form,
    )
    seconds = time.perf_counter() - start
    path = compiled.save(args.output, sign_key=args.sign_key)
    report = compiled.compile_report
    print(
        f"dycl-compile: {args.model} -> {path}/ ({report['subdnn_count']} sub-DNNs, backend {args.backend}, "
        f"{seconds:.1f} s, {report['cached_subdnns']} from cache)"
    )
    if args.sign_key:
        print(f"signed: {path}/model.sig with {args.sign_key}")
    tuning = report.get("tuning")
    if tuning:
        print(
            f"tuning: {tuning['tasks']} tasks, {tuning['tuned']} searched ({tuning['trials']} candidates measured), "
            f"{tuning['reused']} already in the database, {tuning['seconds'] / 60:.1f} min; database {tuning['database']}"
        )
    record = report.get("check", {})
    if record.get("ran"):
        print(
            f"self-check: same outputs as eager PyTorch on the example inputs (max abs error "
            f"{record['max_abs_error']:.2e}; {record['seconds']:.2f} s: eager call {record['eager_seconds'] * 1e3:.1f} ms, "
            f"compiled call {record['compiled_seconds'] * 1e3:.1f} ms)"
        )
    if args.check:
        import torch

        torch.set_num_threads(compiled.threads)  # the same cores for both sides
        input_sets = path_inputs or [examples]
        result = check_and_time(model, compiled, input_sets)
        print(
            f"check: {len(input_sets)} input sets, max abs error {result['max_error']:.2e}, "
            f"eager {result['eager_ms']:.3f} ms, DyCL ({args.backend}) {result['dycl_ms']:.3f} ms, "
            f"speed-up {result['speedup']:.2f}x, {report['subdnn_count']} sub-DNNs"
        )
    if args.emit_hcfg:
        hcfg = compiled.hcfg
        with open(args.emit_hcfg, "w") as stream:
            stream.write(hcfg.to_dot() if hasattr(hcfg, "to_dot") else str(hcfg))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(argv)
    except SystemExit as exit_:
        return exit_status(exit_)
    except Exception as err:  # a clear one-line reason; the frontend/backends name what failed
        from dycl.api import CompileMismatch
        from dycl.inputspec import InputSpecError

        if isinstance(err, CompileMismatch):
            print(
                f"dycl-compile: error: check failed: the compiled model differs from eager PyTorch on "
                f"{err.inputs}: {err.path}: {err.reason} (--no-check skips the self-check)",
                file=sys.stderr,
            )
        elif isinstance(err, InputSpecError):
            print(f"dycl-compile: error: {err}", file=sys.stderr)
        else:
            print(f"dycl-compile: error: {type(err).__name__}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
