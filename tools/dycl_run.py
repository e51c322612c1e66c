"""dycl-run: run a function of an IR file through the reference interpreter, or a compiled artifact.

    dycl-run model.mlir --weights weights.npz --inputs x.npy        # given inputs
    dycl-run model.mlir --random --seed 0                           # random inputs from the signature
    dycl-run out/ --inputs x.npy                                    # a dycl-compile artifact (no torch)
    dycl-run out/ --random --repeat 100                             # ... and its median latency
    dycl-run out/ --random --verify-key key.pub                     # only if out/ is signed with its key

Prints each result (shape, dtype, a few values) or saves them with `--save out.npz`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dycl.tools.exit_status import exit_status


def _random_argument(arg_type, gen):
    import torch

    from dycl.dialects import torch as t
    from dycl.dialects.dtypes import dtype_name

    match arg_type:
        case t.ValueTensorType() if arg_type.has_static_shape:
            dtype = getattr(torch, dtype_name(arg_type.element_type))
            if dtype.is_floating_point:
                return torch.randn(arg_type.shape, generator=gen).to(dtype)
            return torch.randint(0, 10, arg_type.shape, generator=gen).to(dtype)
        case t.IntType():
            return int(torch.randint(0, 10, (), generator=gen))
        case t.FloatType():
            return float(torch.randn((), generator=gen))
        case t.BoolType():
            return bool(torch.randint(0, 2, (), generator=gen))
    raise ValueError(f"cannot make a random value of type {arg_type}")


def _describe(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        flat = value.flatten()[:6].tolist()
        return f"tensor{list(value.shape)} {str(value.dtype).removeprefix('torch.')} {flat}"
    return repr(value)


def run(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dycl-run", description=__doc__.split("\n")[0])
    parser.add_argument("program", help="an .mlir file, or an artifact directory from dycl-compile")
    parser.add_argument("--function", default="forward", help="function to run")
    parser.add_argument("--inputs", nargs="*", default=[], help=".npy files, one per argument")
    parser.add_argument("--random", action="store_true", help="random inputs from the signature")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--weights", help=".npz weight store (names as in dycl.param)")
    parser.add_argument("--save", help="write the results to this .npz")
    parser.add_argument("--repeat", type=int, default=0, help="artifact: time this many calls, print the median")
    parser.add_argument("--threads", type=int, help="artifact: runtime threads per sub-DNN")
    parser.add_argument(
        "--verify-key", metavar="KEY.pub",
        help="artifact: refuse it unless it is signed with this elliptic-curve public key's private key "
        "(PEM; needs the `sign` extra)",
    )
    args = parser.parse_args(argv)

    if Path(args.program).is_dir():  # a compiled artifact: numpy + the backend runtime only
        from dycl.tools.dycl_run_artifact import run_artifact

        return run_artifact(args)
    if args.verify_key:
        raise SystemExit("dycl-run: error: --verify-key checks an artifact directory's signature; IR files are not signed")

    import torch

    from dycl.interpreter import find_function, run_function
    from dycl.ir import parse_module

    path = Path(args.program)
    module = parse_module(path.read_text(), str(path))
    function = find_function(module, args.function)
    arg_types = function.function_type.inputs.data
    if args.random:
        gen = torch.Generator().manual_seed(args.seed)
        inputs = [_random_argument(ty, gen) for ty in arg_types]
    else:
        inputs = [torch.from_numpy(np.load(p)) for p in args.inputs]
    if len(inputs) != len(arg_types):
        raise ValueError(f"@{args.function} takes {len(arg_types)} inputs, {len(inputs)} given")
    weights = dict(np.load(args.weights)) if args.weights else {}
    results = run_function(module, inputs, weights, args.function)
    for i, value in enumerate(results):
        print(f"result {i}: {_describe(value)}")
    if args.save:
        np.savez(args.save, *[np.asarray(r) for r in results])
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(argv)
    except SystemExit as exit_:
        return exit_status(exit_)
    except _artifact_errors() as err:  # clear, one line, and without importing xdsl/torch
        print(f"dycl-run: error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # located diagnostics, never a traceback
        from dycl.tools.diagnostics import format_error

        name = next((a for a in (argv or sys.argv[1:]) if not a.startswith("-")), "dycl-run")
        print(format_error(err, name), file=sys.stderr)
        return 1


def _artifact_errors() -> tuple[type[Exception], ...]:
    from dycl.runtime import ArtifactError, InputError

    return (ArtifactError, InputError)


if __name__ == "__main__":
    sys.exit(main())
