"""Small Python forms on runtime values (issue 34, items 5 and 9) compile with eager's
meaning (before, each was refused):

- `.tolist()` of a float tensor of static length: a list of runtime floats on the host
  (before: "torch.export raised NotImplementedError", FxImporter takes no float result).
"""

from __future__ import annotations

import pytest

import dycl
from tests.frontend import python_form_models as M
from tests.frontend.helpers import eager, max_abs_error, seeded_model, tiered

CASES = {
    "float_tolist_gate": (M.ConfidenceGate, M.gate_inputs),
}


def _every_path(name: str, model, args_list) -> None:
    """The inputs take each path of the form (else the test would not test it)."""
    if name == "float_tolist_gate":
        firsts = [model.head(a[0]).softmax(-1).max(-1).values[0].item() for a in args_list]
        assert any(f > 0.4 for f in firsts) and any(f <= 0.4 for f in firsts)


def _compiled_error(name: str, backend: str) -> float:
    factory, inputs = CASES[name]
    model = seeded_model(factory)
    args_list = inputs()
    _every_path(name, model, args_list)
    compiled = dycl.compile(model, args_list[0], backend=backend, progress=False)
    return max(max_abs_error(eager(model, args), compiled(*args)) for args in args_list)


@pytest.mark.parametrize("name", sorted(CASES))
def test_python_form_on_onnxruntime(name):
    assert _compiled_error(name, "onnxruntime") <= 1e-5


@pytest.mark.parametrize("name", tiered(CASES, set()))
def test_python_form_on_tvm(name):
    assert _compiled_error(name, "tvm") <= 1e-5
