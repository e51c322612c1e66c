"""Dicts of runtime values, as research code writes them: `return {"logits": y, "exit": k}`,
`outputs = {}` filled item by item, a submodule that returns a dict, `dict(...)`, `.update`,
`.get`, `**extra`, `for k, v in d.items()`, a dict comprehension over a ModuleDict. Keys are
known when the model is imported (strs and ints); items may be tensors, Python scalars, lists
or None on some paths. A dict is one value with all its names: a change through one shows in
the others (`e = d; e["b"] = x`). Where the keys would differ between paths, or the dict is
module state, the change is refused at its line."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from tests.frontend.helpers import assert_compiled_exactly
from tests.frontend.test_desugar_support import check_paths, marked_line, refused, seeded  # noqa: F401 (autouse fixture)


def signs(*scales, width=4):
    base = torch.randn(1, width, generator=torch.Generator().manual_seed(0))
    return [(base * s,) for s in scales]


INPUTS = signs(1.0, -1.0, 3.0, -3.0, -40.0)


class ReturnsDictPerExit(nn.Module):
    """An early exit returns its own dict (the keys are the same on both paths)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            return {"logits": y, "exit": 1}
        return {"logits": y * 2, "exit": 2}


class FilledItemByItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        outputs = {}
        y = self.fc(x)
        outputs["early"] = y
        if y.sum() > 0:
            y = torch.relu(y)
        outputs["final"] = y
        outputs["steps"] = 1 if y.sum() > 0 else 2
        return outputs


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return {"out": self.fc(x), "gate": torch.sigmoid(x.sum())}


class SubmoduleReturnsDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        o = self.block(x)
        if o["gate"] > 0.5:
            x = o["out"]
        return x, o


class UpdateAfterABranch(nn.Module):
    """`.update`, `.pop` and `del` after the statement that built the dict was compiled."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        outs = dict(logits=self.fc(x), aux=x, tmp=x)
        if x.sum() > 0:
            x = x * 2
        outs.update(extra=x)
        outs.pop("aux")
        del outs["tmp"]
        return outs


class AliasAndHelper(nn.Module):
    """One dict, two names, and a helper that stores into its argument."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def store(self, d, x):
        d["z"] = x
        return x + 1

    def forward(self, x):
        d = {"a": self.fc(x)}
        e = d
        if x.sum() > 0:
            x = x * 2
        e["b"] = x
        y = self.store(d, x)
        return d, y


class CarriedByAWhile(nn.Module):
    def forward(self, x):
        out = {"h": x, "n": 0}
        steps = 0
        while steps < 3 and out["h"].sum() > 0:
            out["h"] = out["h"] - 1.0
            out["n"] = out["n"] + 1
            steps += 1
        return out


class ReadsAndIterates(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        d = {"a": self.fc(x), "b": x}
        if x.sum() > 0:
            x = x * 2
        total = x + d.get("a") + d.get("missing", 1.0)
        for key, value in d.items():
            total = total + value
        for key in d:
            total = total + d[key]
        extra = {"e": total * 3}
        return {"total": total, **extra}, len(d), "a" in d, "q" not in d


class HeadsComprehension(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "box": nn.Linear(4, 4)})

    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return {name: head(x) for name, head in self.heads.items()}


class AuxNoneOnOnePath(nn.Module):
    def forward(self, x):
        out = {"y": x}
        if x.sum() > 0:
            out["aux"] = x * 2
        else:
            out["aux"] = None
        return out


class HistoryOfLists(nn.Module):
    """A dict of lists, one appended to on every step, the other under a runtime condition:
    the list no path changed stays the list it is (static length), the other is joined."""

    def forward(self, x):
        hist = {"h": [], "c": []}
        for i in range(3):
            x = torch.tanh(x) + 0.1
            hist["h"].append(x)
            if x.sum() > 0.5 + 0.2 * i:
                hist["c"].append(x.mean())
        return torch.stack(hist["h"]).sum(0), len(hist["c"])


class TupleOfLists(nn.Module):
    def forward(self, x):
        h, c = [], []
        pair = (h, c)
        x = torch.tanh(x) + 0.1
        h.append(x)
        if x.sum() > 0.5:
            c.append(x.mean())
        return torch.stack(pair[0]).sum(0), len(pair[1])


class NestedStoreThroughAnotherName(nn.Module):
    """`inner` and `d["a"]` are one dict: a store through `d["a"]["b"]` inside a captured
    block shows through `inner` in the same block (the block's inputs share the dict)."""

    def forward(self, x):
        d = {"a": {"b": x}, "c": x}
        inner = d["a"]
        if x.sum() > 0:
            x = x * 2
        d["a"]["b"] = x + 1
        return inner["b"], d


class KeysDifferByPath(nn.Module):
    def forward(self, x):
        out = {"y": x}
        if x.sum() > 0:  # REFUSED
            out["aux"] = x * 2
        return out


class ChangesModuleStateDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = {"k": 1}

    def forward(self, x):
        d = self.table
        d["k"] = 2  # REFUSED
        return x * d["k"]


MODELS = [ReturnsDictPerExit, FilledItemByItem, SubmoduleReturnsDict, UpdateAfterABranch, AliasAndHelper,
          CarriedByAWhile, ReadsAndIterates, HeadsComprehension, AuxNoneOnOnePath, HistoryOfLists, TupleOfLists,
          NestedStoreThroughAnotherName]


@pytest.mark.parametrize("model_class", MODELS)
def test_dicts_compile_exactly(model_class):
    check_paths(model_class(), INPUTS)


@pytest.mark.parametrize("model_class", [ReturnsDictPerExit, FilledItemByItem, UpdateAfterABranch, HistoryOfLists])
def test_dicts_compile_exactly_through_onnx_runtime(model_class):
    assert_compiled_exactly(model_class, INPUTS, "onnxruntime")


def test_keys_that_differ_between_paths_are_refused_at_the_if():
    refused(KeysDifferByPath(), INPUTS[0], "is a dict with keys ['y', 'aux'] on one path and ['y'] on another",
            marked_line(KeysDifferByPath), "out['aux'] = None")


def test_a_dict_that_is_module_state_is_refused_and_left_unchanged():
    model = ChangesModuleStateDict()
    refused(model, INPUTS[0], "changes `self.table`, a dict that is module state", marked_line(ChangesModuleStateDict), "dict(self.table)")
    assert model.table == {"k": 1}
