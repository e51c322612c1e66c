"""Differential fuzzing of DyCL: random dynamic PyTorch programs against eager, malformed IR
against dycl-opt. See docs/fuzzing.md; run a campaign with `python -m dycl.fuzz`."""

from dycl.fuzz.generate import generate
from dycl.fuzz.oracle import Outcome, check_program
from dycl.fuzz.program import Program, render

__all__ = ["generate", "check_program", "Outcome", "Program", "render"]
