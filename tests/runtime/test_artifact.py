"""Artifacts: round trip without torch, refused when tampered, clear input errors, threads."""

import json
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

import dycl
from dycl.runtime import ArtifactError, InputError
from tests.api.shared import BACKENDS, NO_TORCH_PRELUDE
from tests.foundation.samples import SAMPLES, inputs


@pytest.fixture(params=BACKENDS)
def saved(request, compiled_samples, tmp_path):
    compiled = compiled_samples("early_exit", request.param)
    return compiled, compiled.save(tmp_path / "artifact")


def test_manifest_lists_every_file_with_its_hash(saved):
    compiled, path = saved
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format_version"] == 1 and manifest["backend"] == compiled.backend
    assert manifest["inputs"] == [{"name": "x", "kind": "tensor", "dtype": "float32", "shape": [1, 4]}]
    assert [s["name"] for s in manifest["subdnns"]] == ["subdnn_0", "subdnn_1"]
    on_disk = {p.name for p in path.iterdir()} - {"manifest.json"}
    assert set(manifest["files"]) == on_disk and "host.py" in on_disk


def test_round_trip_in_a_process_without_torch(saved, tmp_path):
    compiled, path = saved
    xs = [x.numpy() for x in inputs(8)]
    np.save(tmp_path / "xs.npy", np.stack(xs))
    script = NO_TORCH_PRELUDE + textwrap.dedent(f"""
        import numpy as np, dycl
        model = dycl.load({str(path)!r})
        outs = [model(x) for x in np.load({str(tmp_path / "xs.npy")!r})]
        np.save({str(tmp_path / "out.npy")!r}, np.stack([o[0] for o in outs]))
        print([o[1] for o in outs])
        assert "torch" not in sys.modules and "xdsl" not in sys.modules
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    exits = eval(run.stdout.strip().splitlines()[-1])
    expected = [compiled(x) for x in xs]
    assert exits == [e[1] for e in expected] and set(exits) == {0, 1}
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), np.stack([e[0] for e in expected]))


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete", "manifest"])
def test_tampered_artifact_is_refused(saved, damage):
    _, path = saved
    victim = next(p for p in path.iterdir() if p.name.startswith("subdnn_1"))
    data = victim.read_bytes()
    if damage == "flip":
        victim.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    elif damage == "truncate":
        victim.write_bytes(data[: len(data) // 2])
    elif damage == "delete":
        victim.unlink()
    else:
        (path / "manifest.json").write_text("{not json")
    with pytest.raises(ArtifactError) as info:
        dycl.load(path)
    message = str(info.value)
    if damage == "manifest":
        assert "unreadable manifest" in message
    elif damage == "delete":
        assert f"{victim.name} is missing" in message
    else:
        assert victim.name in message and "sha256" in message and "refusing to load" in message


def test_tampered_host_code_never_runs(saved, tmp_path):
    _, path = saved
    host = path / "host.py"
    marker = tmp_path / "ran"
    host.write_text(host.read_text() + f"\nopen({str(marker)!r}, 'w').close()\n")
    with pytest.raises(ArtifactError, match="host.py"):
        dycl.load(path)
    assert not marker.exists()


def test_not_an_artifact(tmp_path):
    with pytest.raises(ArtifactError, match="no manifest.json"):
        dycl.load(tmp_path)
    with pytest.raises(ArtifactError, match="no such directory"):
        dycl.load(tmp_path / "missing")


def test_wrong_inputs_get_clear_errors(compiled_samples):
    model = compiled_samples("early_exit")
    x = np.zeros((1, 4), np.float32)
    with pytest.raises(InputError, match=r"takes 1 input\(s\) \(x\), got 2"):
        model(x, x)
    with pytest.raises(InputError, match=r"input 'x': expected a float32 tensor of shape \[1, 4\], got a float32 tensor of shape \[2, 4\]"):
        model(np.zeros((2, 4), np.float32))
    with pytest.raises(InputError, match="got a float64 tensor"):
        model(np.zeros((1, 4)))
    with pytest.raises(InputError, match="got list"):
        model([[0.0] * 4])


def test_torch_in_torch_out_numpy_in_numpy_out(compiled_samples):
    model = compiled_samples("early_exit")
    x = inputs(1)[0]
    as_torch, as_numpy = model(x), model(x.numpy())
    assert isinstance(as_torch[0], torch.Tensor) and isinstance(as_numpy[0], np.ndarray)
    assert isinstance(as_torch[1], int) and as_torch[1] == as_numpy[1]
    np.testing.assert_array_equal(as_torch[0].numpy(), as_numpy[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_calls_from_several_threads(compiled_samples, backend):
    model = compiled_samples("early_exit", backend)
    xs = [x.numpy() for x in inputs(16)]
    serial = [model(x) for x in xs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(3):
            threaded = list(pool.map(model, xs))
            for s, t in zip(serial, threaded):
                np.testing.assert_array_equal(s[0], t[0])
                assert s[1] == t[1]


def test_save_copies_a_verifiable_artifact(saved, tmp_path):
    compiled, path = saved
    copy = dycl.load(path).save(tmp_path / "copy")
    reloaded = dycl.load(copy)
    x = inputs(1)[0].numpy()
    np.testing.assert_array_equal(reloaded(x)[0], compiled(x)[0])
    shutil.rmtree(copy)


def test_saving_over_a_loaded_artifact_leaves_the_loaded_model_intact(compiled_samples, tmp_path):
    # A TVM model maps its sub-DNNs' libraries; a save that wrote into those files in place
    # crashed the process that had loaded them (at exit, when TVM closed the libraries).
    source = compiled_samples("early_exit", "tvm").save(tmp_path / "source")
    script = textwrap.dedent(f"""
        import numpy as np, dycl
        source = dycl.load({str(source)!r})
        loaded = dycl.load(source.save({str(tmp_path / "artifact")!r}))
        x = np.zeros((1, 4), np.float32)
        before = loaded(x)
        source.save({str(tmp_path / "artifact")!r})
        after = loaded(x)
        assert np.array_equal(before[0], after[0]) and before[1] == after[1]
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
