"""Many IR mutations through dycl-opt; every case is reproducible from (seed, index)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dycl.fuzz.ir_mutate import PIPELINES, mutate, mutate_pipeline, run_case, seed_files

FAILING = ("internal", "traceback", "hang", "bad-exit")


@dataclass
class MutationCase:
    seed: int
    index: int
    source: str  # the seed file
    mutation: str
    pipeline: str
    text: str

    @staticmethod
    def make(seed: int, index: int, seeds: list[tuple[str, str]]) -> "MutationCase":
        rng = random.Random(f"{seed}:{index}")
        name, text = rng.choice(seeds)
        mutant, what = text, "none"
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            mutant, step = mutate(mutant, rng)
            what = step if what == "none" else f"{what}; {step}"
        pipeline = rng.choice(PIPELINES) if rng.random() < 0.85 else mutate_pipeline(rng)
        return MutationCase(seed, index, name, what, pipeline, mutant)


def load_seeds(paths: list[Path]) -> list[tuple[str, str]]:
    files: list[Path] = []
    for path in paths:
        files += seed_files(path) if path.is_dir() else [path]
    return [(str(f), f.read_text()) for f in files]


def run_mutations(
    count: int,
    seed: int,
    seeds: list[tuple[str, str]],
    timeout: float = 10.0,
    report: Callable[[MutationCase, object], None] = lambda case, result: None,
    start: int = 0,
) -> tuple[Counter, list[tuple[MutationCase, object]]]:
    """Counts per status, and the failing cases. A "hang" is retried once with 4x the time
    (the machine may just be busy); it stays a hang only if it times out again."""
    statuses: Counter = Counter()
    failures = []
    for index in range(start, start + count):
        case = MutationCase.make(seed, index, seeds)
        result = run_case(case.text, case.pipeline, timeout)
        if result.status == "hang":
            result = run_case(case.text, case.pipeline, 4 * timeout)
            if result.status != "hang":
                statuses["slow"] += 1
        statuses[result.status] += 1
        if result.status in FAILING:
            failures.append((case, result))
        report(case, result)
    return statuses, failures
