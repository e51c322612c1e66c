"""Differential testing of one generated program against eager PyTorch.

    build      the program's source -> a module file -> an nn.Module with seeded weights
    calibrate  place every threshold in a gap of the values its statistic takes on random
               inputs, so that inputs go both ways and no input sits near a threshold
    select     keep inputs far from every threshold that together take every branch arm
               (arms measured on eager runs with a line tracer)
    check      frontend -> dycl-pipeline -> the reference interpreter on the HCFG, then the
               backends (ONNX Runtime / TVM) -> the compiled model; both must match eager

`check_program` never raises: it returns an `Outcome` whose `status` names the first stage
that failed ("ok", "frontend-error", "pipeline-error", "hcfg-mismatch", "compile-error",
"runtime-error", "mismatch", or "generator-error" when eager itself fails). A program for
which no input keeps a margin from every threshold is "untestable": no input tells whether
DyCL computes it right, which is the generator's limit, not a failure (`PASSED`).

A refusal (a FrontendError at the program's own file and a nonzero line) is
"frontend-error"; one at line 0 or in another file is "frontend-misplaced", and any other
exception of the frontend "frontend-crash" (both bugs), as is a FrontendError saying that the
program's lines failed on example values with a NameError about one of the frontend's own
names (`__comp3_head`: eager ran those lines). A refusal at a line of `Rendered.refusals`
is "frontend-error" with `by_design` set (not a failure). A program that keeps state across
calls (`cross_call_state`: `self.saved.append(v)`, `self.steps += 1`, `self.ema`) runs its
inputs as one sequence of calls from the state it was compiled with, on eager, the
interpreter (`dycl.interpreter.run_call`) and the compiled model, and the state after each
call must match eager's too ("hcfg-mismatch" / "mismatch" otherwise). A program without
such state also runs all its inputs in one `run_many`, which must match eager too. Programs with a `lengths` argument are called with `(x, lengths)`
(`candidate_inputs` gives such tuples); the compiled model must refuse a `lengths` of another
length with an InputError.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import re
import random
import sys
import tempfile
import time
import traceback
import weakref
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dycl.fuzz.program import Program, all_conditions, render

CANDIDATES = 16
MAX_INPUTS = 8
MIN_MARGIN = 1e-3  # relative distance every evaluated statistic keeps from its threshold
RTOL, ATOL = 1e-3, 1e-4

_counter = itertools.count()
RENDERED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> (Rendered, file) (prepare)
INITIAL_STATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> its state before the sequence
# model -> eager's state after each call of `prepare`'s sequence (attribute -> value)
EAGER_STATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
STATE_ATTRIBUTES = ("saved", "steps", "ema", "pair", "hs", "cs")  # what `cross_call_state` keeps (research.STATE_MODULES)
# a FrontendError that reports an exception about one of the frontend's own names
# (`__comp3_head`, `__dycl_...`) when it ran the program's lines: an internal error
INTERNAL_NAME = re.compile(r"on example values failed: (NameError|UnboundLocalError): .*'__\w+'")
_SOURCE_DIR = Path(tempfile.mkdtemp(prefix="dycl-fuzz-src-"))


PASSED = frozenset({"ok", "untestable"})
"""The statuses that are no failure (besides a refusal by design)."""


@dataclass
class Outcome:
    seed: int
    status: str = "ok"
    detail: str = ""
    backend: str = ""
    arms_total: int = 0
    arms_covered: int = 0
    inputs: int = 0
    subdnns: int = 0
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    by_design: bool = False  # a refusal the program asks for (module state changed in forward)
    forms: list[str] = field(default_factory=list)  # the program's forms (`dycl.fuzz.forms.tags`)

    @property
    def failed(self) -> bool:
        return self.status not in PASSED and not self.by_design

    def signature(self) -> str:
        """What the shrinker must preserve: the stage and the message, without paths and numbers."""
        message = re.sub(r"\S+\.py:\d+:?|\[[^]]*\]|\d+(\.\d+)?(e-?\d+)?", "#", self.detail)
        return f"{self.status}:{message[:100]}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# ----- building ------------------------------------------------------------------------


def load_class(source: str, class_name: str, directory: Path | None = None):
    """Import `source` from a fresh file (the frontend reads methods through `inspect`)."""
    name = f"dycl_fuzz_program_{next(_counter)}"
    path = (directory or _SOURCE_DIR) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module, class_name), path


def build(program: Program, probe: bool = False) -> tuple[torch.nn.Module, Any]:
    """The model with weights that depend only on the seed; and the rendering."""
    rendered = render(program, probe=probe)
    cls, path = load_class(rendered.source, program.class_name)
    torch.manual_seed(program.seed)
    model = cls()
    generator = torch.Generator().manual_seed(program.seed)
    for sub in model.modules():
        if isinstance(sub, torch.nn.BatchNorm2d):
            sub.running_mean.uniform_(-0.5, 0.5, generator=generator)
            sub.running_var.uniform_(0.5, 2.0, generator=generator)
    model.eval()
    return model, rendered, path


def candidate_inputs(program: Program, count: int = CANDIDATES) -> list:
    """Tensors x; `(x, lengths)` tuples for a program with a `lengths` argument (its ints in
    0..4, drawn from their own stream: the tensors are those of the program without it)."""
    generator = torch.Generator().manual_seed(program.seed)
    rng = random.Random(program.seed)
    inputs = []
    for _ in range(count):
        scale = rng.choice([0.1, 0.5, 1.0, 2.0, 5.0])
        shift = rng.choice([-1.0, -0.3, 0.0, 0.0, 0.3, 1.0])
        inputs.append(torch.randn(*program.input_shape, generator=generator) * scale + shift)
    if program.lengths:
        lrng = random.Random(program.seed * 31 + 0x1E)
        kind = tuple if program.lengths_type == "tuple" else list
        inputs = [(x, kind(lrng.randint(0, 4) for _ in range(program.lengths))) for x in inputs]
    if program.arguments:  # (their own streams: x and `lengths` are those of the program without them)
        arng = random.Random(program.seed * 61 + 0xA6)
        tensors = torch.Generator().manual_seed(program.seed * 67 + 0xA7)
        width = program.input_shape[1]
        inputs = [(*arguments(inp), *(_extra_argument(kind, width, arng, tensors) for _, kind in program.arguments))
                  for inp in inputs]
    return inputs


def _extra_argument(kind: str, width: int, rng: random.Random, generator: torch.Generator):
    """A value of a `Program.arguments` parameter: an optional int (None in about half the
    calls, else 1..W+2), or a (T, W) tensor of T in 2..6 rows with dim 0 marked dynamic."""
    if kind == "optional_int":
        return None if rng.random() < 0.5 else rng.randint(1, width + 2)
    if kind == "dynamic_rows":
        rows = torch.randn(rng.randint(2, 6), width, generator=generator) * rng.choice([0.5, 1.0, 2.0])
        torch._dynamo.mark_dynamic(rows, 0)
        return rows
    raise ValueError(f"no values for an argument of kind {kind!r}")


def argument_variety(program: Program, inp) -> tuple:
    """What must vary among the chosen inputs for `Program.arguments`: whether each optional
    is None, and each dynamic tensor's rows."""
    extras = arguments(inp)[len(arguments(inp)) - len(program.arguments):]
    return tuple(v is None if kind == "optional_int" else v.shape[0]
                 for v, (_, kind) in zip(extras, program.arguments))


def arguments(inp) -> tuple:
    """forward's arguments for a candidate input (a tensor, or a tuple of arguments)."""
    return inp if isinstance(inp, tuple) else (inp,)


# ----- eager runs with probes ----------------------------------------------------------


@dataclass
class Trace:
    evaluations: list[tuple[int, float]]  # (threshold slot, statistic value), in order
    lines: set[int]


def traced_run(model, path: Path, x, thresholds: list[float], lines_too: bool = True) -> Trace:
    """Run the probe-mode model, recording each statistic (and the lines executed: slow)."""
    evaluations: list[tuple[int, float]] = []
    lines: set[int] = set()
    filename = str(path)

    def probe(k, value):
        evaluations.append((k, float(value)))
        return value

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != filename:
            return None
        if event == "line":
            lines.add(frame.f_lineno)
        return tracer

    object.__setattr__(model, "_probe", probe)
    object.__setattr__(model, "_t", list(thresholds))
    previous = sys.gettrace()
    if lines_too:
        sys.settrace(tracer)
    try:
        with torch.no_grad():
            model(*arguments(x))
    finally:
        sys.settrace(previous)
    return Trace(evaluations, lines)


def gap_threshold(values: list[float], rng: random.Random) -> float:
    """A threshold in a wide gap between the middle values (both sides get inputs)."""
    distinct = sorted({v for v in values if math.isfinite(v)})
    if not distinct:
        return 0.0
    if len(distinct) == 1:
        return distinct[0] + 0.5 * (abs(distinct[0]) + 1.0)
    low = max(0, int(len(distinct) * 0.2) - 1)
    high = min(len(distinct) - 1, int(math.ceil(len(distinct) * 0.8)))
    gaps = [(distinct[i + 1] - distinct[i], i) for i in range(low, max(high, low + 1))]
    widest = max(gaps)[0]
    _, i = rng.choice([g for g in gaps if g[0] >= 0.5 * widest])
    a, b = distinct[i], distinct[i + 1]
    middle = (a + b) / 2
    rounded = float(f"{middle:.4g}")
    return rounded if a < rounded < b else middle


def calibrate(program: Program, model, path: Path, inputs: list[torch.Tensor], rounds: int = 2) -> None:
    """Set `program.thresholds`, one slot at a time in program order, a few rounds."""
    slots = sorted({c.index for c in all_conditions(program)})
    size = (max(slots) + 1) if slots else 0
    program.thresholds = [0.0] * size
    rng = random.Random(program.seed ^ 0x5EED)
    for _ in range(rounds):
        for k in slots:
            values = [
                v for x in inputs for j, v in traced_run(model, path, x, program.thresholds, False).evaluations
                if j == k
            ]
            if values:
                program.thresholds[k] = gap_threshold(values, rng)


def margin(trace: Trace, thresholds: list[float]) -> float:
    return min(
        (abs(v - thresholds[k]) / (1.0 + abs(thresholds[k])) for k, v in trace.evaluations),
        default=math.inf,
    )


def select_inputs(traces: list[Trace], arms: list[int], thresholds, limit: int = MAX_INPUTS) -> list[int]:
    """Indices of inputs that keep a margin and cover the arms greedily (at least 3)."""
    safe = [i for i, t in enumerate(traces) if margin(t, thresholds) >= MIN_MARGIN]
    chosen: list[int] = []
    uncovered = set(arms)
    while uncovered and len(chosen) < limit:
        best = max(safe, key=lambda i: len(uncovered & traces[i].lines), default=None)
        if best is None or not uncovered & traces[best].lines:
            break
        chosen.append(best)
        uncovered -= traces[best].lines
    for i in safe:
        if len(chosen) >= 3:
            break
        if i not in chosen:
            chosen.append(i)
    return chosen


# ----- comparing -----------------------------------------------------------------------


def _leaves(value):
    if isinstance(value, (tuple, list)):
        yield ("seq", len(value), type(value).__name__)
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        yield ("dict", tuple(value))
        for item in value.values():
            yield from _leaves(item)
    else:
        yield value


def compare(expected, actual) -> str | None:
    """None when `actual` matches eager `expected`; else what differs."""
    exp, act = list(_leaves(expected)), list(_leaves(actual))
    if len(exp) != len(act):
        return f"structure differs: {len(exp)} vs {len(act)} leaves"
    for k, (e, a) in enumerate(zip(exp, act)):
        if isinstance(e, tuple):
            if e != a:
                return f"structure differs at leaf {k}: {e} vs {a}"
        elif isinstance(e, torch.Tensor):
            a = np.asarray(a.detach() if isinstance(a, torch.Tensor) else a)
            e = e.detach().numpy()
            if e.shape != a.shape:
                return f"leaf {k}: shape {list(e.shape)} vs {list(a.shape)}"
            if e.dtype != a.dtype:
                return f"leaf {k}: dtype {e.dtype} vs {a.dtype}"
            if not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
                worst = float(np.nanmax(np.abs(a.astype(np.float64) - e.astype(np.float64))))
                return f"leaf {k}: values differ (max abs error {worst:.3g})"
        elif e != a or type(e) is not type(a) and not (isinstance(e, (int, float)) and isinstance(a, (int, float))):
            return f"leaf {k}: {e!r} vs {a!r}"
    return None


# ----- the check -----------------------------------------------------------------------


def _error(err: BaseException) -> str:
    last = traceback.extract_tb(err.__traceback__)[-1:] if err.__traceback__ else []
    where = f" [{Path(last[0].filename).name}:{last[0].lineno}]" if last else ""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}{where}"[:400]


def prepare(program: Program):
    """Calibrated program, final model, chosen inputs, eager outputs, arm coverage (and, in
    `RENDERED[model]`, the final rendering and its file)."""
    probe_model, rendered, probe_path = build(program, probe=True)
    inputs = candidate_inputs(program)
    calibrate(program, probe_model, probe_path, inputs)
    traces = [traced_run(probe_model, probe_path, x, program.thresholds) for x in inputs]
    chosen = select_inputs(traces, rendered.arms, program.thresholds)
    if program.arguments:
        chosen = _vary_arguments(program, chosen, inputs, traces)
    covered = set().union(*(traces[i].lines for i in chosen)) & set(rendered.arms) if chosen else set()
    model, final, path = build(program)
    RENDERED[model] = (final, path)
    selected = [inputs[i] for i in chosen]
    initial = state_of(model, program.buffers)
    expected, states = [], []
    with torch.no_grad():
        for x in selected:  # one sequence of calls (a model that keeps state sees them all)
            expected.append(model(*arguments(x)))
            states.append(state_of(model, program.buffers))
    restore_state(model, initial)  # compiled from the state before the sequence
    INITIAL_STATES[model] = initial
    EAGER_STATES[model] = states
    return model, selected, expected, len(rendered.arms), len(covered)


def _vary_arguments(program: Program, chosen: list[int], inputs: list, traces: list[Trace]) -> list[int]:
    """`chosen` and, for each value of `argument_variety` the chosen inputs lack, an input
    that keeps a margin and has it (an optional None and given, every row count)."""
    chosen = list(chosen)
    safe = [i for i, t in enumerate(traces) if margin(t, program.thresholds) >= MIN_MARGIN]
    for position in range(len(program.arguments)):
        seen = {argument_variety(program, inputs[i])[position] for i in chosen}
        for i in safe:
            value = argument_variety(program, inputs[i])[position]
            if value not in seen:
                chosen.append(i)
                seen.add(value)
    return chosen


def state_of(model, buffers=()) -> dict[str, Any]:
    """A copy of the attributes `cross_call_state` keeps (those the model has) and of the
    registered buffers named (by their state_dict key: `Program.buffers`)."""
    import copy

    state = {name: copy.deepcopy(model.__dict__[name]) for name in STATE_ATTRIBUTES if name in model.__dict__}
    return state | {name: model.get_buffer(name).detach().clone() for name in buffers}


def restore_state(model, state: dict[str, Any]) -> None:
    """Back to a `state_of` copy (buffers written into, the module's own tensors)."""
    for name, value in state.items():
        if name in model.__dict__ or name in STATE_ATTRIBUTES:
            model.__dict__[name] = value
        else:
            model.get_buffer(name).copy_(value)


def compare_state(eager: dict[str, Any], state: dict[str, Any], initial: dict[str, Any] | None = None) -> str | None:
    """None when a compiled model's state (attribute path -> value) matches eager's; a
    buffer eager changed from `initial` must be in it (else DyCL took it for a weight)."""
    unknown = sorted(set(state) - set(eager))
    if unknown:
        return f"state {unknown}: attributes the model does not keep"
    changed = sorted(k for k in (initial or {}) if k not in STATE_ATTRIBUTES and k not in state
                     and not torch.equal(initial[k], eager[k]))
    if changed:
        return f"state misses {changed}: buffers eager changed"
    problem = compare(tuple(eager[k] for k in state), tuple(state.values()))
    return None if problem is None else f"state after the call: {problem}"


def check_program(program: Program, backend: str | None = "onnxruntime") -> Outcome:
    """Run one program through every stage; `backend=None` stops after the interpreter."""
    from dycl.frontend import FrontendError, import_module
    from dycl.interpreter import find_function, flatten_inputs, output_tree, run_call, run_function, unflatten

    from dycl.fuzz.forms import tags

    outcome = Outcome(program.seed, backend=backend or "interpreter", forms=tags(program))
    start = time.perf_counter()

    def stage(name):
        outcome.stage_seconds[name] = round(time.perf_counter() - start - sum(outcome.stage_seconds.values()), 3)

    try:
        model, inputs, expected, outcome.arms_total, outcome.arms_covered = prepare(program)
        outcome.inputs = len(inputs)
    except Exception as err:  # the generator wrote something eager PyTorch rejects
        return _finish(outcome, "generator-error", _error(err), start)
    if not inputs:
        return _finish(outcome, "untestable", "no input keeps a margin from every threshold", start)
    stage("prepare")
    rendered, path = RENDERED[model]
    try:
        imported = import_module(model, arguments(inputs[0]))
    except FrontendError as err:
        if err.line <= 0 or not _same_file(err.file, path):
            return _finish(outcome, "frontend-misplaced", _error(err), start)
        if INTERNAL_NAME.search(str(err)):  # DyCL's rewritten code failed, not the program
            return _finish(outcome, "frontend-crash", _error(err), start)
        outcome.by_design = err.line in rendered.refusals
        return _finish(outcome, "frontend-error", _error(err), start)
    except Exception as err:
        return _finish(outcome, "frontend-crash", _error(err), start)
    stage("frontend")
    states = EAGER_STATES.get(model, [{}] * len(inputs))
    initial = INITIAL_STATES.get(model, {})
    try:
        from dycl.ir import make_context
        from dycl.passes.pipeline import PipelinePass

        PipelinePass().apply(make_context(), imported.module)
        function = find_function(imported.module, imported.function_name)
        tree = output_tree(function)
        state = imported.state
        for x, e, eager_state in zip(inputs, expected, states):
            if imported.state:
                got, state = run_call(imported.module, arguments(x), imported.weights, state, imported.function_name)
                problem = compare(e, got) or compare_state(eager_state, state, initial)
            else:
                args = flatten_inputs(function, arguments(x))
                got = unflatten(tree, run_function(imported.module, args, imported.weights, imported.function_name))
                problem = compare(e, got) or compare_state(eager_state, {}, initial)
            if problem:
                if not imported.state and ill_conditioned(model, x, e):
                    return _finish(outcome, "untestable", f"eager in float64 differs as much ({problem})", start)
                return _finish(outcome, "hcfg-mismatch", problem, start)
    except Exception as err:
        return _finish(outcome, "pipeline-error", _error(err), start)
    stage("pipeline")
    if backend is None:
        return _finish(outcome, "ok", "", start)
    try:
        from dycl.api import compile_module

        compiled = compile_module(
            imported.module, imported.weights, backend, entry=imported.function_name, progress=False,
            run_pipeline=False, threads=1, jobs=1, state=imported.state,
        )
        outcome.subdnns = len(compiled.subdnn_names)
    except Exception as err:
        return _finish(outcome, "compile-error", _error(err), start)
    stage("compile")
    for x, e, eager_state in zip(inputs, expected, states):
        try:
            got = compiled(*arguments(x))
        except Exception as err:
            return _finish(outcome, "runtime-error", _error(err), start)
        problem = compare(e, got) or compare_state(eager_state, compiled.state if compiled.stateful else {}, initial)
        if problem:
            if not compiled.stateful and ill_conditioned(model, x, e):
                return _finish(outcome, "untestable", f"eager in float64 differs as much ({problem})", start)
            return _finish(outcome, "mismatch", problem, start)
    if not compiled.stateful:  # every input again at once: run_many batches calls of different requests
        try:
            together = compiled.run_many([arguments(x) for x in inputs])
        except Exception as err:
            return _finish(outcome, "runtime-error", f"run_many: {_error(err)}", start)
        for k, (e, got) in enumerate(zip(expected, together)):
            if problem := compare(e, got):
                return _finish(outcome, "mismatch", f"run_many, request {k}: {problem}", start)
    if program.lengths:  # the compiled model takes `lengths` of the example's length only
        from dycl.runtime import InputError

        x, lengths, *rest = arguments(inputs[0])
        try:
            compiled(x, type(lengths)([*lengths, 1]), *rest)
        except InputError:
            pass
        except Exception as err:
            return _finish(outcome, "runtime-error", f"a longer `lengths`: {_error(err)}", start)
        else:
            return _finish(outcome, "mismatch", "a `lengths` of another length was accepted", start)
    stage("run")
    return _finish(outcome, "ok", "", start)


def ill_conditioned(model, x, expected) -> bool:
    """Whether eager itself, run in float64, is as far from its float32 answer on `x` as the
    comparison allows: a program whose values amplify rounding (a rotation by angles of its
    own values, applied again and again: seed 460621, where float32 and float64 eager differ
    by 0.02), to whose bits no float32 program can be held. False where float64 breaks the
    program (its mismatch stands)."""
    import copy

    try:
        wide = copy.deepcopy(model).double()
        for module in wide.modules():  # (plain tensor attributes: `freqs_cis` tables)
            for name, value in list(vars(module).items()):
                if isinstance(value, torch.Tensor) and value.dtype in (torch.float32, torch.complex64):
                    setattr(module, name, value.to(torch.float64 if value.dtype == torch.float32 else torch.complex128))
        args = [a.double() if isinstance(a, torch.Tensor) and a.dtype == torch.float32 else a for a in arguments(x)]
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            with torch.no_grad():
                answer = wide(*args)
        finally:
            torch.set_default_dtype(previous)
    except Exception:
        return False
    narrowed = torch.utils._pytree.tree_map(
        lambda v: v.float() if isinstance(v, torch.Tensor) and v.dtype == torch.float64 else v, answer)
    return compare(expected, narrowed) is not None


def _same_file(reported: str, path: Path) -> bool:
    try:
        return Path(reported).resolve() == Path(path).resolve()
    except (OSError, ValueError):
        return False


def _finish(outcome: Outcome, status: str, detail: str, start: float) -> Outcome:
    outcome.status, outcome.detail = status, detail
    outcome.seconds = round(time.perf_counter() - start, 3)
    return outcome
