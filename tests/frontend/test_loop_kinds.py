"""Kinds that change around a loop, and aliases made on one path (issue 34, item 7).

A loop-carried mask that enters as uint8 and comes back bool is compiled with its first
iteration apart (`loop_compiler._peeled`, `_peeled_while`); where the loop may not run, the
statements after it are compiled once per kind (`joins.compile_if`). `cx = hx` on one path
and `hx[idx], cx[idx] = ...` after it is compiled once per path, so that the write through
one name reaches the other exactly where eager's does. Every model is compared with eager on
inputs that take every path: state given and not, one step and several, every row halting
at once, a loop that never runs."""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects import scf

import dycl
from dycl.frontend import import_module
from tests.frontend.helpers import eager, max_abs_error, tiered
from tests.frontend.loop_kind_models import (
    ByteMaskFor,
    ByteMaskWhile,
    KindContinue,
    KindReturned,
    OnePathAlias,
    OnePathAliasSteps,
    PonderOneTensor,
    PonderTimeSteps,
)
from tests.frontend.research.halting_routing import ACTBatchPublished
from tests.frontend.research.harness import build


def rows(first_features, size=4, seed=0) -> torch.Tensor:
    """A batch of random rows whose first feature is given (it decides when a row halts:
    2 at once, 0 after two steps, -2 never); None makes a padding row of zeros."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(len(first_features), size, generator=generator)
    for k, first in enumerate(first_features):
        if first is None:
            x[k] = 0.0
        else:
            x[k, 0] = first
    return x


def time_steps(*first_features, seed=0) -> torch.Tensor:
    """Time-major rows (time, batch, size), one `rows` per time step."""
    return torch.stack([rows(features, seed=seed + k) for k, features in enumerate(first_features)])


def state(batch, hidden=6, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, hidden, generator=generator), torch.randn(batch, hidden, generator=generator))


CASES = {
    # (factory, inputs: the first is the example)
    "byte_mask_while": (ByteMaskWhile, [
        (rows([2.0, 0.0, -2.0, None]),),  # up to the step limit; a padding row never runs
        (rows([2.0, 2.0, 2.0, 2.0], seed=1),),  # every row halts after one step
        (rows([0.0, 0.0, None, 2.0], seed=2),),  # two steps
        (rows([None, None, None, None]),),  # the loop never runs: the mask stays uint8
    ]),
    "byte_mask_for": (ByteMaskFor, [
        (rows([2.0, 0.0, -2.0]),),
        (rows([2.0, 2.0, 2.0], seed=1),),
        (rows([-2.0, -2.0, -2.0], seed=2),),
    ]),
    "one_path_alias": (OnePathAlias, [
        (rows([1.0, -1.0, 1.0]), state(3)),  # state given: two tensors
        (rows([1.0, -1.0, 1.0]), None),  # none given: one tensor written twice
        (rows([-1.0, -1.0, -1.0], seed=1), None),  # no row written
        (rows([1.0, 1.0, 1.0], seed=2), state(3, seed=2)),
    ]),
    "one_path_alias_steps": (OnePathAliasSteps, [
        (rows([2.0, 0.0, -2.0]), state(3)),  # up to the step limit, state given
        (rows([2.0, 0.0, -2.0]), None),
        (rows([2.0, 2.0, 2.0], seed=1), None),  # every row halts at once
        (rows([0.0, 2.0, 0.0], seed=2), state(3, seed=3)),  # two steps
        (rows([0.0, 0.0, 0.0], seed=3), None),
    ]),
    "ponder_one_tensor": (PonderOneTensor, [
        (rows([2.0, 0.0, -2.0]), state(3)),  # up to the step limit (compiled for None too)
        (rows([2.0, 0.0, -2.0]), None),  # no state: one tensor
        (rows([2.0, 2.0, 2.0], seed=1), None),  # every row halts at once: `break` in the first iteration
        (rows([0.0, 2.0, 0.0], seed=2), state(3, seed=3)),  # two steps
    ]),
    "ponder_time_steps": (PonderTimeSteps, [
        (time_steps([2.0, 0.0, -2.0], [0.0, 2.0, -2.0]), state(3)),  # 1, 2 and all 40 steps
        (time_steps([2.0, 0.0, -2.0], [0.0, 2.0, -2.0]), None),  # no state: one tensor
        (time_steps([2.0, 2.0, 2.0], [2.0, 2.0, 2.0], seed=1), None),  # `break` in the first iteration
        (time_steps([0.0, 2.0, 0.0], [-2.0, 0.0, 2.0], seed=2),),  # `hx` left out: its default
    ]),
    # the published batch ACT (the research corpus's model and path inputs): state given and
    # not, two or three ponder steps, a row that runs all 100. Slow tier (the corpus runs it
    # too); its ponder loops are runtime loops, the list item following `hx` (held_items.py)
    "act_batch_published": (lambda: build(ACTBatchPublished), ACTBatchPublished.path_inputs()),
}

DEFAULT_TIER = {"byte_mask_while", "byte_mask_for", "one_path_alias", "one_path_alias_steps", "ponder_one_tensor"}


def compile_case(name, backend):
    factory, inputs = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    return model, inputs, dycl.compile(model, inputs[0], backend=backend, progress=False)


def max_error(model, compiled, inputs) -> float:
    return max(max_abs_error(eager(model, args), compiled(*args)) for args in inputs)


@pytest.mark.parametrize("name", tiered(CASES, DEFAULT_TIER))
def test_onnxruntime_matches_eager(name):
    model, inputs, compiled = compile_case(name, "onnxruntime")
    error = max_error(model, compiled, inputs)
    print(f"{name}: max abs error {error:.1e} over {len(inputs)} inputs (onnxruntime)")
    assert error <= 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_tvm_matches_eager(name):
    model, inputs, compiled = compile_case(name, "tvm")
    error = max_error(model, compiled, inputs)
    print(f"{name}: max abs error {error:.1e} over {len(inputs)} inputs (tvm)")
    assert error <= 1e-5


def test_inputs_take_every_path():
    """The inputs reach what each case is there for, in eager: every number of steps, a
    loop that never runs, every row halting at once, state given and not."""
    def steps(name, output_index):
        model = CASES[name][0]().eval()
        return [tuple(int(s) for s in eager(model, args)[output_index]) for args in CASES[name][1]]

    assert steps("byte_mask_while", 1) == [(1, 2, 5, 0), (1, 1, 1, 1), (2, 2, 0, 1), (0, 0, 0, 0)]
    assert steps("one_path_alias_steps", 2) == [(1, 2, 4), (1, 2, 4), (1, 1, 1), (2, 1, 2), (2, 2, 2)]
    assert steps("ponder_one_tensor", 2) == [(1, 2, 6), (1, 2, 6), (1, 1, 1), (2, 1, 2)]


def test_one_path_alias_is_one_tensor():
    """With no state, `cx = hx` makes one tensor: `hx[idx], cx[idx] = cell(...)` leaves the
    cell state in both at the written rows (the second store wins), as eager does; two
    independent tensors would hold the hidden state in `hx`."""
    model, inputs, compiled = compile_case("one_path_alias", "onnxruntime")
    x = inputs[1][0]
    hx, cx = compiled(x, None)
    expected_hx, expected_cx = eager(model, (x, None))
    assert max_abs_error(expected_hx, hx) <= 1e-5 and max_abs_error(expected_cx, cx) <= 1e-5
    assert torch.equal(hx, cx)  # (`hx += 1` after the store changes `cx` too: one tensor)
    with torch.no_grad():
        idx = (x[:, 0] > 0).nonzero().squeeze(1)
        h, c = model.cell(x[idx])
    assert max_abs_error(c + 1, hx[idx]) <= 1e-5
    assert (h + 1 - hx[idx]).abs().max() > 1e-2  # (not the hidden state: that store was overwritten)
    given = compiled(x, (torch.zeros(3, 6), torch.zeros(3, 6)))  # two tensors of the same values
    assert max_abs_error(h + 1, given[0][idx]) <= 1e-5 and max_abs_error(c, given[1][idx]) <= 1e-5


def test_mask_loop_is_peeled_not_unrolled():
    """The `while` is one `scf.while` after its first iteration (not one copy per step)."""
    torch.manual_seed(0)
    program = import_module(ByteMaskWhile().eval(), CASES["byte_mask_while"][1][0])
    assert len([op for op in program.module.walk() if isinstance(op, scf.WhileOp)]) == 1


def test_ponder_loop_keeps_one_tensor_in_a_runtime_loop():
    """`cx = hx` stays one tensor through the `break` that leaves both unread: the ponder
    loop after its first iteration is one `scf.while` (before, the join of the `break` made
    two tensors of them, and the runtime loop refused the write through them)."""
    torch.manual_seed(0)
    model = PonderOneTensor().eval()
    program = import_module(model, CASES["ponder_one_tensor"][1][1])  # (no state: compiled for None only)
    assert len([op for op in program.module.walk() if isinstance(op, scf.WhileOp)]) == 1


def test_a_list_item_follows_the_tensor_a_runtime_loop_writes():
    """`hx_list.append(hx)`, then the next time step's ponder loop writes rows of `hx` in
    place: eager's `hx_list[0]` changes with it (not what one time step alone leaves there).
    Compiled, each ponder loop is a runtime loop after its first iteration, not 40 copies,
    and the list's item is the loop's final `hx`. (`ponder_time_steps` in the ORT and TVM
    legs above, in the slow tier: the same compile.)"""
    model, inputs, compiled = compile_case("ponder_time_steps", "onnxruntime")
    x, hx = inputs[0]
    alone = eager(model, (x[:1], hx))[0][0]  # the first time step's `hx`, untouched after
    assert (eager(model, (x, hx))[0][0] - alone).abs().max() > 1e-2  # (eager's aliasing matters)
    assert compiled.source.count("while ") >= 4  # (two time steps, for a state given and for none)
    error = max_error(model, compiled, inputs)
    print(f"ponder_time_steps: max abs error {error:.1e} over {len(inputs)} inputs (onnxruntime)")
    assert error <= 1e-5


@pytest.mark.parametrize(("factory", "what"), [
    (KindReturned, "uint8 tensor"),
    (KindContinue, "`running` is a uint8 tensor"),
])
def test_refused_at_the_loop(factory, what):
    """Where no exact form exists (forward returns the mask, whose dtype depends on whether
    the loop ran) or the first iteration cannot be taken apart (a `continue`), the loop is
    refused at its line, naming the variable and its two kinds."""
    import inspect

    from tests.frontend import loop_kind_models

    source, first = inspect.getsourcelines(factory.forward)
    line = first + next(k for k, text in enumerate(source) if text.strip().startswith("while"))
    x = rows([1.0, 0.0, None])
    with pytest.raises(dycl.FrontendError) as refused:
        dycl.compile(factory().eval(), (x,), backend="onnxruntime", progress=False)
    error = refused.value
    assert error.file == loop_kind_models.__file__ and error.line == line, str(error)
    assert what in str(error) and "bool" in str(error), str(error)
