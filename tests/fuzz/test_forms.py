"""Issue 34's forms in generated programs (dycl/fuzz/forms.py): each appears, in every
spelling, and changes nothing else of a program; the oracle calls with every kind of the
arguments they add and compares the buffers they change after every call; and a small
program of each form matches eager on the reference interpreter and on ONNX Runtime."""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter

import pytest
import torch

from dycl.fuzz import forms as F
from dycl.fuzz.generate import generate
from dycl.fuzz.oracle import argument_variety, check_program, prepare
from dycl.fuzz.program import Cond, If, Line, Program, Research, render

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

SEEDS = range(600)


def _spellings() -> list[str]:
    return [*F.KEYWORD_CALLS, *F.OPTIONAL_USES, *F.STARRED, *F.ROTARY, *F.DYNAMIC,
            *(w for writes in F.BUFFER_WRITES.values() for w in writes)]


def _pattern(spelling: str) -> str:
    """A regex of a spelling as rendered: its lines indented alike, placeholders filled."""
    lines = []
    for line in spelling.split("\n"):
        escaped = re.escape(line).replace(re.escape("{pos}"), "fz_p")
        lines.append(re.sub(r"\\\{\w+\\\}", r"\\d+", escaped))
    return r"\n\s*".join(lines)


def test_every_form_and_spelling_appears_in_the_first_600_seeds():
    counts, sources = Counter(), []
    for seed in SEEDS:
        program = generate(seed)
        counts.update(f for f in F.tags(program) if f in F.FORMS)
        sources.append(render(program).source)
    assert set(counts) == set(F.FORMS), counts
    assert all(0.03 * len(SEEDS) <= counts[f] <= 0.2 * len(SEEDS) for f in F.FORMS), counts
    text = "\n".join(sources)
    missing = [s for s in _spellings() if not re.search(_pattern(s), text)]
    assert not missing
    assert "@torch.no_grad()\n    def forward(" in text and "top_k: int | None = None" in text
    assert 'self.register_buffer("fz_freqs"' in text and "self.fz_freqs = fz_freqs_cis(" in text


def _without_forms(program: Program) -> Program:
    """The program with what `dycl.fuzz.forms` added taken out."""
    stripped = program.copy()

    def strip(stmts):
        stmts[:] = [s for s in stmts if not (isinstance(s, Research) and s.form in F.FORMS)]
        for s in stmts:
            for inner in F._nested(s):
                strip(inner)

    strip(stripped.body)
    stripped.classes = [c for c in stripped.classes if c not in F.SOURCES]
    stripped.modules = {n: c for n, c in stripped.modules.items() if not n.startswith("fz_")}
    stripped.forward_decorators, stripped.arguments, stripped.methods, stripped.init, stripped.buffers = [], [], [], [], []
    return stripped


def test_a_program_with_forms_is_the_program_of_before_plus_them():
    changed = 0
    for seed in range(300):
        program, before = generate(seed), generate(seed, issue34=False)
        assert not set(F.tags(before)) & set(F.FORMS)
        changed += render(program).source != render(before).source
        assert render(_without_forms(program)).source == render(before).source, seed
        assert not set(F.tags(generate(seed, research=False))) & set(F.FORMS)  # (research programs only)
    assert changed > 50, changed


def _first(form: str, count: int = 1) -> list[Program]:
    return [p for p in map(generate, range(600)) if form in F.tags(p)][:count]


def _check_argument_variety(programs):
    for program in programs:
        _, inputs, _, _, _ = prepare(program)
        for position, (_, position_kind) in enumerate(program.arguments):
            values = {argument_variety(program, inp)[position] for inp in inputs}
            if position_kind == "optional_int":
                assert values == {True, False}, (program.seed, values)
            else:
                assert len(values) >= 3 and values <= set(range(2, 7)), (program.seed, values)
                ctx = inputs[0][-len(program.arguments) + position]
                assert getattr(ctx, "_dynamo_dynamic_indices", None) == {0}


def test_the_oracle_calls_with_both_kinds_of_an_optional_and_with_several_row_counts():
    _check_argument_variety([PROGRAMS["optional_arg"], PROGRAMS["dynamic_dim"]])


@pytest.mark.slow
def test_the_oracle_varies_the_arguments_of_generated_programs():
    _check_argument_variety(_first("optional_arg", 2) + _first("dynamic_dim", 2))


# ----- one small program per form, against eager --------------------------------------------

def _program(body, seed=21, **fields) -> Program:
    """x (1, 4) through a calibrated `if`, then the form's statements (x is (1, 4) there)."""
    modules = {"m0": "nn.Linear(4, 4)", **fields.pop("modules", {})}
    return Program(
        seed=seed, input_shape=(1, 4), modules=modules, helpers={},
        prologue=[], body=[Line("x = self.m0(x)"), If([(Cond("x.mean()", 0), [Line("x = x * 2.0")])], [Line("x = -x")]),
                           *body],
        epilogue=["return torch.tanh(x)"], **fields,
    )


def _rotary(text):
    return text.replace("{H}", "2").replace("{pos}", "fz_p")


PROGRAMS = {
    "keyword_call": _program(
        [Research("\n".join(F.KEYWORD_CALLS), "keyword_call")], classes=[F.KEYWORD_SOURCE], methods=[F.KEYWORD_METHOD],
        modules={"fz_gate": "FzGate(4)"}, forward_decorators=["@torch.no_grad()"]),
    "optional_arg": _program(
        [Research(u.replace("{W}", "4"), "optional_arg") for u in F.OPTIONAL_USES], classes=[F.OPTIONAL_SOURCE],
        arguments=[("top_k: Optional[int] = None", "optional_int")]),
    "optional_arg_union": _program(
        [Research(F.OPTIONAL_USES[1], "optional_arg")], seed=22, arguments=[("top_k: int | None = None", "optional_int")]),
    "starred_unpack": _program([Research(s, "starred_unpack") for s in F.STARRED], classes=[F.STARRED_SOURCE]),
    "complex_rotary_attribute": _program(  # (the slice at a runtime position: test_complex_runtime_slice.py)
        [Research(f"fz_p = {F.RUNTIME_STEP}\n" + _rotary(r), "complex_rotary") for r in F.ROTARY if ":" not in r],
        classes=[F.ROTARY_SOURCE], modules={"fz_freqs": "fz_freqs_cis(4, 16)"}),
    "complex_rotary_buffer": _program(
        [Research("fz_p = 3\n" + _rotary(F.ROTARY[1]), "complex_rotary")], classes=[F.ROTARY_SOURCE],
        init=['self.register_buffer("fz_freqs", fz_freqs_cis(4, 16), persistent=False)']),
    "dynamic_dim": _program([Research(d.replace("{b}", "3"), "dynamic_dim") for d in F.DYNAMIC],
                            arguments=[("ctx", "dynamic_rows")]),
    "buffer_state_rows": _program(
        [Research(F.BUFFER_WRITES["rows"][2].replace("{S}", "4") + "\n" + F.BUFFER_MEAN, "buffer_state"),
         Research("x = x + 0.1 * (2.0 if int(self.fz_steps) > 2 else 1.0) * torch.tanh(self.fz_cache.mean(0, keepdim=True))"
                  " + 0.1 * self.fz_mean[None]", "buffer_state")],
        init=['self.register_buffer("fz_steps", torch.tensor(0))', 'self.register_buffer("fz_cache", torch.zeros(4, 4))',
              'self.register_buffer("fz_mean", torch.zeros(4), persistent=False)'],
        buffers=["fz_steps", "fz_cache", "fz_mean"]),
    "count_slice": _program([Research(F.COUNT_SLICE.replace("{W}", "4"), "count_slice")]),
    "loop_invariant": _program([Research(F.LOOP_INVARIANT.replace("{W}", "4").replace("{T}", "3.0"), "loop_invariant")],
                               modules={"fz_proj": "nn.Linear(4, 2048)"}),
    "buffer_state_columns": _program(
        [If([(Cond("x.sum()", 1), [Research(F.BUFFER_WRITES["columns"][0].replace("{S}", "4"), "buffer_state")])]),
         Research("x = x + 0.1 * (0.5 if self.fz_steps > 3 else 1.0) * torch.tanh(self.fz_cache.mean(1)[None])", "buffer_state")],
        init=['self.register_buffer("fz_steps", torch.tensor(0))', 'self.register_buffer("fz_cache", torch.zeros(4, 4))'],
        buffers=["fz_steps", "fz_cache"]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_program_of_each_form_matches_eager_on_the_interpreter(name):
    outcome = check_program(PROGRAMS[name], backend=None)
    assert outcome.status == "ok" and outcome.inputs >= 3, outcome.detail
    print(f"{name}: {outcome.inputs} inputs, {outcome.arms_covered}/{outcome.arms_total} arms")


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n not in ("dynamic_dim", "buffer_state_columns")
                                               else [pytest.mark.slow]) for n in sorted(PROGRAMS)])
def test_a_program_of_each_form_matches_eager_on_onnxruntime(name):
    outcome = check_program(PROGRAMS[name], backend="onnxruntime")
    assert outcome.status == "ok" and outcome.inputs >= 3, outcome.detail


def test_a_buffer_eager_changes_but_the_compiled_model_does_not_keep_is_a_mismatch(monkeypatch):
    """The buffers are compared after every call, and one eager changed must be state."""
    from dycl.fuzz import oracle

    assert oracle.compare_state({"fz_cache": torch.ones(2)}, {}, {"fz_cache": torch.zeros(2)}) is not None
    assert oracle.compare_state({"fz_cache": torch.zeros(2)}, {}, {"fz_cache": torch.zeros(2)}) is None
    program = PROGRAMS["buffer_state_rows"]
    real = oracle.compare_state
    monkeypatch.setattr(oracle, "compare_state",
                        lambda eager, state, initial=None: real({k: v + 1 if k == "fz_cache" else v for k, v in eager.items()},
                                                                state, initial))
    assert check_program(program, backend=None).status == "hcfg-mismatch"
