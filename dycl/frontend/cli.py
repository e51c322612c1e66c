"""dycl-import: import a PyTorch model's forward as DyCL host IR.

    dycl-import pkg.module:Model --example 'randn(1,3,32,32)' -o model.mlir --weights model.npz
    dycl-import zoo:sdn_resnet -o sdn.mlir

`Model` is a class or function that takes no arguments and returns an nn.Module. The IR is
MLIR's generic form (stdout without `-o`); weights go to an `.npz` weight store. A model the
frontend cannot compile is reported as `file:line: construct: what to write instead`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from dycl.frontend.errors import FrontendError


class _UsageError(Exception):
    pass


def _load(target: str):
    """`pkg.module:factory` or `zoo:<name>` -> (model, default example inputs or None)."""
    if target.startswith("zoo:"):
        from dycl.zoo import REGISTRY

        entry = REGISTRY.get(target.removeprefix("zoo:"))
        if entry is None:
            raise _UsageError(f"no zoo network '{target}'")
        return entry.build(0), entry.example_inputs()
    module_name, sep, attribute = target.partition(":")
    if not (sep and module_name and attribute):
        raise _UsageError(f"expected pkg.module:factory, got '{target}'")
    if "" not in sys.path:
        sys.path.insert(0, "")  # like `python -m`: modules of the current directory import
    try:
        factory = importlib.import_module(module_name)
    except ImportError as error:
        raise _UsageError(f"cannot import {module_name}: {error}") from None
    for part in attribute.split("."):
        if not hasattr(factory, part):
            raise _UsageError(f"{module_name} has no attribute '{attribute}'")
        factory = getattr(factory, part)
    return factory(), None


def _examples(specs: list[str], seed: int) -> tuple:
    import torch

    from dycl.inputspec import example_values, parse_inputs

    parsed = [spec for text in specs for spec in parse_inputs(text)]
    values = example_values(parsed, seed=seed)
    return tuple(torch.from_numpy(v) if hasattr(v, "shape") else v for v in values)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dycl-import", description=__doc__.split("\n")[0])
    parser.add_argument("model", help="pkg.module:factory (returns an nn.Module), or zoo:<name>")
    parser.add_argument("--example", action="append", default=[],
                        help="example inputs, e.g. 'randn(1,3,32,32)' or 'x: f32[1,4] = randn, n: i64 = 5'")
    parser.add_argument("--method", default="forward", help="the method to import")
    parser.add_argument("-o", "--output", help="IR file to write (default: stdout)")
    parser.add_argument("--weights", help="weight store (.npz) to write")
    parser.add_argument("--seed", type=int, default=0, help="seed of random example values")
    args = parser.parse_args(argv)

    from dycl.frontend.importer import import_module
    from dycl.ir import print_module

    try:
        model, default_examples = _load(args.model)
        examples = _examples(args.example, args.seed) if args.example else default_examples
        if examples is None:
            raise _UsageError("give example inputs with --example")
        program = import_module(model, examples, method=args.method)
    except (_UsageError, FrontendError) as error:
        print(f"dycl-import: error: {error}", file=sys.stderr)
        return 1
    text = print_module(program.module)
    if args.output:
        with open(args.output, "w") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    if args.weights:
        program.weights.save(args.weights)
    return 0


if __name__ == "__main__":
    sys.exit(main())
