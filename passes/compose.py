"""Pipelines composed from Python or a dycl-opt spec: parse, run, check the HCFG contract.

Any pipeline (`dycl.compile(passes=...)`, `dycl-opt -p ... --verify-hcfg`) is parsed by
`parse_passes` (DyCL's passes, xDSL's, and those other packages register) and run by
`run_passes`, which checks the result against the HCFG contract
(`dycl.hcfg.contract_violations`): a module that breaks it is a `PipelineError` naming the
rule, the function and op, and the last pass that ran.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError

from dycl.passes import PassPluginError, available_passes
from dycl.passes.pipeline import expand_pipelines

class PipelineError(Exception):
    """A pipeline's output breaks the HCFG contract: `rule` (a key of `dycl.hcfg.CONTRACT`),
    `function`, `op` (or None) and `last_pass` (None when no pass ran) of the first
    violation; `violations` holds them all."""

    def __init__(self, violations: Sequence, last_pass: str | None):
        first = violations[0]
        self.violations = list(violations)
        self.rule, self.function, self.op, self.last_pass = first.rule, first.function, first.op, last_pass
        after = f"after pass {last_pass}" if last_pass else "before any pass ran"
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        super().__init__(f"the module breaks the HCFG contract {after}: {first}{more}")


def check_hcfg(module: builtin.ModuleOp, last_pass: str | None) -> None:
    """Raise `PipelineError` if `module` breaks the HCFG contract."""
    from dycl.hcfg import contract_violations

    violations = contract_violations(module)
    if violations:
        raise PipelineError(violations, last_pass)


def parse_passes(
    passes: str | Sequence[ModulePass], available: dict[str, Callable[[], type[ModulePass]]] | None = None
) -> tuple[ModulePass, ...]:
    """A pipeline spec in dycl-opt syntax (`"dycl-outline{min-ops=2},dycl-hoist-free"`) or a
    sequence of `ModulePass` instances, as a tuple of passes. Every pass is looked up and
    every option checked here, so a bad spec fails before anything slow runs (ValueError;
    TypeError for something that is neither)."""
    if isinstance(passes, str):
        if available is None:
            available = available_passes()
        try:
            return PassPipeline.parse_spec(available, passes).passes
        except (ArgSpecParseError, PassPluginError) as err:  # (ArgSpecParseError: a BaseException in xDSL)
            raise ValueError(f"passes={passes!r}: {err}") from None
        except ValueError as err:
            raise ValueError(f"passes={passes!r}: {err} (`dycl-opt --help` lists the passes)") from None
    if isinstance(passes, ModulePass):
        passes = (passes,)
    if not isinstance(passes, Sequence) or not all(isinstance(p, ModulePass) for p in passes):
        raise TypeError("passes= takes a pipeline spec string or a sequence of xdsl.passes.ModulePass instances")
    return tuple(passes)


def run_passes(ctx: Context, module: builtin.ModuleOp, passes: Sequence[ModulePass], *, check: bool = True) -> None:
    """Run `passes` (each dycl-pipeline as its steps) as an xDSL `PassPipeline` whose callback
    records the last pass that ran; then, with `check`, `check_hcfg`."""
    ran: list[str] = []

    def record(previous: ModulePass | None, _module: builtin.ModuleOp, _next: ModulePass | None) -> None:
        if previous is not None:
            ran.append(previous.name)

    PassPipeline(expand_pipelines(passes), record).apply(ctx, module)
    if check:
        check_hcfg(module, ran[-1] if ran else None)
