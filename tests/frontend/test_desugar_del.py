"""`del` in forward (issue 13.2): `del name` unbinds the name, `del lst[k]` / `del lst[a:b]`
remove items of Python lists of every kind; a read after `del` is refused at the read."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from tests.frontend.test_desugar_support import check_paths, marked_line, refused, scaled_inputs, seeded  # noqa: F401 (autouse fixture)


def gated(*gates, width=8):
    inputs = []
    for k, row in enumerate(gates):
        x = torch.randn(1, width, generator=torch.Generator().manual_seed(k))
        x[0, : len(row)] = torch.tensor(row, dtype=torch.float32)
        inputs.append((x,))
    return inputs


class FreeIntermediate(nn.Module):
    """`del` to free memory early, as training code does; the name is assigned again later."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        h = torch.relu(self.a(x))
        del x
        out = self.b(h)
        del h
        if out.sum() > 0:
            h = out * 2
            del out
            return h
        return out


class DeleteItems(nn.Module):
    """`del` on constant lists, fixed-structure lists and lists of tensors built in unrolled loops."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))

    def forward(self, x):
        sizes = [1, 2, 3, 4, 5]
        del sizes[0]
        del sizes[-1]
        del sizes[1:2]
        feats = []
        for block in self.blocks:
            x = torch.tanh(block(x))
            feats.append(x)
        del feats[0]
        del feats[-1]
        mixed = [x, 3, x * 2]
        del mixed[1]
        head = torch.stack(feats).sum(0) * sizes[0] + mixed[1] * sizes[-1]
        if head.mean() > 0:
            return head, len(feats), len(mixed)
        return -head, len(feats), len(mixed)


class StripEndToken(nn.Module):
    """A list that grows at runtime (a loop with `break`), its last item removed with `del`."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, 8)
        self.out = nn.Linear(8, 4)
        self.end = 1

    def forward(self, x):
        gates = x[0, :4].clone()
        h = torch.zeros(1, 8)
        tokens = []
        for t in range(4):
            h = self.cell(x, h)
            tokens.append(self.out(h))
            if gates[t] > 0:
                break
        if gates[len(tokens) - 1] > 0.5:
            del tokens[-1]
        del tokens[0:1]
        tokens.append(h[:, :4])
        return torch.cat(tokens), len(tokens)


def test_del_name_frees_and_rebinds():
    check_paths(FreeIntermediate(), scaled_inputs(1, 8))


def test_del_items_of_constant_fixed_and_tensor_lists():
    check_paths(DeleteItems(), scaled_inputs(1, 8))


def test_del_items_of_a_list_that_grows_at_runtime():
    check_paths(StripEndToken(), gated([1, 0, 0, 0], [0.2, 1, 0, 0], [-1, 0.7, 0, 0], [-1, -1, 0.3, 0], [-1, -1, -1, 1], [-1, -1, -1, -1]))


class ReadAfterDel(nn.Module):
    def forward(self, x):
        y = x + 1
        del x
        return y * x  # REFUSED


class ReadAfterConditionalDel(nn.Module):
    def forward(self, x):
        y = x + 1
        if y.sum() > 0:
            del x
        else:
            y = y * 2
        z = y + x  # REFUSED
        return z


class DelInLoop(nn.Module):
    def forward(self, x):
        y = x
        for _ in range(2):
            del y  # REFUSED
        return x


class ReadInLambdaAfterDel(nn.Module):
    def forward(self, x):
        w = x * 2
        del w
        f = lambda v: v + w  # REFUSED  # noqa: E731
        return f(x)


@pytest.mark.parametrize("cls", [ReadAfterDel, ReadAfterConditionalDel, DelInLoop, ReadInLambdaAfterDel])
def test_a_name_read_after_del_is_refused_at_the_read(cls):
    error = refused(cls(), (torch.randn(1, 8),), "is used after `del`", marked_line(cls))
    assert "`del" in error.hint


class ReturnBeforeRead(nn.Module):
    """A path that deletes and returns never reaches the read: accepted."""

    def forward(self, x):
        y = x * 2
        if y.sum() > 0:
            del y
            return x
        return y


class BreakBeforeRead(nn.Module):
    def forward(self, x):
        gates = x[0, :3].clone()
        y = x
        for i in range(3):
            y = y + 1
            if gates[i] > 0:
                del y
                y = x * i
                break
        return y


def test_paths_that_leave_before_the_read_are_accepted():
    check_paths(ReturnBeforeRead(), scaled_inputs(1, 8))
    check_paths(BreakBeforeRead(), gated([1, 0, 0], [-1, 1, 0], [-1, -1, 1], [-1, -1, -1]))


class DelAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = [1, 2]

    def forward(self, x):
        del self.cache[0]  # REFUSED
        return x


class DelNested(nn.Module):
    def forward(self, x):
        rows = [[x, x], [x]]
        del rows[0][1]  # REFUSED
        return rows[0][0]


class DelTensorItem(nn.Module):
    def forward(self, x):
        y = x * 2
        del y[0]  # REFUSED
        return y


class DelDictItem(nn.Module):
    def forward(self, x):
        d = {"a": 1, "b": 2, "h": x}
        del d["a"]
        if x.sum() > 0:
            del d["h"]
            d["h"] = x * 2
        return x * d["b"], d


class DelOutOfRange(nn.Module):
    def forward(self, x):
        outs = [x, x * 2]
        del outs[2]  # REFUSED
        return outs


@pytest.mark.parametrize(
    "cls, construct, hint",
    [
        (DelAttribute, "`del self.cache[0]` in forward", "module state"),
        (DelNested, "`del rows[0][1]`", "inner = rows[0]"),
        (DelTensorItem, "TypeError: Tensor does not support deleting items", None),
        (DelOutOfRange, "IndexError", "shorter"),
    ],
)
def test_del_that_cannot_keep_its_meaning_is_refused(cls, construct, hint):
    refused(cls(), (torch.randn(1, 8),), construct, marked_line(cls), hint)


def test_del_of_a_dict_item():
    check_paths(DelDictItem(), [(torch.ones(1, 8),), (-torch.ones(1, 8),)])


class DelBeforeAssign(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            y = x
        del y  # REFUSED
        return x


def test_del_of_a_name_unbound_on_the_example_path_is_refused():
    refused(DelBeforeAssign(), (-torch.ones(1, 8),), "before `y` is assigned", marked_line(DelBeforeAssign))
