"""Small dynamic models, one per construct the frontend must compile, with inputs that drive
every path. `CASES` maps a name to (model factory, example inputs, inputs that take all paths)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._higher_order_ops.while_loop import while_loop

torch.manual_seed(0)


def scaled(*shape):
    """Inputs x*s for a few random x and several s: signs and sizes that flip typical thresholds."""
    generator = torch.Generator().manual_seed(0)
    bases = [torch.randn(*shape, generator=generator) for _ in range(3)]
    return [(base * s,) for base in bases for s in (-10.0, -3.0, -0.2, 0.0, 0.2, 3.0, 10.0)]


class IfElse(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        if x.sum() > 0:
            y = torch.relu(self.fc(x))
        else:
            y = -x
        return y


class ElifChain(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)
        self.b = nn.Linear(8, 4)

    def forward(self, x):
        m = x.mean()
        if m > 0.5:
            out = self.a(x)
        elif m < -0.5:
            out = self.b(x)
        elif m > 0:
            out = self.a(x) + self.b(x)
        else:
            out = torch.zeros(1, 4)
        return out


class EarlyExit(nn.Module):
    """Exits of different widths and a Python int in the return."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 8)
        self.exit1 = nn.Linear(8, 3)
        self.fc2 = nn.Linear(8, 8)
        self.exit2 = nn.Linear(8, 7)
        self.threshold = 0.6

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        y = self.exit1(h)
        if torch.softmax(y, -1).max() > self.threshold:
            return y, 1
        h = torch.relu(self.fc2(h))
        return self.exit2(h), 2


class ReturnInLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        gates = x[:, :3]
        for i, block in enumerate(self.blocks):
            x = torch.tanh(block(x))
            if gates[0, i] > 0.5:
                return x * 2
        return x


class ItemCondition(nn.Module):
    def forward(self, x):
        score = x.max().item()
        if score > 0.5:
            return x * score
        return x - 1


class BoolCondition(nn.Module):
    def forward(self, x):
        if bool((x > 1).any()):
            x = x.clamp(max=1.0)
        return x + 1


class TorchEqual(nn.Module):
    def forward(self, x, y):
        if torch.equal(x.argmax(-1), y.argmax(-1)):
            return x + y
        return x - y


class AllAny(nn.Module):
    def forward(self, x):
        if (x > -1).all():
            return x.exp()
        elif (x > 2).any():
            return x.sin()
        return x.cos()


class RangeLoop(nn.Module):
    """`for range(N)` whose index is unused: scf.for with an scf.if inside."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        for _ in range(4):
            if x.sum() > 0:
                x = torch.tanh(self.fc(x))
            else:
                x = x + 0.5
        return x


class GatedModuleList(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
        self.gates = nn.ModuleList(nn.Linear(8, 1) for _ in range(3))

    def forward(self, x):
        for block, gate in zip(self.blocks, self.gates):
            if torch.sigmoid(gate(x)).squeeze() > 0.5:
                x = torch.relu(block(x)) + x
        return x


class EnumerateSequential(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if x.mean() > 0:
                x = x * (i + 1)
        return x


class BoundedWhile(nn.Module):
    def __init__(self):
        super().__init__()
        self.max_steps = 6

    def forward(self, x):
        steps = 0
        while steps < self.max_steps and x.norm() > 1.0:
            x = x * 0.5
            steps += 1
        return x, steps


class BreakLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, x):
        for _ in range(5):
            x = torch.tanh(self.cell(x)) + x
            if x.mean() > 0.8:
                break
        return x


class ContinueLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        for block in self.blocks:
            if x.sum() < 0:
                x = x + 1
                continue
            x = torch.tanh(block(x))
        return x


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        used = 0
        for block in self.blocks:
            if x.mean() > 0:
                x = torch.tanh(block(x))
                used += 1
        return x, used


class FlagChange(nn.Module):
    def forward(self, x):
        found = False
        for k in range(3):
            if x[0, k] > 0.5:
                found = True
        return x, found


class GreedyDecoder(nn.Module):
    """A list of data-dependent length, stacked at the end; `break` on a tensor condition."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(8, 8)
        self.max_len = 6

    def forward(self, h):
        outputs = []
        for _ in range(self.max_len):
            h = torch.tanh(self.cell(h))
            outputs.append(h)
            if h.sum() > 1.0:
                break
        return torch.stack(outputs), len(outputs)


class HelperMethod(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def route(self, x, scale: float = 2.0):
        if x.mean() > 0:
            return self.a(x) * scale
        return self.b(x)

    def forward(self, x):
        y = self.route(x)
        z = self.route(-y, 0.5)
        return y + z


def confident(logits, threshold):
    """A plain helper function with a branch."""
    if F.softmax(logits, -1).max() > threshold:
        return True
    return False


class PlainHelperFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        logits = self.head(x)
        done = confident(logits, 0.5)
        return logits, done


class GatedBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        if x.mean() > 0:
            return x + torch.relu(self.fc(x))
        return x


class SubmoduleControlFlow(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(GatedBlock(), GatedBlock())

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class ShapesDiffer(nn.Module):
    """A tensor whose shape depends on the path, returned (tensor math on it is refused:
    rejected_models.ShapeByPath)."""

    def forward(self, x):
        if x.sum() > 0:
            y = x[:, :3]
        else:
            y = x
        return x.sum(-1), y, y.shape[-1]


class ReturnStructures(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        logits = self.fc(x)
        if logits[0, 0] > logits[0, 1]:
            return [logits, (logits.argmax(-1), 0)], x.sum().item()
        return [-logits, (logits.argmin(-1), 1)], 0.0


class ConfigConstants(nn.Module):
    def __init__(self):
        super().__init__()
        self.use_extra = True
        self.extra = nn.Linear(8, 8)
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(2))

    def forward(self, x):
        if self.training:
            x = F.dropout(x, 0.5)
        if self.use_extra and len(self.blocks) == 2:
            x = self.extra(x)
        if x.sum() > 0:
            x = self.blocks[0](x)
        else:
            x = self.blocks[len(self.blocks) - 1](x)
        return x


class TorchCond(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: self.fc(x), lambda x: x * 2.0, (x,))


class WhileLoopHop(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        def cond(i, h):
            return (i < 4) & (h.abs().sum() < 100.0)

        def body(i, h):
            return i + 1, self.fc(h) * 2.0

        _, h = while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x))
        return h


class GrowingTokens(nn.Module):
    """A loop-carried tensor that grows every iteration: its type widens to [1,?]."""

    def forward(self, tokens):
        for _ in range(4):
            following = tokens.sum(1, keepdim=True) % 5
            tokens = torch.cat([tokens, following], 1)
            if following.item() == 3:
                break
        return tokens


class ScalarFromTensorData(nn.Module):
    """A Python int computed from tensor data inside tensor code stays a runtime value."""

    def forward(self, x):
        k = x.argmax().tolist()
        width = x.shape[1]
        y = x * 2
        return y, k, width


class IntInputLoop(nn.Module):
    """A scalar model input used in a condition and in tensor math."""

    def forward(self, x, n: int):
        if n > 2:
            x = x * n
        return x + 1


class PassStatements(nn.Module):
    """`pass` as a whole `if` arm, an `else` arm, a loop body and between statements."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        for _ in range(2):
            pass
        if x.mean() > 0:
            pass
        else:
            x = torch.relu(self.fc(x))
            pass
        if x.sum() > 1.0:
            x = x * 2
        else:
            pass
        for _ in range(3):
            if x.sum() > 20.0:
                x = x - 1.0
            else:
                pass
        return x


class MixedListReturn(nn.Module):
    """A returned list of a tensor, an int counted under tensor conditions and a stack of
    a runtime list, from both arms of an `if` (fuzz seed 2)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(2))
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        count = 0
        outs = []
        for block in self.blocks:
            x = torch.tanh(block(x))
            if x.mean() > 0:
                count += 1
                outs.append(x)
        outs.append(x)
        if x.sum() > 0:
            return [self.head(x), count, torch.stack(outs)]
        return [x[:, :3], count + 10, torch.stack(outs)]


class MixedListVariable(nn.Module):
    """A list holding a tensor, ints and a tuple, kept in a variable and appended to."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        n = 0
        if x.mean() > 0:
            n = 3
            x = self.fc(x)
        result = [x, n, (x.sum(), 1.5)]
        result.append(n + 1)
        return result


CASES = {
    "if_else": (IfElse, scaled(1, 8)),
    "elif_chain": (ElifChain, scaled(1, 8)),
    "early_exit": (EarlyExit, scaled(1, 8) + [(torch.full((1, 8), 3.0),), (torch.full((1, 8), -3.0),)]),
    "return_in_loop": (ReturnInLoop, [(F.pad(torch.tensor([g]), (0, 5)),) for g in ([0.0, 0, 1], [0.0, 1, 0], [1.0, 0, 0], [0.0, 0, 0])]),
    "item_condition": (ItemCondition, scaled(1, 8)),
    "bool_condition": (BoolCondition, scaled(1, 8)),
    "torch_equal": (TorchEqual, [(torch.eye(4)[:1], torch.eye(4)[:1]), (torch.eye(4)[:1], torch.eye(4)[1:2])]),
    "all_any": (AllAny, [(torch.zeros(1, 8),), (torch.full((1, 8), -3.0),), (torch.tensor([[3.0] + [-3.0] * 7]),)]),
    "range_loop": (RangeLoop, scaled(1, 8)),
    "gated_module_list": (GatedModuleList, scaled(1, 8)),
    "enumerate_sequential": (EnumerateSequential, scaled(1, 8)),
    "bounded_while": (BoundedWhile, scaled(1, 8) + [(torch.full((1, 8), 100.0),)]),
    "break_loop": (BreakLoop, scaled(1, 8) + [(torch.full((1, 8), 2.0),)]),
    "continue_loop": (ContinueLoop, scaled(1, 8)),
    "counter": (Counter, scaled(1, 8)),
    "flag_change": (FlagChange, scaled(1, 8)),
    "greedy_decoder": (GreedyDecoder, scaled(1, 8) + [(torch.full((1, 8), 5.0),)]),
    "helper_method": (HelperMethod, scaled(1, 8)),
    "submodule_control_flow": (SubmoduleControlFlow, scaled(1, 8)),
    "plain_helper_function": (PlainHelperFunction, scaled(1, 8)),
    "shapes_differ": (ShapesDiffer, scaled(1, 8)),
    "return_structures": (ReturnStructures, scaled(1, 8)),
    "config_constants": (ConfigConstants, scaled(1, 8)),
    "torch_cond": (TorchCond, scaled(1, 8)),
    "while_loop_hop": (WhileLoopHop, scaled(1, 8)),
    "growing_tokens": (GrowingTokens, [(torch.tensor([[1, 2]]),), (torch.tensor([[1, 1]]),), (torch.tensor([[0, 0]]),)]),
    "scalar_from_tensor_data": (ScalarFromTensorData, scaled(1, 8)),
    "int_input": (IntInputLoop, [(torch.ones(1, 8), 1), (torch.ones(1, 8), 5)]),
    "pass_statements": (PassStatements, scaled(1, 8)),
    "mixed_list_return": (MixedListReturn, scaled(1, 8)),
    "mixed_list_variable": (MixedListVariable, scaled(1, 8)),
}


# ----- early exits from nested runtime loops (fuzz seed 20000) ------------------------------
# Inputs are constant tensors x = v: each model subtracts 1 per inner iteration and adds ~2.5
# per outer iteration, so v picks the depth and the iteration of the exit. Every model returns
# a path tag (ints) next to the tensor; the head's width (a: 3, c: 5, d: 4) says which exit ran.


class ReturnInForInWhile(nn.Module):
    """`return` from a `for` nested in a `while` whose own body does not return (seed 20000)."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 3), nn.Linear(4, 4), nn.Linear(4, 5)

    def forward(self, x):
        steps = 0
        k = 0
        while steps < 2 and x.max().item() > -100.0:
            k = 0
            for _ in range(3):
                if x.mean() < 0.0:
                    return self.a(x), steps, k
                x = x - 1.0
                k += 1
            x = x + 2.5 + 0.01 * torch.tanh(self.b(x))
            steps += 1
        return self.c(x), steps, k


class ReturnsInForAndWhile(nn.Module):
    """`return` from a `for` nested in a `while`, and from the `while` body itself."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.d = nn.Linear(4, 3), nn.Linear(4, 4), nn.Linear(4, 5), nn.Linear(4, 4)

    def forward(self, x):
        steps = 0
        k = 0
        while steps < 2 and x.max().item() > -100.0:
            k = 0
            for _ in range(3):
                if x.mean() < 0.0:
                    return self.a(x), steps, k
                x = x - 1.0
                k += 1
            x = x + 2.5 + 0.01 * torch.tanh(self.b(x))
            if x.mean() > 6.0:
                return self.d(x), steps, k
            steps += 1
        return self.c(x), steps, k


class BreakInForInWhile(nn.Module):
    """`break` in a `for` nested in a `while` leaves the `for` only."""

    def __init__(self):
        super().__init__()
        self.b, self.c = nn.Linear(4, 4), nn.Linear(4, 5)

    def forward(self, x):
        steps = 0
        trace = 0
        while steps < 2 and x.max().item() > -100.0:
            k = 0
            for _ in range(3):
                if x.mean() < 0.0:
                    break
                x = x - 1.0
                k += 1
            trace = trace * 4 + k
            x = x + 2.5 + 0.01 * torch.tanh(self.b(x))
            steps += 1
        return self.c(x), steps, trace


class ReturnInWhileInFor(nn.Module):
    """`return` from a `while` nested in a runtime `for`."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 3), nn.Linear(4, 4), nn.Linear(4, 5)

    def forward(self, x):
        outer = 0
        steps = 0
        for _ in range(2):
            steps = 0
            while steps < 3 and x.max().item() > -100.0:
                if x.mean() < 0.0:
                    return self.a(x), outer, steps
                x = x - 1.0
                steps += 1
            x = x + 2.5 + 0.01 * torch.tanh(self.b(x))
            outer += 1
        return self.c(x), outer, steps


class ReturnInWhileInWhile(nn.Module):
    """`return` (and `break`) from a `while` nested in a `while`."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 3), nn.Linear(4, 4), nn.Linear(4, 5)

    def forward(self, x):
        outer = 0
        steps = 0
        while outer < 2 and x.sum().item() > -1000.0:
            steps = 0
            while steps < 3 and x.max().item() > -100.0:
                if x.mean() < 0.0:
                    return self.a(x), outer, steps
                if x.mean() > 20.0:
                    break
                x = x - 1.0
                steps += 1
            x = x + 2.5 + 0.01 * torch.tanh(self.b(x))
            outer += 1
        return self.c(x), outer, steps


def constant_inputs(*values):
    return [(torch.full((1, 4), v),) for v in values]


# name -> (factory, inputs, the path tags (head width, int, int) the inputs must cover)
NESTED_EXIT_VALUES = (-200.0, -1.0, 0.5, 1.5, 2.2, 2.7, 9.0, 30.0)
NESTED_EXIT_CASES = {
    "return_in_for_in_while": (
        ReturnInForInWhile,
        constant_inputs(*NESTED_EXIT_VALUES),
        # return at the 1st/2nd/3rd inner iteration of the 1st and of the 2nd outer
        # iteration; the normal exit (loop ran / never ran)
        {(3, 0, 0), (3, 0, 1), (3, 0, 2), (3, 1, 2), (5, 2, 3), (5, 0, 0)},
    ),
    "returns_in_for_and_while": (
        ReturnsInForAndWhile,
        constant_inputs(*NESTED_EXIT_VALUES),
        # inner return at the 1st/2nd/3rd inner iteration, in the 1st and 2nd outer
        # iteration; the while body's own return; the normal exit (loop ran / never ran)
        {(3, 0, 0), (3, 0, 1), (3, 0, 2), (3, 1, 2), (4, 0, 3), (5, 2, 3), (5, 0, 0)},
    ),
    "break_in_for_in_while": (
        BreakInForInWhile,
        constant_inputs(*NESTED_EXIT_VALUES),
        # trace = 4 * k1 + k2: inner iterations before the break (3: no break) per outer one
        {(5, 2, 4 * 0 + 2), (5, 2, 4 * 1 + 3), (5, 2, 4 * 2 + 3), (5, 2, 4 * 3 + 2), (5, 2, 4 * 3 + 3), (5, 0, 0)},
    ),
    "return_in_while_in_for": (
        ReturnInWhileInFor,
        constant_inputs(*NESTED_EXIT_VALUES),
        {(3, 0, 0), (3, 0, 1), (3, 0, 2), (3, 1, 2), (5, 2, 3), (5, 2, 0)},
    ),
    "return_in_while_in_while": (
        ReturnInWhileInWhile,
        constant_inputs(*NESTED_EXIT_VALUES),
        # (5, 2, 0): the inner loop never ran (v = -200) or broke at once (v = 30)
        {(3, 0, 0), (3, 0, 1), (3, 0, 2), (3, 1, 2), (5, 2, 3), (5, 2, 0)},
    ),
}
