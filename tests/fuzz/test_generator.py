"""The program generator, calibration and shrinker, without compiling anything."""

import ast
import re
from collections import Counter

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from dycl.fuzz.generate import generate, walk
from dycl.fuzz.mutation import FORMS
from dycl.fuzz.oracle import build, candidate_inputs, prepare
from dycl.fuzz.program import For, If, Line, Mutation, While, render
from dycl.fuzz.shrink import shrink, size
from tests.fuzz.strategies import programs


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs_are_python_that_eager_pytorch_runs(program):
    source = render(program).source
    ast.parse(source)
    assert "def forward(self, x):" in source and ("if " in source or "while " in source)
    model, _, _ = build(program)
    with torch.no_grad():
        model(torch.randn(*program.input_shape))


def test_generation_is_deterministic_in_the_seed():
    assert render(generate(42)).source == render(generate(42)).source
    assert render(generate(42)).source != render(generate(43)).source
    for seed in range(60):  # mutating programs too (they draw from a second stream)
        assert render(generate(seed)).source == render(generate(seed)).source
        assert render(generate(seed, mutation=False)).source == render(generate(seed, mutation=False)).source


FIRST_SEEDS = range(300)


def _mutations(program):
    """(context, Mutation) for every mutation statement: "straight" (forward's own block),
    "if", "for", "while" (the innermost enclosing statement) or "helper"."""

    def visit(stmts, context):
        for stmt in stmts:
            if isinstance(stmt, Mutation):
                yield context, stmt
            elif isinstance(stmt, If):
                for _, body in stmt.branches:
                    yield from visit(body, "if" if context != "helper" else context)
                yield from visit(stmt.orelse or [], "if" if context != "helper" else context)
            elif isinstance(stmt, (For, While)):
                inner = "for" if isinstance(stmt, For) else "while"
                yield from visit(stmt.body, inner if context != "helper" else context)

    yield from visit(program.body, "straight")
    for body in program.helpers.values():
        yield from visit(body, "helper")


def test_about_half_the_programs_mutate_tensors_and_never_without_mutation():
    mutating = 0
    for seed in FIRST_SEEDS:
        program = generate(seed)
        found = list(_mutations(program))
        assert bool(found) == (program.prologue[:1] == ["x = x.clone()"]), seed  # a mutating program clones its input
        mutating += bool(found)
        plain = generate(seed, mutation=False)
        assert not list(_mutations(plain)) and "x.clone()" not in render(plain).source
    assert 0.35 * len(FIRST_SEEDS) < mutating < 0.65 * len(FIRST_SEEDS)


def test_every_mutation_form_appears_in_the_first_300_seeds_in_every_context():
    forms, contexts = Counter(), Counter()
    for seed in FIRST_SEEDS:
        for context, stmt in _mutations(generate(seed)):
            forms[stmt.form] += 1
            contexts[context] += 1
    assert set(forms) == set(FORMS), set(FORMS) - set(forms)
    assert set(contexts) == {"straight", "if", "for", "while", "helper"}, contexts


# What the issue asks for, as text in the rendered programs (each in at least one of the first 300).
SPELLINGS = {
    "mask store": r"(\w+)\[\1 >= [\d.]+\] = ",
    "int store": r"\w+\[0, \d\] = ",
    "slice store": r"\w+\[:, :2\] = ",
    "ellipsis store": r"\w+\[\.\.\., 0\] = ",
    "None index store": r"\w+\[None, :, \d\] = ",
    "tensor index store": r"\w+\[:, torch\.tensor\(\[\d, \d\]\)\] = ",
    "subscript +=": r"\w+\[0, \d\] \+= ",
    "tensor +=": r"^\s*\w+ \+= ",
    "tensor *=": r"^\s*\w+ \*= ",
    **{m: re.escape(f".{m}(") for m in ["add_", "mul_", "relu_", "clamp_", "masked_fill_", "index_put_", "copy_",
                                          "fill_", "zero_", "sigmoid_", "tanh_", "div_", "sub_"]},
    "out=": r"torch\.\w+\(.*, out=\w+\)",
    "nn.ReLU(inplace=True)": re.escape("nn.ReLU(inplace=True)"),
    "store through a view": r"(\w+) = \w+\.view\(-1\)\n\s*\1\[\d\] = ",
    "method on a row": r"(\w+) = \w+\[0\]\n\s*\1\.mul_\(",
    "+= on an alias": r"(\w+) = \w+\n\s*\1 \+= ",
    ".data": r"\.data\.mul_\(",
    ".detach()": r"\.detach\(\)\.mul_\(",
    "per-step store in a loop": r"for (\w+) in range\(\d\):\n\s*\w+\[:, \1\] = ",
}


def test_every_spelling_of_mutation_appears_in_the_first_300_seeds():
    sources = [render(generate(seed)).source for seed in FIRST_SEEDS]
    missing = [name for name, pattern in SPELLINGS.items()
               if not any(re.search(pattern, source, re.MULTILINE) for source in sources)]
    assert not missing


def test_one_arm_mutation_of_a_tensor_made_before_the_if():
    found = 0
    for seed in FIRST_SEEDS:
        body = generate(seed).body
        for k, stmt in enumerate(body[:-1]):
            nxt = body[k + 1]
            if isinstance(stmt, Mutation) and stmt.form == "branch_one_arm" and isinstance(nxt, If):
                name = stmt.text.split(" = ")[0]
                arm = nxt.branches[0][1]
                assert len(nxt.branches) == 1 and all(isinstance(s, Mutation) for s in arm)
                assert f"x + {name}" in repr(body[k + 2 :])  # read after the if
                found += 1
    assert found >= 3


def test_mutating_programs_leave_their_input_and_weights_alone_in_eager():
    programs = [p for p in map(generate, range(80)) if p.prologue[:1] == ["x = x.clone()"]]
    assert len(programs) >= 25
    for program in programs:
        model, _, _ = build(program)
        state = {k: v.clone() for k, v in model.state_dict().items()}
        for x in candidate_inputs(program, 3):
            before = x.clone()
            with torch.no_grad():
                model(x)
            assert torch.equal(x, before), program.seed
        assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items()), program.seed


def test_calibrated_thresholds_send_inputs_down_different_arms():
    covered = total = 0
    for seed in range(8):
        _, inputs, expected, arms, hit = prepare(generate(seed))
        assert len(inputs) == len(expected) >= 1
        covered, total = covered + hit, total + arms
        assert hit >= 1
    assert covered >= total // 2  # most arms run on some chosen input


def test_rendering_marks_each_arm_line():
    program = generate(3)
    rendered = render(program)
    lines = rendered.source.splitlines()
    for arm in rendered.arms:
        previous = lines[arm - 2].strip()
        assert previous.startswith(("if ", "elif ", "else:", "while ")), previous


def test_shrinker_finds_a_small_program_with_the_property():
    program = next(p for p in map(generate, range(100)) if size(p) >= 8 and "F.gelu" in repr(p.body))

    def has_gelu(candidate):
        return "F.gelu" in render(candidate).source.split("def forward")[1]

    small = shrink(program, has_gelu)
    assert has_gelu(small) and size(small) <= 2 < size(program)
    assert all(not isinstance(s, If) for s in small.body) or size(small) == 1
    assert isinstance(small.body[0], Line)
