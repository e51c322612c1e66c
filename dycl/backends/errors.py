"""The one error a backend raises: which sub-DNN, which op, and why."""

from __future__ import annotations


class BackendError(RuntimeError):
    """A sub-DNN that a backend cannot compile.

    `op` is the torch-dialect op name (`torch.aten.foo`) when one op is to blame.
    """

    def __init__(self, backend: str, subdnn: str, reason: str, op: str | None = None):
        self.backend = backend
        self.subdnn = subdnn
        self.op = op
        self.reason = reason
        where = f"sub-DNN @{subdnn}"
        what = f"op {op} is not supported: {reason}" if op else reason
        super().__init__(f"{backend} backend, {where}: {what}")

    def __reduce__(self):  # cross the process-pool boundary intact
        return (BackendError, (self.backend, self.subdnn, self.reason, self.op))
