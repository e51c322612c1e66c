"""Turning exceptions from parsing, passes and files into located one-line diagnostics."""

from __future__ import annotations

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

from dycl.ir import IRParseError, IRVerifyError, format_parse_error


class InvalidPassOutput(Exception):
    """A pass turned IR that verified into IR that does not: a DyCL bug, not bad input
    (so no DiagnosticException), still printed located at the op that fails."""


class BrokenContract(Exception):
    """dycl-opt --verify-hcfg: the module after the passes breaks the HCFG contract (the
    message is the located diagnostic)."""


def format_error(err: BaseException, input_name: str) -> str:
    """One diagnostic for any failure of a command-line run."""
    match err:
        case ParseError():
            return format_parse_error(err)
        case IRParseError() | IRVerifyError() | InvalidPassOutput() | BrokenContract():
            return str(err)
        case ArgSpecParseError():
            return f"<pass pipeline>: error: {err}"
        case DiagnosticException():
            return f"{input_name}: error: {err}"
        case FileNotFoundError() | IsADirectoryError() | PermissionError():
            return f"{err.filename}: error: {err.strerror}"
        case _:  # an internal error; some (AssertionError) have no message
            return f"{input_name}: error: {str(err) or type(err).__name__}"
