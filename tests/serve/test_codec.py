"""dycl-serve's wire format (`dycl.serve.codec`): numpy only, no Ray. Every value a model
takes or returns round-trips exactly, and a body the format cannot read is a `WireError`
that names the input and what is wrong."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import numpy as np
import pytest

from dycl.serve.codec import (
    WireError,
    decode_request,
    decode_response,
    encode_error,
    encode_request,
    encode_response,
)

RNG = np.random.default_rng(0)
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64"]


def _tensor(dtype: str, shape) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape) * 100).astype(dtype)


def assert_same(got, expected, where="outputs"):
    assert type(got) is type(expected), f"{where}: {type(got).__name__} != {type(expected).__name__}"
    if isinstance(expected, np.ndarray):
        assert got.dtype == expected.dtype and got.shape == expected.shape, where
        np.testing.assert_array_equal(got, expected, err_msg=where)
        assert got.flags.writeable, where
    elif isinstance(expected, (tuple, list)):
        assert len(got) == len(expected), where
        for k, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{where}[{k}]")
    elif isinstance(expected, dict):
        assert list(got) == list(expected), where
        for key in expected:
            assert_same(got[key], expected[key], f"{where}[{key!r}]")
    else:
        assert got == expected or (got != got and expected != expected), where


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_tensor_dtype_round_trips_bit_for_bit(dtype):
    for shape in [(1, 3, 4, 4), (), (0, 5), (2, 1)]:
        value = _tensor(dtype, shape)
        (got,) = decode_request(encode_request([value]))
        assert_same(got, value)


def test_nested_outputs_keep_their_structure():
    outputs = (
        _tensor("float32", (1, 10)),
        [_tensor("int64", (1, 3)), None, (True, 3, -0.5, float("nan"))],
        {"logits": _tensor("float32", (2, 2)), 0: [], None: (None,)},
        np.float32(1.5),  # a numpy scalar: the Python float it holds
    )
    expected = (*outputs[:3], 1.5)
    assert_same(decode_response(encode_response(outputs)), expected)


def test_a_non_contiguous_or_big_endian_tensor_is_sent_as_its_values():
    value = _tensor("float64", (4, 6))[:, ::2].T
    (got,) = decode_request(encode_request([value.astype(">f8")]))
    assert got.dtype == np.float64 and got.dtype.isnative
    np.testing.assert_array_equal(got, value)


def test_a_client_with_numpy_and_json_alone_writes_the_format():
    x = _tensor("float32", (1, 6))
    body = json.dumps({"inputs": [{"dtype": "float32", "shape": [1, 6], "data": base64.b64encode(x.tobytes()).decode()}, 4]})
    got, n = decode_request(body.encode())
    np.testing.assert_array_equal(got, x)
    assert n == 4 and type(n) is int


def test_inputs_the_model_must_refuse_pass_through_for_its_input_check():
    # A string or a list is a value the codec can carry; the model's InputError words the refusal.
    assert decode_request(b'{"inputs": ["hello", [1, 2], {"tuple": []}]}') == ("hello", [1, 2], ())


@pytest.mark.parametrize(
    "body, message",
    [
        (b"not json", r"^the request body is not JSON \(Expecting value"),
        (b"\xff\xfe", r"^the request body is not JSON"),
        (b"[1, 2]", r'^the request body must be a JSON object \{"inputs": \[\.\.\.\]\}, got a list$'),
        (b'{"input": []}', r"got an object with keys 'input'$"),
        (b'{"inputs": [], "extra": 1}', r"keys other than \"inputs\": 'extra'$"),
        (b'{"inputs": [{"x": 1}]}', r"^input 0: an object with keys 'x' is not a tensor, a Python scalar, None"),
        (b'{"inputs": [1, {"dtype": "float32", "shape": [2]}]}', r'^input 1: a tensor has exactly the keys "dtype", "shape" and "data" \(missing \'data\'\)$'),
        (b'{"inputs": [{"dtype": "float32", "shape": [2], "data": "", "name": "x"}]}', r"\(got 'data', 'dtype', 'name', 'shape'\)$"),
        (b'{"inputs": [{"dtype": "object", "shape": [1], "data": "AAAAAAAAAAA="}]}', r"^input 0: \"dtype\" 'object' is not a tensor dtype"),
        (b'{"inputs": [{"dtype": "f4", "shape": [1], "data": "AAAAAA=="}]}', r"\"dtype\" 'f4' is not a tensor dtype"),
        (b'{"inputs": [{"dtype": "torch.float32", "shape": [1], "data": "AAAAAA=="}]}', r"is not a tensor dtype"),
        (b'{"inputs": [{"dtype": "float32", "shape": [-1], "data": ""}]}', r'"shape" must be a list of non-negative integers, got \[-1\]$'),
        (b'{"inputs": [{"dtype": "float32", "shape": [1.5], "data": ""}]}', r'"shape" must be a list of non-negative integers'),
        (b'{"inputs": [{"dtype": "float32", "shape": [1], "data": [0, 0, 0, 0]}]}', r'"data" must be a base64 string, got a list$'),
        (b'{"inputs": [{"dtype": "float32", "shape": [1], "data": "not base64!"}]}', r'^input 0: "data" is not base64'),
        (b'{"inputs": [{"dtype": "float32", "shape": [1, 3], "data": "AAAAAA=="}]}', r'^input 0: "data" holds 4 bytes; a float32 tensor of shape \[1, 3\] needs 12$'),
        (b'{"inputs": [[1, {"tuple": [{"dtype": "int64"}]}]]}', r"^input 0\[1\]\[0\]: a tensor has exactly the keys"),
        (b'{"inputs": [{"dict": [["a"]]}]}', r'^input 0: a dict is \{"dict": \[\[key, value\], \.\.\.\]\}'),
    ],
)
def test_a_body_that_is_not_the_format_is_a_wire_error_naming_what_is_wrong(body, message):
    with pytest.raises(WireError, match=message):
        decode_request(body)


def test_an_error_body_carries_the_error_kind_and_its_message():
    from dycl.runtime import InputError

    error = InputError("forward() input 'x': expected a float32 tensor of shape [1, 6], got a float64 tensor of shape [1, 6]")
    assert json.loads(encode_error(error)) == {"error": "InputError", "message": str(error)}


def test_the_codec_needs_neither_torch_nor_ray():
    code = (
        "import sys; import dycl.serve.codec; "
        "assert not any(m in sys.modules for m in ('torch', 'ray', 'starlette', 'dycl.runtime')), sorted(sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


def test_dycl_serve_without_ray_names_the_extra_to_install(monkeypatch, capsys, tmp_path):
    from dycl.tools.dycl_serve import main

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as when it is not installed
    assert main([str(tmp_path), "--port", "8000"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("dycl-serve: error: serving needs Ray Serve") and "pip install -e '.[serve]'" in error
