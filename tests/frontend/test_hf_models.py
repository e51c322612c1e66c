"""A Hugging Face GPT-2 in a greedy loop written as the transformers docs show it (a
`DynamicCache` carried as `past_key_values`, keyword calls, a `ModelOutput` read by
attribute, `break` at the EOS token), and `generate`, refused at transformers' own line.

The model's call is captured whole (library_calls.py); the cache and the output are values
whose leaves are tensors (pytree_values.py). Tiny random config: nothing is downloaded."""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn

import dycl
from dycl.frontend import FrontendError
from tests.frontend.helpers import max_abs_error

transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.slow

VOCAB, EOS, NEW_TOKENS = 64, 5, 5


class Greedy(nn.Module):
    """Greedy decoding as the transformers docs write it by hand."""

    def __init__(self, model, eos_token_id, max_new_tokens=NEW_TOKENS):
        super().__init__()
        self.model, self.eos_token_id, self.max_new_tokens = model, eos_token_id, max_new_tokens

    @torch.no_grad()
    def forward(self, input_ids):
        past_key_values = transformers.DynamicCache()
        generated = input_ids
        next_input = input_ids
        for _ in range(self.max_new_tokens):
            outputs = self.model(input_ids=next_input, past_key_values=past_key_values, use_cache=True)
            past_key_values = outputs.past_key_values
            last_logits = outputs.logits[:, -1, :]
            next_token = last_logits.argmax(dim=-1, keepdim=True)
            generated = torch.cat([generated, next_token], dim=-1)
            if next_token.item() == self.eos_token_id:
                break
            next_input = next_token
        return generated, last_logits


class Generate(nn.Module):
    """`model.generate` called from forward."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model.generate(input_ids, max_new_tokens=NEW_TOKENS, do_sample=False, eos_token_id=EOS)


@pytest.fixture(scope="module")
def gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=2, n_head=2,
                                     bos_token_id=0, eos_token_id=EOS)
    return transformers.GPT2LMHeadModel(config).eval()


def _prompts(model: Greedy, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A prompt whose greedy decoding meets EOS before the last step, and one that never does."""
    generator = torch.Generator().manual_seed(length)
    early = never = None
    for _ in range(2000):
        prompt = torch.randint(0, VOCAB, (1, length), generator=generator)
        new = model(prompt)[0].shape[1] - length
        if new < model.max_new_tokens and early is None:
            early = prompt
        if new == model.max_new_tokens and not (model(prompt)[0][0, length:] == EOS).any() and never is None:
            never = prompt
        if early is not None and never is not None:
            return early, never
    raise AssertionError("no prompt of both kinds")


@pytest.mark.parametrize("length", [1, 3, 7])
def test_greedy_loop_matches_eager_token_for_token(gpt2, length):
    model = Greedy(gpt2, eos_token_id=EOS).eval()
    early, never = _prompts(model, length)
    compiled = dycl.compile(model, (never,), backend="onnxruntime", progress=False)
    for prompt in (early, never, torch.randint(0, VOCAB, (1, length), generator=torch.Generator().manual_seed(99))):
        expected, got = model(prompt), compiled(prompt)
        assert torch.equal(got[0], expected[0]), (prompt, expected[0], got[0])
        error = max_abs_error(expected[1], got[1])
        print(f"prompt {length}: {expected[0].shape[1] - length} new tokens, logits max abs error {error:.2e}")
        assert error < 1e-4
    assert early.shape[1] + NEW_TOKENS > model(early)[0].shape[1]  # (EOS was met early on one prompt)


def test_greedy_loop_is_one_step_for_every_cache_length(gpt2):
    """The step after the first is one runtime loop whose cache length is a runtime dim: as
    many sub-DNNs for 12 new tokens as for 4 (unrolled, each step had a sub-DNN of its own)."""
    counts = {}
    for new_tokens in (4, 12):
        model = Greedy(gpt2, eos_token_id=EOS, max_new_tokens=new_tokens).eval()
        early, never = _prompts(model, 3)
        compiled = dycl.compile(model, (never,), backend="onnxruntime", progress=False)
        errors = []
        for prompt in (early, never, *(torch.randint(0, VOCAB, (1, 3), generator=torch.Generator().manual_seed(s)) for s in range(6))):
            expected, got = model(prompt), compiled(prompt)
            assert torch.equal(got[0], expected[0]), (prompt, expected[0], got[0])
            errors.append(max_abs_error(expected[1], got[1]))
        counts[new_tokens] = len(compiled.subdnn_names)
        print(f"{new_tokens} new tokens: {counts[new_tokens]} sub-DNNs, logits max abs error {max(errors):.2e}")
        assert max(errors) < 1e-4
    assert counts[4] == counts[12], counts


def test_greedy_loop_takes_prompts_of_any_length(gpt2):
    """The prompt's length marked dynamic (as for torch.compile): one compiled model for
    prompts of 1 to 9 tokens, the prefill and the step each one sub-DNN for every length."""
    model = Greedy(gpt2, eos_token_id=EOS).eval()
    example = torch.randint(0, VOCAB, (1, 4), generator=torch.Generator().manual_seed(1))
    torch._dynamo.mark_dynamic(example, 1)
    compiled = dycl.compile(model, (example,), backend="onnxruntime", progress=False)
    for length in (4, 1, 2, 6, 9):
        early, never = _prompts(model, length)
        for prompt in (early, never):
            expected, got = model(prompt), compiled(prompt)
            assert torch.equal(got[0], expected[0]), (prompt, expected[0], got[0])
            assert max_abs_error(expected[1], got[1]) < 1e-4
    print(f"prompts of 1 to 9 tokens: {len(compiled.subdnn_names)} sub-DNNs")


@pytest.mark.skipif(os.environ.get("DYCL_SKIP_TVM") == "1", reason="TVM leg disabled")
def test_greedy_loop_on_tvm(gpt2):
    model = Greedy(gpt2, eos_token_id=EOS).eval()
    early, never = _prompts(model, 3)
    compiled = dycl.compile(model, (never,), backend="tvm", progress=False)
    for prompt in (early, never):
        expected, got = model(prompt), compiled(prompt)
        assert torch.equal(got[0], expected[0])
        error = max_abs_error(expected[1], got[1])
        print(f"tvm: logits max abs error {error:.2e}")
        assert error < 1e-4


def test_generate_is_refused_at_transformers_own_line(gpt2):
    prompt = torch.randint(0, VOCAB, (1, 4), generator=torch.Generator().manual_seed(0))
    with pytest.raises(FrontendError) as refused:
        dycl.compile(Generate(gpt2).eval(), (prompt,), backend="onnxruntime", progress=False)
    error = refused.value
    assert error.file.endswith(os.path.join("transformers", "generation", "utils.py")), error
    assert "in `generate` branches on a tensor's value" in error.construct
    assert "model_kwargs[\"attention_mask\"] == 1).all()" in error.construct
    assert "self.model.generate(" in error.construct  # (the user's call that reached it)


def test_generate_as_the_entry_method_is_refused_in_transformers(gpt2):
    prompt = torch.randint(0, VOCAB, (1, 4), generator=torch.Generator().manual_seed(0))
    with pytest.raises(FrontendError) as refused:
        dycl.compile(gpt2, (prompt,), backend="onnxruntime", method="generate", progress=False)
    assert os.path.join("transformers", "generation") in refused.value.file, refused.value
    assert refused.value.line > 0


class StaleCache(nn.Module):
    """The model appends to `cache` in place, and only `.logits` is kept: a later read of
    `cache` (in another block) must see the appended keys, which the host never got."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        cache = transformers.DynamicCache()
        if input_ids.sum() > 0:
            input_ids = input_ids + 0
        first = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True).logits
        if first.sum() > 0:
            first = first * 2
        second = self.model(input_ids=input_ids[:, -1:], past_key_values=cache, use_cache=True)
        return second.logits + first.sum()


def test_a_cache_changed_but_not_returned_is_refused(gpt2):
    prompt = torch.randint(0, VOCAB, (1, 4), generator=torch.Generator().manual_seed(0))
    with pytest.raises(FrontendError, match=r"changes `cache` \(a DynamicCache\) without returning it") as refused:
        dycl.compile(StaleCache(gpt2).eval(), (prompt,), backend="onnxruntime", progress=False)
    assert refused.value.file == __file__
