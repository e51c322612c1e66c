"""A pass that breaks IR on purpose, for tests of the verification after each pass."""

from dataclasses import dataclass
from typing import ClassVar

from xdsl.passes import ModulePass


@dataclass(frozen=True)
class SwapFirstTwoOps(ModulePass):
    """Breaks IR on purpose: the second op of @f's body moves above the first."""

    name: ClassVar[str] = "test-swap-first-two-ops"

    def apply(self, ctx, op) -> None:
        first, second, *_ = op.ops.first.body.block.ops
        second.detach()
        op.ops.first.body.block.insert_op_before(second, first)
