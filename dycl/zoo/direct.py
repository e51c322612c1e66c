"""What a user gets today without DyCL: compile each zoo network directly, measure the damage.

For every network, four direct routes are tried, each on ``example_inputs()`` and then checked
against eager PyTorch over ``path_inputs()``:

- ``torch.jit.trace`` → ``torch.onnx.export(dynamo=False)`` (the legacy exporter) → ONNX Runtime
- ``torch.jit.trace`` alone (TorchScript)
- ``torch.export`` strict and non-strict, running the exported program

Tracing records the one path the example input takes, so inputs that take another path get
silently wrong results; ``torch.export`` refuses data-dependent control flow. Only tensor
outputs are compared (tracing and ONNX cannot return Python ints, so the SDN exit index is
dropped). ``python -m dycl.zoo.direct [names...]`` prints the table as markdown.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import warnings
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from dycl.zoo import EVALUATION, REGISTRY
from dycl.zoo.entry import Inputs

ROUTES = ["trace → ONNX → ORT", "jit.trace", "export (strict)", "export (non-strict)"]

# Outputs count as right when within this of eager; wrong paths are off by far more.
RTOL, ATOL = 1e-3, 1e-4


class TensorOutputs(nn.Module):
    """The wrapped model with only its tensor outputs, as a tuple (what tracing can return)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(_tensors(self.model(*inputs)))


def _tensors(output) -> list[torch.Tensor]:
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, (tuple, list)):
        return [t for item in output for t in _tensors(item)]
    return []


@dataclass
class RouteResult:
    route: str
    compiled: bool
    error: str = ""                 # why it did not compile
    wrong: int = 0                  # path inputs whose result differs from eager
    wrong_shape: int = 0            # ... of which the output shape differs (e.g. caption length)
    total: int = 0
    max_abs_error: float = 0.0      # over the path inputs whose output shapes match eager
    max_rel_error: float = 0.0      # the same, divided by the largest |eager output|

    @property
    def correct(self) -> bool:
        return self.compiled and self.wrong == 0

    def cell(self) -> str:
        if not self.compiled:
            return f"error: {self.error}"
        text = f"wrong on {self.wrong}/{self.total}"
        if self.wrong_shape:
            text += f" ({self.wrong_shape} wrong length)"
        if self.wrong > self.wrong_shape:  # some same-shape outputs are wrong: say by how much
            text += f"; max err {self.max_abs_error:.1e} (rel. {self.max_rel_error:.1e})"
        return text


def _short_error(error: BaseException) -> str:
    """The exception's type and its most telling sentence (the one naming the data dependence)."""
    lines = [sentence.strip() for line in str(error).splitlines()
             for sentence in line.split(". ") if sentence.strip()]
    telling = [line for line in lines if "data-dependent" in line.lower()]
    line = (telling or lines or [""])[0].split(" (unhinted")[0]
    if len(line) > 70:
        line = line[:67].rsplit(" ", 1)[0] + " ..."
    return f"{type(error).__name__}: {line}" if line else type(error).__name__


@contextlib.contextmanager
def _quiet():
    """Silence tracer warnings, exporter chatter and torch.export's error logs."""
    previous = logging.root.manager.disable
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        logging.disable(logging.CRITICAL)
        try:
            yield
        finally:
            logging.disable(previous)


def _compare(route: str, run: Callable[[Inputs], list[torch.Tensor]],
             expected: list[list[torch.Tensor]], inputs: list[Inputs]) -> RouteResult:
    result = RouteResult(route, compiled=True, total=len(inputs))
    for args, wanted in zip(inputs, expected):
        got = run(args)
        if len(got) != len(wanted) or any(g.shape != w.shape for g, w in zip(got, wanted)):
            result.wrong += 1
            result.wrong_shape += 1
            continue
        errors = [float((g.double() - w.double()).abs().max()) for g, w in zip(got, wanted)]
        scale = max(float(w.double().abs().max()) for w in wanted)
        result.max_abs_error = max([result.max_abs_error, *errors])
        result.max_rel_error = max(result.max_rel_error, max(errors) / scale)
        if not all(torch.allclose(g.double(), w.double(), rtol=RTOL, atol=ATOL)
                   for g, w in zip(got, wanted)):
            result.wrong += 1
    return result


def _onnx_runner(traced: torch.jit.ScriptModule, example: Inputs):
    import onnxruntime

    buffer = io.BytesIO()
    torch.onnx.export(traced, example, buffer, dynamo=False)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 2
    session = onnxruntime.InferenceSession(buffer.getvalue(), options,
                                           providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]

    def run(args: Inputs) -> list[torch.Tensor]:
        feeds = {name: t.numpy() for name, t in zip(names, args)}
        return [torch.from_numpy(array) for array in session.run(None, feeds)]

    return run


def _try(route: str, compile_route: Callable[[], Callable[[Inputs], list[torch.Tensor]]],
         expected: list[list[torch.Tensor]], inputs: list[Inputs]) -> RouteResult:
    try:
        with _quiet():
            run = compile_route()
    except Exception as error:  # any failure to compile is a result, not a crash
        return RouteResult(route, compiled=False, error=_short_error(error), total=len(inputs))
    with _quiet(), torch.no_grad():
        return _compare(route, run, expected, inputs)


def measure(name: str) -> list[RouteResult]:
    """Compile network ``name`` along every route and compare with eager on its path inputs."""
    entry = REGISTRY[name]
    model = TensorOutputs(entry.build(0)).eval()
    example = entry.example_inputs()
    inputs = entry.path_inputs()
    with torch.no_grad():
        expected = [list(model(*args)) for args in inputs]

    traced_holder: list[torch.jit.ScriptModule] = []

    def trace():
        with torch.no_grad():
            traced = torch.jit.trace(model, example, check_trace=False)
        traced_holder.append(traced)
        return lambda args: list(traced(*args))

    def trace_onnx():
        traced = traced_holder[0] if traced_holder else torch.jit.trace(model, example,
                                                                         check_trace=False)
        return _onnx_runner(traced, example)

    def export(strict: bool):
        def compile_route():
            program = torch.export.export(model, example, strict=strict)
            module = program.module()
            return lambda args: list(module(*args))
        return compile_route

    jit_result = _try(ROUTES[1], trace, expected, inputs)
    return [
        _try(ROUTES[0], trace_onnx, expected, inputs),
        jit_result,
        _try(ROUTES[2], export(True), expected, inputs),
        _try(ROUTES[3], export(False), expected, inputs),
    ]


def markdown_table(results: dict[str, list[RouteResult]]) -> str:
    lines = ["| network | path inputs | " + " | ".join(ROUTES) + " |",
             "|---|---|" + "---|" * len(ROUTES)]
    for name, routes in results.items():
        cells = [route.cell() for route in routes]
        lines.append(f"| `{name}` | {routes[0].total} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or list(EVALUATION)
    unknown = [name for name in names if name not in REGISTRY]
    if unknown:
        print(f"unknown network(s) {unknown}; known: {', '.join(REGISTRY)}", file=sys.stderr)
        return 2
    torch.set_num_threads(2)
    results = {}
    for name in names:
        results[name] = measure(name)
        print(f"measured {name}", file=sys.stderr)
    print(markdown_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
