"""One sub-DNN to compile, and the pipe framing that carries it to a pool worker.

A leaf module: the driver writes jobs, the worker (`python -m dycl.backends.worker`)
reads and runs them, and neither imports the other.

Framing: an 8-byte little-endian length, then that many bytes of pickle.
"""

from __future__ import annotations

import pickle
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import numpy as np

    from dycl.backends.backend import Backend
    from dycl.backends.compiled import CompiledSubDNN
    from dycl.backends.subdnn import SubDNN


@dataclass(frozen=True)
class CompileJob:
    backend: Backend
    subdnn: SubDNN
    weights: Mapping[str, np.ndarray]
    """Only the weights this sub-DNN reads (the job crosses a pipe)."""

    def run(self) -> CompiledSubDNN:
        start = time.perf_counter()
        compiled = self.backend.compile(self.subdnn, self.weights)
        compiled.seconds = time.perf_counter() - start
        return compiled


_HEADER = struct.Struct("<Q")


def write_frame(stream: BinaryIO, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def read_frame(stream: BinaryIO) -> Any:
    """The next object, or None at the end of the stream (the writer closed or died)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)
