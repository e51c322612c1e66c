"""dycl-bench's decode table: greedy decoding with gpt_decode (dycl/zoo/gpt_decode.py).

Systems, all at the same thread count:

    eager           the module's own `forward` (gpt-fast's generate) under no_grad
    torch.compile   the Transformer compiled (torch.compile, inductor, default mode) as gpt-fast
                    compiles it, the generate loop in Python; warmed on every request
    dycl-ort        dycl.compile(model, ..., backend="onnxruntime"), numpy in and out
    dycl-tvm        dycl.compile(model, ..., backend="tvm"), untuned
    optimum-ort     the anchor: what a careful engineer writes by hand today, as Hugging Face
                    Optimum exports decoders: one ONNX graph of a step with the past keys and
                    values as inputs of a dynamic length and the present ones as outputs
                    (`torch.onnx.export`, dynamo exporter), run by a hand-written Python loop
                    on one ONNX Runtime session (the same session options as DyCL's)
    gptfast-ort     gpt-fast's own formulation by hand: the Transformer's forward exported once
                    with its full-size caches as inputs written in place (IOBinding) and the
                    token count dynamic, attending over every cache row through the mask, run
                    by the same hand-written loop: the work the compiled model does, so
                    DyCL+ORT against it is the compiler's share of the gap to the anchor

Rows: per request and per generated token (the requests are the zoo's path inputs: prompts
of several lengths, stopping at the end token or at the budget), the time per token at cache
lengths 16, 64 and 256 (a prompt of L - 9 tokens, then 8 steps: the difference between a
budget of 9 new tokens and of 1, divided by 8), and compile seconds. Every system's tokens
are checked against eager's first (exact). Timing as in the latency table: rounds,
systems interleaved in rotated order, medians and IQR over rounds (dycl.bench.timing).
"""

from __future__ import annotations

import copy
import math
import statistics
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from dycl.bench.timing import interleaved, plan_rounds, quartiles, sweep_seconds
from dycl.runtime import RuntimeOptions

SYSTEMS = ("eager", "torch.compile", "dycl-ort", "dycl-tvm", "optimum-ort", "gptfast-ort")
LABELS = {
    "eager": "PyTorch eager",
    "torch.compile": "torch.compile",
    "dycl-ort": "DyCL+ORT",
    "dycl-tvm": "DyCL+TVM",
    "optimum-ort": "Optimum-style ORT (hand-written loop)",
    "gptfast-ort": "gpt-fast-style ORT (hand-written loop, full cache)",
}
CACHE_LENGTHS = (16, 64, 256)
STEPS_PER_LENGTH = 8
TARGETS = {  # (what, comparison, bound) on the decode table's ratios
    "dycl_ort_per_token_vs_optimum": ("<=", 1.10, "DyCL+ORT per-token latency / the Optimum-style baseline's"),
    "dycl_ort_speedup_vs_eager": (">=", 2.0, "DyCL+ORT per-token speed-up over eager"),
    "dycl_ort_speedup_vs_torch_compile": (">", 1.0, "DyCL+ORT per-token speed-up over torch.compile"),
    "dycl_ort_per_token_256_vs_16": ("<=", 1.5, "DyCL+ORT time per token at cache length 256 / at 16"),
}

SHARES = {  # the anchor's gap split: the model's formulation, and the compiler's share of it
    "gptfast_per_token_vs_optimum": "gpt-fast's formulation by hand (full cache, mask) / the Optimum-style baseline, per token",
    "dycl_ort_per_token_vs_gptfast": "DyCL+ORT / gpt-fast's formulation by hand, per token",
}


@dataclass(frozen=True)
class DecodeSettings:
    runtime: RuntimeOptions = RuntimeOptions(threads=2)
    systems: tuple[str, ...] = SYSTEMS
    budget_seconds: float = 60.0  # timed rounds of the request table (all systems together)
    min_rounds: int = 3
    max_rounds: int = 30
    length_rounds: int = 7  # rounds of the per-cache-length table
    cache_lengths: tuple[int, ...] = CACHE_LENGTHS
    cache_dir: str | None = None
    log: bool = True


def _say(settings: DecodeSettings, text: str) -> None:
    if settings.log:
        print(f"[dycl-bench decode {time.strftime('%H:%M:%S')}] {text}", flush=True)


# ------------------------------------------------------------------------ the Optimum-style step


class PastStep(nn.Module):
    """gpt_decode's Transformer as Optimum exports a decoder with past: `(tokens, positions,
    past k/v per layer) -> (logits of the last token, present k/v per layer)`, the present
    being the past with this call's keys and values appended (its length grows by the
    call's tokens). The same weights and the same math as the module's KV-cache attention
    over the rows written so far (the masked rows contribute exactly zero there)."""

    def __init__(self, transformer):
        super().__init__()
        self.transformer = transformer

    def forward(self, idx: Tensor, input_pos: Tensor, *past: Tensor):
        t = self.transformer

        def appended(i: int, k: Tensor, v: Tensor):
            k, v = torch.cat([past[2 * i], k], dim=2), torch.cat([past[2 * i + 1], v], dim=2)
            key_pos = torch.arange(k.shape[2])
            return k, v, key_pos[None, None, None, :] <= input_pos[None, None, :, None]

        logits, presents = blocks(t, t.tok_embeddings(idx), t.freqs_cis[input_pos], appended)
        return (logits, *presents)


def blocks(transformer, x: Tensor, freqs_cis: Tensor, keys_and_values: Callable) -> tuple[Tensor, list[Tensor]]:
    """`x` through gpt_decode's blocks by hand, each layer attending over the keys, values
    and mask `keys_and_values(layer index, this call's k, v)` gives; returns the logits of
    the last position and every layer's keys and values."""
    from dycl.zoo.gpt_decode import apply_rotary_emb

    kept = []
    for i, layer in enumerate(transformer.layers):
        attention = layer.attention
        h = layer.attention_norm(x)
        bsz, seqlen, _ = h.shape
        shape = (bsz, seqlen, attention.n_head, attention.head_dim)
        q, k, v = attention.wqkv(h).split([attention.dim] * 3, dim=-1)
        q = apply_rotary_emb(q.view(shape), freqs_cis).transpose(1, 2)
        k = apply_rotary_emb(k.view(shape), freqs_cis).transpose(1, 2)
        k, v, mask = keys_and_values(i, k, v.view(shape).transpose(1, 2))
        kept += [k, v]
        y = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + attention.wo(y.transpose(1, 2).contiguous().view(bsz, seqlen, attention.dim))
        x = x + layer.feed_forward(layer.ffn_norm(x))
    return transformer.output(transformer.norm(x)[:, -1]), kept


def export_past_step(model, path: Path) -> Path:
    """The step exported once, with the token count and the past length dynamic."""
    from torch.export import Dim

    config = model.config
    step = PastStep(copy.deepcopy(model.model)).eval()
    shape = (1, config.n_head, 3, config.head_dim)
    past = [torch.randn(shape) for _ in range(2 * config.n_layer)]
    args = (torch.tensor([[5, 6]]), torch.tensor([3, 4]), *past)
    tokens, past_length = Dim("tokens", min=1, max=config.block_size), Dim("past", min=0, max=config.block_size)
    dynamic = ({1: tokens}, {0: tokens}, tuple({2: past_length} for _ in past))  # (*past: one tuple)
    names = [f"past_{kind}_{i}" for i in range(config.n_layer) for kind in "kv"]
    with torch.no_grad():
        torch.onnx.export(step, args, str(path), dynamo=True, dynamic_shapes=dynamic, optimize=True, verbose=False,
                          input_names=["idx", "input_pos", *names],
                          output_names=["logits", *[n.replace("past", "present") for n in names]])
    return path


class OptimumStyleDecoder:
    """The hand-written loop: a prefill with an empty past, then one token a step, feeding
    the presents back as the next past, greedy, until the budget or the end token."""

    def __init__(self, onnx_path: Path, model, runtime: RuntimeOptions):
        import onnxruntime as ort

        from dycl.runtime.runners import ort_session_options

        self.session = ort.InferenceSession(str(onnx_path), ort_session_options(runtime, runtime.threads),
                                            providers=["CPUExecutionProvider"])
        config = model.config
        self.eos_id = model.eos_id
        self.past_names = [i.name for i in self.session.get_inputs()][2:]
        self.empty = np.zeros((1, config.n_head, 0, config.head_dim), dtype=np.float32)

    def __call__(self, prompt: np.ndarray, max_new_tokens: int) -> np.ndarray:
        T = prompt.shape[0]
        feed = {"idx": prompt.reshape(1, -1), "input_pos": np.arange(T, dtype=np.int64)}
        feed.update(dict.fromkeys(self.past_names, self.empty))
        logits, *present = self.session.run(None, feed)
        token = int(logits[0].argmax())
        tokens = [token]
        for i in range(max_new_tokens - 1):
            if token == self.eos_id:
                break
            feed = {"idx": np.array([[token]], dtype=np.int64), "input_pos": np.array([T + i], dtype=np.int64)}
            feed.update(zip(self.past_names, present))
            logits, *present = self.session.run(None, feed)
            token = int(logits[0].argmax())
            tokens.append(token)
        return np.array(tokens, dtype=np.int64)


class CacheStep(nn.Module):
    """gpt_decode's Transformer as gpt-fast writes it, with its caches as arguments:
    `(tokens, positions, k/v cache per layer) -> (logits of the last token, the caches with
    this call's rows written at the positions)`. Every call attends over all the cache's
    rows through the causal mask, as the module does: the same work as the compiled model,
    where the Optimum-style step attends over the rows written so far."""

    def __init__(self, transformer):
        super().__init__()
        self.transformer = transformer

    def forward(self, idx: Tensor, input_pos: Tensor, *caches: Tensor):
        t = self.transformer
        mask = t.causal_mask[None, None, input_pos]

        def written(i: int, k: Tensor, v: Tensor):
            k = torch.ops.aten.index_put(caches[2 * i], [None, None, input_pos], k)
            return k, torch.ops.aten.index_put(caches[2 * i + 1], [None, None, input_pos], v), mask

        logits, caches_written = blocks(t, t.tok_embeddings(idx), t.freqs_cis[input_pos], written)
        return (logits, *caches_written)


def export_cache_step(model, path: Path) -> Path:
    """gpt-fast's step exported once, with the token count dynamic and the caches full size."""
    from torch.export import Dim

    config = model.config
    step = CacheStep(copy.deepcopy(model.model)).eval()
    shape = (1, config.n_head, config.block_size, config.head_dim)
    caches = [torch.zeros(shape) for _ in range(2 * config.n_layer)]
    args = (torch.tensor([[5, 6]]), torch.tensor([3, 4]), *caches)
    tokens = Dim("tokens", min=1, max=config.block_size)
    dynamic = ({1: tokens}, {0: tokens}, tuple({} for _ in caches))
    names = [f"cache_{kind}_{i}" for i in range(config.n_layer) for kind in "kv"]
    with torch.no_grad():
        torch.onnx.export(step, args, str(path), dynamo=True, dynamic_shapes=dynamic, optimize=True, verbose=False,
                          input_names=["idx", "input_pos", *names],
                          output_names=["logits", *[f"written_{n}" for n in names]])
    return path


class GptFastStyleDecoder:
    """gpt-fast's loop by hand on ONNX Runtime: the caches are numpy arrays that each call
    writes in place (IOBinding binds every written cache to its input's buffer), a prefill
    of the prompt, then one token a call, greedy, until the budget or the end token."""

    def __init__(self, onnx_path: Path, model, runtime: RuntimeOptions):
        import onnxruntime as ort

        from dycl.runtime.runners import ort_session_options

        self.session = ort.InferenceSession(str(onnx_path), ort_session_options(runtime, runtime.threads),
                                            providers=["CPUExecutionProvider"])
        config = model.config
        self.eos_id = model.eos_id
        self.caches = [np.zeros((1, config.n_head, config.block_size, config.head_dim), dtype=np.float32)
                       for _ in range(2 * config.n_layer)]
        self.binding = self.session.io_binding()
        self.binding.bind_output("logits", "cpu")  # (first: outputs keep the position of their first binding)
        cache_names = [i.name for i in self.session.get_inputs()][2:]
        for name, cache in zip(cache_names, self.caches):
            self.binding.bind_input(name, "cpu", 0, np.float32, cache.shape, cache.ctypes.data)
            self.binding.bind_output(f"written_{name}", "cpu", 0, np.float32, cache.shape, cache.ctypes.data)

    def _logits(self, idx: np.ndarray, input_pos: np.ndarray) -> np.ndarray:
        self.inputs = (idx, input_pos)  # (a bound array must outlive the call: the binding keeps its address only)
        self.binding.bind_cpu_input("idx", idx)
        self.binding.bind_cpu_input("input_pos", input_pos)
        self.binding.bind_output("logits", "cpu")
        self.session.run_with_iobinding(self.binding)
        return self.binding.get_outputs()[0].numpy()

    def __call__(self, prompt: np.ndarray, max_new_tokens: int) -> np.ndarray:
        T = prompt.shape[0]
        token = int(self._logits(prompt.reshape(1, -1), np.arange(T, dtype=np.int64))[0].argmax())
        tokens = [token]
        for i in range(max_new_tokens - 1):
            if token == self.eos_id:
                break
            token = int(self._logits(np.array([[token]], dtype=np.int64), np.array([T + i], dtype=np.int64))[0].argmax())
            tokens.append(token)
        return np.array(tokens, dtype=np.int64)


HAND_WRITTEN = {  # system -> (the step's export, the loop that runs it)
    "optimum-ort": (export_past_step, OptimumStyleDecoder),
    "gptfast-ort": (export_cache_step, GptFastStyleDecoder),
}


# ------------------------------------------------------------------------------------ systems


@dataclass
class System:
    name: str
    run: Callable[[Tensor, int], object]  # (prompt, max_new_tokens) -> tokens
    cost: dict
    handle: object = None


def _prepare(name: str, model, example: tuple, requests: Sequence[tuple], settings: DecodeSettings, workdir: Path) -> System:
    if name == "eager":
        def eager(prompt, budget):
            with torch.no_grad():
                return model(prompt, budget)

        return System(name, eager, {"total_seconds": 0.0})
    if name == "torch.compile":
        from torch import _dynamo

        _dynamo.reset()
        # as gpt-fast uses it: the Transformer's forward compiled (the prefill and the step),
        # the generate loop in Python (compiling generate whole breaks its graph at every
        # `.item()`; its warm-up had not finished after 6 minutes here)
        compiled = copy.deepcopy(model)
        compiled.model = torch.compile(compiled.model)
        start = time.perf_counter()

        def run(prompt, budget):
            with torch.no_grad():
                return compiled(prompt, budget)

        for prompt, budget in requests:  # (warm: every prompt length the table uses)
            run(prompt, budget)
        return System(name, run, {"total_seconds": time.perf_counter() - start}, compiled)
    if name in ("dycl-ort", "dycl-tvm"):
        import dycl

        backend = {"dycl-ort": "onnxruntime", "dycl-tvm": "tvm"}[name]
        start = time.perf_counter()
        compiled = dycl.compile(copy.deepcopy(model), example, backend=backend, runtime=settings.runtime,
                                cache_dir=settings.cache_dir or str(workdir / "cache"), progress=False)
        seconds = time.perf_counter() - start
        report = compiled.compile_report
        cost = {"total_seconds": seconds, "subdnn_count": report.get("subdnn_count"),
                "frontend_seconds": report.get("frontend_seconds"), "backend_seconds": report.get("backend_seconds")}

        def run_dycl(prompt, budget):
            return compiled(prompt.numpy(), budget)

        return System(name, run_dycl, cost, compiled)
    if name in HAND_WRITTEN:
        export, decoder_class = HAND_WRITTEN[name]
        start = time.perf_counter()
        path = export(model, workdir / f"{name}_step.onnx")
        export_seconds = time.perf_counter() - start
        decoder = decoder_class(path, model, settings.runtime)

        def run_by_hand(prompt, budget):
            return decoder(prompt.numpy(), budget)

        return System(name, run_by_hand, {"total_seconds": time.perf_counter() - start, "export_seconds": export_seconds}, decoder)
    raise ValueError(f"unknown decode system {name!r}; known: {', '.join(SYSTEMS)}")


def length_requests(model, lengths: Sequence[int], steps: int = STEPS_PER_LENGTH) -> dict[int, Tensor]:
    """Per cache length L, a seeded prompt of L - steps - 1 tokens whose greedy decoding
    runs steps + 1 new tokens without the end token (eager decides): its steps write cache
    rows L - steps - 1 .. L - 2, the last one attending over L - 1 rows (gpt-fast's
    generate wants prompt + new tokens within the context)."""
    generator = torch.Generator().manual_seed(4242)
    chosen = {}
    for length in lengths:
        for _ in range(200):
            prompt = torch.randint(3, model.config.vocab_size, (length - steps - 1,), generator=generator)
            with torch.no_grad():
                tokens = model(prompt, steps + 1)
            if len(tokens) == steps + 1 and model.eos_id not in tokens.tolist():
                chosen[length] = prompt
                break
        else:
            raise RuntimeError(f"no seeded prompt of {length - steps - 1} tokens runs {steps + 1} new tokens without the end token")
    return chosen


def _as_tensor(tokens) -> Tensor:
    return torch.as_tensor(np.asarray(tokens))


def _median_ms(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def bench_decode(settings: DecodeSettings, workdir: Path) -> dict:
    """The decode table's record (JSON-ready)."""
    from dycl.zoo import REGISTRY

    torch.set_num_threads(settings.runtime.threads)
    entry = REGISTRY["gpt_decode"]
    model = entry.build(0)
    requests = entry.path_inputs()
    by_length = length_requests(model, settings.cache_lengths)
    length_calls = [(prompt, budget) for prompt in by_length.values() for budget in (1, STEPS_PER_LENGTH + 1)]
    record: dict = {"network": "gpt_decode", "requests": [[len(p), b] for p, b in requests], "systems": {}, "failures": {}}

    with torch.no_grad():
        expected = [model(p.clone(), b) for p, b in requests + length_calls]
    record["generated_tokens"] = sum(len(t) for t in expected[:len(requests)])
    systems: dict[str, System] = {}
    for name in settings.systems:
        start = time.perf_counter()
        try:
            system = _prepare(name, model, entry.example_inputs(), requests + length_calls, settings, workdir)
            wrong = [k for k, ((p, b), e) in enumerate(zip(requests + length_calls, expected))
                     if not torch.equal(_as_tensor(system.run(p, b)), e)]
            if wrong:
                raise AssertionError(f"tokens differ from eager's on {len(wrong)} of {len(expected)} requests")
        except Exception as error:  # a system that cannot decode is a result, not a crash
            record["failures"][name] = f"{type(error).__name__}: {str(error).strip()[:400]}"
            _say(settings, f"{name} FAILED: {record['failures'][name]}")
            traceback.print_exc()
            continue
        systems[name] = system
        record["systems"][name] = {"cost": system.cost, "exact": True}
        _say(settings, f"{name} ready in {time.perf_counter() - start:.1f} s (tokens exact)")
    if "eager" not in systems:
        raise RuntimeError("eager itself failed")

    def calls_of(system: System, which):
        return [lambda p=p, b=b: system.run(p, b) for p, b in which]

    table = {name: calls_of(s, requests) for name, s in systems.items()}
    sweep_s = {name: sweep_seconds(calls) for name, calls in table.items()}
    rounds, strides = plan_rounds(sweep_s, settings.budget_seconds, settings.min_rounds, settings.max_rounds)
    _say(settings, f"timing {rounds} rounds of {len(requests)} requests; strides {strides}")
    for name, timing in interleaved(table, rounds, strides).items():
        per_request = timing.to_json()
        scale = len(requests) / record["generated_tokens"]
        q1, q3 = quartiles([t * scale for t in timing.sweeps_ms])
        record["systems"][name]["per_request"] = per_request
        record["systems"][name]["per_token"] = {"median_ms": per_request["median_ms"] * scale, "q1_ms": q1, "q3_ms": q3}

    lengths = {name: calls_of(s, length_calls) for name, s in systems.items()}
    timings = interleaved(lengths, settings.length_rounds)
    for name, timing in timings.items():
        per_length = {}
        for k, length in enumerate(by_length):
            short, long = timing.per_input_ms[2 * k], timing.per_input_ms[2 * k + 1]
            per_length[str(length)] = (_median_ms(long) - _median_ms(short)) / STEPS_PER_LENGTH
        record["systems"][name]["per_token_at_cache_length_ms"] = per_length
    record["ratios"] = ratios(record)
    return record


def _per_token(record: dict, system: str) -> float:
    return record["systems"].get(system, {}).get("per_token", {}).get("median_ms", math.nan)


def ratios(record: dict) -> dict:
    ort = _per_token(record, "dycl-ort")
    at = record["systems"].get("dycl-ort", {}).get("per_token_at_cache_length_ms", {})
    first, last = (at.get(str(n), math.nan) for n in (CACHE_LENGTHS[0], CACHE_LENGTHS[-1]))
    return {
        "dycl_ort_per_token_vs_optimum": ort / _per_token(record, "optimum-ort"),
        "dycl_ort_per_token_vs_gptfast": ort / _per_token(record, "gptfast-ort"),
        "gptfast_per_token_vs_optimum": _per_token(record, "gptfast-ort") / _per_token(record, "optimum-ort"),
        "dycl_ort_speedup_vs_eager": _per_token(record, "eager") / ort,
        "dycl_ort_speedup_vs_torch_compile": _per_token(record, "torch.compile") / ort,
        "dycl_ort_per_token_256_vs_16": last / first,
        "dycl_tvm_speedup_vs_eager": _per_token(record, "eager") / _per_token(record, "dycl-tvm"),
    }


def markdown(record: dict, threads: int) -> str:
    lengths = sorted({int(n) for s in record["systems"].values() for n in s.get("per_token_at_cache_length_ms", {})})
    head = ["system", "per token ms (IQR)", "per request ms (IQR)",
            *[f"per token @{n} ms" for n in lengths], "compile s", "tokens"]
    lines = [f"### Greedy decoding: gpt_decode ({threads} threads; {len(record['requests'])} requests, "
             f"{record['generated_tokens']} new tokens)", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in record["systems"].items():
        token, request = s.get("per_token", {}), s.get("per_request", {})
        at = s.get("per_token_at_cache_length_ms", {})
        lines.append("| " + " | ".join([
            LABELS.get(name, name),
            f"{token.get('median_ms', math.nan):.3f} ({token.get('q1_ms', math.nan):.3f}–{token.get('q3_ms', math.nan):.3f})",
            f"{request.get('median_ms', math.nan):.2f} ({request.get('q1_ms', math.nan):.2f}–{request.get('q3_ms', math.nan):.2f})",
            *[f"{at.get(str(n), math.nan):.3f}" for n in lengths],
            f"{s['cost'].get('total_seconds', math.nan):.1f}",
            "exact" if s.get("exact") else "?",
        ]) + " |")
    for name, why in record["failures"].items():
        lines.append(f"| {LABELS.get(name, name)} | failed: {why[:120]} |" + " |" * (len(head) - 2))
    lines += ["", "| target | value | met |", "|---|---|---|"]
    for key, (op, bound, what) in TARGETS.items():
        value = record["ratios"].get(key, math.nan)
        met = value <= bound if op == "<=" else value >= bound if op == ">=" else value > bound
        lines.append(f"| {what} {op} {bound} | {value:.2f} | {'yes' if met else 'no'} |")
    shares = [(what, record["ratios"].get(key, math.nan)) for key, what in SHARES.items()]
    if any(not math.isnan(value) for _, value in shares):
        lines += ["", "| where the gap to the anchor is | ratio |", "|---|---|"]
        lines += [f"| {what} | {value:.2f} |" for what, value in shares]
    return "\n".join(lines) + "\n"


def run(settings: DecodeSettings, out: str | Path, stem: str) -> tuple[dict, dict[str, Path]]:
    """Bench, then write <out>/<stem>.json and .md."""
    import json
    import os
    import tempfile

    from dycl.bench import report

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dycl-bench-decode-") as workdir:
        result = {
            "machine": report.machine(),
            "config": {"threads": settings.runtime.threads, "systems": list(settings.systems),
                       "cache_lengths": list(settings.cache_lengths), "steps_per_length": STEPS_PER_LENGTH,
                       "budget_seconds": settings.budget_seconds, "min_rounds": settings.min_rounds,
                       "max_rounds": settings.max_rounds, "length_rounds": settings.length_rounds,
                       "load_average_start": [round(x, 2) for x in os.getloadavg()]},
            "decode": bench_decode(settings, Path(workdir)),
        }
    result["config"]["wall_seconds"] = time.perf_counter() - start
    result["config"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / f"{stem}.json", "md": out / f"{stem}.md"}
    paths["json"].write_text(json.dumps(report.strict_json(result), indent=1, default=str, allow_nan=False) + "\n")
    paths["md"].write_text(markdown(result["decode"], settings.runtime.threads))
    return result, paths
