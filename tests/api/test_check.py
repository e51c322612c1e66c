"""dycl.compile's self-check (compiled vs eager PyTorch on the example inputs), its record in
the manifest, CompileMismatch on corrupted artifacts and wrong output structures, and
CompileError for internal errors of a stage."""

import hashlib
import json
import pickle
import re
import shutil

import numpy as np
import pytest
import torch

import dycl
from dycl.api import CompileError, CompileMismatch, check_against_eager, compare_outputs
from dycl.tools.dycl_compile import main as compile_main
from tests.api.models import (
    EarlyExit,
    GreedyDecoder,
    SkipGate,
    decoder_inputs,
    early_exit_inputs,
    seeded,
)


@pytest.fixture(scope="module")
def early_exit():
    """EarlyExit compiled without the self-check (the tests run it themselves)."""
    model = seeded(EarlyExit)
    inputs = early_exit_inputs()[0]
    return model, inputs, dycl.compile(model, inputs, progress=False, check=False)


# ------------------------------------------------------------------ the check in dycl.compile


def test_check_passes_and_is_recorded_after_save_and_load(tmp_path):
    model = seeded(EarlyExit)
    compiled = dycl.compile(model, early_exit_inputs()[1], progress=False)
    record = compiled.manifest["check"]
    assert record["ran"] is True and record["passed"] is True
    assert 0.0 <= record["max_abs_error"] <= 1e-4
    assert (record["rtol"], record["atol"]) == (1e-3, 1e-4)
    assert record["seconds"] >= record["eager_seconds"] + record["compiled_seconds"] > 0
    report = compiled.compile_report
    assert report["check_seconds"] == record["seconds"] and report["check"] == record
    assert report["total_seconds"] >= report["frontend_seconds"] + report["check_seconds"]

    loaded = dycl.load(compiled.save(tmp_path / "artifact"))  # verifies every sha256
    assert loaded.manifest["check"] == record
    on_disk = json.loads((tmp_path / "artifact" / "manifest.json").read_text())
    assert on_disk["check"] == record and list(on_disk)[-1] == "files"


def test_check_false_records_that_it_did_not_run(tmp_path, early_exit):
    _, _, compiled = early_exit
    assert compiled.manifest["check"] == {"ran": False}
    assert compiled.compile_report["check_seconds"] == 0.0
    assert dycl.load(compiled.save(tmp_path / "artifact")).manifest["check"] == {"ran": False}


# ------------------------------------------------------------------ CompileMismatch


def _scale_initializers(path, factor):
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(str(path))
    scaled = 0
    for init in proto.graph.initializer:
        array = numpy_helper.to_array(init)
        if array.dtype == np.float32 and array.ndim >= 1:
            init.CopyFrom(numpy_helper.from_array(array * factor, init.name))
            scaled += 1
    assert scaled, f"{path.name} has no float initializer to corrupt"
    onnx.save(proto, str(path))


def _fix_hashes(directory):
    manifest_path = directory / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for name in manifest["files"]:
        manifest["files"][name] = hashlib.sha256((directory / name).read_bytes()).hexdigest()
    manifest_path.write_text(json.dumps(manifest, indent=2))


def _last_subdnn_called(compiled, inputs):
    called = []

    def recording(name, call):
        def run(*args):
            called.append(name)
            return call(*args)

        return run

    compiled.rebind({n: recording(n, c) for n, c in compiled.subdnn_calls.items()})(*inputs)
    return called[-1]


def test_corrupted_subdnn_file_fails_the_check(tmp_path, early_exit):
    model, inputs, compiled = early_exit
    assert check_against_eager(model, compiled, inputs)["passed"]
    directory = tmp_path / "corrupted"
    shutil.copytree(compiled.save(tmp_path / "artifact"), directory)
    name = _last_subdnn_called(compiled, inputs)  # computes the logits, output[0]
    record = next(r for r in compiled.manifest["subdnns"] if r["name"] == name)
    _scale_initializers(directory / record["file"], 3.0)
    with pytest.raises(dycl.ArtifactError, match="sha256"):
        dycl.load(directory)
    _fix_hashes(directory)  # a test-only artifact: it loads, and computes something else
    corrupted = dycl.load(directory)
    with pytest.raises(CompileMismatch) as caught:
        check_against_eager(model, corrupted, inputs)
    err = caught.value
    assert isinstance(err, dycl.CompileMismatch) and isinstance(err, dycl.CompileError)
    assert err.stage == "check" and err.path == "output[0]"
    assert "output[0]: max abs error" in str(err) and "exceeds allclose(rtol=0.001, atol=0.0001)" in str(err)
    assert "on the example inputs" in str(err)


def test_corrupted_subdnn_in_memory_fails_the_check_on_shape(early_exit):
    model, inputs, compiled = early_exit
    name = _last_subdnn_called(compiled, inputs)
    call = compiled.subdnn_calls[name]
    corrupted = compiled.rebind({**compiled.subdnn_calls, name: lambda *args: [out[:, :7] for out in call(*args)]})
    with pytest.raises(CompileMismatch, match=r"output\[0\]: shape \(1, 7\) vs eager \(1, 10\)"):
        check_against_eager(model, corrupted, inputs)


def test_a_shorter_output_list_fails_the_check():
    model = seeded(GreedyDecoder)
    h, token = decoder_inputs()[0]  # decodes 6 tokens
    compiled = dycl.compile(model, (h, token), progress=False)
    assert compiled.manifest["check"]["passed"]

    def drops_a_token(*args):
        state, tokens = compiled(*args)
        return state, tokens[:-1]

    with pytest.raises(CompileMismatch, match=r"output\[1\]: list of length 5 vs eager 6") as caught:
        check_against_eager(model, drops_a_token, (h, token))
    assert caught.value.path == "output[1]"


@pytest.mark.parametrize(
    "corrupt, message",
    [
        (lambda out: list(out), r"^output: a list of length 2 vs eager a tuple of length 2"),
        (lambda out: (out[0],), r"^output: tuple of length 1 vs eager 2"),
        (lambda out: (out[0], 1 - out[1]), r"^output\[1\]: [01] vs eager [01]"),
        (lambda out: (out[0], bool(out[1])), r"^output\[1\]: a Python bool \(\w+\) vs eager a Python int \([01]\)"),
        (lambda out: (out[0], torch.tensor(out[1])), r"^output\[1\]: a tensor of shape \(\) vs eager a Python int"),
        (lambda out: (out[0].double(), out[1]), r"^output\[0\]: dtype torch.float64 vs eager torch.float32"),
        (lambda out: ((out[0],), out[1]), r"^output\[0\]: a tuple of length 1 vs eager a tensor of shape \(1, 10\)"),
    ],
    ids=["list-for-tuple", "length", "int-value", "bool-for-int", "tensor-for-int", "dtype", "nesting"],
)
def test_structural_differences_name_the_output(early_exit, corrupt, message):
    model, inputs, compiled = early_exit
    with pytest.raises(CompileMismatch) as caught:
        check_against_eager(model, lambda *args: corrupt(compiled(*args)), inputs)
    assert caught.value.stage == "check"
    assert re.search(message, f"{caught.value.path}: {caught.value.reason}"), caught.value.reason


def test_eager_and_compiled_get_their_own_clones_of_the_inputs():
    class Doubling(torch.nn.Module):
        def forward(self, x):
            x.mul_(2.0)  # writes into its input
            return x + 1.0

    x = torch.ones(2, 3)
    record = check_against_eager(Doubling(), lambda x: x * 2.0 + 1.0, (x,))
    assert record["passed"] and record["max_abs_error"] == 0.0
    assert torch.equal(x, torch.ones(2, 3))


def test_compare_outputs_tolerance_nan_inf_and_numpy():
    e = torch.tensor([1.0, 1000.0, float("nan"), float("inf")])
    error, difference = compare_outputs(e, e + torch.tensor([5e-5, 0.5, 0.0, 0.0]))
    assert difference is None and error == pytest.approx(0.5)  # 0.5 <= 1e-4 + 1e-3 * 1000
    _, difference = compare_outputs(e, e + torch.tensor([2e-3, 0.0, 0.0, 0.0]))  # > 1e-4 + 1e-3 * 1
    assert difference[0] == "output" and "max abs error 0.002 exceeds" in difference[1]
    _, difference = compare_outputs(e, torch.tensor([1.0, 1000.0, 0.0, float("inf")]))
    assert difference is not None and "index (2,)" in difference[1]  # NaN on one side only
    _, difference = compare_outputs(e, torch.tensor([1.0, 1000.0, float("nan"), 1e30]))
    assert difference is not None and "index (3,)" in difference[1]  # inf matches only inf
    error, difference = compare_outputs((e, [3, True]), (e.numpy(), [np.int64(3), np.bool_(True)]))
    assert difference is None and error == 0.0
    _, difference = compare_outputs(torch.tensor([1, 2, 3]), torch.tensor([1, 5, 3]))
    assert difference == ("output", "1 of 3 elements differ (first at index (1,): 5 vs eager 2)")
    _, difference = compare_outputs(0.5, 0.6)
    assert difference[0] == "output" and "abs error 0.1 exceeds" in difference[1]


def test_errors_pickle():
    for err in (CompileMismatch("output[1]", "shape (1, 7) vs eager (1, 3)"), CompileError("passes", "boom")):
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is type(err) and str(again) == str(err) and again.stage == err.stage


# ------------------------------------------------------------------ errors of the stages


def _raise(error):
    def fail(*args, **kwargs):
        raise error

    return fail


def _patch_stage(monkeypatch, stage, failure):
    import dycl.api
    import dycl.backends
    import dycl.codegen
    import dycl.frontend
    from dycl.passes.const_prop import ConstPropPass

    target = {
        "frontend": (dycl.frontend, "import_module"),
        "passes": (ConstPropPass, "apply"),  # dycl-pipeline's first step
        "codegen": (dycl.codegen, "generate_host"),
        "backend": (dycl.backends, "compile_subdnns"),
        "check": (dycl.api, "compare_outputs"),
    }[stage]
    monkeypatch.setattr(*target, failure)


@pytest.mark.parametrize("stage", ["frontend", "passes", "codegen", "backend", "check"])
def test_internal_errors_become_compile_errors_naming_the_stage(monkeypatch, stage):
    original = KeyError("no_such_value") if stage != "check" else TypeError("unsupported operand")
    _patch_stage(monkeypatch, stage, _raise(original))
    with pytest.raises(CompileError) as caught:
        dycl.compile(seeded(SkipGate), (torch.randn(1, 8),), progress=False)
    err = caught.value
    assert type(err) is CompileError and err.stage == stage and err.__cause__ is original
    expected = "KeyError: 'no_such_value'" if stage != "check" else "TypeError: unsupported operand"
    assert str(err) == f"dycl.compile failed in the {stage} stage: {expected}"


def test_dycl_errors_pass_through_unchanged(monkeypatch):
    from dycl.backends.errors import BackendError
    from dycl.frontend.errors import FrontendError

    for stage, original in (
        ("frontend", FrontendError("`while` loop without a bound", file="m.py", line=3)),
        ("backend", BackendError("onnxruntime", "subdnn_0", "no kernel", op="torch.aten.foo")),
    ):
        with monkeypatch.context() as patch:
            _patch_stage(patch, stage, _raise(original))
            with pytest.raises(type(original)) as caught:
                dycl.compile(seeded(SkipGate), (torch.randn(1, 8),), progress=False)
            assert caught.value is original and not isinstance(caught.value, CompileError)


def test_bad_arguments_stay_type_errors():
    with pytest.raises(ValueError, match="unknown backend 'xla'"):
        dycl.compile(seeded(SkipGate), (torch.randn(1, 8),), backend="xla", progress=False)


# ------------------------------------------------------------------ dycl-compile


def test_cli_self_check_by_default_and_no_check(tmp_path, capsys):
    spec = ["tests.api.models:skip_gate", "--example", "x: f32[1,8] = randn"]
    assert compile_main([*spec, "-o", str(tmp_path / "a"), "--check"]) == 0
    out = capsys.readouterr().out
    assert "self-check: same outputs as eager PyTorch on the example inputs" in out
    assert "check: 1 input sets, max abs error" in out  # --check: compare and time, as before
    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["check"]["passed"] is True
    assert compile_main([*spec, "-o", str(tmp_path / "b"), "--no-check"]) == 0
    assert "self-check" not in capsys.readouterr().out
    assert json.loads((tmp_path / "b" / "manifest.json").read_text())["check"] == {"ran": False}


def test_cli_mismatch_is_one_line_and_exit_1(tmp_path, capsys, monkeypatch):
    import dycl.api

    monkeypatch.setattr(dycl.api, "compare_outputs", lambda *a, **k: (0.41, ("output[1][0]", "shape (1, 7) vs eager (1, 3)")))
    code = compile_main(["tests.api.models:skip_gate", "--example", "x: f32[1,8] = randn", "-o", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and err.count("\n") == 1
    assert err == (
        "dycl-compile: error: check failed: the compiled model differs from eager PyTorch on the example inputs: "
        "output[1][0]: shape (1, 7) vs eager (1, 3) (--no-check skips the self-check)\n"
    )
    assert not (tmp_path / "a").exists()
