"""List surgery in forward (issue 13.3): `pop`, slices, `insert`, `extend`, `+` on constant
lists, fixed-structure lists, lists of tensors built in unrolled loops and lists whose length is
only known at runtime (these through host loops on `len.t`/`__getitem__.t`/`append.t`)."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from xdsl.dialects import scf

import dycl
from tests.frontend.helpers import max_abs_error
from tests.frontend.test_desugar_support import check_paths, marked_line, refused, scaled_inputs, seeded  # noqa: F401 (autouse fixture)


def gated(*gates, width=8):
    inputs = []
    for k, row in enumerate(gates):
        x = torch.randn(1, width, generator=torch.Generator().manual_seed(k))
        x[0, : len(row)] = torch.tensor(row, dtype=torch.float32)
        inputs.append((x,))
    return inputs


class MaskStack(nn.Module):
    """SkipNet-style gate masks kept in a list: the last mask is the final decision, the rest
    are stacked (`masks[:-1]`, `masks.pop()`, `masks.pop(0)`, `masks[1:]`)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
        self.gates = nn.ModuleList(nn.Linear(8, 1) for _ in range(4))

    def forward(self, x):
        masks = []
        for block, gate in zip(self.blocks, self.gates):
            m = torch.sigmoid(gate(x))
            x = torch.tanh(block(x)) * m + x * (1 - m)
            masks.append(m)
        early = torch.stack(masks[:-1])
        late = torch.cat(masks[1:], 1)
        last = masks.pop()
        first = masks.pop(0)
        masks.insert(0, last)
        masks.extend([first, first * 2])
        both = [x] + masks + [late]
        if last.sum() > 0.5:
            return early, last, both, len(masks)
        return early * 2, first, both, len(masks)


class ConstantLists(nn.Module):
    """Configuration lists changed in forward: each operation is Python's own."""

    def __init__(self):
        super().__init__()
        self.widths = [8, 8, 4]

    def forward(self, x):
        scales = [1.0, 2.0, 3.0]
        k = scales.pop()
        scales.insert(0, 0.5)
        scales.extend((4.0, 5.0))
        cut = list(self.widths)
        cut.pop(0)
        merged = [k] + scales[1:-1] + cut
        merged.remove(8)
        y = x * merged[0] + x[:, : merged[-1]].sum() * len(merged)
        if y.sum() > 0:
            return y, merged[2]
        return -y, merged[1]


class FixedStructure(nn.Module):
    """Lists mixing tensors and Python values keep their structure: surgery on the items."""

    def forward(self, x):
        entry = [x, 3, x * 2]
        count = entry.pop(1)
        entry.insert(1, x + count)
        entry.append(count)
        entry.extend([x, 1.5])
        del entry[-2:]
        return entry


class RuntimeSurgery(nn.Module):
    """A list that grows under runtime conditions, then every operation on it."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        gates = x[0, :3].clone()
        outs = []
        for i, block in enumerate(self.blocks):
            x = torch.tanh(block(x))
            if gates[i] > 0:
                outs.append(x * (i + 1))
        outs.append(x)
        outs.insert(1, x * 10)
        outs.insert(-1, x * 20)
        outs = [x - 1] + outs
        tail = outs[1:]
        last = tail.pop()
        first = tail.pop(0)
        outs.extend(tail)
        del outs[-1]
        del outs[1:3]
        head = outs[:2]
        n = len(outs)
        return torch.cat(outs), torch.stack(head), last + first, n, len(tail)


class RuntimeLoopList(nn.Module):
    """A list grown in a runtime loop (`scf.while`), popped and sliced with runtime bounds."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, 8)

    def forward(self, x):
        h = torch.zeros(1, 8)
        steps = []
        for _ in range(5):
            h = self.cell(x, h)
            steps.append(h)
            if h.mean() > 0.1:
                break
        last = steps.pop()
        k = len(steps) // 2
        kept = steps[:k] + [last] + steps[k:]
        return torch.cat(kept), len(kept), torch.cat(steps[-2:] + [last])


class Aliases(nn.Module):
    """Two names for one list (and a tuple holding it) see the same change."""

    def forward(self, x):
        y = x + 1
        a = [x, y]
        b = a
        pair = (a, 0)
        a.pop()
        a.append(x * 5)
        b.insert(0, x * 7)
        return b, pair[0], a


class PopInExpressions(nn.Module):
    """`pop` inside larger statements: hoisted before the statement, in evaluation order."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        stack = [x, x * 2, x * 3]
        queue = [x + 1, x + 2]
        y = self.fc(stack.pop()) + queue.pop(0)
        if stack.pop(0).sum() * 2 > queue.pop().sum():
            return y, len(stack), len(queue)
        return -y, len(stack), len(queue)


def test_masks_of_an_unrolled_loop():
    program = check_paths(MaskStack(), scaled_inputs(1, 8))
    # items known while the list is built in straight-line code: no host loop
    assert not [op for op in program.module.walk() if isinstance(op, scf.WhileOp)]


def test_constant_lists_follow_python():
    check_paths(ConstantLists(), scaled_inputs(1, 8))


def test_fixed_structure_lists():
    check_paths(FixedStructure(), scaled_inputs(1, 8), all_branches=False)


def test_lists_whose_length_is_known_only_at_runtime():
    check_paths(RuntimeSurgery(), gated([1, 1, 1], [1, -1, 1], [-1, 1, -1], [-1, -1, -1]))


def test_list_grown_in_a_runtime_loop():
    check_paths(RuntimeLoopList(), scaled_inputs(1, 8, scales=(-3.0, -1.0, -0.1, 0.1, 1.0, 3.0), seeds=(0, 1, 2)), all_branches=False)


class AliasOfAComputedList(nn.Module):
    def forward(self, x):
        a = [x, x + 1]  # a list display computed in a run: a fixed-structure value
        b = a
        a.pop()
        return b


def test_aliases_see_the_change():
    check_paths(Aliases(), scaled_inputs(1, 8), all_branches=False)


def test_alias_of_a_list_computed_in_a_run():
    check_paths(AliasOfAComputedList(), scaled_inputs(1, 8), all_branches=False)


def test_pop_inside_expressions():
    check_paths(PopInExpressions(), scaled_inputs(1, 8))


def test_runtime_surgery_end_to_end_on_onnxruntime():
    model = RuntimeSurgery().eval()
    inputs = gated([1, 1, 1], [1, -1, 1], [-1, 1, -1], [-1, -1, -1])
    compiled = dycl.compile(model, inputs[0], backend="onnxruntime", progress=False)
    for args in inputs:
        with torch.no_grad():
            assert max_abs_error(model(*args), compiled(*args)) <= 1e-4


class StoredFlags(nn.Module):
    """Batched decoding bookkeeping: a list of Python bools set per sequence (`finished[b] =
    True` under a runtime condition), read through an alias and by `all(...)`."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        finished = [False] * 3
        seen = finished
        scores = [0.0, 0.0, 0.0]
        for step in range(2):
            x = torch.tanh(self.fc(x))
            for b in range(len(finished)):
                if x[0, b] > 0.3:
                    finished[b] = True
                    scores[b - 3] = float(x[0, b])
            if all(finished):
                break
        return x, seen, scores, step


def test_items_stored_at_constant_positions_follow_python():
    check_paths(StoredFlags(), scaled_inputs(1, 8, scales=(-3.0, -1.0, 0.1, 1.0, 3.0), seeds=(0, 1, 2, 3)))


class AliasOfAListGrownInALoop(nn.Module):
    """`alias = toks` before a runtime loop that appends to `toks` under a condition: the
    alias is the same list (this gave `[]` before the loop and joins kept the sharing)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        toks = []
        alias = toks
        for i in range(4):
            x = torch.tanh(self.fc(x))
            if x.sum() > 0:
                toks.append(int(x.argmax()))
            if x.mean() > 0.2:
                break
        toks.append(-1)
        return x, alias


class AliasAcrossAnIf(nn.Module):
    def forward(self, x):
        outs = [x]
        alias = outs
        if x.sum() > 0:
            outs.append(x * 2)
        outs.append(x * 3)
        return alias


class ListRebindOnOnePath(nn.Module):
    def forward(self, x):
        outs = [x]
        alias = outs
        if x.sum() > 0:
            outs = [x * 2]
        outs.append(x * 3)  # REFUSED
        return alias


class ListRebindInALoop(nn.Module):
    """`outs` is bound to a new list on some iterations: which list `alias` is after the
    loop depends on the path."""

    def forward(self, x):
        outs = [x]
        alias = outs
        for i in range(3):  # REFUSED
            x = torch.tanh(x * 2)
            if x.sum() > 0:
                outs = [x]
            else:
                outs.append(x)
            if x.mean() > 0.5:
                break
        return alias, outs


def test_a_list_rebound_in_a_loop_is_refused_where_the_sharing_breaks():
    refused(ListRebindInALoop(), (torch.randn(1, 8),), "are one list before this loop", marked_line(ListRebindInALoop), "list(outs)")


def test_names_bound_to_one_list_share_its_changes_across_joins():
    check_paths(AliasOfAListGrownInALoop(), scaled_inputs(1, 8, scales=(-3.0, -0.5, 0.5, 3.0), seeds=(0, 1, 2)), all_branches=False)
    check_paths(AliasAcrossAnIf(), scaled_inputs(1, 8))


class StoreAtRuntimeIndex(nn.Module):
    """`flags[k] = True` with a runtime k: Python's index rules (negative from the end)."""

    def forward(self, x):
        flags = [False, False, False]
        k = int(x.argmax()) % 4 - 2
        flags[k] = True
        return x, flags, k


class StoreInAnArmTheExampleSkips(nn.Module):
    """The example takes the `else` arm, where `k` is 3: the store's arm is compiled on that
    value (an internal IndexError before the fix)."""

    def forward(self, x):
        flags = [False, False]
        k = int(x.argmax())
        if k < 2:
            flags[k] = True
        else:
            x = x * 2
        return x, flags


def test_a_store_compiled_on_an_example_past_the_end():
    inputs = [(torch.tensor([[0.0, 0.0, 0.0, 5.0]]),), (torch.tensor([[5.0, 0.0, 0.0, 0.0]]),), (torch.tensor([[0.0, 5.0, 0.0, 0.0]]),)]
    check_paths(StoreInAnArmTheExampleSkips(), inputs)


def test_items_stored_at_a_runtime_position_follow_python():
    check_paths(StoreAtRuntimeIndex(), scaled_inputs(1, 8, scales=(-3.0, -0.5, 0.5, 3.0), seeds=(0, 1, 2, 3)), all_branches=False)


class PopInConditional(nn.Module):
    def forward(self, x):
        outs = [x, x * 2]
        y = outs.pop() if x.sum() > 0 else x  # REFUSED
        return y


class PopAndRead(nn.Module):
    def forward(self, x):
        outs = [x, x * 2]
        y = outs.pop() + outs[0]  # REFUSED
        return y


class AppendAsValue(nn.Module):
    def forward(self, x):
        outs = []
        y = outs.append(x)  # REFUSED
        return x, y


class SortInPlace(nn.Module):
    def forward(self, x):
        sizes = [3, 1, 2]
        sizes.sort()  # REFUSED
        return x * sizes[0]


class ModuleStateList(nn.Module):
    def __init__(self):
        super().__init__()
        self.history = [1]

    def forward(self, x):
        seen = self.history
        seen.append(2)  # REFUSED
        return x * len(seen)


class ScalarIntoTensorList(nn.Module):
    def forward(self, x):
        outs = [x]
        if x.sum() > 0:
            outs.append(x * 2)  # from here on, the list's length is only known at runtime
        outs.insert(0, 3)  # REFUSED
        return outs


class PopInWhile(nn.Module):
    def forward(self, x):
        outs = [x, x * 2]
        while len(outs) > 0 and outs.pop().sum() > 0:  # REFUSED
            x = x + 1
        return x


class StepOnRuntimeList(nn.Module):
    def forward(self, x):
        outs = []
        if x.sum() > 0:
            outs.append(x)
        outs.append(x * 2)
        return outs[::2]  # REFUSED


@pytest.mark.parametrize(
    "cls, construct, hint",
    [
        (PopInConditional, "`outs.pop()` inside a conditional expression", "pop into a variable first"),
        (PopAndRead, "`outs.pop()` in a statement that also uses `outs`", "item = outs.pop()"),
        (AppendAsValue, "`outs.append(x)` used as a value", "as a statement of its own"),
        (SortInPlace, "`sizes.sort()` (reorders a list in place)", "sizes = sorted(sizes)"),
        (ModuleStateList, "changes `self.history`, a list that is module state", "list(self.history)"),
        (ScalarIntoTensorList, "putting a Python int into a list of tensors", "torch.tensor(v)"),
        (PopInWhile, "in a `while` condition", "loop body"),
        (StepOnRuntimeList, "a slice step on a list whose length", "torch.stack(lst)[::2]"),
        (ListRebindOnOnePath, "changes a list that another variable holds on some paths only", "list(...)"),
    ],
)
def test_list_changes_that_cannot_keep_their_meaning_are_refused(cls, construct, hint):
    refused(cls(), (torch.randn(1, 8),), construct, marked_line(cls), hint)


def test_slice_of_a_runtime_list_is_no_longer_refused_at_line_0():
    """`masks[:-1]` on a list grown under a condition used to fail at `file:0`."""

    class Masks(nn.Module):
        def forward(self, x):
            masks = []
            for i in range(3):
                x = x * 2
                if x[0, i] > 0:
                    masks.append(x)
            masks.append(x)
            return torch.cat(masks[:-1] + [x]), len(masks[1:])

    check_paths(Masks(), gated([1, 1, 1], [-1, 1, -1], [1, -1, 1], [-1, -1, -1]))
