"""Runtime loops the example never enters.

A runtime loop's body is compiled on example values: those the loop state has at its
entry. When the example inputs never enter the loop (a caption decoder with one-word
captions in the example: `for t in range(max(decode_lengths))` with `decode_lengths == [0]`)
these values fit no iteration that runs (`predictions[:, t]` with `t == 0` of a tensor
of 0 steps), and the example run of a body statement fails.

Such a failure says nothing about the program: the body is captured symbolically, and its
example values only drive the trace. So the forward is compiled again from examples that
do enter the loop: the example inputs the loop's condition depends on (found in the host
IR: the entry arguments its value is computed from), each int among them and each integer
tensor one larger, until the example enters the loop (at most `MAX_BUMPS` times). Nothing
is guessed about the program: sizes stay symbolic and export's guards still hold (ints
the example makes 0 or 1 are captured at 2 and for 0 and 1, `runs.IntAtTwo`), and
`dycl.compile` checks the result on the user's own examples. When no such examples are
found (the condition depends on no int input, or they fail elsewhere), the first refusal
stands: "running lines [...] on example values failed".
"""

from __future__ import annotations

import contextlib

import torch
from torch_mlir import ir

from dycl.frontend import values as V
from dycl.frontend.errors import FrontendError
from dycl.frontend.state import Recompile

MAX_BUMPS = 3


class UnenteredLoop(Recompile):
    """A body statement of a loop the example never enters failed on its example values:
    compile again with the example inputs at `arguments` (entry argument numbers) larger."""

    def __init__(self, refusal: FrontendError, arguments: frozenset[int], input_tree: list):
        super().__init__(str(refusal))
        self.refusal, self.arguments, self.input_tree = refusal, arguments, input_tree


class Loops:
    """The runtime loops being compiled that the example does not enter (their conditions)."""

    def __init__(self):
        self.conditions: list[ir.Value] = []
        self.entry: ir.Block | None = None
        self.user_arguments = 0
        self.input_tree: list = []  # (the example inputs as a tree of argument numbers)

    @contextlib.contextmanager
    def body(self, condition: V.EnvValue):
        """Compiling the body of a loop whose condition is `condition` at its first test."""
        never = isinstance(condition, V.Dyn) and not _truth(condition.example)
        if never:
            self.conditions.append(condition.value)
        try:
            yield
        finally:
            if never:
                self.conditions.pop()

    def refusal(self, refusal: FrontendError) -> BaseException:
        """What to raise for `refusal`, a failure of an example run: compile again from other
        examples when it ran inside a loop the example never enters and the loop's
        condition depends on example inputs."""
        if not self.conditions or self.entry is None:
            return refusal
        arguments = driving_arguments(self.conditions[0], self.entry)
        arguments = frozenset(a for a in arguments if a < self.user_arguments)
        return UnenteredLoop(refusal, arguments, self.input_tree) if arguments else refusal


def _truth(example) -> bool:
    try:
        return bool(example)
    except Exception:
        return True  # (unknown: as if entered, the refusal stands)


def driving_arguments(value: ir.Value, entry: ir.Block) -> set[int]:
    """The numbers of `entry`'s arguments that `value` is computed from (through the ops
    that make it, the regions of those with regions, and the operands a loop's block
    arguments enter from)."""
    found: set[int] = set()
    stack, seen = [value], set()
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        value = value.maybe_downcast()
        if isinstance(value, ir.BlockArgument):
            argument = value
            block = argument.owner
            if block == entry:
                found.add(argument.arg_number)
                continue
            stack.extend(_entering(block, argument.arg_number))
            continue
        op = value.owner
        stack.extend(op.operands)
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    stack.extend(inner.operands)
    return found


def _entering(block: ir.Block, number: int) -> list[ir.Value]:
    """The values a loop block's argument `number` takes on entry (all operands of any
    other op that holds the block: conservative)."""
    op = block.owner
    name = op.name
    operands = list(op.operands)
    if name == "scf.while":
        before, after = (region.blocks[0] for region in op.regions)
        if block == before:
            return [operands[number]]
        condition = before.operations[len(before.operations) - 1]
        return [list(condition.operands)[number + 1]]
    if name == "scf.for":
        return operands[:3] if number == 0 else [operands[3 + number - 1]]
    return operands


def bumped(example_inputs: tuple, input_tree: list, arguments: frozenset[int]) -> tuple | None:
    """The example inputs with each int and integer tensor at `arguments` one larger (None:
    none of them is one)."""
    changed = False

    def rebuild(example, tree):
        nonlocal changed
        if isinstance(tree, dict):
            (kind, items), = tree.items()
            if kind == "optional":  # (None where its example is; else the value's tree)
                return None if example is None else rebuild(example, items[1])
            if kind in ("list", "tuple"):
                made = [rebuild(e, t) for e, t in zip(example, items)]
                return made if kind == "list" else tuple(made)
            return example
        if tree not in arguments:
            return example
        if type(example) is int:
            changed = True
            return example + 1
        if isinstance(example, torch.Tensor) and not example.is_floating_point() and not example.is_complex() and example.dtype != torch.bool:
            changed = True
            return example + 1
        return example

    made = tuple(rebuild(e, t) for e, t in zip(example_inputs, input_tree))
    return made if changed else None


__all__ = ["Loops", "UnenteredLoop", "bumped", "driving_arguments", "MAX_BUMPS"]
