"""The compile cache is shared between processes (pytest-xdist workers, two dycl-compile
runs on one machine): writers of one entry race, and readers see a whole entry or none."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from dycl.backends.cache import CompileCache
from dycl.backends.compiled import CompiledSubDNN

KEY = "ab" + "0" * 62
FILES = {"subdnn_3.onnx": bytes(range(256)) * 8192}  # 2 MiB: the writes overlap


def compiled() -> CompiledSubDNN:
    return CompiledSubDNN("subdnn_3", "onnxruntime", dict(FILES), {"file": "subdnn_3.onnx"})


def test_racing_writers_and_readers_of_one_entry(tmp_path):
    cache = CompileCache(tmp_path)
    writers, readers = 4, 4
    start = threading.Barrier(writers + readers)

    def write() -> None:
        start.wait()
        cache.put(KEY, compiled())

    def read() -> list:
        start.wait()
        return [cache.get("onnxruntime", KEY, "subdnn_7") for _ in range(200)]

    with ThreadPoolExecutor(writers + readers) as pool:
        written = [pool.submit(write) for _ in range(writers)]
        seen = [pool.submit(read) for _ in range(readers)]
        for future in written:
            future.result()  # no writer raised
        seen = [hit for future in seen for hit in future.result()]

    # A reader saw nothing or the whole entry, under the name it asked for.
    for hit in seen:
        assert hit is None or (hit.cached and hit.files == {"subdnn_7.onnx": FILES["subdnn_3.onnx"]}), hit
    hit = cache.get("onnxruntime", KEY, "subdnn_7")
    assert hit is not None and hit.meta == {"file": "subdnn_7.onnx"}
    # one entry, and no writer's staging directory left behind
    assert [p.name for p in (tmp_path / "onnxruntime" / "ab").iterdir()] == [KEY]
