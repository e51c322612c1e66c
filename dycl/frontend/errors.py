"""The one error the frontend raises for programs it cannot compile."""

from __future__ import annotations


class FrontendError(Exception):
    """A construct of the model's Python source that DyCL cannot compile.

    The message names the source file and line, the construct, and what to write
    instead, e.g.::

        model.py:42: `try` statement: remove the try/except from forward; DyCL cannot compile exceptions
    """

    def __init__(self, construct: str, hint: str = "", *, file: str = "<unknown>", line: int = 0):
        self.construct = construct
        self.hint = hint
        self.file = file
        self.line = line
        message = f"{file}:{line}: {construct}"
        if hint:
            message += f": {hint}"
        super().__init__(message)


class RuntimeSize(FrontendError):
    """A statement whose tensor sizes depend on the path: tensor math on a list of a
    path-dependent length, or of one empty on the example path (the visitor may compile it
    once per possible length of that list: lists.KnownLengths)."""

    @classmethod
    def of(cls, error: FrontendError) -> "RuntimeSize":
        return cls(error.construct, error.hint, file=error.file, line=error.line)


class DataSize(FrontendError):
    """A run in which torch.export found a tensor whose size depends on the data (`x[mask]`,
    `nonzero`): the visitor compiles its statements again one by one, and lowers such a
    statement with the size made on the host (data_sizes.py); the message is the refusal
    where it cannot."""

    @classmethod
    def of(cls, error: FrontendError) -> "DataSize":
        return cls(error.construct, error.hint, file=error.file, line=error.line)


class PathsDiffer(FrontendError):
    """The paths of an `if` leave a variable of another kind on each (a uint8 mask on one,
    a bool mask on the other): the `if` compiles the statements after it once per path
    instead (joins.py); the message is the refusal where no statement follows in its block."""

    @classmethod
    def of(cls, error: FrontendError) -> "PathsDiffer":
        return cls(error.construct, error.hint, file=error.file, line=error.line)
