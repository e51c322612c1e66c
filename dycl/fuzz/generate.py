"""Random dynamic programs: stacks of conv/linear/activation/norm layers under random
control flow (early exits, if/elif/else gates on statistics, bounded loops with break,
counters, appended outputs, nested conditions, helper methods), and in half of the
programs tensor mutation in place (`dycl.fuzz.mutation`: subscript and augmented stores,
in-place methods, `out=`, inplace modules, views and aliases, one-arm and per-step writes).

`generate(seed)` is deterministic in the seed. Only constructs the frontend documents are
used (README.md, "What the frontend accepts"); every layer keeps the shape of `x` within a
stage, so any statement may follow any other. Mutation draws from a second random stream:
`generate(seed, mutation=False)` is the program the generator wrote before mutation existed,
and a mutating program is that program with mutation statements added (and, mostly,
`outs.append(x.clone())` for `outs.append(x)`). Research-code constructs
(`dycl.fuzz.research`: inference no-ops, numpy, list surgery, None-started variables,
LSTMCell/GRUCell states, comprehensions, conditional expressions, `and`/`or`, a `lengths`
list argument, state kept across calls) draw from a third stream:
`generate(seed, research=False)` is the program of the same seed before they existed (and
`generate(seed, mutation=False, research=False)` the one before mutation); a research program
is that program with research statements added (and statements wrapped in
`with torch.no_grad():`, and some tensor conditions drawn as a halting draw of probability 0
or 1, `torch.bernoulli((x.mean() > t).float()).bool()`, from a fourth stream), its modules
keeping their names. Issue 34's forms (`dycl.fuzz.forms`: keyword calls and decorators,
optional arguments, starred unpacking, complex rotary embeddings, `mark_dynamic` runtime
dims, registered buffers changed in place) are added to research programs last, each from a
stream of its own: `generate(seed, issue34=False)` is the program of before.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from dycl.fuzz import forms as F
from dycl.fuzz import mutation as M
from dycl.fuzz import research as R
from dycl.fuzz.program import Break, Cond, CondLine, For, If, Line, Mutation, Program, Research, Stmt, While, With

VECTOR_ACTIVATIONS = [
    "torch.relu({x})", "torch.tanh({x})", "torch.sigmoid({x})", "F.gelu({x})", "F.silu({x})",
    "F.leaky_relu({x}, 0.1)", "F.elu({x})", "torch.clamp({x}, -2.0, 2.0)", "F.hardtanh({x})",
]
VECTOR_STATISTICS = [
    "x.mean()", "x.sum()", "x.max()", "x.min()", "x.abs().mean()", "x.norm()", "x[0, {k}]",
    "F.softmax(x, -1).max()", "(x > 0).float().mean()", "x.std()",
]
IMAGE_STATISTICS = [
    "x.mean()", "x.amax()", "x[0, {k}].mean()", "x.abs().mean()", "x.norm()",
    "(x > 0).float().mean()", "x.mean((2, 3))[0, {k}]",
]
SUMMARY = {"image": "x.mean((2, 3))", "vector": "x"}
# Sizes that change in a runtime loop, tested each iteration (research programs only; x is a
# vector (1, W), the loop runs 0..3 times, so the tests' bounds are crossed on some inputs):
# a context cropped to a window, a queue that drops its oldest entry, the parity of a growing
# length, a `while` on the length and a test of the final one. {B} is W + 1.
SIZE_WINDOW_PROBABILITY = 0.25
SIZE_WINDOW_STEPS = "int(F.softmax(x, -1)[0, :4].argmax())"
SIZE_WINDOWS = [
    "window_seq = x\nfor _ in range({n}):\n"
    "    window = window_seq if window_seq.size(1) <= {B} else window_seq[:, -{B}:]\n"
    "    window_seq = torch.cat((window_seq, torch.tanh(window.mean(1, keepdim=True))), 1)",
    "window_seq = x\nfor _ in range({n}):\n"
    "    window_seq = torch.cat((window_seq, torch.tanh(window_seq[:, -1:] + 0.5)), 1)\n"
    "    if window_seq.shape[1] > {B}:\n        window_seq = window_seq[:, 1:]",
    "window_seq = x\nfor _ in range({n}):\n"
    "    if window_seq.shape[1] % 2 == 0:\n        window_seq = torch.cat((window_seq, window_seq[:, :1] * 0.5), 1)\n"
    "    else:\n        window_seq = torch.cat((window_seq, -window_seq[:, -1:]), 1)",
    "window_seq = x\nwhile window_seq.size(1) < {W} + {n}:\n"
    "    window_seq = torch.cat((window_seq, torch.sigmoid(window_seq[:, -1:])), 1)\n"
    "if window_seq.size(1) > {B}:\n    window_seq = window_seq[:, 1:] * 0.5",
]
# Asserts that hold on every input, where x is a vector (1, W) (research programs only):
# proven when imported, or a check of a runtime value (a tensor's, the counter's)
ASSERT_PROBABILITY = 0.3
ASSERTS = [
    'assert x.size(0) == 1, f"batch of {x.size(0)}"',
    "assert x.dim() == 2 and x.shape[-1] == {W}",
    'assert not torch.isnan(x).any(), "NaN in x"',
]

# Exceptions (research programs only): a `raise` of the program's own class in a constant
# loop (in forward, or in a nested function it calls), caught around the loop; which step
# raises is a runtime int of the data (as SIZE_WINDOW_STEPS); `else:`/`finally:`; a lambda
# bound to a name; a `raise ValueError` on a configuration path and on a runtime path that
# no input takes.
EXCEPTION_PROBABILITY = 0.2
EXCEPTION_CLASS = """\
class FuzzStop(Exception):
    def __init__(self, value, step):
        self.value = value
        self.step = step
"""
EXCEPTIONS = [
    "k_exc = " + SIZE_WINDOW_STEPS + "\ntry:\n    for i in range(4):\n        x = x + 0.1 * torch.tanh(x)\n"
    "        if i == k_exc:\n            raise FuzzStop(x * 0.5, i)\n    stopped = -1\n"
    "except FuzzStop as e:\n    x = x + e.value\n    stopped = e.step\nx = x * (1.0 + 0.01 * stopped)",
    "k_exc = " + SIZE_WINDOW_STEPS + "\n\ndef exc_step(v, j):\n    v = torch.tanh(v) + 0.1 * j\n"
    "    if j == k_exc:\n        raise FuzzStop(v, j)\n    return v\n\ntry:\n    for j in range(3):\n"
    "        x = exc_step(x, j)\nexcept FuzzStop as e:\n    x = e.value * 0.5\nelse:\n    x = x * 1.5\n"
    "finally:\n    x = x + 0.25",
    "squash = lambda v: v / (1.0 + v.abs())\nif {W} < 0:\n    raise ValueError(\"width must be positive\")\n"
    "if torch.isnan(x).any():\n    raise ValueError(f\"NaN in x of width {{x.size(1)}}\")\nx = squash(x)",
]


@dataclass
class _Scope:
    stage: str  # "image" | "vector"
    in_loop: bool = False
    in_helper: bool = False
    depth: int = 0
    loop_indices: tuple[str, ...] = ()  # placeholders of enclosing loops' indices (mutation)


class Generator:
    def __init__(self, seed: int, max_conditions: int = 5, mutation: bool = True, research: bool = True,
                 issue34: bool = True):
        self.rng = random.Random(seed)
        self.issue34 = issue34
        self.seed = seed
        self.width = self.rng.choice([4, 6, 8])
        self.modules: dict[str, str] = {}
        self.main_modules = 0  # (research modules are named r<k>: the others keep their names)
        self.helpers: dict[str, list[Stmt]] = {}
        self.conditions = 0
        self.max_conditions = max_conditions
        self.counters = 0
        self.outputs = ["y"] + [o for o in ("count", "outs") if self.rng.random() < 0.5]
        # (a list return holding a Python int is a known frontend bug: tests/fuzz/regressions)
        self.as_list = "count" not in self.outputs and self.rng.random() < 0.3
        # mutation: its own stream, so that the rest of the program does not depend on it
        mrng = random.Random(seed * 7919 + 0x4D17)
        self.mutating = mutation and mrng.random() < M.PROGRAM_PROBABILITY
        self.acc = self.mutating and mrng.random() < M.ACC_PROBABILITY
        # `outs.append(x)` and a later in-place change of x: DyCL refuses a tensor a list holds
        # being changed in place (by design), so most mutating programs append a copy
        self.append_copies = self.mutating and mrng.random() < M.APPEND_COPY_PROBABILITY
        self.loops = 0
        self.mutator = M.Mutator(
            mrng, self.width, self.module, lambda stage: IMAGE_STATISTICS if stage == "image" else VECTOR_STATISTICS,
            SUMMARY, self.acc,
        ) if self.mutating else None
        # research-code constructs: a third stream
        rrng = random.Random(seed * 104729 + 0x5E5E)
        self.researching = research and rrng.random() < R.PROGRAM_PROBABILITY
        self.researcher = R.Researcher(
            rrng, self.width, self.modules.__setitem__,
            lambda stage: IMAGE_STATISTICS if stage == "image" else VECTOR_STATISTICS, SUMMARY, self.outputs,
        ) if self.researching else None
        if self.researcher is not None:
            if rrng.random() < R.LENGTHS_PROBABILITY:
                self.researcher.lengths = rrng.choice(R.LENGTHS_ITEMS)
                self.researcher.lengths_type = "tuple" if rrng.random() < R.TUPLE_PROBABILITY else "list"
            self.researcher.saved = rrng.random() < R.STATE_PROBABILITY
            self.researcher.predicates = random.Random(seed * 7919 + 0x7E57)
        # halting draws of research programs: a fourth stream (the programs of before keep their conditions)
        self.draws = random.Random(seed * 15485863 + 0xD4A3) if self.researching else None

    # ----- names -------------------------------------------------------------------------

    def appended(self, stage: str) -> str:
        """What `outs.append` stores: x as (1, W) (a copy when x may later change in place)."""
        return "x.clone()" if stage == "vector" and self.append_copies else SUMMARY[stage]

    def module(self, ctor: str) -> str:
        name = f"m{self.main_modules}"
        self.main_modules += 1
        self.modules[name] = ctor
        return f"self.{name}"

    def cond(self, scope: _Scope) -> Cond:
        stats = IMAGE_STATISTICS if scope.stage == "image" else VECTOR_STATISTICS
        stat = self.rng.choice(stats).replace("{k}", str(self.rng.randrange(self.width)))
        index = self.conditions
        self.conditions += 1
        cond = Cond(
            stat=stat,
            index=index,
            op=self.rng.choice([">", "<"]),
            form=self.rng.choices(["tensor", "item", "bool"], [5, 2, 1])[0],
            via_attr=self.rng.random() < 0.25,
        )
        if self.draws is not None and cond.form == "tensor" and self.draws.random() < R.DRAW_PROBABILITY:
            # (`torch.bernoulli((x.mean() > t).float()).bool()`, `random.random() < float(x.mean() > t)`)
            cond.wrap = R.DRAW_WRAP if self.draws.random() < 0.5 else self.draws.choice(R.PYTHON_DRAW_WRAPS)
        return cond

    # ----- statements --------------------------------------------------------------------

    def layer(self, scope: _Scope) -> Line:
        r, w = self.rng, self.width
        act = r.choice(VECTOR_ACTIVATIONS)
        if scope.stage == "image":
            kind = r.choices(["conv", "conv_act", "bn", "pool", "act", "residual"], [2, 3, 1, 1, 1, 2])[0]
            if kind == "conv":
                return Line(f"x = {self.module(f'nn.Conv2d({w}, {w}, 3, padding=1)')}(x)")
            if kind == "conv_act":
                conv = self.module(f"nn.Conv2d({w}, {w}, 3, padding=1)")
                return Line("x = " + act.format(x=f"{conv}(x)"))
            if kind == "bn":
                return Line(f"x = {self.module(f'nn.BatchNorm2d({w})')}(x)")
            if kind == "pool":
                pool = r.choice(["F.max_pool2d(x, 3, stride=1, padding=1)", "F.avg_pool2d(x, 3, stride=1, padding=1)"])
                return Line(f"x = {pool}")
            if kind == "act":
                return Line("x = " + act.format(x="x"))
            conv = self.module(f"nn.Conv2d({w}, {w}, 3, padding=1)")
            return Line("x = x + " + act.format(x=f"{conv}(x)"))
        kind = r.choices(["linear", "linear_act", "norm", "act", "residual", "affine"], [2, 3, 1, 1, 2, 1])[0]
        if kind == "linear":
            return Line(f"x = {self.module(f'nn.Linear({w}, {w})')}(x)")
        if kind == "linear_act":
            return Line("x = " + act.format(x=f"{self.module(f'nn.Linear({w}, {w})')}(x)"))
        if kind == "norm":
            return Line(f"x = {self.module(f'nn.LayerNorm({w})')}(x)")
        if kind == "act":
            return Line("x = " + act.format(x="x"))
        if kind == "residual":
            return Line("x = x + " + act.format(x=f"{self.module(f'nn.Linear({w}, {w})')}(x)"))
        return Line(f"x = x * {r.choice([0.5, 1.5, -1.0, 2.0])} + {r.choice([0.1, -0.25, 1.0])}")

    def early_return(self, scope: _Scope) -> Line:
        if scope.in_helper:
            return Line("return x")
        width = self.rng.choice([self.width, 3, 5])
        head = self.module(f"nn.Linear({self.width}, {width})")
        summary = SUMMARY[scope.stage] + (" + acc" if self.acc else "")
        return Line(self.return_lines(f"{head}({summary})", scope.stage))

    def return_lines(self, y: str, stage: str) -> str:
        lines = []
        if "outs" in self.outputs:
            lines.append(f"outs.append({self.appended(stage)})")
        items = {"y": y, "count": "count", "outs": "torch.stack(outs)"}
        values = [items[o] for o in self.outputs]
        if len(values) == 1:
            lines.append(f"return {values[0]}")
        elif self.as_list:
            lines.append(f"return [{', '.join(values)}]")
        else:
            lines.append(f"return {', '.join(values)}")
        return "\n".join(lines)

    def side_effect(self, scope: _Scope) -> Line | None:
        choices = []
        if not scope.in_helper and "count" in self.outputs:
            choices.append(f"count += {self.rng.choice([1, 2, 3])}")
        if not scope.in_helper and "outs" in self.outputs:
            choices.append(f"outs.append({self.appended(scope.stage)})")
        return Line(self.rng.choice(choices)) if choices else None

    def statement(self, scope: _Scope) -> Stmt:
        r = self.rng
        control = self.conditions < self.max_conditions and scope.depth < 3
        kinds = {"layer": 6.0, "side": 1.5}
        if control:
            kinds.update({"if": 3.0, "loop": 1.0 if scope.depth < 2 else 0.0, "return": 0.7})
            if scope.in_loop:
                kinds["break"] = 1.5
            if not scope.in_helper and scope.depth == 0 and len(self.helpers) < 2:
                kinds["helper"] = 0.8
        kind = r.choices(list(kinds), list(kinds.values()))[0]
        if kind == "side":
            return self.side_effect(scope) or self.layer(scope)
        if kind == "layer":
            return self.layer(scope)
        if kind == "break":
            return Break(self.cond(scope))
        if kind == "return":
            # an early exit only under a condition (else the rest would be dead code)
            return If([(self.cond(scope), [self.layer(scope), self.early_return(scope)])])
        if kind == "helper":
            return self.helper_call(scope)
        if kind == "if":
            return self.if_statement(scope)
        return self.loop(scope)

    def block(self, scope: _Scope, low: int = 1, high: int = 3, research: bool = True) -> list[Stmt]:
        """Statements; `research=False`: research constructs are added later (forward's own
        blocks, once every draw of the other streams is done: `finish_research`)."""
        stmts = [self.statement(scope) for _ in range(self.rng.randint(low, high))]
        if self.mutator is not None:
            mixed: list[Stmt] = []
            for k in range(len(stmts) + 1):  # a gap before each statement and after the last
                if self.mutator.rng.random() < M.GAP_PROBABILITY:
                    mixed += self.mutator.statements(scope.stage, scope.in_helper, scope.loop_indices)
                if k < len(stmts):
                    mixed.append(stmts[k])
            stmts = mixed
        if self.researcher is not None and research:
            stmts = self.research(stmts, scope)
        return stmts

    def research(self, stmts: list[Stmt], scope: _Scope) -> list[Stmt]:
        """Research constructs in the gaps of a block; one or two of its statements in
        `with torch.no_grad():` (draws only from the research stream)."""
        rr = self.researcher
        mixed: list[Stmt] = []
        for k in range(len(stmts) + 1):
            if rr.rng.random() < R.GAP_PROBABILITY:
                mixed += rr.statements(scope.stage, scope.in_helper)
            if rr.predicates.random() < R.PREDICATE_PROBABILITY:
                mixed += rr.tensor_predicate(scope.stage)
            if k < len(stmts):
                mixed.append(stmts[k])
        if mixed and rr.rng.random() < R.WITH_PROBABILITY:
            at = rr.rng.randrange(len(mixed))
            n = rr.rng.choice([1, 1, 2])
            mixed[at : at + n] = [With(mixed[at : at + n])]
        return mixed

    def inner(self, scope: _Scope, **changes) -> _Scope:
        values = dict(scope.__dict__, depth=scope.depth + 1)
        values.update(changes)
        return _Scope(**values)

    def if_statement(self, scope: _Scope) -> If:
        inner = self.inner(scope)
        branches = [(self.cond(scope), self.block(inner))]
        for _ in range(self.rng.choice([0, 0, 1, 2])):
            if self.conditions < self.max_conditions + 1:
                branches.append((self.cond(scope), self.block(inner)))
        orelse = self.block(inner) if self.rng.random() < 0.6 else None
        return If(branches, orelse)

    def loop(self, scope: _Scope) -> Stmt:
        trips = self.rng.randint(1, 4)
        # the loop's index is a placeholder until we know whether it is a for or a while
        index = None
        if self.mutator is not None:
            self.loops += 1
            index = f"@index{self.loops}@"
        inner = self.inner(scope, in_loop=True, loop_indices=scope.loop_indices + ((index,) if index else ()))
        body = self.block(inner, 1, 2, research=False)
        if index and self.mutator.rng.random() < M.LOOP_INDEX_PROBABILITY:
            body.insert(self.mutator.rng.randint(0, len(body)), self.mutator.loop_index(scope.stage, index, scope.in_helper))
        if self.researcher is not None:  # (after the mutation stream's draws that depend on the body)
            body = self.research(body, inner)
        if self.rng.random() < 0.5:
            body.append(Break(self.cond(scope)))
        if self.rng.random() < 0.35:
            self.counters += 1
            counter = f"steps{self.counters}"
            _name_index(body, index, counter)
            return While(trips, self.cond(scope), body, counter)
        if index and _uses(body, index):
            var = f"j{self.loops}"
            _name_index(body, index, var)
            return For(trips, body, var)
        return For(trips, body)

    def helper_call(self, scope: _Scope) -> Line:
        name = f"helper{len(self.helpers)}"
        self.helpers[name] = []  # reserve the name (helpers do not call helpers)
        self.helpers[name] = self.block(_Scope(scope.stage, in_helper=True, depth=1), 1, 3)
        return Line(f"x = self.{name}(x)")

    # ----- the program -------------------------------------------------------------------

    def program(self) -> Program:
        r = self.rng
        image = r.random() < 0.4
        body: list[Stmt] = []
        if image:
            side = r.choice([4, 6])
            shape: tuple[int, ...] = (1, self.width, side, side)
            body += self.block(_Scope("image"), 1, 3, research=False)
            body.append(Line(r.choice(["x = x.mean((2, 3))", "x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)"])))
        else:
            shape = (1, self.width)
        vector_start = len(body)
        body += self.block(_Scope("vector"), 2, 5, research=False)
        if self.conditions == 0:  # every program branches at least once, on vectors
            body.insert(r.randint(vector_start, len(body)), self.if_statement(_Scope("vector")))
        prologue = []
        if self.mutating:
            prologue.append("x = x.clone()")  # the program mutates x: never its input
        if self.acc:
            prologue.append(f"acc = torch.zeros(1, {self.width})")
        if "count" in self.outputs:
            prologue.append("count = 0")
        if "outs" in self.outputs:
            prologue.append("outs = []")
        head = self.module(f"nn.Linear({self.width}, {r.choice([2, 3, self.width])})")
        epilogue = self.return_lines(f"{head}(x)", "vector").split("\n")
        if self.mutator is not None:  # (after the last draw from self.rng)
            if not any(isinstance(s, Mutation) for s in walk([body, *self.helpers.values()])):
                at = self.mutator.rng.randint(vector_start, len(body))
                body[at:at] = self.mutator.statements("vector", False)
            for k, cond in enumerate(self.mutator.conds):  # their threshold slots come last
                cond.index = self.conditions + k
            if self.acc:
                epilogue.insert(0, "x = x + acc")
        program = Program(self.seed, shape, self.modules, self.helpers, prologue, body, epilogue)
        if self.researcher is not None:
            self.finish_research(program, vector_start)
        return program

    def finish_research(self, program: Program, vector_start: int) -> None:
        """Research constructs in forward's own blocks (the image part, the vector part);
        at least one construct; `lengths` read; state kept across calls; slots, modules, imports."""
        rr = self.researcher
        body = program.body
        head = []
        if vector_start:  # the image part, then the line that makes x a vector
            head = self.research(body[: vector_start - 1], _Scope("image")) + [body[vector_start - 1]]
        body[:] = head + self.research(body[vector_start:], _Scope("vector"))
        vector_start = len(head)
        if not any(_is_research(s) for s in walk([body, *self.helpers.values()])):
            at = rr.rng.randint(vector_start, len(body))
            body[at:at] = rr.statements("vector", False)
        if rr.lengths and not any(isinstance(s, Research) and s.form.startswith("lengths") for s in walk([body])):
            at = rr.rng.randint(vector_start, len(body))  # a program with `lengths` reads it
            body[at:at] = rr.form(rr.rng.choice(["lengths_enumerate", "lengths_compare", "lengths_len"]), "vector", False)
        if rr.saved:  # state that outlives the call: anywhere in forward
            blocks = [b for b in _blocks(body)]
            target = rr.rng.choice(blocks)
            # before a block's closing `return` (after it, the statement is dead code: eager
            # never runs it, and DyCL rightly compiles nothing for it; seed 88086)
            returns = bool(target) and isinstance(target[-1], Line) and target[-1].text.split("\n")[-1].lstrip().startswith("return")
            at = rr.rng.randint(0, len(target) - returns)
            target[at:at] = rr.form("cross_call_state", "vector", False)
            self.modules.update(R.STATE_MODULES)
        first = self.conditions + (len(self.mutator.conds) if self.mutator is not None else 0)
        for k, cond in enumerate(rr.conds):  # their threshold slots come after all others
            cond.index = first + k
        # research modules after the others (the others are built first: the same weights)
        program.modules = {**{n: c for n, c in self.modules.items() if not _research_module(n)},
                           **{n: c for n, c in self.modules.items() if _research_module(n)}}
        program.imports = list(R.IMPORTS)
        program.classes = [{**R.CLASSES, **R.HELPER_CLASSES}[name] for name in sorted(rr.classes)]
        program.lengths, program.lengths_type = rr.lengths, rr.lengths_type
        # an `assert` that holds, in forward's vector part: its own stream, so that the other
        # research statements are those of before
        wrng = random.Random(self.seed * 32452843 + 0x5123)  # (a stream of its own, as the assert's)
        if wrng.random() < SIZE_WINDOW_PROBABILITY:
            text = wrng.choice(SIZE_WINDOWS).format(n=SIZE_WINDOW_STEPS, W=self.width, B=self.width + 1)
            text += f"\nx = x + 0.1 * window_seq[:, -{self.width}:]"
            body.insert(wrng.randint(vector_start, len(body)), Research(text, form="size_window"))
        arng = random.Random(self.seed * 15485863 + 0xA55E)
        if arng.random() < ASSERT_PROBABILITY:
            checks = [*ASSERTS, *(['assert count >= 0, f"negative count {count}"'] if "count" in self.outputs else [])]
            text = arng.choice(checks).replace("{W}", str(self.width))
            body.insert(arng.randint(vector_start, len(body)), Research(text, form="assert"))
        erng = random.Random(self.seed * 49979687 + 0xE7C)
        if erng.random() < EXCEPTION_PROBABILITY:
            text = erng.choice(EXCEPTIONS).replace("{W}", str(self.width)).replace("{{", "{").replace("}}", "}")
            body.insert(erng.randint(vector_start, len(body)), Research(text, form="exception"))
            if "FuzzStop" in text:
                program.classes.append(EXCEPTION_CLASS)
        if self.issue34:  # issue 34's forms: streams of their own
            F.add_forms(program, self.width, vector_start, self.outputs)


def walk(blocks: list[list[Stmt]]):
    """Every statement in some statement lists, depth first."""
    for stmts in blocks:
        for stmt in stmts:
            yield stmt
            if isinstance(stmt, If):
                yield from walk([body for _, body in stmt.branches] + [stmt.orelse or []])
            elif isinstance(stmt, (For, While, With)):
                yield from walk([stmt.body])


def _blocks(stmts: list[Stmt]):
    """A statement list and every list nested in it."""
    yield stmts
    for stmt in stmts:
        if isinstance(stmt, If):
            for _, body in stmt.branches:
                yield from _blocks(body)
            if stmt.orelse is not None:
                yield from _blocks(stmt.orelse)
        elif isinstance(stmt, (For, While, With)):
            yield from _blocks(stmt.body)


def _is_research(stmt: Stmt) -> bool:
    return isinstance(stmt, (Research, CondLine, With))


def _research_module(name: str) -> bool:
    return name in R.STATE_MODULES or (name.startswith("r") and name[1:].isdigit()) or (name.startswith("rb") and name[2:].isdigit()) \
        or (name.startswith(("rgl", "rg")) and name.lstrip("rgl").isdigit())


def _uses(stmts: list[Stmt], name: str) -> bool:
    return any(isinstance(s, Line) and name in s.text for s in walk([stmts]))


def _name_index(stmts: list[Stmt], placeholder: str | None, name: str) -> None:
    """Give a loop's index placeholder its name (the for variable or the while counter)."""
    if placeholder is None:
        return
    for stmt in walk([stmts]):
        if isinstance(stmt, Line):
            stmt.text = stmt.text.replace(placeholder, name)


def generate(seed: int, max_conditions: int = 5, mutation: bool = True, research: bool = True,
             issue34: bool = True) -> Program:
    """Program `seed`; `mutation=False`: never mutate (the programs of campaigns before mutation);
    `research=False`: no research-code constructs (the programs before they existed);
    `issue34=False`: none of `dycl.fuzz.forms` (the programs before them)."""
    return Generator(seed, max_conditions, mutation, research, issue34).program()
