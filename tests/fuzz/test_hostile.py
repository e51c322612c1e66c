"""Hostile artifacts and inputs for a compiled fuzz program (tests/runtime covers the basics:
flipped/truncated/deleted files, bad manifests, wrong shapes, 4 threads)."""

import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

import dycl
from dycl.fuzz.generate import generate
from dycl.fuzz.oracle import build, candidate_inputs, compare
from dycl.runtime import ArtifactError, InputError

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))


@pytest.fixture(scope="module")
def program_and_model():
    program = generate(601, max_conditions=1, mutation=False, research=False)  # (as before mutation, research)
    model, _, _ = build(program)
    compiled = dycl.compile(model, (candidate_inputs(program)[0],), progress=False, threads=1)
    return program, model, compiled


@pytest.fixture
def artifact(program_and_model, tmp_path):
    return program_and_model[2].save(tmp_path / "artifact")


def test_wrong_format_version_is_refused(artifact):
    manifest = json.loads((artifact / "manifest.json").read_text())
    manifest["format_version"] = 99
    (artifact / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match="format version 99"):
        dycl.load(artifact)


def test_swapped_subdnn_files_are_refused(artifact):
    files = sorted(p for p in artifact.iterdir() if p.name.startswith("subdnn_"))
    if len(files) < 2:
        pytest.skip("one sub-DNN only")
    a, b = files[0].read_bytes(), files[1].read_bytes()
    files[0].write_bytes(b)
    files[1].write_bytes(a)
    with pytest.raises(ArtifactError, match="sha256"):
        dycl.load(artifact)


def test_edited_manifest_naming_a_file_outside_is_refused(artifact):
    manifest = json.loads((artifact / "manifest.json").read_text())
    manifest["files"]["../evil.py"] = "0" * 64
    (artifact / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match="bad artifact file name"):
        dycl.load(artifact)


def test_inputs_of_wrong_rank_dtype_count_are_input_errors(program_and_model):
    program, _, compiled = program_and_model
    x = candidate_inputs(program)[0].numpy()
    for bad in [(x[0],), (x[None],), (x.astype(np.float64),), (x.astype(np.int64),), (x, x), ()]:
        with pytest.raises(InputError):
            compiled(*bad)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_and_inf_inputs_give_what_eager_gives(program_and_model, value):
    program, model, compiled = program_and_model
    x = candidate_inputs(program)[0].clone()
    x.view(-1)[0] = value
    with torch.no_grad():
        expected = model(x)
    assert compare(expected, compiled(x)) is None


def test_eight_threads_on_one_model_agree_with_serial_calls(program_and_model):
    program, _, compiled = program_and_model
    xs = [x.numpy() for x in candidate_inputs(program)]
    serial = [compiled(x) for x in xs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        threaded = list(pool.map(compiled, xs * 4))
    for s, t in zip(serial * 4, threaded):
        assert compare(torch.utils._pytree.tree_map(_as_tensor, s), t) is None


def _as_tensor(value):
    return torch.from_numpy(value) if isinstance(value, np.ndarray) else value


@pytest.mark.slow
def test_ten_thousand_calls_keep_memory_flat(program_and_model):
    psutil = pytest.importorskip("psutil")
    program, _, compiled = program_and_model
    xs = [x.numpy() for x in candidate_inputs(program)]
    for i in range(500):
        compiled(xs[i % len(xs)])
    before = psutil.Process().memory_info().rss
    for i in range(10_000):
        compiled(xs[i % len(xs)])
    grown = psutil.Process().memory_info().rss - before
    assert grown < 20 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 10,000 calls"
