"""Compile every corpus model and classify the outcome (the table in README.md).

    python -m tests.frontend.research.survey [Model ...] [--json out.json] [--xfails]
    python -m tests.frontend.research.survey --write   # rewrite README.md's table and the test's xfails

Outcomes: `exact` (compiles; every path input within atol 1e-4, same structure), `refused`
(a `dycl.FrontendError` at the model's own file and a nonzero line), `refused-misplaced`
(a FrontendError located elsewhere or at line 0: a bug), `internal` (any other exception
while compiling: a bug), `run-error` (compiles, then raises on a path input: a bug),
`WRONG` (compiles and runs, but differs from eager: the worst bug).
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import linecache
import os
import sys
import tempfile
import time
import traceback

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-research-cache-"))

ATOL = 1e-4

# What blocks each refused model, as triaged by hand (minimal repros in README.md); the
# survey falls back to the offending source line for models not listed here.
BLOCKERS = {
    "SDNNumpyArgmax": "np.argmax on a list of 0-d tensors",
    "BranchyNetEntropy": "numpy on a tensor (`.data.cpu().numpy()`) compared with a threshold",
    "SDNEarlyExitOverride": "np.argmax on a list of 0-d tensors",
    "SDNNumpyMaxMean": "`np.mean` of a runtime-length list (export specialises the 1-element example)",
    "NpWhereExit": "`np.where` (index array of data-dependent length)",
    "ExitConfHistory": "store through a view (`v[i] = conf`) taken before the loop",
    "SkipNetRNNGate": "`self.hidden` written in forward",
    "BlockDropSingle": "a helper with a tensor `if` called inside `return` (`return self.forward_single(x, policy), policy`)",
    "SkipAllAny": "returns `(t, 0, False)` / `(t, sum(bools), all(bools))` typed int vs float",
    "SkipExtendGroups": "conditional expression on `.item()`",
    "SkipSelfCounter": "`self.executed` written in forward",
    "GlimpsePolicyStop": "loop variable `t` read after a `for` with `break` (frontend NameError)",
    "NumpyWhereLayerSelect": "`np.where` (index array of data-dependent length), loop over it",
    "PolicyVariableNumpy": "`self.heads[action]` with a numpy int from `np.argmax(probs.data.numpy())`",
    "PolicyHiddenState": "`self.hidden` written in forward",
    "ShowTellSample": "`for` over a numpy array (`sampled_ids[0].cpu().numpy()`)",
    "ShowAttendTell": "`torch.zeros(batch_size, max(decode_lengths), ...)` with sizes from `.tolist()`, `emb[:batch_size_t]` of a batch that shrinks per step",
    "TeacherForcingLengths": "`emb[:batch_size_t]`: a slice whose size comes from the values of a list argument, `outputs[:batch_size_t, t] = ...`",
    "GreedyEndToken": "a list of Python ints (`tokens.append(tok.item())`) grown next to a tensor list",
    "GreedyStripEnd": "`a if lst else b` on a runtime list",
    "GreedyNumpyCaption": "`np.where` on `np.array(list of 0-d tensors)`",
    "BatchGreedyAll": "item assignment to a local list of bools (`finished[b] = True`)",
    "DecoderSelfHidden": "`self.hidden` written in forward",
    "DecoderMaxKey": "a list of Python ints grown in a loop with `break`",
    "ACTNoGradLSTM": "`torch.stack(runtime list).mean(0)` (export specialises the 1-element example)",
    "PonderNetInference": "`torch.cat(ps[:-1])` of a list whose example has one item (two tensor lists grown in one loop with `break`)",
    "MoEHardRouting": "`self.experts[k]` with a runtime int k (a module picked by data)",
    "RouterNumpyArgsort": "`np.argsort` on a runtime value, loop over the order",
    "UniversalTransformerACT": "`while <tensor>.any():` without a bound",
    "RoutingSelfAttribute": "`self.experts[k](x)` with a runtime k in a helper (a module picked by data; `self.gate_probs` compiles)",
    "ACTConstantLSTM": "`int(p.argmax())` on a stack of a loop-built list (error at line 0)",
}


def _offending_line(error: BaseException, model_file: str) -> tuple[str, int]:
    """(file, line) of the error in the model's source: the FrontendError's location, else
    the innermost traceback frame in the model's file."""
    import dycl

    if isinstance(error, dycl.FrontendError):
        return error.file, error.line
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if os.path.abspath(frame.filename) == model_file:
            return frame.filename, frame.lineno
    return "", 0


def survey_one(cls) -> dict:
    import dycl
    from tests.frontend.research.harness import build, max_error, run_eager

    model_file = os.path.abspath(inspect.getsourcefile(cls))
    result = {"model": cls.__name__, "family": cls.__module__.rsplit(".", 1)[-1], "constructs": list(cls.CONSTRUCTS), "at": time.time()}
    model = build(cls)
    eager = copy.deepcopy(model)
    start = time.perf_counter()
    try:
        compiled = dycl.compile(model, cls.example_inputs(), backend="onnxruntime", progress=False)
    except Exception as error:  # noqa: BLE001 - classified below
        result["seconds"] = time.perf_counter() - start
        file, line = _offending_line(error, model_file)
        result.update(
            error_type=f"{type(error).__module__}.{type(error).__qualname__}",
            message=str(error).splitlines()[0] if str(error) else "",
            where=f"{os.path.basename(file)}:{line}" if file else "",
            source=linecache.getline(file, line).strip() if file and line else "",
            traceback_tail=traceback.format_exception(error)[-3:],
        )
        if isinstance(error, dycl.FrontendError):
            located = os.path.abspath(error.file) == model_file and error.line > 0
            result["status"] = "refused" if located else "refused-misplaced"
            result["construct"] = error.construct
        else:
            result["status"] = "internal"
        return result
    result["seconds"] = time.perf_counter() - start
    result["subdnns"] = len(compiled.subdnn_names)
    worst = 0.0
    for k, inputs in enumerate(cls.path_inputs()):
        expected, key = run_eager(eager, inputs)
        try:
            actual = compiled(*copy.deepcopy(inputs))
        except Exception as error:  # noqa: BLE001
            result.update(
                status="run-error",
                error_type=f"{type(error).__module__}.{type(error).__qualname__}",
                message=f"path input {k}: " + (str(error).splitlines()[0] if str(error) else ""),
                traceback_tail=traceback.format_exception(error)[-3:],
            )
            return result
        try:
            error = max_error(expected, actual, where=f"path input {k}")
        except AssertionError as mismatch:
            result.update(status="WRONG", error_type="AssertionError", message=str(mismatch).splitlines()[0])
            return result
        if error > ATOL:
            result.update(status="WRONG", error_type="AssertionError", message=f"path input {k}: max abs error {error:.3g}")
            return result
        worst = max(worst, error)
    result.update(status="exact", max_error=worst)
    return result


def markdown(results: list[dict]) -> str:
    rows = ["| model | family | constructs | status today | detail |", "|---|---|---|---|---|"]
    for r in results:
        constructs = ", ".join(f"`{c}`" for c in r["constructs"])
        if r["status"] == "exact":
            detail = f"max err {r['max_error']:.1e}, {r['subdnns']} sub-DNNs"
        else:
            message = r["message"].replace(HERE + os.sep, "")
            if r.get("where") and message.startswith(r["where"] + ": "):
                message = message[len(r["where"]) + 2 :]
            detail = f"`{r['error_type'].rsplit('.', 1)[-1]}` {r.get('where', '')}: {message}".replace("|", "\\|")
        status = {"refused-misplaced": "**BUG: refused-misplaced**", "internal": "**BUG: internal error**",
                  "run-error": "**BUG: run error**", "WRONG": "**WRONG (silent wrong answer)**"}.get(r["status"], r["status"])
        rows.append(f"| `{r['model']}` | {r['family']} | {constructs} | {status} | {detail} |")
    return "\n".join(rows)


def xfail_entries(results: list[dict]) -> str:
    """The `EXPECTED_FAILURES` entries of test_research_corpus.py for today's failures."""
    lines = []
    for r in results:
        if r["status"] == "exact":
            continue
        error_type = r["error_type"].rsplit(".", 1)[-1]
        # (a refusal of a FrontendError subclass, such as errors.RuntimeSize, is one too)
        raises = "dycl.FrontendError" if r["status"] == "refused" or error_type == "FrontendError" else error_type
        if r["status"] == "refused-misplaced":
            raises = "AssertionError"  # the test asserts the location of every FrontendError
        construct = BLOCKERS.get(r["model"]) or (f"`{r['source']}`" if r.get("source") else r["status"])
        message = r["message"].replace(os.path.dirname(os.path.abspath(__file__)) + os.sep, "")
        if len(message) > 160:
            message = message[:157] + "..."
        lines.append(f"    {r['model']!r}: ({raises}, {f'{construct}: {message}'!r}),")
    return "\n".join(lines)


HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "README.md")
TEST = os.path.join(HERE, "test_research_corpus.py")


def _replace_between(path: str, begin: str, end: str, text: str) -> None:
    with open(path) as f:
        content = f.read()
    head, rest = content.split(begin, 1)
    if rest.startswith(end.lstrip("\n")):  # (nothing between them: `{\n}`)
        rest = "\n" + rest
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(head + begin + text + end + tail)


def constructs_table() -> str:
    from tests.frontend.research.harness import CONSTRUCTS, MODELS

    rows = ["| construct | models |", "|---|---|"]
    for tag, description in CONSTRUCTS.items():
        users = [name for name, cls in MODELS.items() if tag in cls.CONSTRUCTS]
        rows.append(f"| {description} | {', '.join(f'`{u}`' for u in users)} |")
    return "\n".join(rows)


def summary(results: list[dict], seconds: float) -> str:
    counts = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(max([r.get("at", time.time()) for r in results], default=None)))
    parts = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    return f"Survey of {len(results)} models at {stamp} ({seconds:.0f} s): {parts}."


def main(argv=None) -> int:
    from tests.frontend.research.harness import MODELS

    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--json")
    parser.add_argument("--xfails", action="store_true", help="print the EXPECTED_FAILURES entries instead of the table")
    parser.add_argument("--write", action="store_true", help="rewrite the table in README.md and EXPECTED_FAILURES in the test")
    parser.add_argument("--from-json", help="classify nothing: reuse the results of an earlier --json run")
    args = parser.parse_args(argv)
    results = []
    start = time.perf_counter()
    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)
        seconds = sum(r["seconds"] for r in results)
    for name in [] if args.from_json else args.models or list(MODELS):
        r = survey_one(MODELS[name])
        print(f"{name}: {r['status']} {r.get('max_error', '')}{r.get('where', '')} {r.get('message', '')}", file=sys.stderr, flush=True)
        results.append(r)
    if not args.from_json:
        seconds = time.perf_counter() - start
    print(xfail_entries(results) if args.xfails else markdown(results))
    print("\n" + summary(results, seconds))
    if args.write:
        if len(results) != len(MODELS):
            parser.error("--write needs the whole corpus (no model names)")
        table = "\n" + summary(results, seconds) + "\n\n" + markdown(results) + "\n"
        _replace_between(README, "<!-- survey:begin -->", "<!-- survey:end -->", table)
        _replace_between(README, "<!-- constructs:begin -->", "<!-- constructs:end -->", "\n" + constructs_table() + "\n")
        _replace_between(TEST, "EXPECTED_FAILURES: dict[str, tuple[type[BaseException], str]] = {\n", "\n}\n", xfail_entries(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
