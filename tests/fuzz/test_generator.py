"""The program generator, calibration and shrinker, without compiling anything."""

import ast

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from dycl.fuzz.generate import generate
from dycl.fuzz.oracle import build, prepare
from dycl.fuzz.program import If, Line, render
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
