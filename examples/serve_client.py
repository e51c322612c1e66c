"""A client of dycl-serve: numpy and the standard library only (no dycl, no torch needed).

    dycl-compile zoo:caption_resnext -o out/ && dycl-serve out/ --port 8000     # the server
    python examples/serve_client.py http://127.0.0.1:8000/ --requests 16       # this client
    python examples/serve_client.py http://127.0.0.1:8000/ --artifact out/     # ... and compare
                                                                               # with dycl.load(out/)

It asks the server for the model's inputs (GET), sends that many requests of random inputs
at once (POST; the server batches them into one run_many), and prints each answer. With
`--artifact`, it also runs the same inputs through the artifact locally and prints the
largest difference. The wire format (dycl/serve/codec.py describes it) is JSON: a tensor
is {"dtype", "shape", "data": base64 of its little-endian bytes}, a tuple {"tuple": [...]}.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np


class ServerError(Exception):
    """An HTTP error answer: its status and the server's message."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(f"HTTP {status} {kind}: {message}")
        self.status, self.kind, self.message = status, kind, message


def encode(value):
    if isinstance(value, np.ndarray):
        data = value.astype(value.dtype.newbyteorder("<")).tobytes()  # C order
        return {"dtype": value.dtype.name, "shape": list(value.shape), "data": base64.b64encode(data).decode()}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    return value  # a Python scalar or None


def decode(value):
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if "tuple" in value:
            return tuple(decode(v) for v in value["tuple"])
        if "dict" in value:
            return {key: decode(v) for key, v in value["dict"]}
        dtype = np.dtype(value["dtype"])
        raw = np.frombuffer(base64.b64decode(value["data"]), dtype=dtype.newbyteorder("<"))
        return raw.astype(dtype).reshape(value["shape"])
    return value


def send(url: str, body: bytes, timeout: float = 120) -> dict:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        document = json.loads(error.read())
        raise ServerError(error.code, document["error"], document["message"]) from None


def predict(url: str, inputs: list, timeout: float = 120):
    """The model's outputs for one request (ServerError: the server refused it)."""
    return decode(send(url, json.dumps({"inputs": [encode(v) for v in inputs]}).encode(), timeout)["outputs"])


def describe(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.loads(answer.read())


def random_inputs(specs: list[dict], rng: np.random.Generator) -> list:
    inputs = []
    for spec in specs:
        if spec["kind"] == "tensor":
            shape = [1 if d is None else d for d in spec["shape"] or []]
            dtype = np.dtype(spec["dtype"])
            value = rng.standard_normal(shape) if dtype.kind == "f" else rng.integers(0, 2 if dtype.kind == "b" else 10, shape)
            inputs.append(value.astype(dtype))
        else:
            inputs.append({"int": lambda: int(rng.integers(0, 10)), "float": lambda: float(rng.standard_normal()),
                           "bool": lambda: bool(rng.integers(0, 2))}[spec["kind"]]())
    return inputs


def leaves(value):
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    else:
        yield value


def summary(value) -> str:
    if isinstance(value, np.ndarray):
        return f"tensor{list(value.shape)} {value.dtype} {value.reshape(-1)[:6].tolist()}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}(" + ", ".join(summary(v) for v in value) + ")"
    return repr(value)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8000/")
    parser.add_argument("--requests", type=int, default=8, help="how many requests to send at once")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--artifact", help="the served artifact: run the inputs through it locally and compare")
    args = parser.parse_args(argv)

    model = describe(args.url)
    if model.get("input_tree") and any(not isinstance(node, int) for node in model["input_tree"]):
        raise SystemExit("this example sends tensors and scalars; the model takes lists or tuples of them")
    rng = np.random.default_rng(args.seed)
    requests = [random_inputs(model["inputs"], rng) for _ in range(args.requests)]
    with ThreadPoolExecutor(len(requests)) as pool:
        answers = list(pool.map(lambda inputs: predict(args.url, inputs), requests))
    for k, outputs in enumerate(answers):
        print(f"request {k}: {summary(outputs)}")
    print(f"server: {describe(args.url)['run_many']}")
    if args.artifact:
        import dycl

        local = dycl.load(args.artifact)
        worst = max(
            float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)), initial=0.0))
            for inputs, outputs in zip(requests, answers)
            for a, b in zip(leaves(outputs), leaves(local(*inputs)))
        )
        print(f"largest difference from dycl.load({args.artifact!r}): {worst:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
