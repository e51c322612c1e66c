"""Signed artifacts, with the OpenSSF `model-signing` library (the optional extra `sign`).

Loading an artifact runs its code: host.py, and for TVM the sub-DNNs' shared libraries.
The sha256 records in manifest.json catch corruption, but whoever can write the directory
can rewrite the manifest too. A signature made with a private key catches that:

```
artifact/
  manifest.json, host.py, subdnn_0.onnx ...   as `dycl.runtime.artifact` writes them
  model.sig                                   a Sigstore bundle: a DSSE envelope around an
                                              in-toto statement of every other file's sha256
```
`model.sig` is model-signing's own format and default name, so its command line verifies
an artifact too (`model_signing verify key artifact/ --signature artifact/model.sig
--public_key key.pub`). The signature covers every file in the directory but itself,
manifest.json included; the manifest's records are checked after it, as without a
signature. Keys are elliptic-curve keys in PEM (P-256, P-384 or P-521), which
model-signing signs with offline.

`verify_artifact` hashes files and checks the signature; it opens nothing of the artifact
otherwise, so `dycl.load(dir, verify_key=...)` runs it before any file is imported or
executed. `model_signing` is imported here only when a signature is made or checked.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

from dycl.runtime.artifact import MANIFEST, ArtifactError, read_manifest

SIGNATURE = "model.sig"
"""The signature file in an artifact directory (model-signing's default name)."""

INSTALL_HINT = "pip install 'dycl[sign]'"


def sign_artifact(directory: str | os.PathLike, private_key: str | os.PathLike) -> Path:
    """Sign the artifact in `directory` with an elliptic-curve private key (an unencrypted
    PEM file), writing `model.sig` beside its files.

    The artifact must verify first (`read_manifest`), and the directory must hold nothing
    but its files: a signature covers every file in it."""
    root = Path(directory)
    manifest = read_manifest(root)
    strangers = sorted({p.name for p in root.iterdir()} - {*manifest["files"], MANIFEST, SIGNATURE})
    if strangers:
        raise ArtifactError(
            f"{root}: holds files that are not part of the artifact ({', '.join(strangers)}); a signature "
            "covers every file in the directory: remove them, or save the artifact to an empty directory"
        )
    model_signing = _model_signing(root, "sign it")
    try:
        config = model_signing.signing.Config().use_elliptic_key_signer(private_key=Path(private_key))
    except Exception as err:
        raise ArtifactError(f"cannot sign {root} with {private_key}: {_key_problem(err, 'private')}") from None
    config.set_hashing_config(model_signing.hashing.Config().set_ignored_paths(paths=[SIGNATURE], ignore_git_paths=False))
    config.sign(root, root / SIGNATURE)
    return root


def check_private_key(private_key: str | os.PathLike) -> None:
    """Raise `ArtifactError` unless `private_key` is a key `sign_artifact` can sign with
    (so that a command line fails before a long compile, not after it)."""
    model_signing = _model_signing(Path(private_key), "sign with it")
    try:
        model_signing.signing.Config().use_elliptic_key_signer(private_key=Path(private_key))
    except Exception as err:
        raise ArtifactError(f"cannot sign with {private_key}: {_key_problem(err, 'private')}") from None


def verify_artifact(directory: str | os.PathLike, public_key: str | os.PathLike) -> None:
    """Check that `directory` holds exactly the files a holder of `public_key`'s private
    key signed, manifest.json among them; raise `ArtifactError` saying what failed."""
    root = Path(directory)
    refuse = f"refusing to load {root}"
    if not root.is_dir():
        raise ArtifactError(f"{root}: not a DyCL artifact directory (no such directory)")
    model_signing = _model_signing(root, "verify its signature")
    signature = root / SIGNATURE
    if not signature.is_file():
        raise ArtifactError(f"{refuse}: it is not signed (no {SIGNATURE}), and a verify key was given")
    try:
        config = model_signing.verifying.Config().use_elliptic_key_verifier(public_key=Path(public_key))
    except Exception as err:
        raise ArtifactError(f"{refuse}: cannot verify with {public_key}: {_key_problem(err, 'public')}") from None
    try:
        config.verify(root, signature)
    except Exception as err:
        raise ArtifactError(f"{refuse}: {_verification_problem(err, public_key)}") from None
    covered = _signed_names(signature)
    if MANIFEST not in covered:  # signed by this key, but not as an artifact (another tool's ignore list)
        raise ArtifactError(f"{refuse}: its signature does not cover {MANIFEST}")


# ------------------------------------------------------------------------------ helpers


def _model_signing(root: Path, action: str):
    """The `model_signing` package, or a clear error naming the extra that installs it."""
    try:
        import model_signing
    except ImportError as err:
        raise ArtifactError(
            f"{root}: cannot {action}: the optional package model-signing is not installed "
            f"({INSTALL_HINT}; {err})"
        ) from None
    return model_signing


def _key_problem(err: Exception, kind: str) -> str:
    if isinstance(err, FileNotFoundError):
        return f"no such {kind} key file"
    if isinstance(err, TypeError):  # cryptography: an encrypted key
        return f"{err} (DyCL signs with unencrypted keys)"
    if isinstance(err, ValueError):
        return f"not an elliptic-curve {kind} key in PEM (P-256, P-384 or P-521): {err}"
    return f"{type(err).__name__}: {err}"


def _verification_problem(err: Exception, public_key: str | os.PathLike) -> str:
    """model-signing's reason, in terms of the artifact's files."""
    text = str(err)
    if text.startswith("Key mismatch"):
        return f"it was signed with another key than {public_key}"
    if type(err).__name__ == "InvalidSignature":
        return f"its signature is not valid for {public_key} ({SIGNATURE} was changed after signing)"
    if text.startswith("Signature mismatch"):
        # model-signing lists the differences as the repr of a list of strings: a name's
        # quotes may come escaped
        changed = re.findall(r"Hash mismatch for \\?'([^'\\]+)\\?'", text)
        extra = _listed(text, "Extra files found in model")
        missing = _listed(text, "Missing files in model")
        parts = [f"{', '.join(changed)} changed" if changed else "",
                 f"{', '.join(extra)} not signed" if extra else "",
                 f"{', '.join(missing)} missing" if missing else ""]
        return "its files differ from what was signed: " + ("; ".join(p for p in parts if p) or text[:300])
    return f"unreadable signature {SIGNATURE} ({type(err).__name__}: {text.strip()[:200]})"


def _listed(text: str, lead: str) -> list[str]:
    match = re.search(re.escape(lead) + r" \\?'[^']*\\?': ([^\"'\]]+)", text)
    return [name.strip(" \\") for name in match.group(1).split(",")] if match else []


def _signed_names(signature: Path) -> set[str]:
    """The files the (verified) in-toto statement in `signature` lists."""
    try:
        bundle = json.loads(signature.read_text())
        statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
        return {resource["name"] for resource in statement["predicate"]["resources"]}
    except (OSError, ValueError, KeyError, TypeError):
        return set()
