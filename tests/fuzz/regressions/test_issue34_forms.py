"""Found by the issue-34 fuzz campaign (`python -m dycl.fuzz --form issue34`, seeds 400000
on; docs/fuzzing.md), reduced by hand to the forms' statements.

- A complex value held by a variable across statements, `z = view_as_complex(x.reshape(1, -1,
  2))`, then `z * self.freqs[p]` with `p` a runtime int: the run's complex example was a view
  of a real tensor, which torch's fake tensors rebuild as `view_as_complex(base)` and fail on
  (base (1, 4)): "cannot be captured as a tensor program (torch.export raised RuntimeError)".
  Fixed in capture.py (a complex example that is a view is copied).
- Two refusals of exact programs, kept as xfail(strict): a one-row slice at a runtime
  position, `ctx[t : t + 1]` with `t` a `range(ctx.size(0))` index and `freqs[p : p + 1]`
  with `p` a runtime int, has a row count DyCL does not know is 1, so `x` added to it has an
  unknown dim 0 afterwards, and a later statement that needs it to be 1 (`torch.stack(outs)`
  of `x` before and after, a complex multiply with a (2,) table row) is refused with the
  message of an export failure that names no construct.
"""

import pytest

from dycl.fuzz import forms as F
from dycl.fuzz.oracle import check_program
from dycl.fuzz.program import Line, Program, Research


def _program(body, **fields):
    modules = {"m0": "nn.Linear(4, 4)", **fields.pop("modules", {})}
    return Program(seed=31, input_shape=(1, 4), modules=modules, helpers={}, prologue=["outs = []"],
                   body=[Line("x = self.m0(x)"), *body], epilogue=["outs.append(x)", "return torch.stack(outs)"], **fields)


COMPLEX_VARIABLE = _program(
    [Research(f"fz_p = {F.RUNTIME_STEP}\nfz_xc = torch.view_as_complex(x.reshape(1, -1, 2))\n"
              "fz_xc = fz_xc * self.fz_freqs[fz_p]\nx = torch.view_as_real(fz_xc).flatten(1)", "complex_rotary")],
    classes=[F.ROTARY_SOURCE], modules={"fz_freqs": "fz_freqs_cis(4, 16)"})

CTX_ROW_IN_A_RUNTIME_LOOP = _program(
    [Line("outs.append(x)"),
     Research("for fz_t in range(ctx.size(0)):\n    x = x + 0.05 * torch.tanh(ctx[fz_t : fz_t + 1] + x)", "dynamic_dim")],
    arguments=[("ctx", "dynamic_rows")])

TABLE_ROW_AT_A_RUNTIME_POSITION = _program(
    [Research(f"fz_p = {F.RUNTIME_STEP}\nx = fz_rotate(x, self.fz_freqs[fz_p : fz_p + 1])", "complex_rotary"),
     Research("fz_xc = torch.view_as_complex(x.reshape(1, -1, 2))\nfz_xc = fz_xc * self.fz_freqs[2]\n"
              "x = torch.view_as_real(fz_xc).flatten(1)", "complex_rotary")],
    classes=[F.ROTARY_SOURCE], modules={"fz_freqs": "fz_freqs_cis(4, 16)"})


def test_a_complex_variable_times_a_table_row_at_a_runtime_position_matches_eager():
    outcome = check_program(COMPLEX_VARIABLE, None)
    assert outcome.status == "ok" and outcome.inputs >= 3, outcome.detail


def test_a_one_row_slice_at_a_runtime_loop_index_keeps_one_row():
    outcome = check_program(CTX_ROW_IN_A_RUNTIME_LOOP, None)
    assert outcome.status == "ok", outcome.detail


def test_a_one_row_slice_of_a_complex_table_at_a_runtime_position_keeps_one_row():
    outcome = check_program(TABLE_ROW_AT_A_RUNTIME_POSITION, None)
    assert outcome.status == "ok", outcome.detail
