"""A compile worker: `python -m dycl.backends.worker`, one job at a time over pipes.

Workers are plain subprocesses rather than multiprocessing children, so they never
re-import the user's `__main__` (a script that calls `dycl.compile` without an
`if __name__ == "__main__":` guard would otherwise run again inside every worker).

Protocol: the parent writes pickled `(job_id, args)` frames to stdin; the worker answers
with pickled `(job_id, ok, result_or_exception)` frames on its original stdout. Anything the
compilers print goes to stderr.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys

_HEADER = struct.Struct("<Q")


def write_frame(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def read_frame(stream):
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def main() -> None:
    # Keep the protocol stream for ourselves; exporters print (even from C) to fd 1.
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    protocol_in = sys.stdin.buffer

    from dycl.backends.driver import _compile_one

    while True:
        frame = read_frame(protocol_in)
        if frame is None:
            return
        job_id, args = frame
        try:
            write_frame(protocol_out, (job_id, True, _compile_one(*args)))
        except Exception as err:  # sent back and raised in the parent
            try:
                pickle.dumps(err)
            except Exception:
                err = RuntimeError(f"{type(err).__name__}: {err}")
            write_frame(protocol_out, (job_id, False, err))


if __name__ == "__main__":
    main()
