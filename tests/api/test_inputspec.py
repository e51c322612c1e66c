"""The input-spec language of the command line: values, and errors at the right column."""

import numpy as np
import pytest

from dycl.inputspec import InputSpecError, example_values, parse_inputs


def test_untyped_tensor():
    (spec,) = parse_inputs("randn(1,3,32,32)")
    assert (spec.name, spec.kind, spec.dtype, spec.shape) == (None, "tensor", "float32", (1, 3, 32, 32))
    (value,) = example_values([spec])
    assert value.shape == (1, 3, 32, 32) and value.dtype == np.float32


def test_named_typed_inputs_and_scalars():
    specs = parse_inputs("x: f32[1,3,32,32] = randn, n: i64 = 5, ids: i64[1,7] = randint(high=100), flag: bool = true")
    assert [(s.name, s.kind) for s in specs] == [("x", "tensor"), ("n", "int"), ("ids", "tensor"), ("flag", "bool")]
    x, n, ids, flag = example_values(specs, seed=3)
    assert x.shape == (1, 3, 32, 32) and n == 5 and flag is True
    assert ids.dtype == np.int64 and ids.shape == (1, 7) and 0 <= ids.min() and ids.max() < 100


def test_defaults_and_generators():
    t, z, s = example_values(parse_inputs("t: f32[2,2], zeros(3, dtype=i64), 2.5"))
    assert t.shape == (2, 2) and z.dtype == np.int64 and not z.any() and s == 2.5
    (full,) = example_values(parse_inputs("y: f64[2] = 1.5"))
    assert full.dtype == np.float64 and full.tolist() == [1.5, 1.5]


def test_names_may_start_like_keywords():
    (spec,) = parse_inputs("randn_scale: f32 = 2")
    assert spec.name == "randn_scale" and spec.kind == "float" and spec.value == 2.0


@pytest.mark.parametrize(
    "text, column, message",
    [
        ("x: f32[1,3,32 = randn", 15, "unexpected '='; expected ',', ']'"),
        ("randn(1,3", 10, "unexpected end of the spec"),
        ("x: f32[1,4] = randn(1,5)", 15, "does not match the declared shape [1, 4]"),
        ("n: i64 = 2.5", 1, "declared i64 but its value 2.5 is a float"),
        ("randn", 1, "randn needs a shape"),
        ("x f32[1]", 3, "expected ':'"),
        ("x: f99[1]", 4, "expected a dtype"),
        ("randn(1,-3)", 9, "a dimension must be >= 0"),
        ("rand(2, high=3)", 1, "low=/high= apply to randint only"),
    ],
)
def test_errors_point_at_the_column(text, column, message):
    with pytest.raises(InputSpecError) as info:
        parse_inputs(text)
    error = info.value
    assert error.column == column and message in error.message
    caret_line = str(error).splitlines()[-1]
    assert caret_line.index("^") == 2 + column - 1  # under the offending character
