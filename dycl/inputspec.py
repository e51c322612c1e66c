"""Input signatures and example values of the command line, parsed with a lark grammar.

    parse_inputs("x: f32[1,3,32,32] = randn, n: i64 = 5")   -> [InputSpec, InputSpec]
    example_values(specs, seed=0)                          -> [np.ndarray, 5]

The grammar is `inputspec.lark` beside this file. Errors (`InputSpecError`) name the
column where the text goes wrong and show it with a caret. numpy only, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from lark import Lark, Token, Transformer, UnexpectedInput, v_args

_DTYPES = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "bool": "bool",
}
_SCALAR_KINDS = {"i8": "int", "i16": "int", "i32": "int", "i64": "int", "u8": "int", "f16": "float",
                 "bf16": "float", "f32": "float", "f64": "float", "bool": "bool"}


class InputSpecError(ValueError):
    """A malformed input spec, with the column and a caret under it."""

    def __init__(self, text: str, column: int, message: str):
        self.text, self.column, self.message = text, column, message
        super().__init__(f"input spec, column {column}: {message}\n  {text}\n  {' ' * (column - 1)}^")


@dataclass(frozen=True)
class Generator:
    kind: str  # randn | rand | zeros | ones | randint | arange | full (a typed number)
    shape: tuple[int, ...] | None
    dtype: str | None  # numpy dtype name, when given as dtype=
    low: int = 0
    high: int | None = None
    column: int = 0
    fill: int | float | bool | None = None  # the value of `full`


@dataclass(frozen=True)
class InputSpec:
    """One input: a tensor (`shape` is a tuple) or a Python scalar (`shape` is None)."""

    name: str | None
    kind: str  # "tensor" | "int" | "float" | "bool"
    dtype: str | None  # numpy dtype name for tensors
    shape: tuple[int, ...] | None
    value: Generator | int | float | bool


@cache
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("inputspec.lark")).read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True)


@v_args(meta=True)
class _Build(Transformer):
    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def start(self, meta, specs):
        return specs

    def shape(self, meta, dims):
        return tuple(int(d) for d in dims if d is not None)

    def type(self, meta, children):
        dtype = children[0]
        shape = children[1] if len(children) > 1 else None
        return (str(dtype), shape)

    def number(self, meta, children):
        (token,) = children
        text = str(token)
        return int(text) if text.lstrip("+-").isdigit() else float(text)

    def boolean(self, meta, children):
        return str(children[0]) == "true"

    def dim(self, meta, children):
        return ("dim", int(children[0]), meta.column)

    def dtype_arg(self, meta, children):
        return ("dtype", _DTYPES[str(children[0])], meta.column)

    def low_arg(self, meta, children):
        return ("low", int(children[0]), meta.column)

    def high_arg(self, meta, children):
        return ("high", int(children[0]), meta.column)

    def gen_args(self, meta, children):
        return children

    def generator(self, meta, children):
        kind = str(children[0])
        args = children[1] if len(children) > 1 and children[1] is not None else []
        dims = [value for tag, value, _ in args if tag == "dim"]
        options = {tag: value for tag, value, _ in args if tag != "dim"}
        for tag, value, column in args:
            if tag == "dim" and value < 0:
                raise InputSpecError(self.text, column, f"a dimension must be >= 0, got {value}")
        if kind != "randint" and ("low" in options or "high" in options):
            raise InputSpecError(self.text, meta.column, f"low=/high= apply to randint only, not {kind}")
        # No dimensions given: the declared type supplies the shape.
        shape = tuple(dims) if dims else None
        return Generator(kind, shape, options.get("dtype"), options.get("low", 0), options.get("high"), meta.column)

    def untyped(self, meta, children):
        (value,) = children
        return self._spec(None, None, None, value, meta.column)

    def typed(self, meta, children):
        name, (dtype, shape), *rest = children
        value = rest[0] if rest else None
        return self._spec(str(name), dtype, shape, value, meta.column)

    def _spec(self, name, dtype_code, shape, value, column) -> InputSpec:
        if isinstance(value, Generator):
            if dtype_code is not None and shape is None:
                raise InputSpecError(self.text, value.column, f"'{_DTYPES[dtype_code]}' without [...] is a scalar; "
                                     f"a {value.kind}(...) tensor needs a shape like {dtype_code}[1,4]")
            if shape is not None and value.shape is not None and value.shape != shape:
                raise InputSpecError(self.text, value.column,
                                     f"{value.kind}{list(value.shape)} does not match the declared shape {list(shape)}")
            final_shape = shape if shape is not None else value.shape
            if final_shape is None:
                raise InputSpecError(self.text, value.column, f"{value.kind} needs a shape: {value.kind}(1,4) or x: f32[1,4] = {value.kind}")
            dtype = _DTYPES[dtype_code] if dtype_code else value.dtype or _default_dtype(value.kind)
            if dtype_code and value.dtype and value.dtype != dtype:
                raise InputSpecError(self.text, value.column, f"dtype={value.dtype} contradicts the declared {dtype}")
            return InputSpec(name, "tensor", dtype, final_shape, value)
        if value is None:  # `x: f32[1,4]` with no value: random normal / a zero scalar
            if shape is None:
                return InputSpec(name, _SCALAR_KINDS[dtype_code], None, None, _zero(_SCALAR_KINDS[dtype_code]))
            return InputSpec(name, "tensor", _DTYPES[dtype_code], shape, Generator("randn", shape, None))
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "float"
        if dtype_code is not None:
            if shape is not None:
                return InputSpec(name, "tensor", _DTYPES[dtype_code], shape, Generator("full", shape, None, fill=value))
            declared = _SCALAR_KINDS[dtype_code]
            if declared != kind and not (declared == "float" and kind == "int"):
                raise InputSpecError(self.text, column, f"{name} is declared {dtype_code} but its value {value!r} is a {kind}")
            kind = declared
            value = float(value) if kind == "float" else value
        return InputSpec(name, kind, None, None, value)


def _default_dtype(kind: str) -> str:
    return "int64" if kind in ("randint", "arange") else "float32"


def _zero(kind: str):
    return {"int": 0, "float": 0.0, "bool": False}[kind]


def parse_inputs(text: str) -> list[InputSpec]:
    """Parse a comma-separated list of input specs."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as err:
        token = getattr(err, "token", None)
        at_end = isinstance(token, Token) and token.type == "$END"
        column = len(text.rstrip()) + 1 if at_end or err.column <= 0 else err.column
        raise InputSpecError(text, column, _describe(err, text)) from None
    try:
        return _Build(text).transform(tree)
    except Exception as err:  # lark wraps errors raised inside the transformer
        inner = getattr(err, "orig_exc", err)
        if isinstance(inner, InputSpecError):
            raise inner from None
        raise


def _describe(err: UnexpectedInput, text: str) -> str:
    expected = sorted(getattr(err, "expected", None) or getattr(err, "allowed", None) or [])
    names = [_TERMINAL_NAMES.get(e, e.lower()) for e in expected]
    token = getattr(err, "token", None)
    if isinstance(token, Token) and token.type == "$END":
        found = "end of the spec"
    elif isinstance(token, Token):
        found = f"'{token}'"
    else:
        found = f"'{text[err.pos_in_stream]}'" if err.pos_in_stream is not None and err.pos_in_stream < len(text) else "end of the spec"
    if names:
        return f"unexpected {found}; expected {', '.join(dict.fromkeys(names))}"
    return f"unexpected {found}"


_TERMINAL_NAMES = {
    "LSQB": "'['", "RSQB": "']'", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "COLON": "':'",
    "EQUAL": "'='", "INT": "an integer", "SIGNED_INT": "an integer", "SIGNED_NUMBER": "a number",
    "NAME": "a name", "DTYPE": "a dtype (f32, i64, bool, ...)", "GENERATOR": "randn/rand/zeros/ones/randint/arange",
    "BOOL": "true/false", "$END": "the end",
}


def example_values(specs: list[InputSpec], seed: int = 0) -> list[Any]:
    """Concrete example inputs: numpy arrays for tensors, Python scalars otherwise."""
    rng = np.random.default_rng(seed)
    return [_materialize(spec, rng) for spec in specs]


def _materialize(spec: InputSpec, rng: np.random.Generator) -> Any:
    if spec.kind != "tensor":
        return spec.value
    gen: Generator = spec.value
    shape, dtype = spec.shape, np.dtype(spec.dtype) if spec.dtype != "bfloat16" else np.dtype("float32")
    if gen.kind == "randn":
        array = rng.standard_normal(shape)
    elif gen.kind == "rand":
        array = rng.random(shape)
    elif gen.kind == "zeros":
        array = np.zeros(shape)
    elif gen.kind == "ones":
        array = np.ones(shape)
    elif gen.kind == "randint":
        array = rng.integers(gen.low, gen.high if gen.high is not None else 10, size=shape)
    elif gen.kind == "arange":
        array = np.arange(int(np.prod(shape))).reshape(shape)
    elif gen.kind == "full":
        array = np.full(shape, gen.fill)
    else:
        raise ValueError(f"unknown generator {gen.kind}")
    return np.ascontiguousarray(array.astype(dtype))
