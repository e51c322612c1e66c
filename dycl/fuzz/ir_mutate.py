"""Malformed IR and pass pipelines for `dycl-opt`.

Seeds are valid `.mlir` inputs (the lit tests, frontend-produced IR); `mutate` damages one:
truncation, dropped/duplicated/swapped tokens, swapped types, broken SSA names, bad
attributes, unknown ops, random bytes; `mutate_pipeline` writes unknown passes and bad
options. `run_case` runs dycl-opt in-process and classifies what happened:

    "ok"          exit 0 (the mutant happened to be valid)
    "diagnostic"  exit 1 with a `file:line:col: error: ...` or `...: error: ...` line
    "internal"    exit 1, but from an exception that is no diagnostic (KeyError, AttributeError,
                  ...): dycl-opt's catch-all hid a crash - a bug, reported with the type
    "traceback"   an exception escaped `main`, or stderr holds a Python traceback
    "hang"        the run exceeded its time limit
    "bad-exit"    any other exit code, or exit 1 without a diagnostic
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ModuleOp

from dycl.dialects import torch as t
from dycl.dialects.dycl import ParamOp

TOKEN = re.compile(r'"[^"\n]*"|%[\w.#$-]+|\^[\w]+|@[\w.$-]+|![\w.]+(<[^>\n]*>)?|[\w.]+|->|[^\s\w]')
TYPES = ["f32", "f64", "i1", "i64", "si64", "index", "!torch.int", "!torch.bool", "!torch.float",
         "!torch.vtensor<[1,4],f32>", "!torch.vtensor<[?,?],f32>", "!torch.vtensor<[],i1>",
         "!torch.list<vtensor>", "tensor<2xf32>", "none", "()", "!torch.vtensor<[1,4],f3>"]
BAD_ATTRIBUTES = ['3 : i5', '"unterminated', 'dense<[1.0, 2.0]> : tensor<3xf32>', '#ml_program.extern : f32',
                  '[', '{}', 'unit', '0x7FFFFFFFFFFFFFFFFF : i64', '@missing', 'array<i64: 1, x>', '"\\xff"']
OPS = ['"torch.aten.no_such_op"', '"foo.bar"'] + [
    f'"{op.name}"'
    for op in (func.FuncOp, scf.YieldOp, scf.IfOp, ParamOp, func.ReturnOp, ModuleOp, t.ConstantIntOp,
               arith.ConstantOp, t.ToI1Op)
]
PASSES = ["dycl-const-prop", "dycl-shape-infer", "dycl-unroll-loops", "dycl-outline", "dycl-hoist-free",
          "dycl-dedup", "dycl-pipeline"]
PIPELINES = ["", "dycl-const-prop", "dycl-pipeline", "dycl-shape-infer,dycl-outline",
             "dycl-const-prop,dycl-unroll-loops", "dycl-outline,dycl-hoist-free,dycl-dedup"]
BAD_PIPELINES = ["dycl-no-such-pass", "dycl-const-prop,", ",", "dycl-unroll-loops{max-trip-count=-1}",
                 "dycl-unroll-loops{max-trip-count=abc}", "dycl-unroll-loops{max-trip-count=3", "dycl-outline{min-ops=}",
                 "dycl-outline{no-such-option=1}", "dycl-pipeline{prefix=}", "dycl-dedup{weights-as-args=maybe}",
                 "dycl-unroll-loops{max-trip-count=99999999999999999999}", "dycl-const-prop{}", "{", "}"]


def _tokens(text: str) -> list[re.Match]:
    return list(TOKEN.finditer(text))


def _replace(text: str, match: re.Match, new: str) -> str:
    return text[: match.start()] + new + text[match.end() :]


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """(mutant, what was done)."""
    tokens = _tokens(text) or [re.match(r"", text)]
    kind = rng.choice(["truncate", "drop", "duplicate", "swap", "type", "ssa", "attribute", "op", "bytes", "lines"])
    token = rng.choice(tokens)
    if kind == "truncate":
        cut = rng.randrange(len(text) + 1)
        return text[:cut], f"truncate at {cut}"
    if kind == "drop":
        return _replace(text, token, ""), f"drop {token.group()!r}"
    if kind == "duplicate":
        return _replace(text, token, token.group() * 2), f"duplicate {token.group()!r}"
    if kind == "swap":
        other = rng.choice(tokens)
        a, b = sorted([token, other], key=lambda m: m.start())
        if a.end() > b.start():
            return _replace(text, a, ""), f"drop {a.group()!r}"
        swapped = text[: a.start()] + b.group() + text[a.end() : b.start()] + a.group() + text[b.end() :]
        return swapped, f"swap {a.group()!r} and {b.group()!r}"
    if kind == "type":
        types = [m for m in tokens if m.group().startswith("!") or m.group() in TYPES] or tokens
        victim, new = rng.choice(types), rng.choice(TYPES)
        return _replace(text, victim, new), f"type {victim.group()!r} -> {new!r}"
    if kind == "ssa":
        names = [m for m in tokens if m.group().startswith("%")] or tokens
        victim = rng.choice(names)
        new = rng.choice(["%undefined", rng.choice(names).group(), "%0", "%", "%arg99"])
        return _replace(text, victim, new), f"ssa {victim.group()!r} -> {new!r}"
    if kind == "attribute":
        equals = [m for m in re.finditer(r"= ([^,}>\n]+)", text)]
        if equals:
            victim = rng.choice(equals)
            new = rng.choice(BAD_ATTRIBUTES)
            return text[: victim.start(1)] + new + text[victim.end(1) :], f"attribute {victim.group(1)!r} -> {new!r}"
        return _replace(text, token, rng.choice(BAD_ATTRIBUTES)), "attribute"
    if kind == "op":
        names = [m for m in tokens if m.group().startswith('"') and "." in m.group()] or tokens
        victim, new = rng.choice(names), rng.choice(OPS)
        return _replace(text, victim, new), f"op {victim.group()!r} -> {new!r}"
    if kind == "bytes":
        at = rng.randrange(len(text) + 1)
        junk = rng.choice(["\x00", "\xff", "\u2028", "{", "}", "(", ")", "<", ">", '"', "\\", "#", "^bb9:", "\t\t"])
        return text[:at] + junk + text[at:], f"insert {junk!r} at {at}"
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines), f"swap lines {i + 1} and {j + 1}"


def mutate_pipeline(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(BAD_PIPELINES)
    names = [rng.choice(PASSES) for _ in range(rng.randint(1, 3))]
    name = rng.choice(names)
    names[names.index(name)] = rng.choice([name[:-1], name + "x", name.upper(), name + "{", name + "{}", name + "{a=1}"])
    return ",".join(names)


@dataclass
class CaseResult:
    status: str
    exit_code: int | None
    stderr: str
    error_type: str = ""


class _Hang(BaseException):
    """Raised by the alarm; a BaseException so that dycl-opt's `except Exception` lets it pass."""


DIAGNOSTIC = re.compile(r"^\S.*?(:\d+:\d+)?: error: \S", re.MULTILINE)
# Exceptions that mean "bad input, reported as such"; any other type reaching dycl-opt's
# catch-all is an internal error (so is "InvalidPassOutput": a pass broke IR that verified).
DIAGNOSTIC_TYPES = {"ParseError", "IRParseError", "IRVerifyError", "VerifyException", "DiagnosticException", "PassFailedException",
                    "ArgSpecParseError", "FileNotFoundError", "IsADirectoryError", "PermissionError",
                    "PassPipelineParseError", "InterpretationError", "UnicodeDecodeError", "HCFGError",
                    "MultipleSpansParseError"}


def run_case(text: str, pipeline: str, timeout: float = 10.0, directory: Path | None = None) -> CaseResult:
    """Run `dycl-opt <file> -p <pipeline>` in-process (main thread only: uses SIGALRM)."""
    import dycl.tools.dycl_opt as opt

    with tempfile.NamedTemporaryFile("w", suffix=".mlir", dir=directory, delete=False, encoding="utf-8",
                                     errors="surrogateescape") as handle:
        handle.write(text)
        path = handle.name
    argv = [path] + (["-p", pipeline] if pipeline else [])
    seen: list[BaseException] = []
    original = opt.format_error

    def recording(err, name):
        seen.append(err)
        return original(err, name)

    fired = []

    def alarm(signum, frame):
        fired.append(True)
        raise _Hang()

    stdout, stderr = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    opt.format_error = recording
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = opt.main(argv)
    except _Hang:
        return CaseResult("hang", None, stderr.getvalue())
    except BaseException as err:  # noqa: BLE001 - exactly what we are looking for
        return CaseResult("traceback", None, f"{type(err).__name__}: {err}", type(err).__name__)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        opt.format_error = original
        Path(path).unlink(missing_ok=True)
    if fired:  # the alarm hit a `__del__` or the like, which only printed "Exception ignored"
        return CaseResult("hang", None, stderr.getvalue())
    return classify(code, stderr.getvalue(), [type(e).__name__ for e in seen])


def classify(code: int | None, stderr: str, error_types: list[str]) -> CaseResult:
    if "Traceback (most recent call last)" in stderr:
        return CaseResult("traceback", code, stderr)
    if code == 0:
        return CaseResult("ok", 0, stderr)
    if code != 1 or not DIAGNOSTIC.search(stderr):
        return CaseResult("bad-exit", code, stderr)
    pipeline_error = stderr.startswith("<pass pipeline>: error:")  # xDSL reports bad options as ValueError
    internal = [t for t in error_types if t not in DIAGNOSTIC_TYPES and not pipeline_error]
    if internal:
        return CaseResult("internal", code, stderr, internal[0])
    return CaseResult("diagnostic", code, stderr, error_types[0] if error_types else "")


def seed_files(root: Path) -> list[Path]:
    """Every lit `.mlir` input (not lit's Output copies)."""
    return sorted(p for p in root.rglob("*.mlir") if "Output" not in p.parts)
