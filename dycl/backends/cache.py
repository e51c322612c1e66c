"""Content-addressed cache of compiled sub-DNNs.

Key: sha256 of the sub-DNN's IR (name-neutral), the bytes of its weights, the backend,
its options, the versions of the tools that compiled it and the source of DyCL's own
backend code (a fix there must not be hidden by an artifact compiled before it). A hit
costs one directory read, so recompiling an unchanged model is near-instant.

A library built with the records of a tuning database (a `database` option) is also
keyed on the database's content: after more tuning, its libraries are built again
rather than served stale.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dycl.backends.compiled import CompiledSubDNN

CACHE_FORMAT = 1


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("DYCL_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "dycl"


def _tool_versions(backend: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    from dycl.backends import backend_class

    parts = []
    for name in backend_class(backend).tool_packages:
        try:
            parts.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name}=?")
    return ",".join(parts)


@functools.lru_cache(maxsize=None)
def _backend_source_digest() -> str:
    """sha256 of the modules that turn a sub-DNN into a compiled file."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def database_digest(directory: str | os.PathLike) -> str:
    """sha256 of a tuning database's files (empty when there is none)."""
    digest = hashlib.sha256()
    for path in sorted(Path(directory).glob("database_*.json")):
        stat = path.stat()
        digest.update(path.name.encode())
        digest.update(_file_digest(str(path), stat.st_size, stat.st_mtime_ns).encode())
    return digest.hexdigest()


@functools.lru_cache(maxsize=64)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    """A file's sha256, read once per (size, mtime): every sub-DNN of a network asks."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def cache_key(content_key: str, backend: str, options: Mapping[str, Any]) -> str:
    database = options.get("database")
    digest = hashlib.sha256()
    for part in (
        f"dycl-cache-{CACHE_FORMAT}",
        content_key,
        backend,
        json.dumps(dict(options), sort_keys=True, default=str),
        _tool_versions(backend),
        _backend_source_digest(),
        database_digest(database) if database else "",
    ):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class CompileCache:
    def __init__(self, root: Path, enabled: bool = True):
        self.root = root
        self.enabled = enabled

    def _entry(self, backend: str, key: str) -> Path:
        return self.root / backend / key[:2] / key

    def get(self, backend: str, key: str, name: str) -> CompiledSubDNN | None:
        if not self.enabled:
            return None
        entry = self._entry(backend, key)
        try:
            record = json.loads((entry / "entry.json").read_text())
            files = {}
            for stored, digest in record["files"].items():
                data = (entry / stored).read_bytes()
                if hashlib.sha256(data).hexdigest() != digest:
                    return None  # a damaged entry is a miss, never a wrong answer
                files[stored] = data
        except (OSError, ValueError, KeyError):
            return None
        # Stored under the name it was compiled with; the artifact wants this sub-DNN's name.
        renamed = {f"{name}{Path(stored).suffix}": data for stored, data in files.items()}
        meta = dict(record["meta"])
        if "file" in meta:
            meta["file"] = f"{name}{Path(meta['file']).suffix}"
        return CompiledSubDNN(name=name, backend=backend, files=renamed, meta=meta, cached=True)

    def put(self, key: str, compiled: CompiledSubDNN) -> None:
        if not self.enabled:
            return
        entry = self._entry(compiled.backend, key)
        if entry.exists():
            return
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=entry.parent))
        try:
            digests = {}
            for stored, data in compiled.files.items():
                (staging / stored).write_bytes(data)
                digests[stored] = hashlib.sha256(data).hexdigest()
            record = {"files": digests, "meta": compiled.meta}
            (staging / "entry.json").write_text(json.dumps(record))
            os.rename(staging, entry)  # atomic: readers see a whole entry or none
        except OSError:
            pass  # another process won the race, or the disk is full: caching is optional
        finally:
            shutil.rmtree(staging, ignore_errors=True)
