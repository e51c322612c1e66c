"""A fixed-seed slice of the program campaign (`python -m dycl.fuzz` runs the large ones)."""

import os
import tempfile

import pytest

from dycl.fuzz.generate import generate
from dycl.fuzz.oracle import check_program

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

# These slices are the programs written before the generator learnt mutation (mutation=False).
# 514: no candidate input keeps a margin from every threshold (an oracle limit, not DyCL)
INTERPRETED_SEEDS = [s for s in range(500, 517) if s != 514]


@pytest.mark.parametrize("seed", INTERPRETED_SEEDS)
def test_program_through_frontend_pipeline_and_interpreter_matches_eager(seed):
    outcome = check_program(generate(seed, mutation=False), backend=None)
    assert outcome.status == "ok", f"seed {seed}: {outcome.detail}"
    assert outcome.inputs >= 1 and outcome.arms_covered >= 1


def test_small_program_compiled_for_onnxruntime_matches_eager():
    outcome = check_program(generate(601, max_conditions=1, mutation=False), backend="onnxruntime")
    assert outcome.status == "ok", outcome.detail
    assert outcome.subdnns >= 1


@pytest.mark.slow
@pytest.mark.parametrize("seed", [700, 701])
def test_program_compiled_for_tvm_matches_eager(seed):
    outcome = check_program(generate(seed, max_conditions=2, mutation=False), backend="tvm")
    assert outcome.status == "ok", outcome.detail


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(800, 810))
def test_program_compiled_for_onnxruntime_matches_eager(seed):
    outcome = check_program(generate(seed, mutation=False), backend="onnxruntime")
    assert outcome.status == "ok", outcome.detail
