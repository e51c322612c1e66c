"""A random dynamic program as data, and its rendering to Python source.

A `Program` is an `nn.Module` class described by its submodules (name -> constructor
source), helper methods and a forward body. Statements are small dataclasses so that the
shrinker can delete and unwrap them; `render` turns a program into the source of a real
module file (the frontend reads forward's source through `inspect`, so the class must live
in a file) and records the line of every branch arm, for coverage.

Conditions compare a statistic of `x` with threshold slot `k` (`Cond.index`). Thresholds
are placed after generation by `dycl.fuzz.oracle.calibrate`; in *probe* mode a statistic is
rendered as `self._probe(k, <stat>)` so that calibration can see the values it takes. A
comparison may sit inside a larger expression (`Cond.wrap`: `any(@ for c in scores)`, where
`@` is the comparison and the statistic is the comprehension variable: every value it takes
is probed), conditions may be joined with `and`/`or` (`BoolOp`) and used in a conditional
expression (`CondLine`: `m = 1 if @ else 0`).

Research-code constructs (`dycl.fuzz.research`) add `with torch.no_grad():` blocks (`With`),
imports (`Program.imports`: numpy, `Variable`), module classes (`Program.classes`: SDN's
block with its forward replaced on the instance), a second forward argument (`Program.lengths`:
a list or tuple of Python ints) and state kept across calls (`self.saved = []`, `self.steps = 0`,
`self.mem = None`, in `Program.modules`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Union

HEADER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

"""


@dataclass
class Cond:
    stat: str  # a statistic of the current tensor, e.g. "x.mean()"
    index: int  # threshold slot
    op: str = ">"  # ">" | "<"
    form: str = "tensor"  # "tensor" (0-d tensor compare) | "item" (.item()) | "bool" (bool(...))
    via_attr: bool = False  # threshold read from `self.t<k>` instead of a literal
    wrap: str = ""  # an expression around the comparison, written `@` (e.g. "any(@ for c in cs)")


@dataclass
class BoolOp:
    """`a and b` / `a or b` over conditions (Python evaluates the right one only when needed)."""

    op: str  # "and" | "or"
    parts: list["Cond | BoolOp"]


@dataclass
class Line:
    """One or more plain source lines (layer applications, counters, appends, returns)."""

    text: str


@dataclass
class Mutation(Line):
    """Line(s) that change a tensor in place; `form` is one of `dycl.fuzz.mutation.FORMS`."""

    form: str = ""


@dataclass
class Research(Line):
    """Line(s) of a research-code construct; `form` is one of `dycl.fuzz.research.FORMS`."""

    form: str = ""


@dataclass
class CondLine:
    """A line holding a condition outside `if`: `text` with `@` for the condition
    (`m1 = 1 if @ else 0`)."""

    text: str
    cond: "Cond | BoolOp"
    form: str = "cond_expr"


@dataclass
class If:
    branches: list[tuple["Cond | BoolOp", list["Stmt"]]]  # if / elif ...
    orelse: list["Stmt"] | None = None


@dataclass
class Break:
    cond: "Cond | BoolOp"


@dataclass
class For:
    trips: int
    body: list["Stmt"]
    var: str = "_"  # the loop index (a name when the body indexes with it)
    header: str = ""  # the whole `for ...:` line instead (a trip count known only at run time)


@dataclass
class While:
    """`while steps<k> < trips and <cond>: body; steps<k> += 1` (bounded by a counter)."""

    trips: int
    cond: "Cond | BoolOp"
    body: list["Stmt"]
    counter: str


@dataclass
class With:
    """`with torch.no_grad(): body` (an inference no-op: programs run under no_grad)."""

    body: list["Stmt"]
    context: str = "torch.no_grad()"


Stmt = Union[Line, Mutation, Research, CondLine, If, Break, For, While, With]


@dataclass
class Program:
    seed: int
    input_shape: tuple[int, ...]
    modules: dict[str, str]  # attribute name -> constructor source
    helpers: dict[str, list[Stmt]]  # method name -> body (takes and returns x)
    prologue: list[str]  # forward's first lines (counter / list initialisation)
    body: list[Stmt]
    epilogue: list[str]  # the final return (and what it needs)
    thresholds: list[float] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)  # lines after HEADER's imports
    lengths: int = 0  # > 0: forward(self, x, lengths) with that many Python ints
    lengths_type: str = "list"  # "list" | "tuple": the container `lengths` is passed in
    classes: list[str] = field(default_factory=list)  # module classes' sources, before the program's
    # issue 34's forms (`dycl.fuzz.forms`): forward's decorators, extra forward parameters as
    # (source, kind: "optional_int" | "dynamic_rows"; `oracle.candidate_inputs` draws their
    # values), methods of the class (sources), extra `__init__` lines, and the registered
    # buffers forward changes (the oracle compares them after every call)
    forward_decorators: list[str] = field(default_factory=list)
    arguments: list[tuple[str, str]] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    init: list[str] = field(default_factory=list)
    buffers: list[str] = field(default_factory=list)

    @property
    def class_name(self) -> str:
        return f"Fuzz{self.seed}"

    def copy(self) -> "Program":
        return copy.deepcopy(self)


@dataclass
class Rendered:
    source: str
    arms: list[int]  # 1-based line of the first statement of every branch arm / break / loop body
    refusals: list[int] = field(default_factory=list)  # lines DyCL must refuse (module state)


def leaves(cond):
    """The Conds of a condition (a Cond, or a BoolOp of them)."""
    if isinstance(cond, BoolOp):
        for part in cond.parts:
            yield from leaves(part)
    else:
        yield cond


def conditions(stmts: list[Stmt]):
    """Every Cond in a statement list (depth first)."""
    for stmt in stmts:
        if isinstance(stmt, If):
            for cond, body in stmt.branches:
                yield from leaves(cond)
                yield from conditions(body)
            if stmt.orelse:
                yield from conditions(stmt.orelse)
        elif isinstance(stmt, (Break, CondLine)):
            yield from leaves(stmt.cond)
        elif isinstance(stmt, (For, With)):
            yield from conditions(stmt.body)
        elif isinstance(stmt, While):
            yield from leaves(stmt.cond)
            yield from conditions(stmt.body)


def forms(program: Program) -> list[str]:
    """The research forms a program has (`Research.form`, `CondLine.form`, "no_grad"), sorted."""
    found: set[str] = set()

    def visit(stmts):
        for stmt in stmts:
            if isinstance(stmt, (Research, CondLine)):
                found.add(stmt.form)
            elif isinstance(stmt, With):
                found.add("no_grad")
                visit(stmt.body)
            elif isinstance(stmt, If):
                for _, body in stmt.branches:
                    visit(body)
                visit(stmt.orelse or [])
            elif isinstance(stmt, (For, While)):
                visit(stmt.body)

    visit(program.body)
    for body in program.helpers.values():
        visit(body)
    return sorted(found)


def all_conditions(program: Program):
    for body in program.helpers.values():
        yield from conditions(body)
    yield from conditions(program.body)


class _Writer:
    def __init__(self, program: Program, probe: bool):
        self.program, self.probe = program, probe
        self.lines: list[str] = []
        self.arms: list[int] = []
        self.refusals: list[int] = []

    def emit(self, indent: int, text: str) -> None:
        for line in text.split("\n"):
            self.lines.append("    " * indent + line)

    def arm(self) -> None:
        self.arms.append(len(self.lines) + 1)  # the next line written

    def cond(self, cond: Cond | BoolOp) -> str:
        if isinstance(cond, BoolOp):
            return f" {cond.op} ".join(self.cond(part) for part in cond.parts)
        stat = f"self._probe({cond.index}, {cond.stat})" if self.probe else cond.stat
        if self.probe:  # calibration changes thresholds without re-rendering
            threshold = f"self._t[{cond.index}]"
        elif cond.via_attr:
            threshold = f"self.t{cond.index}"
        else:
            threshold = repr(self.program.thresholds[cond.index]) if self.program.thresholds else "0.0"
        if cond.form == "item":
            text = f"{stat}.item() {cond.op} {threshold}"
        elif cond.form == "bool":
            text = f"bool({stat} {cond.op} {threshold})"
        else:
            text = f"{stat} {cond.op} {threshold}"
        return cond.wrap.replace("@", text) if cond.wrap else text

    def body(self, indent: int, stmts: list[Stmt]) -> None:
        if not stmts:  # (the frontend rejects `pass`: tests/fuzz/regressions)
            self.emit(indent, "x = x")
        for stmt in stmts:
            self.stmt(indent, stmt)

    def stmt(self, indent: int, stmt: Stmt) -> None:
        if isinstance(stmt, Line):
            self.emit(indent, stmt.text)
        elif isinstance(stmt, CondLine):
            self.emit(indent, stmt.text.replace("@", self.cond(stmt.cond)))
        elif isinstance(stmt, With):
            self.emit(indent, f"with {stmt.context}:")
            self.body(indent + 1, stmt.body)
        elif isinstance(stmt, If):
            for k, (cond, body) in enumerate(stmt.branches):
                self.emit(indent, f"{'if' if k == 0 else 'elif'} {self.cond(cond)}:")
                self.arm()
                self.body(indent + 1, body)
            if stmt.orelse is not None:
                self.emit(indent, "else:")
                self.arm()
                self.body(indent + 1, stmt.orelse)
        elif isinstance(stmt, Break):
            self.emit(indent, f"if {self.cond(stmt.cond)}:")
            self.arm()
            self.emit(indent + 1, "break")
        elif isinstance(stmt, For):
            self.emit(indent, stmt.header or f"for {stmt.var} in range({stmt.trips}):")
            self.body(indent + 1, stmt.body)
        elif isinstance(stmt, While):
            self.emit(indent, f"{stmt.counter} = 0")
            self.emit(indent, f"while {stmt.counter} < {stmt.trips} and {self.cond(stmt.cond)}:")
            self.arm()
            self.body(indent + 1, stmt.body)
            self.emit(indent + 1, f"{stmt.counter} += 1")
        else:
            raise TypeError(f"not a statement: {stmt!r}")


def render(program: Program, probe: bool = False) -> Rendered:
    w = _Writer(program, probe)
    w.emit(0, HEADER.rstrip("\n"))
    for line in program.imports:
        w.emit(0, line)
    for source in program.classes:
        w.emit(0, "")
        w.emit(0, source.rstrip("\n"))
        w.emit(0, "")
    w.emit(0, "")
    w.emit(0, f"class {program.class_name}(nn.Module):")
    w.emit(1, "def __init__(self):")
    w.emit(2, "super().__init__()")
    for name, ctor in program.modules.items():
        w.emit(2, f"self.{name} = {ctor}")
    slots = sorted({c.index for c in all_conditions(program) if c.via_attr})
    for k in slots:
        value = program.thresholds[k] if program.thresholds else 0.0
        w.emit(2, f"self.t{k} = {value!r}")
    for line in program.init:
        w.emit(2, line)
    for name, body in program.helpers.items():
        w.emit(0, "")
        w.emit(1, f"def {name}(self, x):")
        w.body(2, body)
        w.emit(2, "return x")
    for source in program.methods:
        w.emit(0, "")
        w.emit(1, source.rstrip("\n"))
    w.emit(0, "")
    for decorator in program.forward_decorators:
        w.emit(1, decorator)
    parameters = ["self", "x"] + (["lengths"] if program.lengths else []) + [source for source, _ in program.arguments]
    w.emit(1, f"def forward({', '.join(parameters)}):")
    for line in program.prologue:
        w.emit(2, line)
    w.body(2, program.body)
    for line in program.epilogue:
        w.emit(2, line)
    return Rendered("\n".join(w.lines) + "\n", w.arms, w.refusals)
