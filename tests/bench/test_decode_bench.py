"""dycl-bench's decode table (dycl/bench/decode.py): the Optimum-style and the gpt-fast-style
baselines decode what the module decodes, the table reports what it says, and (slow) a smoke
run writes it. Never speed."""

from __future__ import annotations

import json
import math

import pytest
import torch

from dycl.bench.decode import PastStep, markdown, ratios
from dycl.zoo.gpt_decode import GPTDecode, ModelArgs

SMALL = ModelArgs(block_size=40, vocab_size=48, n_layer=2, n_head=2, dim=32, intermediate_size=64)


def _past_step_decode(step: PastStep, config: ModelArgs, prompt: torch.Tensor, budget: int, eos_id) -> torch.Tensor:
    """The Optimum-style loop of the baseline, on the un-exported step (torch)."""
    past = [torch.zeros(1, config.n_head, 0, config.head_dim) for _ in range(2 * config.n_layer)]
    logits, *past = step(prompt.view(1, -1), torch.arange(len(prompt)), *past)
    tokens = [int(logits[0].argmax())]
    for i in range(budget - 1):
        if tokens[-1] == eos_id:
            break
        logits, *past = step(torch.tensor([[tokens[-1]]]), torch.tensor([len(prompt) + i]), *past)
        tokens.append(int(logits[0].argmax()))
    return torch.tensor(tokens)


def test_the_optimum_style_step_decodes_what_the_module_decodes():
    """The baseline's step (past in, present out, its length growing) is the module's
    KV-cache attention over the rows written so far: the same greedy tokens, also when the
    end token stops it."""
    torch.manual_seed(0)
    model = GPTDecode(SMALL, eos_id=None).eval()
    with torch.no_grad():
        model.model.output.weight.mul_(40.0)
        step = PastStep(model.model).eval()
        free = model(torch.arange(3, 10), 12)
        model.eos_id = int(free[4])
        for length, budget in [(1, 5), (7, 12), (20, 15), (3, 1)]:
            prompt = torch.randint(3, SMALL.vocab_size, (length,), generator=torch.Generator().manual_seed(length))
            expected = model(prompt, budget)
            assert torch.equal(_past_step_decode(step, SMALL, prompt, budget, model.eos_id), expected)
        stops = model(torch.arange(3, 10), 12)
        assert stops[-1] == model.eos_id and len(stops) < 12
        assert torch.equal(_past_step_decode(step, SMALL, torch.arange(3, 10), 12, model.eos_id), stops)


def test_the_decode_table_reports_per_token_and_targets():
    record = {
        "requests": [[3, 24], [12, 1]], "generated_tokens": 25, "failures": {"dycl-tvm": "RuntimeError: x"},
        "systems": {
            name: {"cost": {"total_seconds": 1.0}, "exact": True,
                   "per_token": {"median_ms": ms, "q1_ms": ms, "q3_ms": ms},
                   "per_request": {"median_ms": ms * 12.5, "q1_ms": ms * 12, "q3_ms": ms * 13},
                   "per_token_at_cache_length_ms": {"16": ms, "64": ms, "256": ms * 1.2}}
            for name, ms in [("eager", 4.0), ("torch.compile", 3.0), ("dycl-ort", 1.0), ("optimum-ort", 0.95),
                             ("gptfast-ort", 1.25)]
        },
    }
    record["ratios"] = ratios(record)
    assert record["ratios"]["dycl_ort_speedup_vs_eager"] == 4.0
    assert record["ratios"]["dycl_ort_per_token_vs_optimum"] == pytest.approx(1 / 0.95)
    assert record["ratios"]["dycl_ort_per_token_256_vs_16"] == pytest.approx(1.2)
    assert math.isnan(record["ratios"]["dycl_tvm_speedup_vs_eager"])
    table = markdown(record, threads=2)
    assert "| DyCL+ORT | 1.000 (1.000–1.000) | 12.50 (12.00–13.00) | 1.000 | 1.000 | 1.200 | 1.0 | exact |" in table
    assert "| DyCL+TVM | failed: RuntimeError: x |" in table
    assert "| DyCL+ORT per-token latency / the Optimum-style baseline's <= 1.1 | 1.05 | yes |" in table
    assert record["ratios"]["dycl_ort_per_token_vs_gptfast"] == pytest.approx(0.8)
    assert "| gpt-fast's formulation by hand (full cache, mask) / the Optimum-style baseline, per token | 1.32 |" in table


def test_the_gptfast_style_step_decodes_what_the_module_decodes(tmp_path):
    """The hand-written gpt-fast loop on ONNX Runtime (its caches written in place through
    IOBinding) decodes the module's tokens, call after call on the same caches, also when
    the end token stops it."""
    from dycl.bench.decode import GptFastStyleDecoder, export_cache_step
    from dycl.runtime import RuntimeOptions

    torch.manual_seed(0)
    model = GPTDecode(SMALL, eos_id=None).eval()
    with torch.no_grad():
        model.model.output.weight.mul_(40.0)
        free = model(torch.arange(3, 10), 12)
    model.eos_id = int(free[4])
    decoder = GptFastStyleDecoder(export_cache_step(model, tmp_path / "step.onnx"), model, RuntimeOptions(threads=1))
    for length, budget in [(1, 5), (7, 12), (20, 15), (3, 1), (7, 12)]:
        prompt = torch.randint(3, SMALL.vocab_size, (length,), generator=torch.Generator().manual_seed(length))
        with torch.no_grad():
            expected = model(prompt, budget)
        assert torch.equal(torch.from_numpy(decoder(prompt.numpy(), budget)), expected)
    with torch.no_grad():
        stops = model(torch.arange(3, 10), 12)
    assert stops[-1] == model.eos_id and len(stops) < 12
    assert torch.equal(torch.from_numpy(decoder(torch.arange(3, 10).numpy(), 12)), stops)


@pytest.mark.slow
def test_decode_smoke_run_writes_the_table(tmp_path):
    """`dycl-bench --decode --quick` with the systems that compile in about a minute: every
    one exact, every row filled."""
    from dycl.bench.cli import main

    code = main(["--decode", "--quick", "--systems", "eager,dycl-ort,optimum-ort,gptfast-ort", "--budget", "1", "--max-rounds", "2",
                 "--min-rounds", "1", "--out", str(tmp_path), "--stem", "decode", "-q"])
    assert code == 0
    result = json.loads((tmp_path / "decode.json").read_text())["decode"]
    assert set(result["systems"]) == {"eager", "dycl-ort", "optimum-ort", "gptfast-ort"} and not result["failures"]
    for system in result["systems"].values():
        assert system["exact"] and system["per_token"]["median_ms"] > 0
        assert set(system["per_token_at_cache_length_ms"]) == {"16", "64", "256"}
    assert "Greedy decoding" in (tmp_path / "decode.md").read_text()
