"""A compile worker: `python -m dycl.backends.worker`, one job at a time over pipes.

Workers are plain subprocesses rather than multiprocessing children, so they never
re-import the user's `__main__` (a script that calls `dycl.compile` without an
`if __name__ == "__main__":` guard would otherwise run again inside every worker).

Protocol (`dycl.backends.jobs` frames): the parent writes `(job_id, CompileJob)` to stdin;
the worker answers `(job_id, ok, result_or_exception)` on its original stdout. Anything
the compilers print goes to stderr.
"""

from __future__ import annotations

import os
import pickle
import sys

from dycl.backends.jobs import read_frame, write_frame


def main() -> None:
    # Keep the protocol stream for ourselves; exporters print (even from C) to fd 1.
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    protocol_in = sys.stdin.buffer

    while True:
        frame = read_frame(protocol_in)
        if frame is None:
            return
        job_id, job = frame
        try:
            write_frame(protocol_out, (job_id, True, job.run()))
        except Exception as err:  # sent back and raised in the parent
            try:
                pickle.dumps(err)
            except Exception:
                err = RuntimeError(f"{type(err).__name__}: {err}")
            write_frame(protocol_out, (job_id, False, err))


if __name__ == "__main__":
    main()
