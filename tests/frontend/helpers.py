"""Run imported programs on the reference interpreter and record which branches ran."""

from __future__ import annotations

from collections import defaultdict

import torch
from xdsl.dialects import scf
from xdsl.interpreter import Interpreter
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.scf import ScfFunctions

from dycl.frontend.joins import BY_SIZE
from dycl.interpreter import ReferenceInterpreter, TorchFunctions, find_function, flatten_inputs, output_tree, unflatten


class BranchCoverage(Interpreter.Listener):
    """Which way every scf.if went, over all runs."""

    def __init__(self):
        self.taken: dict[int, set[bool]] = defaultdict(set)

    def will_interpret_op(self, op, args) -> None:
        if isinstance(op, scf.IfOp):
            self.taken[id(op)].add(bool(args[0]))


def run(program, inputs, coverage: BranchCoverage | None = None):
    """Run the imported forward; returns the output rebuilt in the model's structure."""
    module = program.module
    function = find_function(module, program.function_name)
    interpreter = ReferenceInterpreter(module, listeners=(coverage,) if coverage else ())
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(ScfFunctions())
    interpreter.register_implementations(ArithFunctions())
    weights = {name: torch.from_numpy(array) for name, array in program.weights.items()}
    interpreter.register_implementations(TorchFunctions(weights))
    with torch.no_grad():
        results = interpreter.call_op(function, flatten_inputs(function, inputs))
    return unflatten(output_tree(function), results)


def if_ops(program) -> list:
    """The `if`s of the user's program (not those that pick a run by a runtime size)."""
    return [op for op in program.module.walk() if isinstance(op, scf.IfOp) and BY_SIZE not in op.attributes]


def max_abs_error(expected, actual) -> float:
    """Max abs difference over matching structures (tensors, scalars, tuples, lists, dicts)."""
    if isinstance(expected, dict):
        assert type(actual) is dict and list(expected) == list(actual), (expected.keys(), actual)
        return max([max_abs_error(expected[k], actual[k]) for k in expected], default=0.0)
    if isinstance(expected, (tuple, list)):
        assert type(expected) is type(actual), (type(expected), type(actual))
        assert len(expected) == len(actual)
        return max([max_abs_error(e, a) for e, a in zip(expected, actual)], default=0.0)
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), type(actual)
        assert expected.shape == actual.shape, (expected.shape, actual.shape)
        if expected.numel() == 0:
            return 0.0
        e, a = expected.double(), actual.double()
        # (equal infinities, and NaN where both are NaN, differ by nothing)
        same = (e == a) | (e.isnan() & a.isnan())
        return torch.where(same, torch.zeros_like(e), (e - a).abs()).max().item()
    assert type(expected) is type(actual), (expected, actual)
    if expected is None:
        return 0.0
    return abs(float(expected) - float(actual))


def eager(model, args):
    """The model's output on copies of `args` (a deep copy of it runs: a forward that
    assigns its attributes leaves the model as it was)."""
    import copy

    with torch.no_grad():
        return copy.deepcopy(model)(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])


def eager_method(model, method: str, args):
    """`model.<method>(*args)` on copies, as `eager` runs forward."""
    import copy

    with torch.no_grad():
        return getattr(copy.deepcopy(model), method)(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])


def tiered(names, default) -> list:
    """`names` as pytest params, those not in `default` in the slow tier (the default tier
    keeps one compile per construct; the interpreter legs cover every case)."""
    import pytest

    return [name if name in default else pytest.param(name, marks=pytest.mark.slow) for name in sorted(names)]


def assert_replays_after_reset(compiled, model, calls, state_error, tolerance: float) -> None:
    """`reset_state()` takes a stateful compiled model back to the state it was compiled
    with: it replays the first calls as a fresh copy of the module does, state included
    (`state_error(module, compiled.state)`)."""
    import copy

    compiled.reset_state()
    fresh = copy.deepcopy(model)
    for args in calls[:3]:
        with torch.no_grad():
            expected = fresh(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        assert max_abs_error(expected, compiled(*args)) <= tolerance
        assert state_error(fresh, compiled.state) <= tolerance


def buffer_of(model, path: str) -> torch.Tensor:
    """The registered buffer at a state_dict path (`"attention.cache_k"`)."""
    owner, _, attr = path.rpartition(".")
    return (model.get_submodule(owner) if owner else model).get_buffer(attr)


def state_error(eager_model, state: dict) -> float:
    """Max abs error of a compiled model's state against the eager module's buffers."""
    import numpy as np

    expected = {path: buffer_of(eager_model, path).detach().clone() for path in state}
    return max_abs_error(expected, {path: torch.from_numpy(np.array(value)) for path, value in state.items()})


def seeded_model(factory):
    """`factory()` in eval mode, its weights drawn from seed 0."""
    torch.manual_seed(0)
    return factory().eval()


def assert_imported_exactly(factory, inputs, check_program=None) -> None:
    """Import `factory()` on the first input; every input runs exactly on the reference
    interpreter, and together they take both ways of every `scf.if`."""
    from dycl.frontend import import_module

    torch.manual_seed(0)
    model = factory().eval()
    program = import_module(model, inputs[0])
    if check_program is not None:
        check_program(model, program)
    coverage = BranchCoverage()
    for args in inputs:
        assert max_abs_error(eager(model, args), run(program, args, coverage)) <= 1e-5
    branches = if_ops(program)
    assert sum(len(coverage.taken[id(op)]) for op in branches) == 2 * len(branches), "a branch never ran"


def compiled_error(model, inputs, backend: str) -> float:
    """The max abs error against eager, over every input, of `model` compiled by `dycl.compile`
    on the first input."""
    import dycl

    compiled = dycl.compile(model, inputs[0], backend=backend, progress=False)
    return max(max_abs_error(eager(model, args), compiled(*args)) for args in inputs)


def assert_compiled_exactly(factory, inputs, backend: str) -> None:
    """`dycl.compile(factory(), first input, backend)` matches eager on every input."""
    assert compiled_error(seeded_model(factory), inputs, backend) <= 1e-5
