"""Reading and writing DyCL IR: the one place that knows the context and the print form."""

from __future__ import annotations

import re
import weakref
from dataclasses import replace

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, ml_program, scf
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.irdl.dominance import DominanceInfo
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.printer import Printer
from xdsl.traits import NoTerminator
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer

from dycl.dialects.dycl import Dycl
from dycl.dialects.torch import Torch, TorchC


class LinearTimeMLIRLexer(MLIRLexer):
    """xDSL's MLIR lexer, with a string-literal regex that runs in linear time.

    xDSL 0.74's regex nests `+` inside `*`, so an unterminated string followed by a long
    line backtracks exponentially (dycl-opt hung; found by dycl.fuzz). This one accepts the
    same language one character per step. It is a subclass, not a patch of `MLIRLexer`, so
    that importing DyCL changes nothing for other users of xDSL."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


class DyclParser(Parser):
    """xDSL's parser over `LinearTimeMLIRLexer`: the parser of every `dycl.ir` function."""

    def __init__(self, ctx: Context, input: str | bytes, name: str = "<unknown>") -> None:
        # xDSL's Parser builds its own MLIRLexer, which lexes the first token at once: give
        # it no text, then parse the input with our lexer.
        super().__init__(ctx, "", name)
        text = input.decode("utf-8") if isinstance(input, bytes) else input
        if "dense<0x" in text:
            text = _HEX_FLOAT_SPLAT.sub(_quoted_splat, text)
        self._parser_state = ParserState(LinearTimeMLIRLexer(Input(text, name)))


# MLIR prints a splat of a non-finite float as its bit pattern, `dense<0xFF800000> :
# tensor<f32>` (-inf: torch-mlir's literal of `y[m] = -float('inf')`), which xDSL reads as
# the integer 4286578688 converted to a float. The same value as MLIR's hex string form,
# raw little-endian bytes, which xDSL reads bit for bit.
_HEX_FLOAT_SPLAT = re.compile(r"dense<0x([0-9A-Fa-f]+)>(\s*:\s*tensor<(?:[0-9?]+x)*(f16|bf16|f32|f64)>)")
_FLOAT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}


def _quoted_splat(match: re.Match) -> str:
    bits, rest, element = match.group(1), match.group(2), match.group(3)
    data = int(bits, 16).to_bytes(_FLOAT_BYTES[element], "little")
    return f'dense<"0x{data.hex().upper()}">{rest}'


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
    text: str,
    source_name: str = "<string>",
    ctx: Context | None = None,
    *,
    verify: bool = False,
) -> ModuleOp:
    """The module in `text`; with `verify`, also verified (`verify_module`), so that IR
    which parses but does not verify is an `IRVerifyError` at the offending op."""
    sources = SourceMap()
    try:
        if verify:
            module = LocatingParser(ctx or make_context(), text, source_name, sources=sources).parse_module()
        else:
            module = DyclParser(ctx or make_context(), text, source_name).parse_module()
    except ParseError as err:
        raise IRParseError(format_parse_error(err)) from None
    if verify:
        verify_module(module, sources, source_name)
    return module


# ------------------------------------------------------------------ verification


class SourceMap:
    """Where each parsed op starts in its source (xDSL keeps no location unless the text
    has `loc(...)`): verifier and pass diagnostics point at `file:line:col`."""

    def __init__(self) -> None:
        self._spans: weakref.WeakKeyDictionary[Operation, Span] = weakref.WeakKeyDictionary()

    def record(self, op: Operation, span: Span) -> None:
        self._spans[op] = span

    def span(self, op: Operation) -> Span | None:
        """The span of `op`, or of its nearest ancestor that has one (ops a pass created)."""
        current: Operation | None = op
        while current is not None:
            if (span := self._spans.get(current)) is not None:
                return span
            current = current.parent_op()
        return None


class LocatingParser(DyclParser):
    """DyCL's parser, recording where every op starts in a `SourceMap`."""

    def __init__(self, *args, sources: SourceMap, line_offset: int = 0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sources = sources
        self.line_offset = line_offset

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        self.sources.record(op, replace(start, line_offset=self.line_offset) if self.line_offset else start)
        return op


class IRVerifyError(VerifyException):
    """IR that parses but does not verify: `file:line:col: error: 'op' op ...` at the
    offending op, then its source line."""


def verify_module(module: Operation, sources: SourceMap | None = None, source_name: str = "<string>") -> None:
    """xDSL's verifier, made to report the failing op: an op is verified before what it
    contains (as MLIR verifies an op's invariants before its regions; xDSL goes inside
    first, so a `func.return` under a `func.func` that lacks `function_type` raised
    KeyError, a `func.call` in a module with two blocks ValueError), any exception from an
    op's verifier is that op's failure, and every operand must be defined before its use
    (xDSL does not check dominance: a use above its definition reached the passes).
    Raises `IRVerifyError`."""
    _Verifier(sources or SourceMap(), source_name).op(module)


class _Verifier:
    def __init__(self, sources: SourceMap, source_name: str) -> None:
        self.sources = sources
        self.source_name = source_name
        self.dominance: dict[Region, DominanceInfo] = {}
        self.order: dict[Block, dict[Operation, int]] = {}

    def op(self, op: Operation) -> None:
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as err:
            raise self.error(op, str(err), err) from err
        except Exception as err:  # noqa: BLE001 - an xDSL verifier that assumed valid IR
            raise self.error(op, _explain(err), err) from err
        for index, operand in enumerate(op.operands):
            if not self.dominates(operand, op):
                raise self.error(op, f"operand #{index} ({_value_name(operand)}) does not dominate this use"
                                 + self.defined_at(operand))
        for region in op.regions:
            for block in region.blocks:
                if block.parent is not region:
                    raise self.error(op, "a block's parent pointer does not refer to its region")
                if not block.ops and len(region.blocks) == 1 and not op.has_trait(NoTerminator):
                    raise self.error(op, "contains an empty block in a single-block region that expects "
                                     "at least a terminator")
                for child in block.ops:
                    if child.parent is not block:
                        raise self.error(child, "the op's parent pointer does not refer to its block")
                    self.op(child)

    def dominates(self, value: SSAValue, user: Operation) -> bool:
        """`value` is defined before `user` (or in a block that dominates it)."""
        if isinstance(value, OpResult):
            definer: Operation | None = value.op
            block = definer.parent_block()
        elif isinstance(value, BlockArgument):
            definer, block = None, value.block
        else:
            return False
        if block is None or (region := block.parent) is None:
            return False
        ancestor = block.find_ancestor_op_in_block(user)
        if ancestor is not None:
            if definer is None:
                return True
            if ancestor is definer:
                return False  # used inside its own regions
            if isinstance(region.parent, ModuleOp):
                return True  # a graph region: order does not matter
            order = self.order.get(block)
            if order is None:
                order = self.order[block] = {o: i for i, o in enumerate(block.ops)}
            return order[definer] < order[ancestor]
        user_block = user.parent_block()
        other = region.find_ancestor_block_in_region(user_block) if user_block is not None else None
        if other is None:
            return False  # used outside the region that defines it
        if region not in self.dominance:
            try:
                self.dominance[region] = DominanceInfo(region)
            except KeyError:  # a branch to another region's block: its own op reports it
                return True
        return self.dominance[region].dominates(block, other)

    def defined_at(self, value: SSAValue) -> str:
        if isinstance(value, OpResult) and (span := self.sources.span(value.op)) is not None:
            loc = span.get_location()
            return f" (defined at line {loc.line}, column {loc.col})"
        return ""

    def error(self, op: Operation, message: str, cause: BaseException | None = None) -> IRVerifyError:
        from dycl.dialects.torch import op_name

        head = f"'{op_name(op)}' op {message}"
        span = self.sources.span(op)
        if span is not None:
            lines = span.print_with_context().rstrip("\n").split("\n")
            text = f"{span.get_location()}: error: {head}\n" + "\n".join(lines[1:])
        elif isinstance(op.location, FileLineColLoc):
            loc = op.location
            text = f"{loc.filename.data}:{loc.line.data}:{loc.column.data}: error: {head}"
        else:
            text = f"{self.source_name}: error: {head}"
        error = IRVerifyError(text)
        for note in getattr(cause, "__notes__", ()):  # xDSL's annotated IR (--verify-diagnostics)
            error.add_note(note)
        return error


def _explain(err: Exception) -> str:
    """An xDSL verifier's crash on IR it assumed valid, as a verifier message."""
    message = str(err)
    if "only available for single-block regions" in message:
        return "does not verify: expected a single block in each region"
    if isinstance(err, KeyError):
        return f"does not verify: missing property or attribute {message}"
    return f"does not verify: {message}" if message else f"does not verify ({type(err).__name__})"


def _value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def print_module(module: ModuleOp) -> str:
    """MLIR's generic form, which both xDSL and torch-mlir-opt parse back."""
    import io

    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    out.write("\n")
    return out.getvalue()
