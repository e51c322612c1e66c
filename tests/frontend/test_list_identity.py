"""One list, many holders: a change made through one name, an item of another list, `+=` or a
helper the list was passed to is seen through every other holder, as in Python. Where the
frontend cannot follow the list (a dict known at import holds it, a runtime index picks it,
it is changed inside an expression), the change is refused at its line, never run on the import's own copy.

Each of the compiled models below gave a wrong answer before (or, for the helper, a message
about something else): `[[]] * 2` then `rows[0].append(x)` returned 2 for `len(rows[1])`
(the append ran twice on the import's Python list), `b += [...]` left `a` unchanged, and
`hs = d["hs"]; hs.append(x)` left `d["hs"]` empty."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from tests.frontend.helpers import assert_compiled_exactly
from tests.frontend.test_desugar_support import check_paths, marked_line, refused, seeded  # noqa: F401 (autouse fixture)


def signs(*scales, width=4):
    base = torch.randn(2, width, generator=torch.Generator().manual_seed(0))
    return [(base.abs() * s,) for s in scales]


INPUTS = signs(1.0, -1.0, 0.5, -3.0)


class RepeatedEmptyList(nn.Module):
    """`[[]] * n` holds one list n times: appending through one item shows in all."""

    def forward(self, x):
        rows = [[]] * 2
        rows[0].append(x)
        if x.sum() > 0:
            rows[1].append(x * 2)
        return len(rows[1]), rows[0][-1] + rows[1][0]


class PerExitLists(nn.Module):
    """One list per exit (`[[] for _ in range(3)]`), appended through the index; each exit
    may add a second output under a runtime condition."""

    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def forward(self, x):
        per_exit = [[] for _ in range(3)]
        h = x
        for i in range(3):
            h = self.heads[i](h)
            per_exit[i].append(h)
            if h.sum() > 0:
                per_exit[i].append(h * 2)
        return [len(p) for p in per_exit], torch.cat(per_exit[0]), per_exit[2][-1]


class ItemSurgery(nn.Module):
    """extend, insert and pop through items of a list of lists."""

    def forward(self, x):
        groups = [[x], [x + 1]]
        groups[1].extend([x * 3, x * 4])
        groups[0].insert(0, x - 1)
        last = groups[1].pop()
        if last.sum() > 0:
            groups[0].append(last)
        return groups[0][-1] + groups[1][0], len(groups[0]), len(groups[1])


class PlusEqualsExtends(nn.Module):
    """`b += [...]` extends the list `a` also names (it is not `b = b + [...]`)."""

    def forward(self, x):
        a = []
        b = a
        for i in range(3):
            b += [x * i]
            if x[0, i] > 0:
                b += [x]
        return len(a), a[0] + a[2] + a[-1]


class HelperAppends(nn.Module):
    """A helper that appends to the list it is passed: the caller's list grows (the helper
    has no control flow of its own, so it would otherwise run inside a captured block)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def collect(self, outputs, h):
        outputs.append(self.fc(h))
        return h.sum()

    def forward(self, x):
        outputs = []
        score = self.collect(outputs, x)
        if score > 0:
            score = self.collect(outputs, x * 2)
        return outputs[-1], len(outputs), score


class ForOverLists(nn.Module):
    """`for g in groups`: each iteration changes the list `groups` holds, also after an
    earlier iteration's `if` made new values of them."""

    def forward(self, x):
        groups = [[x], [x + 1]]
        for g in groups:
            g.append(x * 2)
            if g[0].sum() > 0:
                g.append(x)
        return len(groups[0]), len(groups[1]), groups[1][-1]


class TupleHoldsList(nn.Module):
    """A list that a tuple also holds, changed through the tuple under a condition."""

    def forward(self, x):
        acc = []
        pair = (acc, x)
        if x.sum() > 0:
            pair[0].append(x)
        acc.append(x * 3)
        return len(acc), len(pair[0]), pair[0][-1]


class AliasFromAnEarlierStep(nn.Module):
    """`g = groups[1]` in a later captured step than the one that built `groups`: `g` is
    still the list `groups` holds."""

    def forward(self, x):
        groups = [[x * 1], [x + 1]]
        if x.sum() > 0:
            y = x * 3
        else:
            y = x
        g = groups[1]
        z = g[0] + y
        g.append(z)
        return len(groups[1]), groups[1][-1]


class AliasAcrossAnInPlaceChange(nn.Module):
    """`g = groups[0]`, then, under a condition, a tensor changed in place and an append
    through `g`: `groups[0]` grows too (a wrong answer before, fuzz seed 442659: the
    in-place change rebuilt every list value, and `g` and `groups[0]` came apart)."""

    def forward(self, x):
        acc = x.clone()
        groups = [[x * 1.0], [torch.tanh(x)]]
        g = groups[0]
        if x.sum() > 0:
            acc.add_(1)
            g.append(torch.tanh(x) * 3)
        return x * len(groups[0]) + groups[0][-1] + acc


def test_repeated_empty_list_is_one_list():
    check_paths(RepeatedEmptyList(), INPUTS)


def test_per_exit_lists_appended_through_their_index():
    check_paths(PerExitLists(), INPUTS, all_branches=False)


def test_extend_insert_and_pop_through_items():
    check_paths(ItemSurgery(), INPUTS)


def test_plus_equals_extends_every_name_of_the_list():
    check_paths(PlusEqualsExtends(), INPUTS, all_branches=False)


def test_a_helper_appending_to_its_argument_changes_the_callers_list():
    check_paths(HelperAppends(), INPUTS)


def test_a_for_over_lists_changes_the_lists_the_outer_list_holds():
    check_paths(ForOverLists(), INPUTS)


def test_a_list_held_in_a_tuple_is_one_list_after_a_join():
    check_paths(TupleHoldsList(), INPUTS)


def test_an_alias_made_in_a_later_step_is_the_same_list():
    check_paths(AliasFromAnEarlierStep(), INPUTS)


def test_a_list_held_in_two_places_stays_one_list_across_an_in_place_change():
    check_paths(AliasAcrossAnInPlaceChange(), INPUTS)


@pytest.mark.parametrize("model_class", [PerExitLists, ForOverLists, TupleHoldsList, AliasAcrossAnInPlaceChange])
def test_shared_lists_compile_exactly_through_onnx_runtime(model_class):
    assert_compiled_exactly(model_class, INPUTS, "onnxruntime")


class ListInDict(nn.Module):
    """`state["hs"]` and `hs` are one list: an append through one shows in the other."""

    def forward(self, x):
        state = {"hs": [], "n": 0}
        hs = state["hs"]
        hs.append(x)
        if x.sum() > 0:
            state["hs"].append(x * 2)
        return len(state["hs"]), state["hs"][-1], len(hs)


class ItemStoreThroughAnotherName(nn.Module):
    """`g` and `rows[0]` are one list: `rows[0][1] = ...`, captured with the read of `g[1]`,
    shows through `g` (a wrong answer before: the block got two copies of the list)."""

    def forward(self, x):
        rows = [[x, x], [x]]
        g = rows[0]
        if x.sum() > 0:
            x = x * 2
        rows[0][1] = x + 1
        return g[1]


class ListInDictBuiltByCall(nn.Module):
    def forward(self, x):
        state = dict(hs=[])
        hs = state["hs"]
        hs.append(x)  # REFUSED
        return len(state["hs"])


class RuntimePickedList(nn.Module):
    def forward(self, x):
        rows = [[], []]
        k = int(x.sum() > 0)
        rows[k].append(x)  # REFUSED
        return len(rows[0])


class ChangedInsideExpression(nn.Module):
    def forward(self, x):
        rows = [[x], [x]]
        y = x
        n = len(rows[0]) + (rows[1].append(x) or 0)  # REFUSED
        return y, n, len(rows[1])


class ItemOfModuleState(nn.Module):
    def __init__(self):
        super().__init__()
        self.history = [[], []]

    def forward(self, x):
        self.history[0].append(x)  # REFUSED
        return x * 2


class DictItemStore(nn.Module):
    def forward(self, x):
        cfg = {"scale": 2.0}
        cfg["shift"] = 1.0
        for _ in range(cfg["scale"] > 1.0 and 2):
            x = torch.tanh(x) if x.sum() > 0 else x + cfg["shift"]
        return x * cfg["scale"] + cfg["shift"]


class ListOfListsInRuntimeLoop(nn.Module):
    def forward(self, x):
        rows = [[], []]
        h = x
        while h.sum() < 10:  # REFUSED
            h = h + 1
            rows[0].append(h)
        return len(rows[0]), h


class GrowsWhatItIterates(nn.Module):
    def forward(self, x):
        hs = [x, x + 1]
        for h in hs:
            if len(hs) < 4:
                hs.append(h * 2)  # REFUSED
        return torch.stack(hs).sum(0)


def test_a_for_over_a_list_its_body_grows_is_refused():
    refused(GrowsWhatItIterates(), INPUTS[0], "changes the length of `hs`, which the `for` loop goes over",
            marked_line(GrowsWhatItIterates), "list(hs)")


def test_a_list_a_dict_display_holds_is_one_list_with_its_other_names():
    check_paths(ListInDict(), INPUTS)


def test_a_list_two_inputs_of_a_captured_block_hold_is_one_list_in_it():
    check_paths(ItemStoreThroughAnotherName(), INPUTS)


def test_a_list_a_constant_dict_holds_is_not_changed_behind_its_back():
    refused(ListInDictBuiltByCall(), INPUTS[0], "changes a list that the dict `state` holds", marked_line(ListInDictBuiltByCall))


def test_a_list_picked_by_a_runtime_index_is_refused_with_an_if_as_the_rewrite():
    refused(RuntimePickedList(), INPUTS[0], "changes a list picked by a runtime index", marked_line(RuntimePickedList), "if k == 0")


def test_a_list_changed_inside_an_expression_is_refused():
    refused(ChangedInsideExpression(), INPUTS[0], "`rows[1].append(x)` changes a list inside an expression",
            marked_line(ChangedInsideExpression), "item = rows[1]")


def test_an_item_of_module_state_is_refused_and_left_unchanged():
    model = ItemOfModuleState()
    refused(model, INPUTS[0], "a list that is module state", marked_line(ItemOfModuleState))
    assert model.history == [[], []]  # importing did not append to the model's own list


def test_a_dict_item_store_keeps_a_dict_of_constants_constant():
    check_paths(DictItemStore(), INPUTS)


def test_a_list_of_lists_a_runtime_loop_carries_is_refused_at_the_loop():
    refused(ListOfListsInRuntimeLoop(), INPUTS[0], "`rows` holds a list", marked_line(ListOfListsInRuntimeLoop))
