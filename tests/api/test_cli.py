"""dycl-compile writes an artifact; dycl-run runs it without torch."""

import subprocess
import sys
import textwrap

import numpy as np

from dycl.tools.dycl_compile import main as compile_main
from tests.api.shared import NO_TORCH_PRELUDE


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
