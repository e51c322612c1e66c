"""The artifact directory: files, `manifest.json`, and their integrity check.

```
artifact/
  manifest.json      format version, backend, input signature, output tree, sub-DNNs,
                     runtime options, dycl.compile's self-check ("check"), and the
                     sha256 of every other file
  host.py            generated host program (numpy + dycl.runtime)
  constants.npz      tensors the host reads directly (only when there are any)
  state_initial.npz  a stateful model's state when compiled, and state.npz its state when
  state.npz          saved (only for models that keep state across calls: runtime/state.py)
  subdnn_0.onnx ...  one compiled file per sub-DNN (weights inside)
  model.sig          a signature of all the above, when signed (`dycl.runtime.signing`)
```
Loading verifies every listed file's sha256 before anything is executed or opened (and,
given a verify key, the signature before that).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FORMAT = "dycl-artifact"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"


class ArtifactError(RuntimeError):
    """An artifact that cannot be loaded or signed: missing, tampered, truncated, of an
    unknown format, or (with a verify key) unsigned or not matching its signature."""


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def write_artifact(directory: str | os.PathLike, manifest: Mapping[str, Any], files: Mapping[str, bytes]) -> Path:
    """Write `files` and a manifest that records their hashes."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    hashes = {}
    for name, data in files.items():
        _check_file_name(name)
        (root / name).write_bytes(data)
        hashes[name] = hashlib.sha256(data).hexdigest()
    record = {"format": FORMAT, "format_version": FORMAT_VERSION, **manifest, "files": hashes}
    (root / MANIFEST).write_text(json.dumps(record, indent=2) + "\n")
    return root


def update_manifest(directory: str | os.PathLike, fields: Mapping[str, Any]) -> dict[str, Any]:
    """Add or replace top-level manifest fields that describe the artifact without changing
    its files (e.g. `dycl.compile`'s self-check record); the file hashes stay as they are.
    Returns the new manifest."""
    reserved = sorted({"format", "format_version", "files"} & set(fields))
    if reserved:
        raise ValueError(f"update_manifest cannot change {reserved}")
    path = Path(directory) / MANIFEST
    manifest = json.loads(path.read_text())
    files = manifest.pop("files")
    manifest.update(json.loads(json.dumps(dict(fields))))  # what a reader will see
    manifest["files"] = files  # last, as write_artifact writes it
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def replace_file(directory: str | os.PathLike, name: str, data: bytes) -> dict[str, Any]:
    """Write a new version of one listed file (the model's current state, at save) and
    record its sha256. Returns the new manifest."""
    _check_file_name(name)
    root = Path(directory)
    path = root / MANIFEST
    manifest = json.loads(path.read_text())
    if name not in manifest.get("files", {}):
        raise ArtifactError(f"{root}: {name} is not a file of this artifact")
    (root / name).write_bytes(data)
    manifest["files"][name] = hashlib.sha256(data).hexdigest()
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def read_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    """The manifest, after checking the format and every file's sha256."""
    root = Path(directory)
    if not root.is_dir():
        raise ArtifactError(f"{root}: not a DyCL artifact directory (no such directory)")
    try:
        manifest = json.loads((root / MANIFEST).read_text())
    except FileNotFoundError:
        raise ArtifactError(f"{root}: not a DyCL artifact (no {MANIFEST})") from None
    except (OSError, ValueError) as err:
        raise ArtifactError(f"{root / MANIFEST}: unreadable manifest ({err})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtifactError(f"{root / MANIFEST}: not a DyCL artifact manifest")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise ArtifactError(
            f"{root}: artifact format version {version}, this DyCL reads version {FORMAT_VERSION}; recompile"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise ArtifactError(f"{root / MANIFEST}: no file hashes; refusing to load an unverifiable artifact")
    for name, expected in files.items():
        _check_file_name(name)
        path = root / name
        if not path.is_file():
            raise ArtifactError(f"{root}: artifact file {name} is missing")
        actual = sha256_file(path)
        if actual != expected:
            raise ArtifactError(
                f"{root}: artifact file {name} does not match its sha256 in {MANIFEST} "
                f"(tampered or truncated; expected {expected[:12]}..., found {actual[:12]}...); refusing to load"
            )
    return manifest


def _check_file_name(name: str) -> None:
    # Manifest entries name files *inside* the artifact; never follow a path out of it.
    if not name or "/" in name or "\\" in name or name.startswith(".") or name == MANIFEST:
        raise ArtifactError(f"bad artifact file name {name!r}")
