"""dycl-serve end to end (slow tier; needs the extra `serve`): the command starts a local Ray
instance, deploys a signed zoo network's artifact, answers 64 concurrent HTTP requests that
take different paths exactly as eager PyTorch does, answers bad requests with a 4xx that
carries `InputError`'s message while it goes on serving, and shuts Ray down on SIGTERM.
The client is examples/serve_client.py (numpy and urllib only)."""

from __future__ import annotations

import importlib.util
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

import dycl
from dycl.api import compare_outputs
from dycl.zoo import REGISTRY
from tests.api.shared import needs_signing, write_key_pair

pytestmark = [pytest.mark.slow, needs_signing]
pytest.importorskip("ray.serve")

ROOT = Path(__file__).resolve().parents[2]
# Captions of different lengths (the encoder and the decoder step batch; the outputs are token
# ids); SkipNet with its gates in the host (the blocks batch, the gates run request by request).
NETWORKS = {"caption_resnext": None, "skipnet_ff": {"keep_branches": False}}
N = 64


def _client():
    spec = importlib.util.spec_from_file_location("serve_client", ROOT / "examples" / "serve_client.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(directory: Path, log: Path, *options: str) -> tuple[subprocess.Popen, str]:
    """`dycl-serve` in its own process, once it says it is serving (or has exited)."""
    port = _free_port()
    command = [sys.executable, "-m", "dycl.tools.dycl_serve", str(directory), "--port", str(port), "--num-cpus", "2", *options]
    server = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=ROOT)
    deadline = time.monotonic() + 300
    while "dycl-serve: serving" not in log.read_text():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            pytest.fail(f"dycl-serve did not start:\n{log.read_text()[-4000:]}")
        time.sleep(0.5)
    return server, f"http://127.0.0.1:{port}/"


def _stop(server: subprocess.Popen, log: Path) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        assert server.wait(timeout=120) == 0, log.read_text()[-4000:]
    finally:
        if server.poll() is None:
            server.kill()


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    from cryptography.hazmat.primitives.asymmetric import ec

    return write_key_pair(tmp_path_factory.mktemp("keys"), "ours", ec.SECP256R1)


@pytest.fixture(scope="module", params=sorted(NETWORKS))
def network(request, tmp_path_factory, keys):
    torch.set_num_threads(1)
    entry = REGISTRY[request.param]
    model = entry.build()
    compiled = dycl.compile(model, entry.example_inputs(), progress=False, check=False, pipeline=NETWORKS[request.param])
    private, _ = keys
    directory = compiled.save(tmp_path_factory.mktemp("artifact") / request.param, sign_key=private)
    return entry, model, directory


@pytest.fixture(scope="module")
def served(network, keys, tmp_path_factory):
    entry, model, directory = network
    log = tmp_path_factory.mktemp("server") / "dycl-serve.log"
    server, url = _start(directory, log, "--verify-key", str(keys[1]), "--max-batch-size", "32", "--batch-wait-ms", "20")
    try:
        yield entry, model, directory, url
    finally:
        _stop(server, log)


def test_64_concurrent_requests_on_different_paths_match_eager(served):
    entry, model, _, url = served
    client = _client()
    paths = entry.path_inputs()
    requests = [paths[k % len(paths)] for k in range(N)]
    assert len(set(entry.paths(model, requests))) > 1, "the requests must take different paths"
    start = time.perf_counter()
    with ThreadPoolExecutor(N) as pool:
        answers = list(pool.map(lambda args: client.predict(url, [a.numpy() for a in args]), requests))
    wall = time.perf_counter() - start
    worst = 0.0
    with torch.no_grad():
        for k, (args, outputs) in enumerate(zip(requests, answers)):
            error, difference = compare_outputs(model(*args), outputs, atol=1e-4, path=f"request {k}")
            assert difference is None, difference
            worst = max(worst, error)
    served_so_far = client.describe(url)["run_many"]
    assert served_so_far["requests"] == N
    print(
        f"\n{entry.name}: {N} concurrent requests over HTTP in {wall:.2f} s ({N / wall:.1f} requests/s), "
        f"max abs error {worst:.2e}, run_many calls {served_so_far['run_many_calls']}, "
        f"mean batch {served_so_far['mean_batch']:.1f}"
    )


def _bad_requests(image: np.ndarray) -> dict[str, tuple[bytes, list]]:
    """name -> (body, the inputs it carries, for those a codec can carry)."""
    client = _client()

    def body(inputs):
        return json.dumps({"inputs": [client.encode(v) for v in inputs]}).encode()

    wrong = {
        "wrong shape": [image[..., :8, :8]],
        "wrong dtype": [image.astype(np.float64)],
        "wrong number of inputs": [image, image],
        "not a tensor": ["a picture of a cat"],
        "no inputs": [],
    }
    return {name: (body(inputs), inputs) for name, inputs in wrong.items()}


def test_bad_requests_get_a_4xx_with_the_input_errors_message_and_the_server_goes_on(served):
    entry, model, directory, url = served
    client = _client()
    local = dycl.load(directory)
    (image,) = [a.numpy() for a in entry.path_inputs()[0]]
    with torch.no_grad():
        eager = model(torch.from_numpy(image))
    for name, (body, inputs) in _bad_requests(image).items():
        with pytest.raises(client.ServerError) as answer:
            client.send(url, body)
        with pytest.raises(dycl.InputError) as refusal:
            local(*inputs)
        assert (answer.value.status, answer.value.kind) == (400, "InputError"), name
        assert answer.value.message == str(refusal.value), name
    malformed = {
        b"not json": "the request body is not JSON",
        b'{"inputs": [{"dtype": "float32", "shape": [1, 3, 8, 8], "data": "AAAA"}]}': 'input 0: "data" holds 3 bytes',
        b'{"inputs": [{"pixels": [0.5]}]}': "input 0: an object with keys 'pixels' is not a tensor",
    }
    for body, message in malformed.items():
        with pytest.raises(client.ServerError) as answer:
            client.send(url, body)
        assert answer.value.status == 400 and answer.value.message.startswith(message), answer.value
    # Bad and good requests in one batch: each gets its own answer.
    mixed = [b for b, _ in _bad_requests(image).values()] * 2 + [json.dumps({"inputs": [client.encode(image)]}).encode()] * 6

    def outcome(body):
        try:
            return client.decode(client.send(url, body)["outputs"])
        except client.ServerError as error:
            return error

    with ThreadPoolExecutor(len(mixed)) as pool:
        outcomes = list(pool.map(outcome, mixed))
    assert [isinstance(o, client.ServerError) and o.status == 400 for o in outcomes] == [True] * 10 + [False] * 6
    for outputs in [*outcomes[10:], client.predict(url, [image])]:  # and the server still serves
        assert compare_outputs(eager, outputs, atol=1e-4)[1] is None


def test_the_client_example_runs_against_the_server(served, capsys):
    _, _, directory, url = served
    assert _client().main([url, "--requests", "4", "--artifact", str(directory)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("request ") == 4
    difference = float(printed.rsplit("largest difference from", 1)[1].split(":")[1])
    assert difference <= 1e-4, printed


class BagOfWords(torch.nn.Module):
    """A token id past the vocabulary fails inside the sub-DNN (ONNX Runtime's Gather), as
    eager's embedding fails: the request's run fails, not its inputs' check."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 8)
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, tokens):
        return self.fc(self.embed(tokens).mean(1))


@pytest.fixture(scope="module")
def bag_of_words(tmp_path_factory):
    torch.manual_seed(0)
    model = BagOfWords().eval()
    compiled = dycl.compile(model, (torch.randint(0, 10, (1, 5)),), progress=False, check=False)
    return model, compiled.save(tmp_path_factory.mktemp("artifact") / "bag_of_words")


def test_a_request_whose_run_fails_gets_a_500_with_its_error_and_the_others_are_answered(bag_of_words, tmp_path):
    model, directory = bag_of_words
    client = _client()
    server, url = _start(directory, tmp_path / "dycl-serve.log")
    try:
        tokens = [np.random.default_rng(k).integers(0, 10, (1, 5)) for k in range(12)]
        for k in (3, 8):
            tokens[k][0, 1] = 11

        def outcome(values):
            try:
                return client.predict(url, [values])
            except client.ServerError as error:
                return error

        with ThreadPoolExecutor(len(tokens)) as pool:
            outcomes = list(pool.map(outcome, tokens))
        with torch.no_grad():
            for k, (values, answer) in enumerate(zip(tokens, outcomes)):
                if k in (3, 8):
                    assert answer.status == 500 and "indices element out of data bounds" in answer.message, answer
                    continue
                assert compare_outputs(model(torch.from_numpy(values)), answer, atol=1e-4)[1] is None, k
            assert compare_outputs(model(torch.from_numpy(tokens[0])), client.predict(url, [tokens[0]]), atol=1e-4)[1] is None
    finally:
        _stop(server, tmp_path / "dycl-serve.log")


def test_an_unsigned_artifact_is_refused_at_startup(bag_of_words, keys, capsys):
    from dycl.tools.dycl_serve import main

    _, unsigned = bag_of_words
    assert main([str(unsigned), "--port", str(_free_port()), "--verify-key", str(keys[1])]) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"dycl-serve: error: refusing to load {unsigned}: it is not signed"), error


def test_the_server_imports_no_torch():
    code = (
        "import sys, dycl.serve.deployment, dycl.tools.dycl_serve; "
        "assert not any(m in sys.modules for m in ('torch', 'xdsl', 'torch_mlir')), 'torch loaded'"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
