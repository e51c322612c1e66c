"""dycl-bench output: the JSON record, the markdown tables and the speed-up chart."""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path

from dycl.bench.systems import LABELS
from dycl.bench.timing import UNSTABLE_IQR, geomean

PACKAGES = ("torch", "torch-mlir", "xdsl", "onnx", "onnxscript", "onnxruntime", "apache-tvm", "numpy", "matplotlib")

TARGETS = {
    "dycl_ort_geomean_speedup_vs_eager": (">=", 3.0, "DyCL+ORT geomean speed-up over eager"),
    "dycl_ort_min_speedup_vs_eager": (">=", 1.5, "DyCL+ORT speed-up over eager on every network (min)"),
    "dycl_ort_geomean_speedup_vs_torch_compile": (">=", 2.0, "DyCL+ORT geomean speed-up over torch.compile"),
    "dynamism_overhead_ort_geomean": ("<=", 1.05, "dynamism overhead DyCL+ORT / oracle ORT, geomean"),
    "dycl_ort_max_compile_seconds": ("<=", 30.0, "DyCL+ORT compile seconds per network (max)"),
}


def machine() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parent, timeout=10).stdout.strip() or None
    except Exception:
        commit = None
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
        "dycl_commit": commit,
        "load_average": os.getloadavg(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _get(record: dict, system: str, *keys, default=math.nan):
    value = record.get("systems", {}).get(system)
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return default
        value = value[key]
    return value


def merge_cold_costs(records: Sequence[dict], earlier: dict) -> None:
    """Where this run compiled from a warm cache, report the earlier run's cold backend
    compile (frontend and passes always run, so they stay this run's)."""
    before: dict[str, dict] = {}
    for r in earlier.get("networks", []):  # several earlier runs: the first that has a system wins
        for system, entry in r.get("systems", {}).items():
            before.setdefault(r["network"], {}).setdefault(system, entry)
    for record in records:
        old = before.get(record["network"], {})
        for system, entry in record.get("systems", {}).items():
            cost, old_cost = entry.get("cost", {}), old.get(system, {}).get("cost")
            if not old_cost or "warm_cost" in entry:
                continue
            # torch.compile: inductor's on-disk caches make a second warm-up cheaper too
            warm = cost.get("cached_subdnns", 0) or cost.get("cached_graphs", 0) or system == "torch.compile"
            if not warm:
                continue
            entry["warm_cost"] = dict(cost)
            merged = dict(cost)
            for key in ("backend_seconds", "trace_seconds", "compile_seconds", "cached_subdnns", "cached_graphs") + (
                ("total_seconds",) if system == "torch.compile" else ()
            ):
                if key in old_cost:
                    merged[key] = old_cost[key]
            if "backend_seconds" in merged:
                merged["total_seconds"] = merged.get("frontend_seconds", 0) + merged.get("passes_seconds", 0) + merged["backend_seconds"]
            elif "compile_seconds" in merged and "trace_seconds" in merged:
                merged["total_seconds"] = merged.get("trace_seconds", 0) + merged["compile_seconds"]
            merged["backend_seconds_from"] = "earlier cold run"
            entry["cost"] = merged


def _stable_ratio(record: dict, key: str) -> float:
    """A ratio of `record` (a network's record, or its `throughput_details`), NaN (left out
    of geomeans) where a system it divides was unstable."""
    return math.nan if key in record.get("unstable_ratios", ()) else record["ratios"].get(key, math.nan)


def summary(records: Sequence[dict]) -> dict:
    ok = [r for r in records if "ratios" in r]
    ratio = lambda key: [_stable_ratio(r, key) for r in ok]  # noqa: E731
    compile_ort = [_get(r, "dycl-ort", "cost", "total_seconds") for r in ok]
    finite = lambda xs: [x for x in xs if isinstance(x, (int, float)) and math.isfinite(x)]  # noqa: E731
    values = {
        "dycl_ort_geomean_speedup_vs_eager": geomean(ratio("dycl-ort/speedup_vs_eager")),
        "dycl_ort_min_speedup_vs_eager": min(finite(ratio("dycl-ort/speedup_vs_eager")), default=math.nan),
        "dycl_ort_geomean_speedup_vs_torch_compile": geomean(ratio("dycl-ort/speedup_vs_torch_compile")),
        "dynamism_overhead_ort_geomean": geomean(ratio("dynamism_overhead_ort")),
        "dycl_ort_max_compile_seconds": max(finite(compile_ort), default=math.nan),
    }
    extra = {
        "torch_compile_geomean_speedup_vs_eager": geomean(ratio("torch.compile/speedup_vs_eager")),
        "dycl_tvm_geomean_speedup_vs_eager": geomean(ratio("dycl-tvm/speedup_vs_eager")),
        "dycl_tvm_tuned_geomean_speedup_vs_eager": geomean(ratio("dycl-tvm-tuned/speedup_vs_eager")),
        "dycl_tvm_tuned_geomean_vs_ort": geomean(ratio("tvm_tuned_vs_ort")),
        "oracle_ort_geomean_speedup_vs_eager": geomean(ratio("oracle-ort/speedup_vs_eager")),
        "dynamism_overhead_tvm_geomean": geomean(ratio("dynamism_overhead_tvm")),
        "overhead_past_decisions_ort_geomean": geomean(ratio("overhead_past_decisions_ort")),
        "hoist_free_geomean_speedup": geomean(ratio("hoist_free_speedup")),
        "merge_calls_geomean_speedup": geomean(ratio("merge_calls_speedup")),
        "keep_branches_geomean_speedup": geomean(ratio("keep_branches_speedup")),
        "dycl_ort_geomean_compile_seconds": geomean(compile_ort),
    }
    targets = {}
    for key, (op, bound, text) in TARGETS.items():
        value = values[key]
        met = None if not math.isfinite(value) else (value >= bound if op == ">=" else value <= bound)
        targets[key] = {"value": value, "target": f"{op} {bound}", "met": met, "what": text}
    result = {"targets": targets, **extra}
    if any("throughput" in r for r in records):
        result["throughput"] = throughput_summary(records)
    return result


SKIP_WORK_EXEMPT = ("skipnet_ff", "skipnet_rnn")
"""Networks whose requests skip less work than their gates cost at CIFAR scale: the static
target is reported for them, not required."""


def throughput_summary(records: Sequence[dict]) -> dict:
    """Geomeans and minima of the throughput ratios at the largest N, and the targets for
    them: run_many >= 1.6x one request at a time (geomean), and >= 1.0x static batched on
    every network whose requests skip work (all but `SKIP_WORK_EXEMPT`). A ratio of a row
    flagged unstable is left out."""
    ok = [r for r in records if "throughput" in r]
    top = max(max(r["throughput_details"]["sizes"]) for r in ok)
    ratio = lambda key, rs=ok: [_stable_ratio(r["throughput_details"], key) for r in rs]  # noqa: E731
    finite = lambda xs: [x for x in xs if isinstance(x, (int, float)) and math.isfinite(x)]  # noqa: E731
    vs_one, vs_static = ratio(f"run_many_vs_one_at_a_time@{top}"), ratio(f"run_many_vs_static@{top}")
    skipping = [r for r in ok if r["network"] not in SKIP_WORK_EXEMPT]
    values = {
        f"run_many_vs_one_at_a_time_geomean@{top}": geomean(vs_one),
        f"run_many_vs_one_at_a_time_min@{top}": min(finite(vs_one), default=math.nan),
        f"run_many_vs_static_geomean@{top}": geomean(vs_static),
        f"run_many_vs_static_min@{top}": min(finite(vs_static), default=math.nan),
        f"run_many_vs_static_min_skipping@{top}": min(finite(ratio(f"run_many_vs_static@{top}", skipping)), default=math.nan),
        f"run_many_vs_eager_geomean@{top}": geomean(ratio(f"run_many_vs_eager@{top}")),
    }
    for other in ("one_at_a_time", "static"):
        paired = [None if f"run_many_vs_{other}@{top}" in r["throughput_details"].get("unstable_ratios", ())
                  else r["throughput_details"].get("paired_ratios", {}).get(f"run_many_vs_{other}@{top}") for r in ok]
        if all(p is not None for p in paired):
            values[f"paired_run_many_vs_{other}_geomean@{top}"] = geomean(paired)
    bounds = {
        f"run_many_vs_one_at_a_time_geomean@{top}": (1.6, f"DyCL+ORT run_many / DyCL+ORT one at a time at N={top}, geomean"),
        f"run_many_vs_static_min_skipping@{top}": (
            1.0, f"DyCL+ORT run_many / static batched ORT at N={top}, every network whose requests skip work (min; "
                 f"not {', '.join(SKIP_WORK_EXEMPT)})"),
    }
    targets = {}
    for key, (bound, text) in bounds.items():
        value = values[key]
        met = None if not math.isfinite(value) else value >= bound
        targets[key] = {"value": value, "target": f">= {bound}", "met": met, "what": text}
    return {"n": top, **values, "targets": targets}


# ------------------------------------------------------------------------------ markdown


def _ms(x: float) -> str:
    if not isinstance(x, (int, float)) or not math.isfinite(x):
        return "–"
    return f"{x:.1f}" if x >= 100 else f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def _x(x: float, digits: int = 2) -> str:
    return "–" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.{digits}f}×"


UNSTABLE_MARK = " ⚠"


def _iqr(record: dict, system: str) -> str:
    q1, q3 = _get(record, system, "time", "q1_ms"), _get(record, system, "time", "q3_ms")
    flag = UNSTABLE_MARK if system in record.get("unstable_systems", ()) else ""
    return "" if not math.isfinite(q1) else f" ({_ms(q1)}–{_ms(q3)}){flag}"


def _ratio(record: dict, key: str, digits: int = 2) -> str:
    flag = UNSTABLE_MARK if key in record.get("unstable_ratios", ()) else ""
    return _x(record["ratios"].get(key), digits) + flag


def _err(x) -> str:
    return "–" if not isinstance(x, (int, float)) or (isinstance(x, float) and math.isnan(x)) else ("inf" if math.isinf(x) else f"{x:.1e}")


def _per_call_gap(record: dict) -> float:
    """What DyCL+ORT costs over the oracle, spread over its sub-DNN calls (µs per call)."""
    calls = _get(record, "dycl-ort", "host", "subdnn_calls_per_inference")
    gap = _get(record, "dycl-ort", "time", "median_ms") - _get(record, "oracle-ort", "time", "median_ms")
    return gap * 1e3 / calls if calls and math.isfinite(calls) and calls > 0 else math.nan


def markdown(result: dict) -> str:
    records = [r for r in result["networks"]]
    m, cfg = result["machine"], result["config"]
    if cfg.get("throughput", {}).get("table") == "only":
        return "\n".join([
            f"Machine: {m['cpu']}, {m['cores']} cores; {cfg['threads']} threads everywhere; "
            f"torch {m['versions'].get('torch')}, onnxruntime {m['versions'].get('onnxruntime')}; {m['date_utc']}; "
            f"load average at start {cfg.get('load_average_start')}, at end {cfg.get('load_average_end')}.",
            *throughput_tables(records, result.get("summary", {})), *_failures(records)]) + "\n"
    lines = [
        f"Machine: {m['cpu']}, {m['cores']} cores; {cfg['threads']} threads everywhere, batch 1; "
        f"torch {m['versions'].get('torch')}, onnxruntime {m['versions'].get('onnxruntime')}, "
        f"apache-tvm {m['versions'].get('apache-tvm')}; {m['date_utc']}; load average at start {cfg.get('load_average_start')}; "
        f"ORT intra-op pools: {cfg.get('ort_thread_pool', 'session')}"
        f"{', spinning' if cfg.get('ort_intra_op_spinning') else ''}.",
        "Latency: median (IQR) over interleaved rounds of the mean per-inference time over the network's path inputs, ms. "
        f"⚠: an IQR wider than {UNSTABLE_IQR:g}× the median (the rounds did not measure one thing); the ratios of "
        "such a system are shown flagged and left out of every geomean.",
        "",
        "### Speed (ms per inference; speed-up over eager)",
        "",
        "| network | paths | eager | torch.compile (breaks) | DyCL+ORT | DyCL+TVM | oracle ORT | oracle ORT with its decisions "
        "| oracle TVM | ORT vs eager | ORT vs torch.compile | dynamism overhead ORT | of which past the decisions "
        "| dynamism overhead TVM |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        if "ratios" not in r:
            lines.append(f"| `{r['network']}` | failed: {r.get('error', '')[:120]} |")
            continue
        breaks = _get(r, "torch.compile", "info", "graph_breaks", default=None)
        lines.append(
            f"| `{r['network']}` | {r['path_inputs']} | {_ms(_get(r, 'eager', 'time', 'median_ms'))}{_iqr(r, 'eager')} "
            f"| {_ms(_get(r, 'torch.compile', 'time', 'median_ms'))}{'' if breaks is None else f' ({breaks})'}"
            f"{UNSTABLE_MARK if 'torch.compile' in r.get('unstable_systems', ()) else ''} "
            f"| {_ms(_get(r, 'dycl-ort', 'time', 'median_ms'))}{_iqr(r, 'dycl-ort')} "
            f"| {_ms(_get(r, 'dycl-tvm', 'time', 'median_ms'))} "
            f"| {_ms(_get(r, 'oracle-ort', 'time', 'median_ms'))}{_iqr(r, 'oracle-ort')} "
            f"| {_ms(_get(r, 'oracle-ort-decided', 'time', 'median_ms'))} "
            f"| {_ms(_get(r, 'oracle-tvm', 'time', 'median_ms'))} "
            f"| {_ratio(r, 'dycl-ort/speedup_vs_eager')} | {_ratio(r, 'dycl-ort/speedup_vs_torch_compile')} "
            f"| {_ratio(r, 'dynamism_overhead_ort', 3)} | {_ratio(r, 'overhead_past_decisions_ort', 3)} "
            f"| {_ratio(r, 'dynamism_overhead_tvm', 3)} |"
        )
    s = result["summary"]
    lines += [
        f"| **geomean** | | | {_x(s['torch_compile_geomean_speedup_vs_eager'])} vs eager | "
        f"{_x(s['targets']['dycl_ort_geomean_speedup_vs_eager']['value'])} vs eager | {_x(s['dycl_tvm_geomean_speedup_vs_eager'])} vs eager "
        f"| {_x(s['oracle_ort_geomean_speedup_vs_eager'])} vs eager | | | "
        f"{_x(s['targets']['dycl_ort_geomean_speedup_vs_eager']['value'])} | {_x(s['targets']['dycl_ort_geomean_speedup_vs_torch_compile']['value'])} "
        f"| {_x(s['targets']['dynamism_overhead_ort_geomean']['value'], 3)} | {_x(s['overhead_past_decisions_ort_geomean'], 3)} "
        f"| {_x(s['dynamism_overhead_tvm_geomean'], 3)} |",
        "",
        _company(records),
        "",
        "### Ablations (dycl-hoist-free, dycl-merge-calls, dycl-keep-branches) and host cost, DyCL+ORT",
        "",
        "| network | sub-DNNs with / w/o hoist-free | ms with / w/o hoist-free | hoist-free speed-up "
        "| sub-DNN calls per inference w/o / with merge-calls | ms with merge-calls | merge-calls speed-up "
        "| sub-DNN calls per inference pure split / kept branches | ms pure split | keep-branches speed-up "
        "| host µs per inference | host µs per call | (DyCL − oracle) µs per call |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    f1 = lambda x: "–" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.1f}"  # noqa: E731
    for r in records:
        if "ratios" not in r:
            continue
        lines.append(
            f"| `{r['network']}` | {_get(r, 'dycl-ort', 'cost', 'subdnn_count', default='–')} / "
            f"{_get(r, 'dycl-ort-nohoist', 'cost', 'subdnn_count', default='–')} "
            f"| {_ms(_get(r, 'dycl-ort', 'time', 'median_ms'))} / {_ms(_get(r, 'dycl-ort-nohoist', 'time', 'median_ms'))} "
            f"| {_x(r['ratios'].get('hoist_free_speedup'), 3)} "
            f"| {f1(_get(r, 'dycl-ort', 'host', 'subdnn_calls_per_inference'))} / "
            f"{f1(_get(r, 'dycl-ort-merge', 'host', 'subdnn_calls_per_inference'))} "
            f"| {_ms(_get(r, 'dycl-ort-merge', 'time', 'median_ms'))} "
            f"| {_x(r['ratios'].get('merge_calls_speedup'), 3)} "
            f"| {f1(_get(r, 'dycl-ort-split', 'host', 'subdnn_calls_per_inference'))} / "
            f"{f1(_get(r, 'dycl-ort', 'host', 'subdnn_calls_per_inference'))} "
            f"| {_ms(_get(r, 'dycl-ort-split', 'time', 'median_ms'))} "
            f"| {_x(r['ratios'].get('keep_branches_speedup'), 3)} "
            f"| {f1(_get(r, 'dycl-ort', 'host', 'host_us_per_inference'))} "
            f"| {f1(_get(r, 'dycl-ort', 'host', 'host_us_per_subdnn_call'))} "
            f"| {f1(_per_call_gap(r))} |"
        )
    lines += _tuned_table(records, s)
    lines += [
        "",
        "### Compile cost (seconds; cold compile cache) and artifact size",
        "",
        "| network | frontend | passes | backend ORT | total ORT | backend TVM | total TVM | sub-DNNs | artifact ORT MB | artifact TVM MB "
        "| torch.compile warm-up | oracle ORT (graphs) | oracle TVM |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    f1 = lambda x: "–" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.1f}"  # noqa: E731
    mb = lambda x: "–" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x / 1e6:.1f}"  # noqa: E731
    for r in records:
        if "ratios" not in r:
            continue
        lines.append(
            f"| `{r['network']}` | {f1(r.get('frontend_seconds', math.nan))} | {f1(_get(r, 'dycl-ort', 'cost', 'passes_seconds'))} "
            f"| {f1(_get(r, 'dycl-ort', 'cost', 'backend_seconds'))} | {f1(_get(r, 'dycl-ort', 'cost', 'total_seconds'))} "
            f"| {f1(_get(r, 'dycl-tvm', 'cost', 'backend_seconds'))} | {f1(_get(r, 'dycl-tvm', 'cost', 'total_seconds'))} "
            f"| {_get(r, 'dycl-ort', 'cost', 'subdnn_count', default='–')} "
            f"| {mb(_get(r, 'dycl-ort', 'cost', 'artifact_bytes'))} | {mb(_get(r, 'dycl-tvm', 'cost', 'artifact_bytes'))} "
            f"| {f1(_get(r, 'torch.compile', 'cost', 'total_seconds'))} "
            f"| {f1(_get(r, 'oracle-ort', 'cost', 'total_seconds'))} ({_get(r, 'oracle-ort', 'cost', 'graphs', default='–')}) "
            f"| {f1(_get(r, 'oracle-tvm', 'cost', 'total_seconds'))} |"
        )
    systems = [s for s in LABELS if any(s in r.get("systems", {}) for r in records)]
    lines += [
        "",
        "### Max abs error vs eager over all path inputs",
        "",
        "| network | " + " | ".join(LABELS[s] for s in systems) + " |",
        "|---|" + "---|" * len(systems),
    ]
    for r in records:
        lines.append(f"| `{r['network']}` | " + " | ".join(_err(_get(r, s, "errors", "max_abs_error")) for s in systems) + " |")
    lines += _failures(records)
    lines += ["", "### Targets", "", "| target | value | met |", "|---|---|---|"]
    for key, t in s["targets"].items():
        value = t["value"]
        shown = "–" if not math.isfinite(value) else (f"{value:.1f} s" if "seconds" in key else f"{value:.3f}")
        lines.append(f"| {t['what']} {t['target']} | {shown} | {'yes' if t['met'] else 'no' if t['met'] is False else '–'} |")
    lines += throughput_tables(records, s)
    return "\n".join(lines) + "\n"


def _company(records: Sequence[dict]) -> str:
    """What other processes ran while the network was timed (`Timing.foreign_cores`)."""
    parts = []
    for r in records:
        times = [v["time"] for v in r.get("systems", {}).values() if "foreign_cores_median" in v.get("time", {})]
        if times:
            median = statistics.median(t["foreign_cores_median"] for t in times)
            worst = max(t["foreign_cores_max"] for t in times)
            parts.append(f"`{r['network']}` {median:.2f} ({worst:.2f})")
    if not parts:
        return ""
    return ("Other processes' CPU while the systems were timed, cores (median over systems of their median turn; "
            "the busiest turn): " + ", ".join(parts) + ". Above about 0.1 the machine was not idle.")


def _failures(records: Sequence[dict]) -> list[str]:
    failures = [(r["network"], s, why) for r in records for s, why in r.get("failures", {}).items()]
    failures += [(r["network"], "(network)", r["error"]) for r in records if "error" in r]
    if not failures:
        return []
    return ["", "Systems that did not run:", "", *(f"- `{n}` {s}: {why}" for n, s, why in failures)]


# ------------------------------------------------------------------------ throughput


def _served(cost: dict | None) -> str:
    """The run-many form's cost: its sub-DNNs beside the one-request form's, and the seconds
    its compile took (the one-request form's sub-DNNs come from the compile cache)."""
    if not cost:
        return "–"
    if not cost["run_many_form"]:
        return "none (run_many runs the one-request form)"
    return f"{cost['run_many_subdnn_count']} beside {cost['subdnn_count']}, {cost['compile_seconds']:.1f} s"


def _rps(x) -> str:
    return "–" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def _paired(details: dict, key: str) -> str:
    """A ratio of medians, and the median of the same ratio within each round if there is one."""
    paired = details.get("paired_ratios", {}).get(key)
    flag = UNSTABLE_MARK if key in details.get("unstable_ratios", ()) else ""
    return _x(details["ratios"].get(key)) + ("" if paired is None else f" ({_x(paired)})") + flag


def throughput_tables(records: Sequence[dict], s: dict) -> list[str]:
    """Requests per second, latency, run_many's batches and the time breakdown at the
    largest N (see dycl.bench.throughput)."""
    from dycl.bench.throughput import BREAKDOWN_PARTS, LABELS as SYSTEM_LABELS, SYSTEMS

    ok = [r for r in records if "throughput" in r]
    if not ok:
        return []
    sizes = ok[0]["throughput_details"]["sizes"]
    top, per_n = max(sizes), "/".join(str(n) for n in sizes)
    details = [r["throughput_details"] for r in ok]
    lines = [
        "",
        f"### Throughput (requests per second at N = {per_n} requests at once)",
        "",
        f"{details[0]['requests']} requests per system and N, the network's path inputs cycled (each path input "
        "equally often), seeded order; medians over interleaved rounds. One-at-a-time systems do the same work "
        "at every N. Static batched ORT: the network without exits or skipping at batch N (`dycl.bench.static`). "
        "Ratios: of the medians (in parentheses: the median of the ratio within each round, where recorded). "
        f"⚠: requests/s whose IQR over rounds is wider than {UNSTABLE_IQR:g}× the median; ratios of such a row are "
        "left out of the geomeans. DyCL+ORT run_many runs the artifact dycl-serve loads (compiled with its run-many "
        "form, loaded back with `dycl.load`).",
        "",
        "| network | rounds | " + " | ".join(f"{SYSTEM_LABELS[x]} @{per_n}" for x in SYSTEMS)
        + f" | run_many / one at a time @{top} | run_many / static @{top} |",
        "|---|---|" + "---|" * (len(SYSTEMS) + 2),
    ]
    for r, d in zip(ok, details):
        t = r["throughput"]
        lines.append(
            f"| `{r['network']}` | {min(d['rounds'].values())}–{max(d['rounds'].values())} | "
            + " | ".join(" / ".join(_rps(t.get(f"{x}@{n}")) + (UNSTABLE_MARK if f"{x}@{n}" in d.get("unstable", ()) else "")
                                    for n in sizes) for x in SYSTEMS)
            + " | " + " | ".join(_paired(d, f"run_many_vs_{other}@{top}") for other in ("one_at_a_time", "static")) + " |"
        )
    summary = s.get("throughput") or throughput_summary(records)
    lines.append(
        "| **geomean** | | | | | | "
        + " | ".join(_x(summary.get(f"run_many_vs_{other}_geomean@{top}"))
                     + ("" if summary.get(f"paired_run_many_vs_{other}_geomean@{top}") is None
                        else f" ({_x(summary[f'paired_run_many_vs_{other}_geomean@{top}'])})")
                     for other in ("one_at_a_time", "static")) + " |"
    )
    lines += [
        "",
        f"Mean latency per request, ms, at N = {per_n} (a group's requests arrive together):",
        "",
        "| network | " + " | ".join(SYSTEM_LABELS[x] for x in SYSTEMS) + " |",
        "|---|" + "---|" * len(SYSTEMS),
    ]
    for r, d in zip(ok, details):
        lines.append(f"| `{r['network']}` | " + " | ".join(
            " / ".join(_ms(d["latency_ms"].get(f"{x}@{n}")) for n in sizes) for x in SYSTEMS) + " |")
    lines += [
        "",
        "run_many's batches (`compiled.batch_stats`): mean requests per backend call over all sub-DNN calls, "
        "and per sub-DNN at the largest N; max abs error of the answers (run_many against eager, static "
        "against the static network in eager):",
        "",
        "| network | " + " | ".join(f"mean batch @{n}" for n in sizes)
        + f" | sub-DNNs batching (mean batch > 1) @{top} | per sub-DNN @{top} | run-many form: sub-DNNs, compile s "
        "| error run_many | error static |",
        "|---|" + "---|" * (len(sizes) + 5),
    ]
    for r, d in zip(ok, details):
        batches = d["mean_batch"]
        per = batches.get(str(top), {}).get("per_subdnn", {})
        shown = ", ".join(f"{name} {b:.1f}" for name, b in list(per.items())[:8]) + (" …" if len(per) > 8 else "")
        err_many = max((v for k, v in d["max_abs_error"].items() if k.startswith("dycl-ort-run_many")), default=math.nan)
        err_static = max((v for k, v in d["max_abs_error"].items() if k.startswith("static-batched-ort")), default=math.nan)
        lines.append(
            f"| `{r['network']}` | " + " | ".join(f"{batches.get(str(n), {}).get('overall', math.nan):.2f}" for n in sizes)
            + f" | {sum(1 for b in per.values() if b > 1)} of {len(per)} | {shown} | {_served(d.get('served'))} "
            f"| {_err(err_many)} | {_err(err_static)} |"
        )
    broken = [(r, d["breakdown"]) for r, d in zip(ok, details) if "breakdown" in d]
    if broken:
        lines += [
            "",
            f"Where one `run_many` call's time goes at N = {top} (ms per call, median of "
            f"{next((b.get('repeat') for _, b in broken if 'repeat' in b), '–')} replays with timed wrappers; "
            "share of the instrumented total):",
            "",
            "| network | run_many | instrumented | backend calls | " + " | ".join(p.replace("_", " ") for p in BREAKDOWN_PARTS) + " |",
            "|---|---|---|---|" + "---|" * len(BREAKDOWN_PARTS),
        ]
        for r, b in broken:
            if "error" in b or "skipped" in b:
                lines.append(f"| `{r['network']}` | {b.get('error') or b.get('skipped')} |")
                continue
            total = b["instrumented_ms"]
            lines.append(
                f"| `{r['network']}` | {_ms(b['run_many_ms'])} | {_ms(total)} | {b['backend_calls']} | "
                + " | ".join(f"{_ms(b[f'{p}_ms'])} ({100 * b[f'{p}_ms'] / total:.0f}%)" for p in BREAKDOWN_PARTS) + " |"
            )
    lines += ["", "| target | value | met |", "|---|---|---|"]
    for t in summary["targets"].values():
        value = t["value"]
        lines.append(f"| {t['what']} {t['target']} | {'–' if not math.isfinite(value) else f'{value:.3f}'} "
                     f"| {'yes' if t['met'] else 'no' if t['met'] is False else '–'} |")
    return lines


def _tuned_table(records: Sequence[dict], s: dict) -> list[str]:
    """DyCL+TVM tuned beside untuned, ORT and eager, with the tuning minutes behind it."""
    tuned = [r for r in records if "ratios" in r and "time" in r["systems"].get("dycl-tvm-tuned", {})]
    if not tuned:
        return []
    f1 = lambda x: "–" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.1f}"  # noqa: E731
    lines = [
        "",
        "### DyCL+TVM tuned (shared MetaSchedule database; ms per inference)",
        "",
        "| network | eager | DyCL+ORT | DyCL+TVM untuned | DyCL+TVM tuned | tuning minutes (all runs / this run) "
        "| tasks | tuned vs eager | tuned / ORT |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in tuned:
        lines.append(
            f"| `{r['network']}` | {_ms(_get(r, 'eager', 'time', 'median_ms'))} | {_ms(_get(r, 'dycl-ort', 'time', 'median_ms'))} "
            f"| {_ms(_get(r, 'dycl-tvm', 'time', 'median_ms'))} | {_ms(_get(r, 'dycl-tvm-tuned', 'time', 'median_ms'))} "
            f"| {f1(_get(r, 'dycl-tvm-tuned', 'cost', 'tuning_minutes'))} / "
            f"{f1(_get(r, 'dycl-tvm-tuned', 'cost', 'tuning_seconds') / 60)} "
            f"| {_get(r, 'dycl-tvm-tuned', 'cost', 'tuning_tasks', default='–')} "
            f"| {_x(r['ratios'].get('dycl-tvm-tuned/speedup_vs_eager'))} | {_x(r['ratios'].get('tvm_tuned_vs_ort'))} |"
        )
    lines.append(
        f"| **geomean** | | | | | | | {_x(s['dycl_tvm_tuned_geomean_speedup_vs_eager'])} | {_x(s['dycl_tvm_tuned_geomean_vs_ort'])} |"
    )
    return lines


# --------------------------------------------------------------------------------- chart

CHART_SYSTEMS = ("torch.compile", "dycl-ort", "dycl-ort-nohoist", "dycl-ort-merge", "dycl-ort-split", "oracle-ort",
                 "oracle-ort-decided", "dycl-tvm", "dycl-tvm-tuned", "oracle-tvm")


def chart(result: dict, path: str | os.PathLike) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = [r for r in result["networks"] if "ratios" in r]
    if not records and any("throughput" in r for r in result["networks"]):
        return throughput_chart(result, path)
    systems = [s for s in CHART_SYSTEMS if any(s in r["systems"] for r in records)]
    names = [r["network"] for r in records] + ["geomean"]
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(names)), 4.8))
    width = 0.8 / max(len(systems), 1)
    for k, system in enumerate(systems):
        values = [r["ratios"].get(f"{system}/speedup_vs_eager", math.nan) for r in records]
        values.append(geomean(values))
        xs = [i + (k - (len(systems) - 1) / 2) * width for i in range(len(names))]
        bars = ax.bar(xs, [v if math.isfinite(v) else 0 for v in values], width, label=LABELS[system])
        if system == "dycl-ort":
            for bar, v in zip(bars, values):
                if math.isfinite(v):
                    ax.annotate(f"{v:.1f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                                ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("speed-up over PyTorch eager (log)")
    cfg = result["config"]
    ax.set_title(f"dycl-bench: batch 1, {cfg['threads']} threads, {result['machine']['cpu']}", fontsize=9)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def throughput_chart(result: dict, path: str | os.PathLike) -> None:
    """Requests per second at the largest N per network and system, over eager's (log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dycl.bench.throughput import LABELS as SYSTEM_LABELS, SYSTEMS

    records = [r for r in result["networks"] if "throughput" in r]
    top = max(max(r["throughput_details"]["sizes"]) for r in records)
    names = [r["network"] for r in records] + ["geomean"]
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(names)), 4.8))
    shown = SYSTEMS[1:]
    width = 0.8 / len(shown)
    for k, system in enumerate(shown):
        values = [r["throughput"].get(f"{system}@{top}", math.nan) / r["throughput"].get(f"eager@{top}", math.nan)
                  for r in records]
        values.append(geomean(values))
        xs = [i + (k - (len(shown) - 1) / 2) * width for i in range(len(names))]
        ax.bar(xs, [v if math.isfinite(v) else 0 for v in values], width, label=SYSTEM_LABELS[system])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel(f"requests/s over eager's, N = {top} (log)")
    ax.set_title(f"dycl-bench throughput: {top} requests at once, {result['config']['threads']} threads, "
                 f"{result['machine']['cpu']}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(result: dict, directory: str | os.PathLike, stem: str) -> dict[str, Path]:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"json": directory / f"{stem}.json", "md": directory / f"{stem}.md", "png": directory / f"{stem}.png"}
    paths["json"].write_text(json.dumps(strict_json(result), indent=1, default=_json_default, allow_nan=False) + "\n")
    paths["md"].write_text(markdown(result))
    chart(result, paths["png"])
    return paths


def strict_json(value):
    """NaN -> null, ±inf -> "inf"/"-inf" (standard JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


def _json_default(value):
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)
