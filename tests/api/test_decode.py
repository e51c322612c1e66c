"""gpt-fast-style greedy decoding (dycl/zoo/gpt_decode.py): a prefill of a prompt of any length,
then one-token steps with a KV cache in registered buffers, until `max_new_tokens` or the end
token. Compiled, it must give eager's tokens and eager's caches call by call, for prompt
lengths never seen when compiling, with one sub-DNN for the step whatever the length (not one
per length, not unrolled) and one prefill for every prompt length from 2 on.

Default tier: a tiny configuration on ONNX Runtime, whose prefill of 1, 3 or 7 tokens is one
sub-DNN call and each further token one call of the step (TVM: slow tier); the pieces are in
tests/frontend/test_dynamic_inputs.py and tests/bench/test_decode_bench.py. Slow tier: a small
configuration of the same code on ONNX Runtime, and the zoo's `gpt_decode` (4 layers, width
256) on both backends."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import dycl
from dycl.zoo.gpt_decode import GPTDecode, ModelArgs

SMALL = ModelArgs(block_size=48, vocab_size=64, n_layer=2, n_head=2, dim=32, intermediate_size=64)
EXAMPLE_LENGTH = 5
UNSEEN_LENGTHS = (1, 2, 3, 9, 17, 30)


def _prompt(length: int, seed: int, vocabulary: int) -> torch.Tensor:
    return torch.randint(3, vocabulary, (length,), generator=torch.Generator().manual_seed(seed))


def _example(length: int, vocabulary: int, budget: int = 6) -> tuple:
    prompt = _prompt(length, 0, vocabulary)
    torch._dynamo.mark_dynamic(prompt, 0)  # (prompts of any length)
    return (prompt, budget)


@pytest.fixture(scope="module")
def small_decoder():
    """The small decoder, its logits spread so that greedy choices are clear, and its end token
    one that the greedy decoding of the first calls emits after a few steps."""
    torch.manual_seed(0)
    model = GPTDecode(SMALL, eos_id=None).eval()
    with torch.no_grad():
        model.model.output.weight.mul_(40.0)
        tokens = [model(_prompt(n, n, SMALL.vocab_size), 12).tolist() for n in UNSEEN_LENGTHS]
    model.eos_id = tokens[2][3]
    for layer in model.model.layers:
        layer.attention.kv_cache.k_cache.zero_()
        layer.attention.kv_cache.v_cache.zero_()
    return model


def _calls(vocabulary: int) -> list[tuple]:
    """Prefills of lengths the compile never saw, with budgets from 1 to 14 new tokens."""
    budgets = (4, 1, 12, 14, 7, 9)
    return [(_prompt(n, n, vocabulary), b) for n, b in zip(UNSEEN_LENGTHS, budgets)]


def _state_error(eager, state: dict) -> float:
    buffers = dict(eager.named_buffers())
    return max(float((torch.from_numpy(np.asarray(v)) - buffers[k]).abs().max()) for k, v in state.items())


def _subdnn_calls(compiled, args) -> dict[str, int]:
    """How often each sub-DNN runs in one call of `compiled(*args)`."""
    counts: dict[str, int] = {}

    def counting(name, run):
        def call(*arguments):
            counts[name] = counts.get(name, 0) + 1
            return run(*arguments)

        return call

    compiled.rebind({n: counting(n, r) for n, r in compiled.subdnn_calls.items()})(
        *[np.ascontiguousarray(a.numpy()) if isinstance(a, torch.Tensor) else a for a in args])
    return counts


def assert_decodes_like_eager(model, compiled, calls) -> dict:
    """Token for token and cache for cache, call by call; returns what the calls covered."""
    eager = copy.deepcopy(model)
    covered = {"stopped": 0, "ran_out": 0, "lengths": set(), "cache_error": 0.0}
    for prompt, budget in calls:
        with torch.no_grad():
            expected = eager(prompt.clone(), budget)
        got = compiled(prompt, budget)
        assert torch.equal(torch.as_tensor(got), expected), (len(prompt), budget, got, expected)
        covered["cache_error"] = max(covered["cache_error"], _state_error(eager, compiled.state))
        assert covered["cache_error"] <= 1e-4
        covered["stopped" if expected[-1] == model.eos_id else "ran_out"] += 1
        covered["lengths"].add(len(prompt))
    return covered


@pytest.mark.slow  # (a transformer: about 30 s idle, 2 min on the loaded 2-core machine)
def test_small_decoder_matches_eager_with_one_step_subdnn(small_decoder):
    model = small_decoder
    compiled = dycl.compile(model, _example(EXAMPLE_LENGTH, SMALL.vocab_size), progress=False)
    calls = _calls(SMALL.vocab_size)
    covered = assert_decodes_like_eager(model, compiled, calls)
    assert covered["stopped"] and covered["ran_out"]  # (both ways out of the greedy loop)
    print(f"small decoder on onnxruntime: caches' max abs error {covered['cache_error']:.2g}")
    assert EXAMPLE_LENGTH not in covered["lengths"]

    # One sub-DNN for every length: the artifact holds a fixed set of sub-DNNs; two more new
    # tokens run one sub-DNN (the step) twice more, and nothing else more, whatever the
    # prompt's length; prompts of 2, 11 and 29 tokens run the same prefill sub-DNNs.
    names = [r["name"] for r in compiled.manifest["subdnns"]]
    per_call = {}
    for n in (2, 11, 29):
        prompt = _prompt(n, 100 + n, SMALL.vocab_size)
        per_call[n] = short, longer = _subdnn_calls(compiled, (prompt, 3)), _subdnn_calls(compiled, (prompt, 5))
        assert set(short) <= set(names) and set(short) == set(longer)
        grown = {name: longer[name] - short[name] for name in short if longer[name] != short[name]}
        (step,) = grown
        assert grown[step] == 2 and short[step] == 2  # (the first new token is the prefill's)
    assert per_call[2] == per_call[11] == per_call[29]

    # the step's inputs have static shapes (gpt-fast's cache is full size, masked); the
    # prefill's prompt dim is symbolic in its ONNX graph (not the example's 5)
    import onnx

    graphs = {name: onnx.load(str(compiled.directory / f"{name}.onnx")).graph for name in per_call[2][0]}
    symbolic = [name for name, g in graphs.items() for i in g.input
                if any(d.dim_param for d in i.type.tensor_type.shape.dim)]
    assert symbolic and step not in symbolic

    compiled.reset_state()
    assert all(not np.any(v) for v in compiled.state.values())
    assert_decodes_like_eager(model, compiled, calls[:2])


def _zoo_calls(entry) -> list[tuple]:
    """The zoo's path inputs, then prompts of lengths the path inputs do not have."""
    from dycl.zoo.gpt_decode import candidate_prompts

    seen = {len(args[0]) for args in entry.path_inputs()}
    unseen = [p for p in candidate_prompts(40, seed=7) if len(p) not in seen][:3]
    return entry.path_inputs() + [(p, 16) for p in unseen] + [(_prompt(100, 3, 512), 20)]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
def test_zoo_gpt_decode_matches_eager_on_both_backends(backend):
    from dycl.zoo import REGISTRY

    entry = REGISTRY["gpt_decode"]
    model = entry.build(0)
    compiled = dycl.compile(model, entry.example_inputs(), backend=backend, progress=False)
    covered = assert_decodes_like_eager(model, compiled, _zoo_calls(entry))
    # another example length and budget compile the same sub-DNNs (none per length)
    prompt, _ = entry.example_inputs()
    longer = torch.cat([prompt, prompt])
    torch._dynamo.mark_dynamic(longer, 0)
    again = dycl.compile(copy.deepcopy(model), (longer, 3), backend=backend, progress=False, check=False)
    assert len(again.manifest["subdnns"]) == len(compiled.manifest["subdnns"])
    assert covered["stopped"] and covered["ran_out"]
    print(f"gpt_decode on {backend}: {len(compiled.manifest['subdnns'])} sub-DNNs, exact over "
          f"{covered['stopped'] + covered['ran_out']} calls, prompt lengths {sorted(covered['lengths'])}, "
          f"caches' max abs error {covered['cache_error']:.2g}")
    compiled.reset_state()
    assert_decodes_like_eager(model, compiled, entry.path_inputs()[:2])


# --- one sub-DNN call for a prefill of any length ---------------------------------------------

TINY = ModelArgs(block_size=24, vocab_size=32, n_layer=1, n_head=2, dim=16, intermediate_size=32)
PREFILL_LENGTHS = (1, 3, 7)  # (1 is the by-size arm of its own; 3 and 7 the symbolic one)


def _called(compiled, args) -> list[str]:
    """The sub-DNNs one call of `compiled(*args)` runs, in order (in-place runners kept)."""
    order: list[str] = []

    def recording(name, run):
        def call(*arguments):
            order.append(name)
            return run(*arguments)

        if (in_place := getattr(run, "in_place", None)) is not None:
            call.in_place = lambda given: recording(name, in_place(given))
        return call

    compiled.rebind({n: recording(n, r) for n, r in compiled.subdnn_calls.items()})(
        *[np.ascontiguousarray(a.numpy()) if isinstance(a, torch.Tensor) else a for a in args])
    return order


def assert_one_call_per_prefill_and_step(backend: str) -> dict[int, list[str]]:
    """gpt-fast's decoder (no end token: every budget runs out) compiled from a 5-token
    example: a prefill of 1, 3 or 7 tokens is one sub-DNN call, each new token after the
    first one more call of one step sub-DNN, the same for every length; tokens and caches
    are eager's."""
    torch.manual_seed(0)
    model = GPTDecode(TINY, eos_id=None).eval()
    compiled = dycl.compile(model, _example(EXAMPLE_LENGTH, TINY.vocab_size, budget=3), backend=backend,
                            progress=False)
    calls = {n: _called(compiled, (_prompt(n, n, TINY.vocab_size), 1)) for n in PREFILL_LENGTHS}
    assert all(len(order) == 1 for order in calls.values()), calls  # (the prefill alone: budget 1)
    assert calls[3] == calls[7]  # (one sub-DNN for both lengths: a symbolic dim, not per length)
    steps = {n: _called(compiled, (_prompt(n, n, TINY.vocab_size), 4)) for n in PREFILL_LENGTHS}
    for n, order in steps.items():
        prefill, *rest = order
        assert prefill == calls[n][0] and len(rest) == 3 and len(set(rest)) == 1, (n, order)
    assert len({tuple(order[1:]) for order in steps.values()}) == 1  # (one step for every length)
    if backend == "onnxruntime":  # both prefills and the step write the caches in place
        host = (compiled.directory / "host.py").read_text()
        for name in {calls[1][0], calls[3][0], steps[3][1]}:
            assert f"{name}_in_place = rt.in_place({name}, " in host, name
    covered = assert_decodes_like_eager(model, compiled, [(_prompt(n, 10 + n, TINY.vocab_size), 4)
                                                          for n in PREFILL_LENGTHS])
    print(f"tiny decoder on {backend}: prefill calls {calls}, step {steps[3][1]}, "
          f"caches' max abs error {covered['cache_error']:.2g}")
    return calls


def test_prefill_of_any_length_is_one_subdnn_call():
    assert_one_call_per_prefill_and_step("onnxruntime")


@pytest.mark.slow  # (TVM's build of the prefill and the step)
def test_prefill_of_any_length_is_one_subdnn_call_on_tvm():
    assert_one_call_per_prefill_and_step("tvm")
