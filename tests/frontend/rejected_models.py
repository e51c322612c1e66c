"""Models the frontend must reject with a FrontendError naming file, line and construct."""

from __future__ import annotations

import torch
import torch.nn as nn


class Generator(nn.Module):
    def forward(self, x):
        for k in range(2):
            yield x * k  # REJECT


class TryExcept(nn.Module):
    def forward(self, x):
        try:
            x = x + 1
        except RuntimeError:  # REJECT (an error of the tensor code, which compiled code does not raise)
            x = x - 1
        return x


class Printing(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            print("positive")  # REJECT
        return x


class WithStatement(nn.Module):
    def forward(self, x):
        with torch.enable_grad():  # REJECT (no_grad blocks are compiled as their body)
            x = x * 2
        return x


class MutatesModule(nn.Module):
    """`self.last` keeps its value from an earlier call on the path that does not assign it."""

    def forward(self, x):
        if x.sum() > 0:
            self.last = x
        return x + self.last  # REJECT


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


class HelperInExpression(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Branchy()

    def forward(self, x):
        # `self.inner(x) + 1` alone compiles (the call, evaluated first, becomes a statement);
        # after another call it cannot move without changing the order of effects
        return x.sum() + self.inner(x)  # REJECT


class LoopElse(nn.Module):
    def forward(self, x):
        for _ in range(3):  # REJECT
            x = x + 1
        else:
            x = x * 2
        return x


class DifferentReturnStructures(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # REJECT
            return x, x
        return x


class TupleOnOnePathListOnOther(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # REJECT
            return [x, 1]
        return (x, 2)


class AppendScalarToTensorList(nn.Module):
    def forward(self, x):
        outs = [x]
        if x.sum() > 0:
            outs.append(x * 2)  # from here on, the list's length is only known at runtime
        outs.append(x.shape[0] + 1)  # REJECT
        return outs


class ReturnsString(nn.Module):
    def forward(self, x):
        return [x, "done"]  # REJECT


class IdentityOfTensors(nn.Module):
    def forward(self, x):
        y = x
        if x.sum() > 0:
            y = x * 2
        changed = y is not x  # REJECT
        return y, changed


class AssignmentExpression(nn.Module):
    def forward(self, x):
        if (s := x.sum()) > 0:  # REJECT
            return x * s
        return x


class UnorderedUnique(nn.Module):
    """(`torch.unique(y)` and `unique_consecutive(y)` here compile: they run on the host.)"""

    def forward(self, x):
        y = x * 2
        y = torch.tanh(y)
        kept = torch.unique(y, sorted=False)  # REJECT
        z = kept.sum() + y.mean()
        return z


class SizeFromTolist(nn.Module):
    """A size from `.tolist()` values in the statement that reads them (in statements of their
    own, `lengths = t.tolist()` then `torch.zeros(2, max(lengths))`, it compiles)."""

    def forward(self, x):
        y = x * 2
        out = torch.zeros(2, max((x.abs() * 3).long().tolist()[0])).to(x.device)  # REJECT
        return out, y


class UnfoldByRuntimeInt(nn.Module):
    """A runtime int where export needs a constant (`unfold`'s window), in a statement of a
    run after another: the refusal names that statement, not the run's first one (fuzz seed
    400227 named the run's first line)."""

    def forward(self, x):
        k = int(x.argmax()) % 3
        y = x * 2
        windows = y.unfold(1, k + 1, 1)  # REJECT
        return windows.sum() + y.mean()


class NarrowAtATensorStart(nn.Module):
    """An op export cannot capture (`narrow` at a start a tensor holds, read with `.item()`)
    in a run of several statements: the refusal names that statement, not the run's first."""

    def forward(self, x):
        y = x * 2
        window = y.narrow(1, x.argmax() % 3, 2)  # REJECT
        return window.sum() + y.mean()


HISTORY = []  # (a module-level list: state that outlives every call)


class AppendsToAGlobalList(nn.Module):
    """A list of the module's globals changed inside a captured block: the compiled model
    returned the example's length at every call (a silent wrong answer before)."""

    def forward(self, x):
        y = x * 2
        HISTORY.append(y.sum())  # REJECT
        return y * len(HISTORY)


REJECTED = {
    "narrow_at_a_tensor_start": (NarrowAtATensorStart, "cannot be captured as a tensor program"),
    "appends_to_a_global_list": (AppendsToAGlobalList, "a change of `HISTORY`, a container of the module's globals"),
    "unfold_by_runtime_int": (UnfoldByRuntimeInt, "a runtime Python int is used where the captured tensor code needs a constant"),
    "unordered_unique": (UnorderedUnique, "whose order PyTorch leaves open"),
    "size_from_tolist": (SizeFromTolist, "size is a number computed from tensor values"),
    "identity_of_tensors": (IdentityOfTensors, "tests whether two names hold one tensor or value object"),
    "assignment_expression": (AssignmentExpression, "assignment expression (`:=`)"),
    "generator": (Generator, "generator"),
    "try": (TryExcept, "`except RuntimeError` catches RuntimeError"),
    "print": (Printing, "`print` in forward"),
    "with": (WithStatement, "`with` statement"),
    "mutates_module": (MutatesModule, "assigned it on some paths only"),
    "helper_in_expression": (HelperInExpression, "inside an expression"),
    "loop_else": (LoopElse, "`else` clause on a loop"),
    "different_return_structures": (DifferentReturnStructures, "different structure"),
    "tuple_vs_list_return": (TupleOnOnePathListOnOther, "different structure"),
    "append_scalar_to_tensor_list": (AppendScalarToTensorList, "putting a Python int into a list of tensors"),
    "returns_string": (ReturnsString, "forward returns a str"),
}
