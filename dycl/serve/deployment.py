"""dycl-serve's Ray Serve deployment: one compiled artifact behind HTTP, the requests that
arrive together batched by Ray Serve's own `@serve.batch` into one `run_many`.

`POST /` with a request body (`dycl.serve.codec`) answers 200 and the outputs. A request
the model refuses answers 400 with the `InputError`'s message (wrong shape, dtype or number
of inputs); a body the wire format cannot read answers 400 naming what is wrong; a request
whose run fails answers 500 with the error. One request's error is its own:
`run_many(..., return_exceptions=True)` gives the others of its batch their outputs, and
the server goes on serving. `GET /` describes the model (its entry, its inputs) and how
the requests batched so far.

The replica loads the artifact with `dycl.load` (verifying its signature first when given a
key) and never imports torch. `run_many` runs in a worker thread so that the next batch
gathers while one runs; Ray Serve runs one batch at a time (`max_concurrent_batches=1`),
which a stateful model needs too.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ray import serve
from starlette.requests import Request
from starlette.responses import Response

from dycl.runtime import InputError, load
from dycl.serve.codec import WireError, decode_request, encode_error, encode_response


@serve.deployment
class ModelServer:
    def __init__(
        self,
        directory: str,
        verify_key: str | None = None,
        threads: int | None = None,
        max_batch_size: int = 32,
        batch_wait_s: float = 0.005,
    ):
        self.model = load(directory, threads=threads, verify_key=verify_key)
        self.run_batch.set_max_batch_size(max_batch_size)
        self.run_batch.set_batch_wait_timeout_s(batch_wait_s)
        self.batches = {"run_many_calls": 0, "requests": 0}

    async def __call__(self, request: Request) -> Response:
        if request.method == "GET":
            return _json(200, self.describe())
        try:
            inputs = decode_request(await request.body())
        except WireError as error:
            return _error(400, error)
        try:
            outcome = await self.run_batch(inputs)
            if isinstance(outcome, Exception):
                raise outcome
            return Response(encode_response(outcome), media_type="application/json")
        except InputError as error:
            return _error(400, error)
        except Exception as error:  # the request's own failure; the server goes on
            return _error(500, error)

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.005)
    async def run_batch(self, requests: list[tuple]) -> list[Any]:
        self.batches["run_many_calls"] += 1
        self.batches["requests"] += len(requests)
        return await asyncio.to_thread(self.model.run_many, requests, return_exceptions=True)

    def describe(self) -> dict[str, Any]:
        manifest = self.model.manifest
        calls, requests = self.batches["run_many_calls"], self.batches["requests"]
        return {
            "entry": self.model.entry,
            "backend": self.model.backend,
            "inputs": manifest["inputs"],
            "input_tree": manifest.get("input_tree"),
            "run_many": {**self.batches, "mean_batch": requests / calls if calls else 0.0},
            "batch_stats": self.model.batch_stats,
        }


def application(
    directory: str,
    verify_key: str | None = None,
    threads: int | None = None,
    max_batch_size: int = 32,
    batch_wait_s: float = 0.005,
    num_cpus: float = 1,
):
    """The application `serve.run` deploys: one replica of the model. A replica takes as
    many requests at once as two full batches, so that a batch can fill while one runs
    (Ray Serve's default of 5 would cap every batch at 5)."""
    return ModelServer.options(
        max_ongoing_requests=2 * max_batch_size,
        ray_actor_options={"num_cpus": num_cpus},
        max_constructor_retry_count=1,
    ).bind(str(directory), verify_key, threads, max_batch_size, batch_wait_s)


def _json(status: int, document: Any) -> Response:
    return Response(json.dumps(document), status_code=status, media_type="application/json")


def _error(status: int, error: BaseException) -> Response:
    return Response(encode_error(error), status_code=status, media_type="application/json")
