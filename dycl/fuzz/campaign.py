"""Running many programs in worker processes, each bounded in time.

A worker checks a chunk of seeds (a fresh process per chunk: the exporter's global state
and memory do not pile up). A program that takes longer than `timeout` seconds is recorded
as "timeout", its worker is killed, and a new worker takes the remaining seeds.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from dycl.fuzz.oracle import PASSED


def _worker(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "dycl.fuzz.worker", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # so that we can end it with its children
    )


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def _lines(process: subprocess.Popen, deadline: Callable[[], float]) -> Iterator[dict | None]:
    """JSON records from the worker; None when the deadline passes first."""
    buffer = ""
    while True:
        left = deadline() - time.monotonic()
        if left <= 0:
            yield None
            return
        ready, _, _ = select.select([process.stdout], [], [], min(left, 5.0))
        if not ready:
            continue
        chunk = os.read(process.stdout.fileno(), 65536).decode()
        if not chunk:
            return
        buffer += chunk
        while "\n" in buffer:
            line, buffer = buffer.split("\n", 1)
            if line.startswith("{"):
                yield json.loads(line)


def check_seeds(
    seeds: list[int],
    backend: str,
    tvm_every: int = 0,
    chunk: int = 10,
    timeout: float = 300.0,
    report: Callable[[dict], None] = lambda outcome: None,
    mutation: bool = True,
    research: bool = True,
) -> list[dict]:
    """Outcomes (as dicts) for every seed, in order of completion."""
    outcomes: list[dict] = []
    pending = list(seeds)
    while pending:
        batch, pending = pending[:chunk], pending[chunk:]
        while batch:
            flags = ([] if mutation else ["--no-mutation"]) + ([] if research else ["--no-research"])
            process = _worker(["check", *map(str, batch), "--backend", backend, "--tvm-every", str(tvm_every), *flags])
            started = {"seed": None, "at": time.monotonic()}
            done = set()
            for record in _lines(process, lambda: started["at"] + timeout):
                if record is None:
                    break
                if "start" in record:
                    started.update(seed=record["start"], at=time.monotonic())
                else:
                    done.add(record["seed"])
                    outcomes.append(record)
                    report(record)
            _stop(process)
            rest = [s for s in batch if s not in done]
            if rest:  # a hang or a crash of the worker: blame the program it was on
                culprit = started["seed"] if started["seed"] in rest else rest[0]
                status = "timeout" if time.monotonic() - started["at"] >= timeout else "worker-crash"
                record = {"seed": culprit, "status": status, "detail": f"after {time.monotonic() - started['at']:.0f} s", "backend": backend}
                outcomes.append(record)
                report(record)
                rest.remove(culprit)
            batch = rest
    return outcomes


def shrink_seed(seed: int, backend: str, tvm_every: int, out: Path, timeout: float = 3600.0,
                mutation: bool = True, research: bool = True) -> dict | None:
    flags = ([] if mutation else ["--no-mutation"]) + ([] if research else ["--no-research"])
    process = _worker(["shrink", str(seed), "--backend", backend, "--tvm-every", str(tvm_every), "--out", str(out), *flags])
    start = time.monotonic()
    result = None
    for record in _lines(process, lambda: start + timeout):
        if record is not None and "shrunk" in record:
            result = record
    _stop(process)
    return result


def failed(outcome: dict) -> bool:
    """Not ok (or untestable: `oracle.PASSED`), and not a refusal the program asks for
    (`Outcome.by_design`)."""
    return outcome["status"] not in PASSED and not outcome.get("by_design")


def refusal_message(detail: str) -> str:
    """A refusal's message without the file, line and run-specific names and numbers."""
    message = re.sub(r"^\w+: ", "", detail)
    message = re.sub(r"\S+\.py:\d+: ", "", message)
    message = re.sub(r" \[[^]]*\]$", "", message)
    message = re.sub(r"`[^`]*`", "`...`", message)
    message = re.sub(r"\[[\d, ]+\]", "[...]", message)
    parts = message.split(": ")
    if parts[0].endswith("failed") and len(parts) > 1:  # "running lines [...] on example values failed: NameError"
        return f"{parts[0]}: {parts[1]}"[:120]
    return parts[0][:120]


def summarize(outcomes: list[dict]) -> dict:
    statuses = Counter(o["status"] for o in outcomes)
    covered = sum(o.get("arms_covered", 0) for o in outcomes)
    total = sum(o.get("arms_total", 0) for o in outcomes)
    return {
        "programs": len(outcomes),
        "statuses": dict(statuses),
        "backends": dict(Counter(o.get("backend") for o in outcomes)),
        "arms_covered": covered,
        "arms_total": total,
        "fully_covered_programs": sum(1 for o in outcomes if o.get("arms_total") and o.get("arms_covered") == o.get("arms_total")),
        "inputs": sum(o.get("inputs", 0) for o in outcomes),
        "subdnns": sum(o.get("subdnns", 0) for o in outcomes),
        "failures": sum(1 for o in outcomes if failed(o)),
        "refused_by_design": sum(1 for o in outcomes if o.get("by_design")),
        "forms": _per_form(outcomes),
        "refusals": dict(Counter(refusal_message(o.get("detail", "")) for o in outcomes
                                 if o["status"] == "frontend-error" and not o.get("by_design")).most_common()),
    }


def _per_form(outcomes: list[dict]) -> dict[str, dict[str, int]]:
    """Form -> status (with "by design" marked) -> programs that have the form."""
    table: dict[str, Counter] = {}
    for o in outcomes:
        status = o["status"] + (" (by design)" if o.get("by_design") else "")
        for form in o.get("forms", ()):
            table.setdefault(form, Counter())[status] += 1
    return {form: dict(table[form]) for form in sorted(table)}
