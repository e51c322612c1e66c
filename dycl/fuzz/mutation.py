"""Tensor mutation for generated programs: the in-place forms research code uses.

`Mutator` writes `Mutation` statements (program.py) for `dycl.fuzz.generate`: subscript
stores (mask, int, slice, `...`, `None`, tensor index), augmented stores (`t[i] += v`,
`t += v`, `t *= v`), in-place methods (`add_` ... `sub_`), `out=` arguments,
`nn.ReLU(inplace=True)`, mutation through a view or an alias (`.view(-1)`, a row, `z = y`,
`.data`, `.detach()`), a tensor created before an `if` and mutated in one arm only, and a
tensor built before a loop and written per step (`out[:, i] = v`).

Rules that keep every program valid:
- the target is `x` (which forward clones first: `x = x.clone()`; a helper's `x` is the
  caller's, so never an input), a fresh scratch tensor (`y = x.clone()`, `torch.sigmoid(x)`,
  ...), or the program's accumulator `acc = torch.zeros(1, W)`; never an input, a parameter
  or a buffer;
- every form keeps the target's shape and dtype (so any statement can follow any other), never
  makes `x` constant (whole-tensor stores are computed from `x`), never writes a region from an
  overlapping one, and keeps values bounded;
- loop indices (`for i3 in range(N)`, a `while` counter) are < 4 <= W.

The mutator draws from its own random stream: with mutation off the generator writes exactly
the programs it wrote before mutation existed.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from dycl.fuzz.program import Cond, For, If, Line, Mutation, Stmt

# Every form the generator writes (`Mutation.form`); tests/fuzz/test_generator.py checks that
# each one appears in the first 300 seeds.
FORMS = (
    # subscript stores
    "store_mask", "store_int", "store_slice", "store_ellipsis", "store_none", "store_tensor_index",
    # augmented stores
    "aug_subscript", "aug_add", "aug_mul",
    # in-place methods, out=, inplace modules
    "add_", "mul_", "relu_", "clamp_", "masked_fill_", "index_put_", "copy_", "fill_", "zero_",
    "sigmoid_", "tanh_", "div_", "sub_", "out_arg", "relu_module",
    # through a view or an alias
    "view_store", "row_method", "alias_aug", "data_method", "detach_method",
    # control flow
    "acc_feed", "loop_index", "loop_fill", "branch_one_arm",
)

PROGRAM_PROBABILITY = 0.5  # a program mutates at all
ACC_PROBABILITY = 0.4  # a mutating program keeps an accumulator `acc` (forward only)
APPEND_COPY_PROBABILITY = 0.8  # a mutating program appends `x.clone()` rather than `x` to `outs`
GAP_PROBABILITY = 0.15  # a mutation before/after each statement of a block
LOOP_INDEX_PROBABILITY = 0.5  # a loop body writes `t[:, i]` with the loop's index
MAX_CONDITIONS = 2  # `branch_one_arm` statements (each adds a threshold slot)

# (a form's weight when a mutation statement is drawn)
TARGET_WEIGHTS = {"x": 5.0, "scratch": 2.5, "acc": 2.0, "acc_feed": 1.0, "loop_fill": 0.6, "branch_one_arm": 0.8}

VALUES = ["0.0", "0.5", "1.0", "-1.0", "0.25", "2.0"]  # (VALUES[1:] for `+=`: no no-op stores)
FACTORS = ["0.5", "1.5", "-1.0", "0.9"]
CUTS = ["0.5", "1.0", "0.0"]

# (source of a scratch tensor, how it flows back into x)
SCRATCH = [
    ("x.clone()", "x = {y}"),
    ("x.clone()", "x = x + {y}"),
    ("torch.sigmoid(x)", "x = x * {y}"),
    ("torch.zeros_like(x)", "x = x + {y}"),
    ("x * 1.0", "x = 0.5 * (x + {y})"),
]


class Mutator:
    def __init__(self, rng: random.Random, width: int, module: Callable[[str], str],
                 statistics: Callable[[str], list[str]], summary: dict[str, str], acc: bool):
        self.rng, self.width, self.module = rng, width, module
        self.statistics, self.summary, self.acc = statistics, summary, acc
        self.names = 0
        self.conds: list[Cond] = []  # threshold slots, numbered by the generator at the end

    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    # ----- forms on one target tensor ----------------------------------------------------

    def on(self, t: str, stage: str, form: str | None = None) -> Mutation:
        """One in-place change of `t` (shape (1, W) for "vector", (1, W, S, S) for "image")."""
        r, w = self.rng, self.width
        form = form or r.choice(FORMS[: FORMS.index("acc_feed")])
        k, k2 = r.sample(range(w), 2)
        a, b = sorted(r.sample(range(w), 2))
        v, m, c = r.choice(VALUES), r.choice(FACTORS), r.choice(CUTS)
        nonzero = r.choice([x for x in VALUES if x != "0.0"])
        mean = f"{t}.mean((2, 3), keepdim=True)" if stage == "image" else f"{t}.mean(1, keepdim=True)"
        variants: list[str]
        if form == "store_mask":
            variants = [f"{t}[{t} >= {c}] = {v}", f"{t}[{t} < -{c}] = 0.0",
                        f"{t}[{t}.abs() > 1.0] = {t}[{t}.abs() > 1.0] * 0.5"]
        elif form == "store_int":
            variants = [f"{t}[0, {k}] = {v}", f"{t}[0, {k}] = {t}[0, {k2}]", f"{t}[0][{k}] = {v}"]
        elif form == "store_slice":
            variants = [f"{t}[:, :2] = {v}", f"{t}[:, :2] = {t}[:, 2:4]",
                        f"{t}[:, {k}:] = {t}[:, {k}:] * 0.5", f"{t}[:, 1::2] = {v}"]
        elif form == "store_ellipsis":
            variants = [f"{t}[..., 0] = {v}", f"{t}[...] = {t} * {m}", f"{t}[..., -1:] = {t}[..., :1]"]
        elif form == "store_none":
            variants = [f"{t}[None, :, {k}] = {v}", f"{t}[None][0, :, {k}] = {t}[:, {k2}]"]
        elif form == "store_tensor_index":
            variants = [f"{t}[:, torch.tensor([{a}, {b}])] = {v}",
                        f"{t}[:, torch.tensor([{a}, {b}])] = {t}[:, torch.tensor([{b}, {a}])]",
                        f"{t}[0, torch.arange(0, {w}, 2)] = {v}"]
        elif form == "aug_subscript":
            variants = [f"{t}[0, {k}] += {nonzero}", f"{t}[:, :2] *= {m}", f"{t}[{t} > {c}] -= 0.25",
                        f"{t}[..., 0] /= 2.0"]
        elif form == "aug_add":
            variants = [f"{t} += {nonzero}", f"{t} += 0.5 * torch.tanh({t})", f"{t} -= {mean}"]
        elif form == "aug_mul":
            variants = [f"{t} *= {m}", f"{t} *= torch.sigmoid({t})", f"{t} /= {t}.abs().max() + 1.0"]
        elif form == "add_":
            variants = [f"{t}.add_({nonzero})", f"{t}.add_({t}, alpha=0.5)",
                        f"{t}.add_(torch.ones_like({t}), alpha=-0.5)", f"{t}.add_({mean})"]
        elif form == "mul_":
            variants = [f"{t}.mul_({m})", f"{t}.mul_(torch.sigmoid({t}))"]
        elif form == "relu_":
            variants = [f"{t}.relu_()", f"torch.relu_({t})", f"F.relu_({t})", f"F.relu({t}, inplace=True)"]
        elif form == "clamp_":
            variants = [f"{t}.clamp_(-1.0, 1.0)", f"{t}.clamp_(min=0.0)", f"{t}.clamp_(max=0.5)"]
        elif form == "masked_fill_":
            variants = [f"{t}.masked_fill_({t} < -{c}, 0.0)", f"{t}.masked_fill_({t} > 1.0, {v})"]
        elif form == "index_put_":
            index = f"(torch.tensor([0]), torch.tensor([{k}]))"
            variants = [f"{t}.index_put_({index}, torch.tensor({v}))",
                        f"{t}.index_put_({index}, torch.tensor({nonzero}), accumulate=True)"]
        elif form == "copy_":
            variants = [f"{t}.copy_(torch.tanh({t}))", f"{t}[:, :2].copy_({t}[:, 2:4])"]
        elif form == "fill_":
            variants = [f"{t}[:, {k}].fill_({v})", f"{t}[0, {k}].fill_({v})"]
        elif form == "zero_":
            variants = [f"{t}[:, -1:].zero_()", f"{t}[0, {k}].zero_()"]
        elif form == "sigmoid_":
            variants = [f"{t}.sigmoid_()"]
        elif form == "tanh_":
            variants = [f"{t}.tanh_()"]
        elif form == "div_":
            variants = [f"{t}.div_(2.0)", f"{t}.div_({t}.abs().max() + 1.0)"]
        elif form == "sub_":
            variants = [f"{t}.sub_(0.25)", f"{t}.sub_({mean})"]
        elif form == "out_arg":
            o = self.fresh("o")
            variants = [f"{o} = torch.empty_like({t})\ntorch.add({t}, {nonzero}, out={o})\n{t} = {o}",
                        f"torch.mul({t}, {m}, out={t})",
                        f"{o} = torch.zeros_like({t})\ntorch.tanh({t}, out={o})\n{t} = {t} + {o}"]
        elif form == "relu_module":
            choice = r.randrange(3)
            relu = self.module("nn.ReLU(inplace=True)")
            h = self.fresh("h")
            variants = [[f"{relu}({t})", f"{t} = {relu}({t})", f"{h} = {relu}({t})\n{t} = {t} + {h}"][choice]]
        elif form == "view_store":
            view = self.fresh("v")
            j = r.randrange(w)
            variants = [f"{view} = {t}.view(-1)\n{view}[{j}] = {v}", f"{t}.view(-1)[{j}] = {v}",
                        f"{view} = {t}.view(-1)\n{view}.mul_({m})"]
        elif form == "row_method":
            row = self.fresh("row")
            variants = [f"{row} = {t}[0]\n{row}.mul_({m})", f"{row} = {t}[:, {k}]\n{row}.add_({nonzero})",
                        f"{row} = {t}.narrow(1, 0, 2)\n{row}.zero_()", f"{t}.select(1, {k}).mul_(2.0)"]
        elif form == "alias_aug":
            z = self.fresh("z")
            variants = [f"{z} = {t}\n{z} += {nonzero}", f"{z} = {t}\n{z} *= {m}", f"{z} = {t}\n{z}[:, 0] = {v}",
                        f"{z} = {t}\n{t}.tanh_()\n{t} = {t} + {z}"]
        elif form == "data_method":
            variants = [f"{t}.data.mul_({m})", f"{t}.data[:, 0] = {v}", f"{t}.data.clamp_(-2.0, 2.0)"]
        elif form == "detach_method":
            d = self.fresh("d")
            variants = [f"{t}.detach().mul_({m})", f"{d} = {t}.detach()\n{d}[:, :2] = {v}",
                        f"{t}.detach().clamp_(min=-1.0)"]
        else:
            raise ValueError(f"no such mutation form: {form}")
        return Mutation(r.choice(variants), form)

    # ----- statements --------------------------------------------------------------------

    def statements(self, stage: str, in_helper: bool, loop_indices: tuple[str, ...] = ()) -> list[Stmt]:
        """A mutation statement (or a few, for the forms that need set-up) for a block."""
        r = self.rng
        kinds = dict(TARGET_WEIGHTS)
        if in_helper or not self.acc:
            kinds["acc"] = kinds["acc_feed"] = 0.0
        if len(self.conds) >= MAX_CONDITIONS:
            kinds["branch_one_arm"] = 0.0
        if loop_indices and r.random() < 0.2:  # an enclosing loop's index
            return [self.loop_index(stage, r.choice(loop_indices), in_helper)]
        kind = r.choices(list(kinds), list(kinds.values()))[0]
        if kind == "x":
            return [self.on("x", stage)]
        if kind == "acc":
            return [self.on("acc", "vector")]
        if kind == "acc_feed":
            s, k = self.summary[stage], r.randrange(self.width)
            return [Mutation(r.choice([f"acc += {s}", f"acc.add_({s}, alpha=0.5)", f"acc[:, {k}] = {s}[:, {k}]",
                                       f"torch.add(acc, {s}, out=acc)"]), "acc_feed")]
        if kind == "scratch":
            y = self.fresh("y")
            source, back = r.choice(SCRATCH)
            return [Line(f"{y} = {source}"), self.on(y, stage), Line(back.format(y=y))]
        if kind == "loop_fill":
            return self.loop_fill(stage)
        return self.branch_one_arm(stage, in_helper)

    def loop_index(self, stage: str, index: str, in_helper: bool) -> Mutation:
        """`t[:, i] = ...` with a loop's index on a tensor built before the loop."""
        r = self.rng
        targets = ["x"] + ([] if in_helper or not self.acc else ["acc"])
        t = r.choice(targets)
        variants = [f"{t}[:, {index}] = {t}[:, {index}] * {r.choice(FACTORS)}", f"{t}[:, {index}] += {r.choice(VALUES[1:])}",
                    f"{t}[0, {index}].mul_({r.choice(FACTORS)})"]
        if t == "acc":
            s = self.summary[stage]
            variants.append(f"acc[:, {index}] = {s}[:, {index}]")
        return Mutation(r.choice(variants), "loop_index")

    def loop_fill(self, stage: str) -> list[Stmt]:
        r, w = self.rng, self.width
        out, j = self.fresh("out"), self.fresh("i")
        value = r.choice([f"x[:, {j}] * 2.0", f"torch.tanh(x[:, {j}])", f"x[:, {w - 1} - {j}]", f"{out}[:, {j}] + x[:, {j}]"])
        start = r.choice(["torch.zeros_like(x)", "x.clone()"])
        return [
            Mutation(f"{out} = {start}", "loop_fill"),
            For(r.randint(2, w), [Mutation(f"{out}[:, {j}] = {value}", "loop_fill")], var=j),
            Line(f"x = {r.choice(['x + ', '0.5 * x + ', ''])}{out}"),
        ]

    def branch_one_arm(self, stage: str, in_helper: bool) -> list[Stmt]:
        """A tensor made before an `if`, changed in place in one arm only, read after it."""
        r = self.rng
        cond = Cond(
            stat=r.choice(self.statistics(stage)).replace("{k}", str(r.randrange(self.width))),
            index=-1,  # numbered after generation (Generator.program)
            op=r.choice([">", "<"]),
            form=r.choices(["tensor", "item", "bool"], [5, 2, 1])[0],
            via_attr=r.random() < 0.25,
        )
        self.conds.append(cond)
        orelse = [Line("x = x * 0.5")] if r.random() < 0.4 else None
        kind = r.choice(["clone", "alias"] + ([] if in_helper or not self.acc else ["acc"]))
        if kind == "clone":
            y = self.fresh("y")
            return [Mutation(f"{y} = x.clone()", "branch_one_arm"),
                    If([(cond, [self.on(y, stage)])], orelse), Line(f"x = x + {y}")]
        if kind == "alias":
            keep = self.fresh("keep")
            return [Mutation(f"{keep} = x", "branch_one_arm"),
                    If([(cond, [self.on("x", stage)])], orelse), Line(f"x = x + {keep}")]
        return [If([(cond, [self.on("acc", "vector")])], orelse)]
