"""dycl-compile writes an artifact; dycl-run runs it without torch."""

import subprocess
import sys
import textwrap

import numpy as np

from dycl.tools.dycl_compile import main as compile_main
from tests.api.shared import NO_TORCH_PRELUDE, needs_signing, write_key_pair


def run_without_torch(args, cwd=None):
    script = NO_TORCH_PRELUDE + textwrap.dedent(f"""
        from dycl.tools.dycl_run import main
        code = main({args!r})
        assert "torch" not in sys.modules
        sys.exit(code)
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_compile_then_run_an_artifact(tmp_path, capsys):
    out = tmp_path / "out"
    code = compile_main(["tests.api.models:skip_gate", "--example", "x: f32[1,8] = randn", "-o", str(out)])
    assert code == 0
    assert "sub-DNNs" in capsys.readouterr().out
    assert (out / "manifest.json").is_file() and (out / "host.py").is_file()
    np.save(tmp_path / "x.npy", np.ones((1, 8), np.float32))
    run = run_without_torch([str(out), "--inputs", str(tmp_path / "x.npy"), "--repeat", "3", "--save", str(tmp_path / "r.npz")])
    assert run.returncode == 0, run.stderr
    assert "tensor[1, 8] float32" in run.stdout and "median latency" in run.stdout
    assert np.load(tmp_path / "r.npz")["arr_0"].shape == (1, 8)
    random_run = run_without_torch([str(out), "--random"])
    assert random_run.returncode == 0, random_run.stderr


def test_run_reports_wrong_inputs(tmp_path, compiled_samples):
    out = compiled_samples("early_exit").save(tmp_path / "a")
    np.save(tmp_path / "bad.npy", np.ones((3, 4), np.float64))
    run = run_without_torch([str(out), "--inputs", str(tmp_path / "bad.npy")])
    assert run.returncode == 1
    assert "input 'x': expected a float32 tensor of shape [1, 4], got a float64 tensor of shape [3, 4]" in run.stderr
    assert "Traceback" not in run.stderr


def test_compile_reports_bad_specs_and_targets(tmp_path, capsys):
    assert compile_main(["tests.api.models:SkipGate", "--example", "x: f32[1,8 = randn", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "input spec, column 12" in err and "^" in err
    assert compile_main(["tests.api.models:NoSuchModel", "--example", "randn(1,8)", "-o", str(tmp_path)]) == 1
    assert "has no attribute 'NoSuchModel'" in capsys.readouterr().err
    assert compile_main(["not_a_target", "-o", str(tmp_path)]) == 1
    assert "expected pkg.module:factory" in capsys.readouterr().err


@needs_signing
def test_compile_signs_and_run_verifies(tmp_path, capsys):
    from cryptography.hazmat.primitives.asymmetric import ec

    private, public = write_key_pair(tmp_path, "ours", ec.SECP256R1)
    _, other = write_key_pair(tmp_path, "theirs", ec.SECP256R1)
    out = tmp_path / "out"
    code = compile_main(["tests.api.models:skip_gate", "--example", "x: f32[1,8] = randn", "-o", str(out), "--sign-key", str(private)])
    assert code == 0
    assert f"signed: {out}/model.sig" in capsys.readouterr().out
    run = run_without_torch([str(out), "--random", "--verify-key", str(public)])
    assert run.returncode == 0, run.stderr
    assert "tensor[1, 8] float32" in run.stdout
    refused = run_without_torch([str(out), "--random", "--verify-key", str(other)])
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"dycl-run: error: refusing to load {out}: it was signed with another key than {other}" in refused.stderr


@needs_signing
def test_compile_checks_the_sign_key_before_compiling(tmp_path, capsys):
    out = tmp_path / "out"
    (tmp_path / "key.pem").write_text("not a key")
    for key, reason in [(tmp_path / "missing.pem", "no such private key file"), (tmp_path / "key.pem", "not an elliptic-curve private key")]:
        assert compile_main(["tests.api.models:NoSuchModel", "-o", str(out), "--sign-key", str(key)]) == 1
        err = capsys.readouterr().err
        assert f"dycl-compile: error: --sign-key: cannot sign with {key}: {reason}" in err
        assert "NoSuchModel" not in err and not out.exists()  # before the model is even loaded


def test_compile_with_the_run_many_form_batches_gated_blocks_across_requests(tmp_path):
    import dycl
    from tests.api.models import skip_gate_inputs

    out = tmp_path / "out"
    args = ["tests.api.models:skip_gate", "--example", "x: f32[1,8] = randn", "-o", str(out)]
    assert compile_main([*args, "--run-many-form"]) == 0
    compiled = dycl.load(out)
    assert "run_many" in compiled.manifest  # the gates in the host: the blocks are sub-DNNs of their own
    requests = [tuple(x.numpy() for x in inputs) for inputs in skip_gate_inputs()]
    for request, output in zip(requests, compiled.run_many(requests)):
        np.testing.assert_array_equal(output, compiled(*request))
    assert max(s["mean_batch"] for s in compiled.batch_stats.values()) > 1
    assert compile_main([*args, "-o", str(tmp_path / "one")]) == 0
    assert "run_many" not in dycl.load(tmp_path / "one").manifest
