"""Issue 34's constructs in one registry, and the command that measures them all in one run.

Each `Construct` names the issue item it belongs to, the existing test that covers it
(`path::name`), and the model and path inputs that test uses (imported from the test's own
modules, never copied). A construct the frontend refuses by design carries the words of its
refusal instead (`refused`): the table shows the message, not errors.

    python -m tests.frontend.constructs [--backend onnxruntime,tvm] [--only NAME[,NAME]]
        [--merge OLD.json] --out FILE.md

compiles each row once per backend (`dycl.compile(..., jobs=1, progress=False)`, the
self-check on), runs every path input, compares with eager PyTorch (a stateful model call by
call, its buffers included) and writes a markdown table to FILE.md and the results to
FILE.json beside it, after every row (a run cut short keeps what it measured). `--merge`
starts from an earlier run's JSON (the ORT legs, say) and adds the backends run now.
tests/frontend/test_constructs.py (slow tier) asserts the same comparison row by row.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from tests.backends.test_random_ops import CALLS, DEGENERATE, degenerate_inputs
from tests.frontend import exception_models, inlined_call_models, moe_dispatch_models, rejected_models, unpacking_models
from tests.frontend import test_asserts, test_complex_values, test_exceptions, test_frontend_v4, test_gate_lists
from tests.frontend import test_loop_kinds, test_moe_dispatch, test_python_forms, test_size_numbers, test_size_tests
from tests.frontend.buffer_state_models import SEQUENCES
from tests.frontend.data_size_models import BeamSearch, ShowAttendTellBeam
from tests.frontend.helpers import eager_method, max_abs_error, seeded_model, state_error
from tests.frontend.keyword_call_models import CASES as KEYWORD_CASES, REFUSED as KEYWORD_REFUSED
from tests.frontend.random_models import DRAW_NAMES, Draws, LayerDrop, Permuted, PonderNet, RandomLayerChoice
from tests.frontend.test_data_sizes import beam_inputs

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ("onnxruntime", "tvm")


@dataclass(frozen=True)
class Construct:
    """One construct of issue 34: what covers it, and how to measure it again."""

    name: str
    item: str  # the item ("2.3 exceptions", "1 size tests")
    test: str  # the existing test that covers it: its pytest node id (`path::name[parameters]`)
    model: Callable[[], torch.nn.Module]
    inputs: Callable[[], list]  # path inputs: each a tuple of arguments
    example: int = 0  # the input compiled from
    method: str = "forward"
    tolerance: float = 1e-5
    stateful: bool = False  # compared call by call against one eager copy, buffers included
    raising: Callable[[], list] | None = None  # inputs on which eager raises: the compiled model must raise the same
    outputs: Callable | None = None  # the outputs compared (of a model that also draws random numbers)
    refused: str | None = None  # words of the refusal DyCL gives by design (the row is that refusal)

    @property
    def test_path(self) -> Path:
        return ROOT / self.test.split("::")[0]

    @property
    def test_function(self) -> str:
        return self.test.split("::")[1].split("[")[0]


def _cases(cases: dict, name: str):
    """(factory, inputs builder) of a test file's CASES entry whose second item is a builder."""
    factory, inputs, *_ = cases[name]
    return factory, inputs


def _listed(items: list) -> Callable[[], list]:
    return lambda: list(items)


def _one(example) -> Callable[[], list]:
    return lambda: [example]


# The draws of a fixed answer (p = 0, p = 1, one-hot weights, an empty range) whose value eager
# and compiled must share; the other draws of `Draws` follow torch's law only (a statistical
# test, tests/backends/test_random_ops.py::test_draws_follow_torchs_law_on_*).
FIXED_DRAWS = ("bernoulli", "bernoulli_p", "rand_below", "randint", "multinomial", "uniform", "normal")


def _fixed_draws(outputs):
    return tuple(value for name, value in zip(DRAW_NAMES, outputs) if name in FIXED_DRAWS)


def _pondernet_inputs():
    return [(torch.randn(3, 6, generator=torch.Generator().manual_seed(seed)),) for seed in range(3)]


def _row(name, item, test, cases, key, **options) -> Construct:
    factory, inputs = _cases(cases, key)
    return Construct(name, item, test, factory, inputs, **options)


_SIZE = "tests/frontend/test_size_tests.py::test_size_tests_compile_exactly"
_ASSERT = "tests/frontend/test_asserts.py::test_asserts_compile_exactly"
_KEYWORD = "tests/frontend/test_keyword_calls.py::test_exact_on_onnxruntime"
_EXCEPTION = "tests/frontend/test_exceptions.py::test_exceptions_compile_exactly"
_V4 = "tests/frontend/test_frontend_v4.py::test_exact_on_onnxruntime"
_FORM = "tests/frontend/test_python_forms.py::test_python_form_on_onnxruntime"
_COMPLEX = "tests/frontend/test_complex_values.py::test_complex_values_compile_exactly_on_onnxruntime"
_KIND = "tests/frontend/test_loop_kinds.py::test_onnxruntime_matches_eager"
_BUFFER = "tests/frontend/test_buffer_state.py::test_buffer_sequence_on_onnxruntime"
_RANDOM = "tests/backends/test_random_ops.py"
_PYTHON_RANDOM = "tests/frontend/test_python_random.py"
_RANDOM_X = torch.randn(1, 4, generator=torch.Generator().manual_seed(0))


def _size_test(name, key, construct_item="1 size tests") -> Construct:
    factory, inputs, method = test_size_tests.CASES[key]
    return Construct(name, construct_item, f"{_SIZE}[{key}-onnxruntime]", factory, inputs, method=method)


def _assert(name, key) -> Construct:
    factory, passing, failing = test_asserts.CASES[key]
    return Construct(name, "2.1 asserts", f"{_ASSERT}[onnxruntime-{key}]", factory, passing, raising=failing)


def _keyword(name, key) -> Construct:
    factory, method, inputs = KEYWORD_CASES[key]
    return Construct(name, "2.2 keyword calls", f"{_KEYWORD}[{key}]", factory, _listed(inputs), method=method)


def _v4(name, item, key) -> Construct:
    factory, inputs, example = test_frontend_v4.CASES[key]
    return Construct(name, item, f"{_V4}[{key}]", factory, inputs, example=example)


def _kinds(name, key) -> Construct:
    factory, inputs = test_loop_kinds.CASES[key]
    return Construct(name, "2.7 kinds around a loop", f"{_KIND}[{key}]", factory, _listed(inputs))


def _buffers(name, key) -> Construct:
    factory, calls = SEQUENCES[key]
    return Construct(name, "2.5 smaller forms", f"{_BUFFER}[{key}]", factory, _listed(calls), stateful=True)


_TOPK_INDICES = "reads the indices of `topk` of a `k` known only at run time"

CONSTRUCTS: tuple[Construct, ...] = (
    # ----- 1: the size-test class, random ops
    _size_test("crop_to_a_window", "context_crop"),
    _size_test("sliding_queue", "sliding_queue"),
    _size_test("parity_of_a_growing_size", "parity", "1 size tests; 2.5 `x.shape[1] % 2`"),
    _size_test("while_size_below_limit", "grow_to_limit"),
    _size_test("shrinking_window", "shrinking_window"),
    _size_test("negative_remainder_of_a_size", "negative_remainder", "1 size tests; 2.5 `%` of a size"),
    _size_test("last_columns_of_a_growing_sequence", "last_columns"),
    Construct("bernoulli_p0", "1 random ops", f"{_RANDOM}::test_pondernet_outputs_match_eager_on_onnxruntime",
              functools.partial(PonderNet, max_steps=4, bias=-1000.0), _pondernet_inputs),
    Construct("bernoulli_p1", "1 random ops", f"{_RANDOM}::test_pondernet_outputs_match_eager_on_onnxruntime",
              functools.partial(PonderNet, max_steps=4, bias=1000.0), _pondernet_inputs),
    Construct("random_draws_of_a_fixed_answer", "1 random ops", f"{_RANDOM}::test_draws_of_fixed_answer_are_exact_on_onnxruntime",
              functools.partial(Draws, **DEGENERATE), lambda: [degenerate_inputs()] * CALLS, outputs=_fixed_draws),
    Construct("randperm", "1 random ops", f"{_RANDOM}::test_random_ops_dycl_does_not_reproduce_are_refused_at_their_line[randperm]",
              Permuted, _one((torch.randn(2, 4),)), refused="torch.ops.aten.randperm`"),
    Construct("python_random_below_0", "1 random ops", f"{_PYTHON_RANDOM}::test_a_draw_of_fixed_answer_is_exact_call_after_call[0.0-3]",
              functools.partial(LayerDrop, p=0.0), _listed([(_RANDOM_X,)] * 5)),
    Construct("python_random_below_1", "1 random ops", f"{_PYTHON_RANDOM}::test_a_draw_of_fixed_answer_is_exact_call_after_call[1.0-0]",
              functools.partial(LayerDrop, p=1.0), _listed([(_RANDOM_X,)] * 5)),
    Construct("python_random_choice", "1 random ops",
              f"{_PYTHON_RANDOM}::test_a_draw_dycl_does_not_lower_is_refused_at_its_line[RandomLayerChoice-choice-random.choice(self.layers)]",
              RandomLayerChoice, _one((_RANDOM_X,)), refused="draws a random number from Python's `random`"),
    # ----- 2.1 asserts
    _assert("assert_of_a_length_on_the_config", "greedy_gpt"),
    _assert("assert_on_tensor_values", "tensor_values"),
    _assert("assert_on_a_runtime_int", "runtime_int"),
    # ----- 2.2 keyword calls, defaults, *args/**kwargs, decorators
    _keyword("sampling_kwargs_through_helpers", "gpt_fast_generate"),
    _keyword("eval_decorator", "eval_decorator_generate"),
    _keyword("hf_decorated_forward_with_kwargs", "hf_decorated_forward"),
    _keyword("keyword_only_and_defaults", "keyword_only_and_defaults"),
    _keyword("star_args_forwarding", "star_forwarding"),
    Construct("spread_of_unknown_length", "2.2 keyword calls",
              "tests/frontend/test_keyword_calls.py::test_refused_at_the_call[spread_of_unknown_length]",
              KEYWORD_REFUSED["spread_of_unknown_length"][0], _one(KEYWORD_REFUSED["spread_of_unknown_length"][2]),
              method=KEYWORD_REFUSED["spread_of_unknown_length"][1], refused="spread"),
    # ----- 2.3 exceptions (the test's tolerance: try_else_finally sums values up to ~80)
    _row("exception_caught_two_modules_up", "2.3 exceptions", f"{_EXCEPTION}[deebert_highway_exit-onnxruntime]",
         test_exceptions.CASES, "deebert_highway_exit", tolerance=1e-4),
    _row("raise_on_a_runtime_path", "2.3 exceptions", f"{_EXCEPTION}[raise_on_runtime_path-onnxruntime]",
         test_exceptions.CASES, "raise_on_runtime_path", tolerance=1e-4),
    _row("try_except_else_finally", "2.3 exceptions", f"{_EXCEPTION}[try_else_finally-onnxruntime]",
         test_exceptions.CASES, "try_else_finally", tolerance=1e-4),
    Construct("except_of_an_error_the_tensor_code_raises", "2.3 exceptions",
              "tests/frontend/test_exceptions.py::test_refused_at_the_line_with_the_reason[except_index_error]",
              exception_models.CatchesIndexError, _one(test_exceptions.REFUSED["except_index_error"][1]),
              refused=test_exceptions.REFUSED["except_index_error"][3]),
    # ----- 2.4 optional arguments
    _v4("top_k_given_in_the_example", "2.4 optional arguments", "top_k_given"),
    _v4("top_k_none_in_the_example", "2.4 optional arguments", "top_k_none"),
    _v4("mask_is_not_none", "2.4 optional arguments", "mask_given"),
    # ----- 2.5 smaller forms
    _v4("starred_encoder_output", "2.5 smaller forms", "starred_encoder_output"),
    _v4("first_and_starred_rest", "2.5 smaller forms", "head_and_tail"),
    _row("tensor_of_a_runtime_int_list", "2.5 smaller forms", f"{_FORM}[tolist_of_runtime_length]",
         test_python_forms.CASES, "tolist_of_runtime_length"),
    _row("tolist_of_floats", "2.5 smaller forms", f"{_FORM}[float_tolist_gate]", test_python_forms.CASES, "float_tolist_gate"),
    _buffers("runtime_int_slot_in_captured_code", "moco_queue"),
    _buffers("ring_slot_at_a_runtime_step", "ring_at_step"),
    # ----- 2.6 complex tensors
    _row("rotary_freqs_cis_attribute", "2.6 complex tensors", f"{_COMPLEX}[attribute]", test_complex_values.CASES, "attribute"),
    _row("rotary_freqs_cis_buffer", "2.6 complex tensors", f"{_COMPLEX}[buffer]", test_complex_values.CASES, "buffer"),
    _row("rotary_decode_loop", "2.6 complex tensors", f"{_COMPLEX}[decode_loop]", test_complex_values.CASES, "decode_loop"),
    # ----- 2.7 kinds that change around a loop
    _kinds("uint8_mask_becomes_bool_while", "byte_mask_while"),
    _kinds("uint8_mask_becomes_bool_for", "byte_mask_for"),
    _kinds("alias_on_one_path", "one_path_alias"),
    _kinds("batch_act_as_published", "act_batch_published"),
    # ----- 2.8 data-dependent sizes
    _row("sparse_moe_dispatch", "2.8 data-dependent sizes",
         "tests/frontend/test_moe_dispatch.py::test_moe_dispatch_compiles_exactly[moe_top2-onnxruntime]",
         test_moe_dispatch.CASES, "moe_top2"),
    Construct("topk_of_a_k_from_data", "2.8 data-dependent sizes",
              "tests/frontend/test_moe_dispatch.py::test_topk_of_a_k_from_the_data_is_exact_at_its_extremes",
              moe_dispatch_models.AdaptiveTopK, test_moe_dispatch.adaptive_inputs, tolerance=1e-6),
    Construct("topk_indices_of_a_k_from_data", "2.8 data-dependent sizes",
              "tests/frontend/test_moe_dispatch.py::test_topk_indices_of_a_k_from_the_data_are_refused_at_the_line[indices]",
              moe_dispatch_models.AdaptiveTopKIndices, lambda: test_moe_dispatch.adaptive_inputs()[:1], refused=_TOPK_INDICES),
    Construct("topk_in_a_shrinking_beam_search", "2.8 data-dependent sizes",
              "tests/frontend/test_moe_dispatch.py::test_topk_indices_of_a_k_from_the_data_are_refused_at_the_line[beam_step_captured_whole]",
              moe_dispatch_models.ShrinkingBeamSearch, lambda: [(torch.randn(1, 8),)], refused=_TOPK_INDICES),
    # ----- 2.9 Python inside forward
    _row("nested_def", "2.9 Python in forward", f"{_EXCEPTION}[nested_decode-onnxruntime]", test_exceptions.CASES, "nested_decode",
         tolerance=1e-4),
    Construct("helper_object", "2.9 Python in forward", "tests/frontend/test_moe_dispatch.py::test_a_helper_object_is_exact_on_every_path",
              moe_dispatch_models.StatsObject, test_moe_dispatch.stats_inputs),
    _v4("none_submodule", "2.9 Python in forward", "none_submodules"),
    _row("set_difference", "2.9 Python in forward", f"{_FORM}[set_difference_of_rows]", test_python_forms.CASES, "set_difference_of_rows"),
    _row("set_operators", "2.9 Python in forward", f"{_FORM}[set_operators]", test_python_forms.CASES, "set_operators"),
    _row("index_of_max", "2.9 Python in forward", f"{_FORM}[index_of_max_score]", test_python_forms.CASES, "index_of_max_score"),
    _row("filtered_comprehension", "2.9 Python in forward", f"{_FORM}[filtered_rows]", test_python_forms.CASES, "filtered_rows"),
    _row("reversed_numpy", "2.9 Python in forward", f"{_FORM}[reversed_numpy_rows]", test_python_forms.CASES, "reversed_numpy_rows"),
    _row("plain_list_of_gates", "2.9 Python in forward", "tests/frontend/test_gate_lists.py::test_gate_list_on_onnxruntime[skipnet_gate_instances]",
         test_gate_lists.CASES, "skipnet_gate_instances"),
    Construct("helper_passed_a_runtime_list", "2.9 Python in forward",
              "tests/frontend/test_inlined_calls.py::test_exact_on_onnxruntime[exits_to_a_helper]",
              inlined_call_models.ExitsToAHelper, _listed(inlined_call_models.CASES["exits_to_a_helper"][1])),
    Construct("global_list_changed", "2.9 Python in forward",
              "tests/frontend/test_rejected.py::test_rejected_construct_names_file_line_and_construct[appends_to_a_global_list]",
              rejected_models.AppendsToAGlobalList, _one((torch.randn(1, 4),)), refused="a container of the module's globals"),
    Construct("beam_count_as_int_and_size", "2.9 Python in forward",
              "tests/frontend/test_data_sizes.py::test_loops_over_sizes_from_data_compile_exactly_on_onnxruntime[beam_search]",
              BeamSearch, beam_inputs),
    Construct("beam_count_as_int_and_size_published", "2.9 Python in forward",
              "tests/frontend/test_data_sizes.py::test_published_beam_search_with_topk_of_the_beam_count_is_refused_at_its_line",
              ShowAttendTellBeam, lambda: [(torch.cat([beam_inputs()[0][0]] * 2).unsqueeze(0),)], refused=_TOPK_INDICES),
    # ----- 2.10 no internal error escapes
    _v4("tied_weights", "2.10 no internal error", "tied_weights"),
    Construct("complex_module_state", "2.10 no internal error",
              "tests/frontend/test_frontend_v4.py::test_complex_state_is_refused_at_its_statement",
              unpacking_models.ComplexPhase, lambda: [(torch.ones(4),)], refused="complex"),
    _row("size_in_tensor_math_after_const_prop", "2.10 no internal error",
         "tests/frontend/test_size_numbers.py::test_sizes_as_numbers_compile_exactly_on_onnxruntime[count_unless_close]",
         test_size_numbers.CASES, "count_unless_close"),
)


BY_NAME = {construct.name: construct for construct in CONSTRUCTS}
assert len(BY_NAME) == len(CONSTRUCTS), "construct names repeat"


# ------------------------------------------------------------------------- measuring


def _clone(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _first_line(error: BaseException, limit: int = 300) -> str:
    """The error's first line, paths relative to the repository, cut at `limit` characters."""
    lines = str(error).strip().replace(f"{ROOT}/", "").splitlines()
    line = f"{type(error).__name__}: {lines[0] if lines else ''}"
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _raised(call) -> BaseException | None:
    try:
        call()
    except Exception as error:  # (eager's own exception, whatever it is)
        return error
    return None


def measure(construct: Construct, backend: str, use_cache: bool = False) -> dict:
    """Compile `construct` for `backend` and compare every path input with eager. The result:
    status (exact, DIFFERS, refused, refused as expected, compile failed, run failed), the max
    abs error, compile seconds and a note."""
    import dycl

    model = seeded_model(construct.model)
    calls = construct.inputs()
    reference = copy.deepcopy(model)  # (a stateful model's eager copy, called in turn)
    result = {"status": None, "error": None, "seconds": None, "inputs": len(calls), "note": ""}
    start = time.perf_counter()
    try:
        compiled = dycl.compile(model, calls[construct.example], backend=backend, method=construct.method,
                                jobs=1, progress=False, use_cache=use_cache)
    except dycl.FrontendError as error:
        result["seconds"] = time.perf_counter() - start
        expected = construct.refused is not None and construct.refused in str(error)
        result["status"] = "refused as expected" if expected else "refused"
        result["note"] = _first_line(error)
        return result
    except Exception as error:  # (reported, never dropped: the row shows it)
        result["seconds"] = time.perf_counter() - start
        result["status"], result["note"] = "compile failed", _first_line(error)
        return result
    result["seconds"] = time.perf_counter() - start
    outputs = construct.outputs or (lambda value: value)
    worst = 0.0
    try:
        for args in calls:
            if construct.stateful:
                with torch.no_grad():
                    expected = getattr(reference, construct.method)(*_clone(args))
                worst = max(worst, max_abs_error(outputs(expected), outputs(compiled(*args))), state_error(reference, compiled.state))
            else:
                expected = eager_method(model, construct.method, args)
                worst = max(worst, max_abs_error(outputs(expected), outputs(compiled(*args))))
        raising = construct.raising() if construct.raising else []
        for args in raising:
            eager_error = _raised(lambda: eager_method(model, construct.method, args))
            compiled_error = _raised(lambda: compiled(*args))
            if eager_error is None or type(compiled_error) is not type(eager_error) or compiled_error.args != eager_error.args:
                result["note"] = f"raises {compiled_error!r} where eager raises {eager_error!r}"
                worst = math.inf
    except Exception as error:
        result["status"], result["note"] = "run failed", _first_line(error)
        result["error"] = worst
        return result
    result["error"] = worst
    result["status"] = "exact" if worst <= construct.tolerance else "DIFFERS"
    if raising:
        result["inputs"] = f"{len(calls)} (+{len(raising)} raising)"
        result["note"] = result["note"] or f"eager's exception on the {len(raising)} raising inputs"
    if construct.refused is not None:
        result["note"] = f"compiled; a refusal was expected ({construct.refused!r}). " + result["note"]
    if construct.outputs is not None:
        result["note"] = result["note"] or "the draws of a fixed answer compared"
    return result


# ------------------------------------------------------------------------- the table


def _error_cell(leg: dict | None) -> str:
    if leg is None:
        return "not run"
    if leg["status"] in ("exact", "DIFFERS"):
        cell = f"{leg['error']:.1e}"
        return cell if leg["status"] == "exact" else f"**{cell} DIFFERS**"
    return {"refused as expected": "refused", "refused": "**refused**"}.get(leg["status"], f"**{leg['status']}**")


def _seconds_cell(leg: dict | None) -> str:
    return "" if leg is None or leg["seconds"] is None else f"{leg['seconds']:.0f}"


def markdown(results: dict, header: str) -> str:
    lines = [header, "",
             "| construct | issue item | test | inputs | max abs error ORT | max abs error TVM | compile s ORT | compile s TVM | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    for construct in CONSTRUCTS:
        row = results.get(construct.name)
        if row is None:
            continue
        legs = row["backends"]
        ort, tvm = legs.get("onnxruntime"), legs.get("tvm")
        inputs = "example" if construct.refused else next((str(leg["inputs"]) for leg in (ort, tvm) if leg), "")
        notes = []
        for backend, leg in legs.items():
            if leg["note"] and leg["note"] not in [n.split(": ", 1)[-1] for n in notes]:
                notes.append(leg["note"] if len(legs) == 1 or all(l["note"] == leg["note"] for l in legs.values()) else f"{backend}: {leg['note']}")
        note = "; ".join(dict.fromkeys(notes)).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{construct.name}` | {construct.item} | `{construct.test}` | {inputs} | {_error_cell(ort)} | "
                     f"{_error_cell(tvm)} | {_seconds_cell(ort)} | {_seconds_cell(tvm)} | {note} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.frontend.constructs", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=",".join(BACKENDS), help="comma-separated: onnxruntime,tvm")
    parser.add_argument("--only", default=None, help="comma-separated construct names")
    parser.add_argument("--out", required=True, help="the markdown table (the JSON goes beside it)")
    parser.add_argument("--merge", default=None, help="an earlier run's JSON to add this run's legs to")
    parser.add_argument("--use-cache", action="store_true", help="use the compile cache (compile seconds then measure hits)")
    args = parser.parse_args(argv)
    backends = [b for b in args.backend.split(",") if b]
    rows = [BY_NAME[name] for name in args.only.split(",")] if args.only else list(CONSTRUCTS)
    out = Path(args.out)
    json_path = out.with_suffix(".json")
    results = json.loads(Path(args.merge).read_text())["rows"] if args.merge else {}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for backend in backends:
        for construct in rows:
            print(f"{construct.name} on {backend} ...", end=" ", flush=True)
            leg = measure(construct, backend, use_cache=args.use_cache)
            print(leg["status"], leg["error"], f"{leg['seconds']:.0f} s", leg["note"][:120], flush=True)
            entry = results.setdefault(construct.name, {"item": construct.item, "test": construct.test, "backends": {}})
            entry["backends"][backend] = leg
            header = (f"Issue 34's constructs (tests/frontend/constructs.py), run from {started} to "
                      f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; backends run: {', '.join(backends)}"
                      f"{' (merged with ' + args.merge + ')' if args.merge else ''}; compile cache "
                      f"{'on' if args.use_cache else 'off'}; each row compiled once per backend (jobs=1, self-check on) "
                      f"from its example input and compared with eager on every path input.")
            json_path.write_text(json.dumps({"header": header, "rows": results}, indent=1, default=str))
            out.write_text(markdown(results, header))
    failed = [name for name, row in results.items() for leg in row["backends"].values()
              if leg["status"] not in ("exact", "refused as expected")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
