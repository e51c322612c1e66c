"""Found by the issue-34 fuzz campaign (`python -m dycl.fuzz --form issue34`, seeds 400000
on; docs/fuzzing.md), reduced by hand to the forms' statements.

- A complex value held by a variable across statements, `z = view_as_complex(x.reshape(1, -1,
  2))`, then `z * self.freqs[p]` with `p` a runtime int: the run's complex example was a view
  of a real tensor, which torch's fake tensors rebuild as `view_as_complex(base)` and fail on
  (base (1, 4)): "cannot be captured as a tensor program (torch.export raised RuntimeError)".
  Fixed in capture.py (a complex example that is a view is copied).
- A one-row slice at a runtime position, `ctx[t : t + 1]` with `t` a `range(ctx.size(0))`
  index and `freqs[p : p + 1]` with `p` a runtime int, has a row count DyCL does not know is
  1 (it is 0 past the end), so `x` added to it has an unknown dim 0 afterwards, and a later
  statement that needs it to be 1 (`torch.stack(outs)` of `x` before and after, a complex
  multiply with a (2,) table row) was refused with the message of an export failure that
  named no construct. Such a statement is now captured at the example's sizes and called
  where the runtime dims have them (`by_size.at_example_sizes`; for other sizes it raises
  at run time, where eager's `stack` and multiply raise too).
- The buffer form's KV-cache-like write at the step's slot, `self.fz_cache[self.fz_steps %
  4] = v` (a 0-d integer tensor as the index): "a runtime Python int is used where the
  captured tensor code needs a constant" (`Tensor.__setitem__` reads a 0-d index tensor
  with `.item()`), 15 of the 500-program campaign's 31 refusals; now an `index_put` at the
  tensor's position (`runs.subscript_store`). Every write of `forms.BUFFER_WRITES` is
  checked, the buffers compared after every call.
- Seed 400578: "running lines [...] on example values failed: IndexError" at nanoGPT's crop
  `fz_logits[fz_logits < fz_v[:, [-1]]] = -1.0` under `if top_k is not None:`, after
  `if torch.isnan(x).any(): raise ValueError(...)`: the join after the raising `if` took
  the raising path's placeholders as the examples of what follows (`top_k` None, its value
  0, so `topk` was empty). Neither eager nor the program fails; a join's example now comes
  from the side that has a value.
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


def _buffer_program(write: str, layout: str) -> Program:
    """As `forms.add_forms` writes the `buffer_state` form: the write, then the read of the
    buffers after every condition."""
    shape = "4, 4"
    return _program(
        [Research(write.replace("{S}", str(F.BUFFER_SLOTS)), "buffer_state"),
         Research(f"x = x + 0.1 * (2.0 if int(self.fz_steps) > 2 else 1.0) * torch.tanh({F.BUFFER_READS[layout]})", "buffer_state")],
        init=['self.register_buffer("fz_steps", torch.tensor(0))', f'self.register_buffer("fz_cache", torch.zeros({shape}))'],
        buffers=["fz_steps", "fz_cache"])


BUFFER_WRITES = [(layout, write) for layout, writes in sorted(F.BUFFER_WRITES.items()) for write in writes]


@pytest.mark.parametrize("layout, write", BUFFER_WRITES, ids=[f"{layout}-{k}" for k, (layout, _) in enumerate(BUFFER_WRITES)])
def test_a_write_at_the_step_slot_of_a_buffer_matches_eager_call_by_call(layout, write):
    outcome = check_program(_buffer_program(write, layout), None)
    assert outcome.status == "ok" and outcome.inputs >= 3, outcome.detail


def test_a_write_at_a_0d_tensor_slot_on_onnxruntime():
    write = next(w for w in F.BUFFER_WRITES["rows"] if "fz_pos = self.fz_steps" in w)
    outcome = check_program(_buffer_program(write, "rows"), "onnxruntime")
    assert outcome.status == "ok" and outcome.inputs >= 3, outcome.detail


RAISE_BEFORE_AN_OPTIONAL_CROP = _program(
    [Research('if torch.isnan(x).any():\n    raise ValueError(f"NaN in x of width {x.size(1)}")', "exception"),
     Research(F.OPTIONAL_USES[1], "optional_arg")],
    classes=[F.OPTIONAL_SOURCE], arguments=[("top_k: int | None = None", "optional_int")])


def test_a_join_after_a_raise_keeps_the_examples_of_the_path_that_goes_on():
    outcome = check_program(RAISE_BEFORE_AN_OPTIONAL_CROP, None)
    assert outcome.status == "ok" and outcome.inputs >= 2, outcome.detail
