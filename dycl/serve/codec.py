"""dycl-serve's wire format: a model's inputs and outputs as JSON that a client writes and
reads with numpy and the standard library alone. Imports numpy only (no torch, no Ray).

```
request    {"inputs": [value, ...]}                     forward's arguments, in order
response   {"outputs": value}                            what compiled(*inputs) returns
error      {"error": "InputError", "message": "..."}     with an HTTP 4xx or 500 status

value      {"dtype": "float32", "shape": [1, 3, 32, 32], "data": "<base64>"}    a tensor: the
             base64 of its bytes in C order, little-endian; dtype a numpy name (bool,
             int8 ... int64, uint8 ... uint64, float16, float32, float64)
           true / 3 / 0.5                               a Python bool, int or float
           null                                         None
           [value, ...]                                 a list
           {"tuple": [value, ...]}                      a tuple
           {"dict": [[key, value], ...]}                a dict (any JSON key)
```

A JSON string decodes to a `str`, which the model's input check then refuses as it refuses
any other value of the wrong kind. A body the format cannot read raises `WireError`, which
names the input and what is wrong with it.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

TENSOR_KEYS = ("dtype", "shape", "data")
_NUMERIC_KINDS = "biuf"  # bool, signed and unsigned ints, floats


class WireError(ValueError):
    """A request body that is not the wire format."""


# ----------------------------------------------------------------------------- encoding


def encode_tensor(array: np.ndarray) -> dict[str, Any]:
    array = np.asarray(array)
    if array.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(f"a {array.dtype} array has no wire form: tensors are bool, int, uint or float")
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
    return {"dtype": array.dtype.name, "shape": list(array.shape), "data": base64.b64encode(data).decode("ascii")}


def encode_value(value: Any) -> Any:
    """The JSON form of a model input or output (a tensor, a Python scalar, None, or lists,
    tuples and dicts of them). Anything numpy can read as an array (a torch tensor) is a tensor."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):  # a numpy scalar is the Python scalar it holds
        return value.item()
    if isinstance(value, list):
        return [encode_value(item) for item in value]
    if isinstance(value, tuple):
        return {"tuple": [encode_value(item) for item in value]}
    if isinstance(value, dict):
        return {"dict": [[key, encode_value(item)] for key, item in value.items()]}
    if isinstance(value, np.ndarray) or hasattr(value, "__array__"):
        return encode_tensor(np.asarray(value))
    raise TypeError(f"a {type(value).__name__} has no wire form")


def encode_request(inputs: Sequence[Any]) -> bytes:
    return json.dumps({"inputs": [encode_value(value) for value in inputs]}).encode()


def encode_response(outputs: Any) -> bytes:
    return json.dumps({"outputs": encode_value(outputs)}).encode()


def encode_error(error: BaseException) -> bytes:
    return json.dumps({"error": type(error).__name__, "message": str(error)}).encode()


# ----------------------------------------------------------------------------- decoding


def decode_request(body: bytes | str) -> tuple:
    """The positional inputs a request body carries (WireError: it is not the format)."""
    document = _parse(body, "request")
    if not isinstance(document, dict) or not isinstance(document.get("inputs"), list):
        raise WireError(f'the request body must be a JSON object {{"inputs": [...]}}, got {_kind(document)}')
    strangers = sorted(set(document) - {"inputs"})
    if strangers:
        raise WireError(f'the request body has keys other than "inputs": {", ".join(map(repr, strangers))}')
    return tuple(decode_value(value, f"input {k}") for k, value in enumerate(document["inputs"]))


def decode_response(body: bytes | str) -> Any:
    """The outputs a response body carries."""
    document = _parse(body, "response")
    if not isinstance(document, dict) or "outputs" not in document:
        raise WireError(f'the response body must be a JSON object {{"outputs": ...}}, got {_kind(document)}')
    return decode_value(document["outputs"], "outputs")


def decode_value(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [decode_value(item, f"{where}[{k}]") for k, item in enumerate(value)]
    if isinstance(value, dict):
        if any(key in value for key in TENSOR_KEYS):
            return decode_tensor(value, where)
        if set(value) == {"tuple"} and isinstance(value["tuple"], list):
            return tuple(decode_value(item, f"{where}[{k}]") for k, item in enumerate(value["tuple"]))
        if set(value) == {"dict"} and isinstance(value["dict"], list):
            if not all(isinstance(pair, list) and len(pair) == 2 and _is_key(pair[0]) for pair in value["dict"]):
                raise WireError(f'{where}: a dict is {{"dict": [[key, value], ...]}} with string, number or null keys')
            return {key: decode_value(item, f"{where}[{key!r}]") for key, item in value["dict"]}
    raise WireError(
        f'{where}: {_kind(value)} is not a tensor, a Python scalar, None, a list, a tuple or a dict: a tensor is '
        '{"dtype": ..., "shape": [...], "data": "<base64>"}, a tuple {"tuple": [...]}, a dict {"dict": [[key, value], ...]}'
    )


def decode_tensor(record: dict[str, Any], where: str) -> np.ndarray:
    missing = [key for key in TENSOR_KEYS if key not in record]
    if missing or len(record) != len(TENSOR_KEYS):
        detail = f"missing {', '.join(map(repr, missing))}" if missing else f"got {', '.join(map(repr, sorted(record)))}"
        raise WireError(f'{where}: a tensor has exactly the keys "dtype", "shape" and "data" ({detail})')
    dtype, shape, data = (record[key] for key in TENSOR_KEYS)
    try:
        dtype = np.dtype(dtype) if isinstance(dtype, str) else None
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in _NUMERIC_KINDS or dtype.name != record["dtype"]:
        raise WireError(
            f'{where}: "dtype" {record["dtype"]!r} is not a tensor dtype; one of bool, int8 ... int64, '
            "uint8 ... uint64, float16, float32, float64"
        )
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise WireError(f'{where}: "shape" must be a list of non-negative integers, got {shape!r}')
    if not isinstance(data, str):
        raise WireError(f'{where}: "data" must be a base64 string, got {_kind(data)}')
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise WireError(f'{where}: "data" is not base64 ({error})') from None
    expected = math.prod(shape) * dtype.itemsize
    if len(raw) != expected:
        raise WireError(
            f'{where}: "data" holds {len(raw)} bytes; a {dtype.name} tensor of shape {shape} needs {expected}'
        )
    # A writable copy in native byte order: the runtime may hand it to code that writes.
    array = np.frombuffer(bytearray(raw), dtype=dtype.newbyteorder("<")).reshape(shape)
    return array.astype(dtype, copy=False)


def _parse(body: bytes | str, what: str) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise WireError(f"the {what} body is not JSON ({error})") from None


def _is_key(key: Any) -> bool:
    return key is None or isinstance(key, (str, int, float, bool))


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object with keys " + ", ".join(map(repr, sorted(value))) if value else "an empty object"
    return {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), "null" if value is None else type(value).__name__
    )
