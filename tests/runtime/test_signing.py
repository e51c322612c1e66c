"""Signed artifacts (OpenSSF model-signing): `dycl.load(dir, verify_key=...)` refuses an
artifact that is unsigned, signed with another key, or changed after signing, before any of
its code runs. The attacks are the ones a sha256 manifest alone cannot stop: whoever
rewrites a file rewrites its record in manifest.json too."""

import base64
import hashlib
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dycl
from dycl.runtime import ArtifactError
from dycl.runtime.signing import SIGNATURE
from tests.api.shared import BACKENDS, NO_TORCH_PRELUDE, needs_signing, write_key_pair
from tests.foundation.samples import inputs


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    from cryptography.hazmat.primitives.asymmetric import ec

    directory = tmp_path_factory.mktemp("keys")
    return {"ours": write_key_pair(directory, "ours", ec.SECP256R1), "theirs": write_key_pair(directory, "theirs", ec.SECP384R1)}


@pytest.fixture(params=BACKENDS)
def compiled(request, compiled_samples):
    return compiled_samples("early_exit", request.param)


def rewrite(path, name, change):
    """What an attacker who can write the directory does: change a file and its sha256 in
    manifest.json, so that the manifest check alone passes."""
    target = path / name
    data = change(target.read_bytes())
    target.unlink()  # a new file: one the test process loaded (a TVM library) stays mapped intact
    target.write_bytes(data)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["files"][name] = hashlib.sha256(target.read_bytes()).hexdigest()
    (path / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def leave_a_marker(marker):
    return lambda source: source + f"\nopen({str(marker)!r}, 'w').close()\n".encode()


@needs_signing
def test_a_signed_artifact_loads_and_runs_exactly(compiled, keys, tmp_path):
    private, public = keys["ours"]
    path = compiled.save(tmp_path / "artifact", sign_key=private)
    assert (path / SIGNATURE).is_file()
    assert set(json.loads((path / "manifest.json").read_text())["files"]) == {p.name for p in path.iterdir()} - {
        "manifest.json", SIGNATURE}  # the signature is not one of the artifact's files
    loaded = dycl.load(path, verify_key=public)
    xs = [x.numpy() for x in inputs(8)]
    results = [loaded(x) for x in xs]
    assert {r[1] for r in results} == {0, 1}  # both exits
    for x, result in zip(xs, results):
        expected = compiled(x)
        np.testing.assert_array_equal(result[0], expected[0])
        assert result[1] == expected[1]
    dycl.load(path)  # a signed artifact loads without a key too


@needs_signing
def test_an_unsigned_artifact_is_refused_given_a_key(compiled, keys, tmp_path):
    path = compiled.save(tmp_path / "artifact")
    with pytest.raises(ArtifactError, match=rf"refusing to load .*: it is not signed \(no {SIGNATURE}\)"):
        dycl.load(path, verify_key=keys["ours"][1])


@needs_signing
def test_an_artifact_signed_with_another_key_is_refused(compiled, keys, tmp_path):
    path = compiled.save(tmp_path / "artifact", sign_key=keys["theirs"][0])
    dycl.load(path, verify_key=keys["theirs"][1])
    with pytest.raises(ArtifactError, match="it was signed with another key than .*ours.pub"):
        dycl.load(path, verify_key=keys["ours"][1])


def _tamper(path, what, marker):
    if what == "host.py":
        rewrite(path, "host.py", lambda source: source + b"\n# changed\n")
    elif what == "manifest":
        manifest = json.loads((path / "manifest.json").read_text())
        manifest["runtime"] = {"threads": 1}
        (path / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    elif what == "sub-DNN":
        name = next(p.name for p in path.iterdir() if p.name.startswith("subdnn_1"))
        rewrite(path, name, lambda data: data[:100] + bytes([data[100] ^ 1]) + data[101:])
    elif what == "signature":  # the statement re-made for a changed host.py, the old signature kept
        rewrite(path, "host.py", lambda source: source + b"\n# changed\n")
        bundle = json.loads((path / SIGNATURE).read_text())
        statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
        for resource in statement["predicate"]["resources"]:
            resource["digest"] = hashlib.sha256((path / resource["name"]).read_bytes()).hexdigest()
        bundle["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
        (path / SIGNATURE).write_text(json.dumps(bundle))
    elif what == "extra file":
        (path / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")


TAMPERING = {
    "host.py": "its files differ from what was signed: host.py, manifest.json changed$",
    "manifest": "its files differ from what was signed: manifest.json changed$",
    "sub-DNN": r"its files differ from what was signed: manifest.json, subdnn_1\.(onnx|so) changed$",
    "signature": r"its signature is not valid for .*ours.pub \(model.sig was changed after signing\)",
    "extra file": "its files differ from what was signed: sitecustomize.py not signed",
}


@needs_signing
@pytest.mark.parametrize("what", TAMPERING)
def test_a_signed_artifact_changed_after_signing_is_refused_before_its_code_runs(compiled, keys, tmp_path, what):
    private, public = keys["ours"]
    path = compiled.save(tmp_path / "artifact")
    marker = tmp_path / "host.py ran"
    rewrite(path, "host.py", leave_a_marker(marker))  # a host program that leaves a trace when it runs
    dycl.sign(path, private)
    dycl.load(path, verify_key=public)
    assert marker.exists()  # signed as it is, it loads (and so runs host.py)
    marker.unlink()

    _tamper(path, what, marker)
    if what in ("host.py", "manifest", "signature"):
        dycl.load(path)  # the sha256 records alone let such a change through
        assert marker.exists()
        marker.unlink()
    with pytest.raises(ArtifactError, match=TAMPERING[what]) as refused:
        dycl.load(path, verify_key=public)
    assert str(refused.value).startswith(f"refusing to load {path}")
    assert not marker.exists()  # host.py never ran


@needs_signing
def test_signing_covers_exactly_the_artifact(compiled, keys, tmp_path):
    private, public = keys["ours"]
    path = compiled.save(tmp_path / "artifact")
    (path / "notes.txt").write_text("not part of the artifact")
    with pytest.raises(ArtifactError, match=r"holds files that are not part of the artifact \(notes.txt\)"):
        dycl.sign(path, private)
    assert not (path / SIGNATURE).exists()
    (path / "notes.txt").unlink()
    dycl.sign(path, private)
    statement = json.loads(base64.b64decode(json.loads((path / SIGNATURE).read_text())["dsseEnvelope"]["payload"]))
    signed = {r["name"]: r["digest"] for r in statement["predicate"]["resources"]}
    assert signed == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in path.iterdir() if p.name != SIGNATURE}
    assert "manifest.json" in signed and statement["predicate"]["serialization"]["ignore_paths"] == [SIGNATURE]
    with pytest.raises(ArtifactError, match="cannot sign .*: no such private key file"):
        dycl.sign(path, tmp_path / "missing.pem")
    with pytest.raises(ArtifactError, match="cannot sign .*: not an elliptic-curve private key"):
        dycl.sign(path, public)


@needs_signing
def test_save_keeps_a_signature_only_for_the_files_it_signed(compiled, keys, tmp_path):
    private, public = keys["ours"]
    path = compiled.save(tmp_path / "artifact", sign_key=private)
    copy = dycl.load(path, verify_key=public).save(tmp_path / "copy")
    dycl.load(copy, verify_key=public)  # the same bytes, the same signature
    compiled.save(path)  # saved again unsigned over the signed directory: no stale signature stays
    assert not (path / SIGNATURE).exists()


def test_without_model_signing_only_verification_needs_it(compiled_samples, tmp_path):
    path = compiled_samples("early_exit").save(tmp_path / "artifact")
    (tmp_path / "key.pub").write_text("unused")
    script = NO_TORCH_PRELUDE.replace('"onnxscript")', '"onnxscript", "model_signing")') + textwrap.dedent(f"""
        import dycl
        dycl.load({str(path)!r})  # no signature asked for: no model-signing needed
        try:
            dycl.load({str(path)!r}, verify_key={str(tmp_path / "key.pub")!r})
        except dycl.ArtifactError as err:
            print(err)
        else:
            raise AssertionError("loaded without checking the signature")
        assert "torch" not in sys.modules
    """)
    assert '"model_signing"' in script
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "cannot verify its signature: the optional package model-signing is not installed (pip install 'dycl[sign]'" in run.stdout


@needs_signing
def test_verifying_needs_no_torch(compiled_samples, keys, tmp_path):
    private, public = keys["ours"]
    path = compiled_samples("early_exit").save(tmp_path / "artifact", sign_key=private)
    script = NO_TORCH_PRELUDE + textwrap.dedent(f"""
        import numpy as np, dycl
        model = dycl.load({str(path)!r}, verify_key={str(public)!r})
        model(np.zeros((1, 4), np.float32))
        assert not any(m in sys.modules for m in ("torch", "xdsl", "torch_mlir"))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


@needs_signing
def test_a_signature_that_leaves_out_the_manifest_is_refused(compiled_samples, keys, tmp_path):
    from model_signing import hashing, signing

    private, public = keys["ours"]
    path = compiled_samples("early_exit").save(tmp_path / "artifact")
    # our key, but not a DyCL signature: made with model-signing itself, ignoring manifest.json
    signing.Config().use_elliptic_key_signer(private_key=private).set_hashing_config(
        hashing.Config().set_ignored_paths(paths=[SIGNATURE, "manifest.json"])
    ).sign(path, path / SIGNATURE)
    with pytest.raises(ArtifactError, match="its signature does not cover manifest.json"):
        dycl.load(path, verify_key=public)


@needs_signing
def test_a_signature_covers_the_state_it_was_made_with(keys, tmp_path):
    """A stateful model's save writes its current state: a signature of the old state must not
    stay beside it (it would refuse the artifact, or worse, vouch for state it never saw)."""
    import torch

    from tests.frontend.state_models import CountsAcrossCalls

    private, public = keys["ours"]
    compiled = dycl.compile(CountsAcrossCalls().eval(), (torch.ones(1, 3),), progress=False)
    signed = compiled.save(tmp_path / "signed", sign_key=private)
    loaded = dycl.load(signed, verify_key=public)
    assert loaded.state["calls"] == 0
    np.testing.assert_array_equal(loaded(np.ones((1, 3), np.float32)), np.ones((1, 3), np.float32))
    loaded.save(signed)  # the state changed (calls == 1): the old signature goes
    assert not (signed / SIGNATURE).exists()
    with pytest.raises(ArtifactError, match="not signed"):
        dycl.load(signed, verify_key=public)
    loaded.save(signed, sign_key=private)  # signed again, over the new state
    again = dycl.load(signed, verify_key=public)
    assert again.state["calls"] == 1
    np.testing.assert_array_equal(again(np.ones((1, 3), np.float32)), 2 * np.ones((1, 3), np.float32))
    unchanged = dycl.load(signed, verify_key=public)
    unchanged.save(tmp_path / "copy")  # an unchanged state keeps the signature in a copy
    dycl.load(tmp_path / "copy", verify_key=public)
