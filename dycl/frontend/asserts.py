"""`assert test` and `assert test, msg`: eager's check, made where eager makes it.

Eager evaluates `test`; where it is false it evaluates `msg` and raises
`AssertionError(msg)` (no argument without `msg`). The compiled program does the same:

- a test known when the model is imported (configuration, static shapes, `isinstance`)
  that holds costs nothing: no op;
- a test known only at run time (a runtime size, a Python int argument, a tensor's values)
  is an `scf.if` whose failing arm computes the message and raises: `dycl.error` with
  `kind = "AssertionError"`, which the host program runs as a `raise` (a sub-DNN never
  raises). The message is computed in that arm only, as eager computes it only then;
- a test that fails on every call reaching it (known false when imported), or that the
  example inputs fail where every call reaches it (the function's top level, not an arm of
  a runtime `if` or a loop body), is a `FrontendError` at the `assert`: eager raises it on
  the example inputs, so there is no program to compile there; the user's AssertionError is
  its `__cause__`. Known false inside an arm or a loop (`assert False, "unreachable"`
  where the example does not go), it is a `raise` on that path.

The message (`str(error)`) is eager's: a constant, an f-string or `"...".format(...)` whose
runtime parts are host scalars (ints, floats, bools: formatted as the Python values eager
holds), or a host scalar itself (`assert n > 0, n`). A part DyCL cannot compute on the host
as eager formats it (a tensor, whose repr is torch's; a list) is refused at the `assert`.
"""

from __future__ import annotations

import ast
import string
from dataclasses import dataclass, field

from torch_mlir import ir

from dycl.dialects.dycl import scalar_value
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text

_SCALARS = (V.INT, V.FLOAT, V.BOOL)
_CONVERSIONS = {-1: None, ord("r"): "r", ord("s"): "s", ord("a"): "a"}
_FORMAT_HINT = "write the message as an f-string of Python numbers (`.item()`, `int(...)`, `x.size(1)`), or leave it out"


@dataclass
class _Message:
    """What `msg` formats: literal text and (expression, conversion, format spec) parts;
    `None` for a bare `assert test` (an AssertionError of no argument)."""

    pieces: list | None = field(default_factory=list)


def compile_assert(c, stmt: ast.Assert, env: dict) -> None:
    """Lower one `assert` at the current insertion point (see the module's docstring)."""
    message = _message(c, stmt, env)  # (refused here, on every path, when it cannot be made)
    condition = c.condition(stmt.test, env, statement=f"assert {source_text(stmt.test)}")
    if isinstance(condition, V.Const):
        if condition.value:
            return  # proven: nothing to check
        if every_call_reaches(c):
            fails_on_example(c, stmt, message, env)
        raise_error(c, stmt, message, env)  # a path that reaches it raises
        return
    if every_call_reaches(c) and not _truth(condition.example):
        fails_on_example(c, stmt, message, env)

    def fail() -> list:
        raise_error(c, stmt, message, env)
        return []
    c.select(condition, lambda: [], fail)


def every_call_reaches(c) -> bool:
    """Whether the statement being compiled is at the function's top level: every call
    (the example's too) that does not raise before reaches it."""
    entry = c.unentered.entry
    return entry is not None and ir.InsertionPoint.current.block == entry


def _truth(example) -> bool:
    return bool(example)


def fails_on_example(c, stmt: ast.stmt, message: _Message, env: dict, kind: type = AssertionError, what: str = ""):
    """Eager raises `stmt`'s exception (an AssertionError) on the example inputs: a located
    FrontendError whose cause is that exception, its message computed from the example values."""
    template, parts = _evaluate(c, stmt, message, env)
    arguments = () if template is None else (template.format(*(scalar_value(p.type, p.example) for p in parts)),)
    failure = kind(*arguments)
    text = f": {kind.__name__}: {arguments[0]}" if arguments else f": {kind.__name__}"
    raise c.error(
        stmt, f"{what or f'`{source_text(stmt)}` fails on the example inputs'}{text}",
        "eager raises it on them too: compile with example inputs on which forward returns",
    ) from failure


def raise_error(c, stmt: ast.stmt, message: _Message, env: dict, kind: str = "AssertionError") -> None:
    """The message's parts computed here, then `dycl.error` raising the exception `kind`."""
    template, parts = _evaluate(c, stmt, message, env)
    attributes = {"kind": ir.StringAttr.get(kind)}
    if template is not None:
        attributes["message"] = ir.StringAttr.get(template)
    ir.Operation.create("dycl.error", operands=[p.value for p in parts], attributes=attributes)


# ----- the message ---------------------------------------------------------------------

def _message(c, stmt: ast.Assert, env: dict) -> _Message:
    """`stmt.msg` as literal text and parts, refused where it is no form DyCL formats."""
    return message(c, stmt, stmt.msg, env)


def message(c, stmt: ast.stmt, msg: ast.expr | None, env: dict) -> _Message:
    """The message `msg` of the exception `stmt` raises (None: no argument), as literal
    text and parts; refused where it is no form DyCL formats."""
    if msg is None:
        return _Message(None)
    constant = c._try_constant(msg, env, quiet=True)
    if constant is not V.MISSING:
        return _Message([str(constant)])
    if isinstance(msg, ast.JoinedStr):
        return _Message(_fstring_pieces(c, stmt, msg, env))
    formatted = _format_call_pieces(c, stmt, msg, env)
    if formatted is not None:
        return _Message(formatted)
    if isinstance(msg, (ast.BinOp, ast.List, ast.Tuple, ast.Dict, ast.Set)):
        # (`"... %d" % n`, `"..." + str(n)`: ops on the message DyCL does not compute)
        raise _refused(c, stmt, f"the message `{source_text(msg)}`")
    return _Message([(msg, None, "")])  # `assert n > 0, n`: str(n)


def _fstring_pieces(c, stmt, msg: ast.JoinedStr, env) -> list:
    pieces: list = []
    for value in msg.values:
        if isinstance(value, ast.Constant):
            pieces.append(str(value.value))
            continue
        spec = ""
        if value.format_spec is not None:
            spec = c._try_constant(value.format_spec, env, quiet=True)
            if spec is V.MISSING:
                raise _refused(c, stmt, f"the format spec of `{source_text(value.value)}` (known only at run time)")
        pieces.append((value.value, _CONVERSIONS[value.conversion], spec))
    return pieces


def _format_call_pieces(c, stmt, msg: ast.expr, env) -> list | None:
    """`"... {} ... {n:.2f}".format(a, n=b)` as pieces; None if `msg` is no such call."""
    if not (isinstance(msg, ast.Call) and isinstance(msg.func, ast.Attribute) and msg.func.attr == "format"):
        return None
    template = c._try_constant(msg.func.value, env, quiet=True)
    if not isinstance(template, str) or any(isinstance(a, ast.Starred) for a in msg.args) or any(k.arg is None for k in msg.keywords):
        return None
    keywords = {k.arg: k.value for k in msg.keywords}
    pieces: list = []
    automatic = 0
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return None  # (eager raises ValueError formatting it: not a message DyCL makes)
    for literal, name, spec, conversion in fields:
        if literal:
            pieces.append(literal)
        if name is None:
            continue
        if name == "":
            name, automatic = str(automatic), automatic + 1
        if name.isdigit() and int(name) < len(msg.args):
            pieces.append((msg.args[int(name)], conversion, spec))
        elif name in keywords:
            pieces.append((keywords[name], conversion, spec))
        else:  # (`{0.shape}`, `{x[0]}`, a missing argument)
            raise _refused(c, stmt, f"the field `{{{name}}}` of `{source_text(msg)}`")
    return pieces


def _evaluate(c, stmt, message: _Message, env) -> tuple[str | None, list[V.Dyn]]:
    """The message as a `str.format` template and the host scalars it formats: parts known
    here are formatted now, the others computed at the current insertion point."""
    if message.pieces is None:
        return None, []
    template, parts = [], []
    for piece in message.pieces:
        if isinstance(piece, str):
            template.append(_escaped(piece))
            continue
        expr, conversion, spec = piece
        value = c.expression(expr, env)
        if isinstance(value, V.Const):
            template.append(_escaped(format(_converted(value.value, conversion), spec)))
        elif isinstance(value, V.Dyn) and value.type in _SCALARS:
            if "{" in spec or "}" in spec:
                raise _refused(c, stmt, f"the format spec `{spec}` of `{source_text(expr)}`")
            template.append(f"{{{len(parts)}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}")
            parts.append(value)
        else:
            raise _refused(c, stmt, f"the message part `{source_text(expr)}` (a {_kind(value)} whose text is torch's)")
    return "".join(template), parts


def _converted(value, conversion: str | None):
    return {None: lambda v: v, "s": str, "r": repr, "a": ascii}[conversion](value)


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _kind(value: V.EnvValue) -> str:
    if isinstance(value, V.Dyn) and V.is_tensor_type(value.type):
        return "tensor"
    if isinstance(value, V.Dyn) and V.is_list_type(value.type):
        return "list"
    return "value known only at run time"


def _refused(c, stmt: ast.Assert, what: str):
    return c.error(stmt, f"`{source_text(stmt)}`: {what} is not formatted on the host as eager formats it", _FORMAT_HINT)
