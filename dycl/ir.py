"""Reading and writing DyCL IR: the one place that knows the context and the print form."""

from __future__ import annotations

import re

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, ml_program, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError
from xdsl.utils.mlir_lexer import MLIRLexer

from dycl.dialects.dycl import Dycl
from dycl.dialects.torch import Torch, TorchC


# xDSL 0.74's string-literal regex nests `+` inside `*`: an unterminated string followed by
# a long line backtracks exponentially (dycl-opt hung; found by dycl.fuzz). Same language,
# one character per step: linear.
MLIRLexer._unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


class IRParseError(ValueError):
    """Malformed IR, with a located `file:line:col: error: ...` message."""


def make_context() -> Context:
    """Our dialects, the upstream ones the host IR uses, and unregistered ops allowed
    (every torch op DyCL does not need to understand parses generically)."""
    ctx = Context(allow_unregistered=True)
    for dialect in (builtin.Builtin, func.Func, scf.Scf, arith.Arith, ml_program.MLProgram):
        ctx.load_dialect(dialect)
    for dialect in (Torch, TorchC, Dycl):
        ctx.load_dialect(dialect)
    return ctx


def format_parse_error(err: ParseError) -> str:
    """`file:line:col: error: message`, then the source line with carets under the span."""
    loc = err.span.get_location()
    # xDSL says only " in block definition" when a block holds something that is no operation
    message = _VAGUE_PARSE_ERRORS.get(err.msg, err.msg)
    # print_with_context gives: location, source line(s), carets, message.
    lines = err.span.print_with_context(err.msg).rstrip("\n").split("\n")
    return f"{loc}: error: {message}\n" + "\n".join(lines[1:-1])


_VAGUE_PARSE_ERRORS = {" in block definition": "expected an operation, '}' or a block label (^name) here"}


def parse_module(
    text: str, source_name: str = "<string>", ctx: Context | None = None
) -> ModuleOp:
    try:
        module = Parser(ctx or make_context(), text, source_name).parse_module()
    except ParseError as err:
        raise IRParseError(format_parse_error(err)) from None
    return module


def print_module(module: ModuleOp) -> str:
    """MLIR's generic form, which both xDSL and torch-mlir-opt parse back."""
    import io

    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    out.write("\n")
    return out.getvalue()
