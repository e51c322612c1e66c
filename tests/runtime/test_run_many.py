"""`CompiledModel.run_many`: many requests, each on its own path, with the sub-DNN calls
they share batched along dim 0 where dycl-mark-batchable proved it sound (ONNX Runtime)."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import torch
from torch import nn

import dycl
from dycl.api import compare_outputs
from dycl.zoo import EVALUATION, REGISTRY
from tests.api.shared import *  # noqa: F401,F403 - one compile cache for the whole session

N = 32


def _requests(entry, n: int = N) -> list[tuple]:
    """`n` requests that cycle through the inputs taking every path."""
    paths = [tuple(args) for args in entry.path_inputs()]
    return [paths[k % len(paths)] for k in range(n)]


def _check_against_eager_and_one_at_a_time(model, compiled, requests) -> None:
    outputs = compiled.run_many(requests)
    assert len(outputs) == len(requests)
    with torch.no_grad():
        for k, (args, output) in enumerate(zip(requests, outputs)):
            _, difference = compare_outputs(model(*args), output, atol=1e-4, path=f"request {k}")
            assert difference is None, difference
            _, difference = compare_outputs(compiled(*args), output, rtol=0, atol=1e-6, path=f"request {k}")
            assert difference is None, difference


@pytest.fixture(scope="module")
def caption():
    torch.set_num_threads(1)
    entry = REGISTRY["caption_resnext"]
    model = entry.build()
    return entry, model, dycl.compile(model, entry.example_inputs(), progress=False, check=False)


def test_run_many_matches_eager_on_captions_of_different_lengths(caption):
    entry, model, compiled = caption
    _check_against_eager_and_one_at_a_time(model, compiled, _requests(entry))


def test_run_many_batches_the_decoder_steps_of_many_captions(caption):
    entry, model, compiled = caption
    assert all(r["batchable"] for r in compiled.manifest["subdnns"])  # encoder and decoder step
    compiled.batch_stats.clear()
    compiled.run_many(_requests(entry))
    stats = compiled.batch_stats
    # every request's encoder in as few calls as keep each call's largest tensor in cache
    from dycl.runtime.batching import BATCH_BYTES

    encoder = compiled.manifest["subdnns"][0]
    assert stats["subdnn_0"]["backend_calls"] == -(-N // max(1, BATCH_BYTES // encoder["row_bytes"]))
    decoder = stats["subdnn_1"]
    assert decoder["mean_batch"] > 4 and decoder["backend_calls"] < decoder["requests"]


def test_run_many_follows_each_requests_early_exit():
    torch.set_num_threads(1)
    entry = REGISTRY["sdn_mobilenet"]
    model = entry.build()
    compiled = dycl.compile(model, entry.example_inputs(), progress=False, check=False, run_many_form=True)
    # Each block's sub-DNN also computes its exit's 0-d confidence test: not batchable ...
    assert not any(r["batchable"] for r in compiled.manifest["subdnns"])
    _check_against_eager_and_one_at_a_time(model, compiled, _requests(entry))
    # ... but run_many's form splits the test out (dycl-split-batchable): the blocks batch.
    records = compiled.manifest["run_many"]["subdnns"]
    blocks = [r["name"] for r in records if not r["name"].endswith("_per_request")]
    assert blocks and all(r["batchable"] is (r["name"] in blocks) for r in records)
    assert compiled.batch_stats[blocks[0]]["mean_batch"] > 1


def test_bad_input_to_run_many_names_the_request(caption):
    entry, _, compiled = caption
    requests = _requests(entry, 3)
    (image,) = requests[2]
    with pytest.raises(dycl.InputError, match=r"request 2: .*shape \[1, 3, 8, 8\]"):
        compiled.run_many([*requests[:2], (image[..., :8, :8],)])
    with pytest.raises(dycl.InputError, match=r"request 1: .*takes 1 input"):
        compiled.run_many([requests[0], (image, image)])
    with pytest.raises(dycl.InputError, match=r"request 0: expected a tuple"):
        compiled.run_many([image])


# ------------------------------------------ return_exceptions: each request its own outcome


def test_run_many_gives_each_bad_request_its_own_input_error(caption):
    entry, model, compiled = caption
    good = _requests(entry, 9)
    (image,) = good[0]
    bad = {
        1: ((image[..., :8, :8],), r"^forward\(\) input 'image': expected a float32 tensor of shape \[1, 3, 64, 64\], got a float32 tensor of shape \[1, 3, 8, 8\]$"),
        4: ((image.double(),), r"got a float64 tensor"),
        5: ((image, image), r"^forward\(\) takes 1 input\(s\), got 2$"),
        7: (("not a tensor",), r"got str$"),
        8: (image, r"^expected a tuple of inputs, got Tensor$"),
    }
    requests = [bad[k][0] if k in bad else args for k, args in enumerate(good)]
    compiled.batch_stats.clear()
    outcomes = compiled.run_many(requests, return_exceptions=True)
    assert len(outcomes) == len(requests)
    with torch.no_grad():
        for k, (args, outcome) in enumerate(zip(requests, outcomes)):
            if k in bad:
                assert isinstance(outcome, dycl.InputError), (k, outcome)
                assert re.search(bad[k][1], str(outcome)), (k, str(outcome))
                continue
            _, difference = compare_outputs(model(*args), outcome, atol=1e-4, path=f"request {k}")
            assert difference is None, difference
    assert compiled.batch_stats["subdnn_0"]["mean_batch"] == len(good) - len(bad)  # the good ones still batch
    with pytest.raises(dycl.InputError, match=r"request 1: "):  # the default raises, as before
        compiled.run_many(requests)


class Window(nn.Module):
    """`narrow` at a runtime start runs in the host program: a start past the end raises
    there, as torch raises."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(4, 3)

    def forward(self, x, start: int):
        h = torch.relu(self.fc1(x))
        return self.fc2(h.narrow(1, start, 4))


class BagOfWords(nn.Module):
    """An embedding: a token id past the vocabulary fails inside the (batchable) sub-DNN."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.fc = nn.Linear(8, 3)

    def forward(self, tokens):
        return self.fc(self.embed(tokens).mean(1))


def _outcomes_against_eager(model, requests, outcomes, failing: set[int]) -> None:
    with torch.no_grad():
        for k, (args, outcome) in enumerate(zip(requests, outcomes)):
            if k in failing:
                assert isinstance(outcome, Exception) and not isinstance(outcome, dycl.InputError), (k, outcome)
                with pytest.raises(Exception):  # eager fails on these inputs too
                    model(*args)
                continue
            _, difference = compare_outputs(model(*args), outcome, atol=1e-4, path=f"request {k}")
            assert difference is None, difference


def test_a_request_whose_host_program_raises_gets_its_error_and_the_others_run():
    x = torch.randn(1, 6)
    model, compiled = _compiled(Window, x, 2)
    requests = [(torch.randn(1, 6), start) for start in (0, 7, 3, 4, 1, 9, 2)]
    outcomes = compiled.run_many(requests, return_exceptions=True)
    assert [type(o).__name__ for o in outcomes[1:6:4]] == ["IndexError", "IndexError"]
    assert "start (7) + length (4) exceeds dimension size (8)" in str(outcomes[1])
    _outcomes_against_eager(model, requests, outcomes, {1, 5})
    assert compiled.batch_stats["subdnn_1"]["requests"] == 5  # the two that failed never got there
    with pytest.raises(IndexError, match=r"start \(7\)"):
        compiled.run_many(requests)


def test_a_batched_call_that_fails_fails_only_the_request_it_came_from():
    tokens = torch.randint(0, 10, (1, 5))
    model, compiled = _compiled(BagOfWords, tokens)
    assert compiled.manifest["subdnns"][0]["batchable"]
    requests = [(torch.randint(0, 10, (1, 5), generator=torch.Generator().manual_seed(k)),) for k in range(8)]
    for k in (2, 6):
        requests[k][0][0, 3] = 10 + k  # past the vocabulary
    outcomes = compiled.run_many(requests, return_exceptions=True)
    assert all("out of data bounds" in str(outcomes[k]) for k in (2, 6)), outcomes
    _outcomes_against_eager(model, requests, outcomes, {2, 6})
    with pytest.raises(Exception, match="out of data bounds"):
        compiled.run_many(requests)


def test_a_stateful_model_passes_over_a_bad_request_and_its_state_goes_on_from_the_good_ones():
    from tests.frontend.state_models import SEQUENCES

    factory, calls = SEQUENCES["streaming_gru"]
    torch.manual_seed(0)
    model = factory().eval()
    eager = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], progress=False, check=False)
    requests = [tuple(args) for args in calls[:6]]
    requests[2] = (requests[2][0][:, :3],)  # a chunk of the wrong length
    outcomes = compiled.run_many(requests, return_exceptions=True)
    assert isinstance(outcomes[2], dycl.InputError) and "shape [1, 3, 4]" in str(outcomes[2])
    with torch.no_grad():
        for k, (args, outcome) in enumerate(zip(requests, outcomes)):
            if k != 2:  # eager sees the good requests only, in order
                _, difference = compare_outputs(eager(*args), outcome, atol=1e-5, path=f"request {k}")
                assert difference is None, difference
    np.testing.assert_allclose(compiled.state["hidden"], eager.hidden.numpy(), atol=1e-5)


# --------------------------------------------------- which sub-DNNs batch: the compiler's proof


class RowWise(nn.Module):
    """Every op maps the rows of dim 0 on their own: the one sub-DNN is batchable."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x)))
        h = h.view(-1, 4 * 6 * 6)
        return torch.softmax(self.fc(h), dim=-1)


class SoftmaxOverTheBatch(RowWise):
    def forward(self, x):
        h = torch.flatten(torch.relu(self.bn(self.conv(x))), 1)
        return torch.softmax(self.fc(h), dim=0)  # mixes the rows


class ArgmaxOfAll(RowWise):
    def forward(self, x):
        h = torch.flatten(torch.relu(self.bn(self.conv(x))), 1)
        return self.fc(h), self.fc(h).argmax()  # an index into the whole batch


class BatchSizeInTheView(RowWise):
    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x)))
        return self.fc(h.view(x.size(0), -1))  # the batch size of one request, baked in


class ConfidentExit(nn.Module):
    """The exit test `conf.max() > t` reads the whole batch: the sub-DNN computing it is
    not batchable; the branch after it is."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.head = nn.Linear(8, 3)
        self.fc2 = nn.Linear(8, 3)
        self.threshold = 0.45

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        conf = torch.softmax(self.head(h), dim=1)
        if conf.max() > self.threshold:
            return conf
        return torch.softmax(self.fc2(h), dim=1)


def _compiled(model_class, *inputs, **options):
    torch.manual_seed(0)
    model = model_class().eval()
    options.setdefault("run_many_form", True)
    return model, dycl.compile(model, inputs, progress=False, check=False, **options)


@pytest.mark.parametrize(
    "model_class, batchable",
    [(RowWise, True), (SoftmaxOverTheBatch, False), (ArgmaxOfAll, False), (BatchSizeInTheView, False)],
)
def test_only_sub_dnns_proven_row_independent_are_batchable(model_class, batchable):
    x = torch.randn(1, 3, 6, 6)
    model, compiled = _compiled(model_class, x)
    assert [r["batchable"] for r in compiled.manifest["subdnns"]] == [batchable]
    requests = [(torch.randn(1, 3, 6, 6),) for _ in range(6)]
    _check_against_eager_and_one_at_a_time(model, compiled, requests)
    stats = {name: entry["mean_batch"] for name, entry in compiled.batch_stats.items()}
    if batchable:
        assert "run_many" not in compiled.manifest and stats == {"subdnn_0": 6}
    else:
        # run_many's own form: the convolution batches, what mixes the rows runs per request
        assert stats == {"many_subdnn_0": 6, "many_subdnn_0_per_request": 1}


def test_a_condition_from_the_whole_batch_is_not_batchable_and_the_branch_is():
    torch.manual_seed(1)
    xs = [torch.randn(1, 6) for _ in range(16)]
    model, compiled = _compiled(ConfidentExit, xs[0], pipeline={"keep_branches": False})
    with torch.no_grad():
        exits = {bool(torch.softmax(model.head(torch.relu(model.fc1(x))), 1).max() > model.threshold) for x in xs}
    assert exits == {True, False}, "the inputs must take both paths"
    by_name = {r["name"]: r for r in compiled.manifest["subdnns"]}
    has_condition = {name: any(o["shape"] == [] for o in r["outputs"]) for name, r in by_name.items()}
    assert sorted(has_condition.values()) == [False, True]
    for name, record in by_name.items():
        assert record["batchable"] is not has_condition[name], name
    _check_against_eager_and_one_at_a_time(model, compiled, [(x,) for x in xs])


def test_a_gate_kept_inside_a_sub_dnn_is_not_batchable_and_run_many_has_it_in_the_host():
    torch.manual_seed(1)
    xs = [torch.randn(1, 6) for _ in range(16)]
    model, compiled = _compiled(ConfidentExit, xs[0])  # the default keeps the branch inside: an ONNX If
    records = compiled.manifest["subdnns"]
    assert len(records) == 1 and not records[0]["batchable"]
    # run_many's own form: the gate in the host, its exit test (the max of a one-row softmax)
    # computed row by row in the batched call (dycl-reduce-by-row): no part runs per request
    many = {r["name"]: r["batchable"] for r in compiled.manifest["run_many"]["subdnns"]}
    assert sorted(many.values()) == [True, True]
    _check_against_eager_and_one_at_a_time(model, compiled, [(x,) for x in xs])
    assert all(compiled.batch_stats[name]["mean_batch"] > 1 for name, batchable in many.items() if batchable)


def test_by_default_one_form_is_compiled_and_run_many_batches_what_it_can():
    torch.manual_seed(1)
    xs = [torch.randn(1, 6) for _ in range(16)]
    torch.manual_seed(0)
    model = ConfidentExit().eval()
    compiled = dycl.compile(model, (xs[0],), progress=False, check=False)
    assert "run_many" not in compiled.manifest and compiled.compile_report["run_many_subdnn_count"] == 0
    _check_against_eager_and_one_at_a_time(model, compiled, [(x,) for x in xs])
    (record,) = compiled.manifest["subdnns"]  # the kept gate: one sub-DNN, run request by request
    assert compiled.batch_stats[record["name"]]["mean_batch"] == 1


def test_a_batched_call_takes_at_most_the_rows_that_fit_the_cache(monkeypatch):
    from dycl.runtime import batching

    model, compiled = _compiled(RowWise, torch.randn(1, 3, 6, 6))
    (record,) = compiled.manifest["subdnns"]
    assert record["row_bytes"] == 4 * 4 * 6 * 6  # its largest tensor per row: the conv's output
    monkeypatch.setattr(batching, "BATCH_BYTES", 2 * record["row_bytes"])
    requests = [(torch.randn(1, 3, 6, 6),) for _ in range(6)]
    _check_against_eager_and_one_at_a_time(model, compiled, requests)
    assert compiled.batch_stats["subdnn_0"] == {"requests": 6, "backend_calls": 3, "mean_batch": 2.0}


def test_numpy_in_numpy_out():
    x = np.random.default_rng(0).standard_normal((1, 3, 6, 6)).astype(np.float32)
    model, compiled = _compiled(RowWise, torch.from_numpy(x))
    (out,) = compiled.run_many([(x,)])
    assert isinstance(out, np.ndarray)


# ------------------------------------------------------------------------- the whole zoo


@pytest.mark.slow
@pytest.mark.parametrize("keep_branches", [True, False], ids=["kept-gates", "split"])
@pytest.mark.parametrize("name", sorted(EVALUATION))  # (gpt_decode keeps state: one request at a time)
def test_run_many_matches_eager_on_every_zoo_network(name, keep_branches):
    torch.set_num_threads(1)
    entry = REGISTRY[name]
    model = entry.build()
    pipeline = None if keep_branches else {"keep_branches": False}
    compiled = dycl.compile(model, entry.example_inputs(), progress=False, check=False, pipeline=pipeline,
                            run_many_form=True)
    _check_against_eager_and_one_at_a_time(model, compiled, _requests(entry))
    batched = [r["name"] for r in compiled.manifest["subdnns"] if r["batchable"]]
    assert all(compiled.batch_stats[n]["mean_batch"] >= 1 for n in batched if n in compiled.batch_stats)


def test_the_compile_check_runs_run_manys_own_form_too():
    from dycl.api import CompileMismatch, check_against_eager

    torch.manual_seed(1)
    x = torch.randn(1, 6)
    model, compiled = _compiled(ConfidentExit, x)
    assert check_against_eager(model, compiled, (x,))["passed"]
    _, calls, records = compiled._run_many_form()
    assert "run_many" in compiled.manifest
    for name in [r["name"] for r in records]:  # the exit test, row by row in a batched call
        exact = calls[name]
        calls[name] = lambda *args, exact=exact: [np.logical_not(v) if v.dtype == bool else v for v in exact(*args)]
    with pytest.raises(CompileMismatch, match="run_many"):
        check_against_eager(model, compiled, (x,))


def test_a_saved_artifact_keeps_run_manys_own_form_and_loads_it_on_first_use(tmp_path):
    torch.manual_seed(1)
    xs = [torch.randn(1, 6) for _ in range(8)]
    model, compiled = _compiled(ConfidentExit, xs[0])
    loaded = dycl.load(compiled.save(tmp_path / "artifact"))
    assert {"host_run_many.py", "many_subdnn_0.onnx"} <= set(loaded.manifest["files"])
    assert loaded._run_many is None  # one request at a time never loads it
    _check_against_eager_and_one_at_a_time(model, loaded, [(x,) for x in xs])
    assert loaded.batch_stats["many_subdnn_0"]["mean_batch"] == len(xs)
