"""Delta debugging over a program's statements: the smallest program that still fails the
same way (`Outcome.signature`).

Edits, tried greedily until none applies: delete a statement; replace an `if` by one of its
arms, a loop or a `with` block by its body; drop an `elif` or an `else`; cut a loop to one
trip; drop a helper call. Thresholds are re-calibrated for every candidate (the oracle does it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from dycl.fuzz.program import Break, For, If, Line, Program, Stmt, While, With

Path = tuple  # ("body",) | ("helper", name), then (index, field[, branch]) steps


def _lists(stmts: list[Stmt], path: Path) -> Iterator[Path]:
    yield path
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, If):
            for j, (_, body) in enumerate(stmt.branches):
                yield from _lists(body, path + ((i, "branch", j),))
            if stmt.orelse is not None:
                yield from _lists(stmt.orelse, path + ((i, "orelse"),))
        elif isinstance(stmt, (For, While, With)):
            yield from _lists(stmt.body, path + ((i, "body"),))


def _resolve(program: Program, path: Path) -> list[Stmt]:
    stmts = program.body if path[0] == "body" else program.helpers[path[1]]
    for step in path[1 if path[0] == "body" else 2 :]:
        stmt = stmts[step[0]]
        if step[1] == "branch":
            stmts = stmt.branches[step[2]][1]
        elif step[1] == "orelse":
            stmts = stmt.orelse
        else:
            stmts = stmt.body
    return stmts


def _replacements(stmt: Stmt) -> Iterator[list[Stmt]]:
    """What one statement may become, smallest first."""
    yield []
    if isinstance(stmt, If):
        for _, body in stmt.branches:
            yield list(body)
        if stmt.orelse is not None:
            yield list(stmt.orelse)
            yield [If(stmt.branches, None)]
        for j in range(1, len(stmt.branches)):
            yield [If(stmt.branches[:j] + stmt.branches[j + 1 :], stmt.orelse)]
    elif isinstance(stmt, With):
        yield list(stmt.body)
    elif isinstance(stmt, (For, While)):
        yield [s for s in stmt.body if not isinstance(s, Break)]
        if stmt.trips > 1:
            changed = type(stmt)(**{**stmt.__dict__, "trips": 1})
            yield [changed]


def candidates(program: Program) -> Iterator[Program]:
    roots = [("body",)] + [("helper", name) for name in program.helpers]
    for root in roots:
        for path in list(_lists(_resolve(program, root), root)):
            for i, stmt in enumerate(_resolve(program, path)):
                for replacement in _replacements(stmt):
                    smaller = program.copy()
                    target = _resolve(smaller, path)
                    target[i : i + 1] = [s for s in replacement]
                    _drop_unused_helpers(smaller)
                    yield smaller


def _drop_unused_helpers(program: Program) -> None:
    text = repr(program.body) + repr(program.helpers)
    for name in list(program.helpers):
        if f"self.{name}(" not in text:
            del program.helpers[name]


def size(program: Program) -> int:
    def count(stmts):
        total = 0
        for stmt in stmts:
            total += 1
            if isinstance(stmt, If):
                total += sum(count(b) for _, b in stmt.branches) + count(stmt.orelse or [])
            elif isinstance(stmt, With):
                total += count(stmt.body)
            elif isinstance(stmt, (For, While)):
                total += count(stmt.body) + stmt.trips
        return total

    return count(program.body) + sum(count(b) + 1 for b in program.helpers.values())


def shrink(program: Program, still_fails: Callable[[Program], bool], max_checks: int = 200) -> Program:
    """Greedy delta debugging; `still_fails(p)` reruns the oracle on a candidate."""
    checks = 0
    improved = True
    while improved and checks < max_checks:
        improved = False
        for candidate in candidates(program):
            if size(candidate) >= size(program):
                continue
            checks += 1
            if still_fails(candidate):
                program, improved = candidate, True
                break
            if checks >= max_checks:
                break
    _drop_unused_modules(program)
    return program


def _drop_unused_modules(program: Program) -> None:
    text = repr(program.body) + repr(program.helpers) + repr(program.epilogue)
    program.modules = {n: c for n, c in program.modules.items() if re.search(rf"self\.{n}\b", text)}


__all__ = ["shrink", "candidates", "size", "Line"]
