"""Random draws of Python and numpy in forward, and those made while the frontend runs the
user's code on example values.

Python's scalar draws are lowered to torch's, which the host program draws at every call
(`torch_ops.RANDOM`), with the same law (`lower_draws`): `random.random()`,
`random.uniform(a, b)`, `random.randint(a, b)`, `random.randrange(...)`, `random.gauss(mu,
sigma)`, and numpy's `np.random.rand()`, `np.random.random()`, `np.random.randn()`,
`np.random.uniform(a, b)` without a size. The stream is not Python's: a compiled model draws
other numbers than eager after `random.seed(k)`, as it does for torch's own random ops.

The frontend evaluates expressions of import-time values (`_try_constant`) and runs blocks
on example values before capturing them. A random draw made there is made once, when the
model is compiled, where eager draws anew at every call: `if random.random() < self.p:`
(LayerDrop) or `np.random.rand() < 0.5` would be frozen to the example's draw, a silent wrong
answer. So each such run is watched:

- a draw on torch's generator (`torch.rand(1).item()`): the value is not a constant, and the
  expression is compiled instead (torch's random ops are host draws, `torch_ops.RANDOM`);
- a draw on Python's `random` or numpy's global generator, which no compiled op makes: the
  statement is refused at its line, naming the call.

Every generator is put back as it was, so importing draws nothing from the user's streams.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import copy
import random
from dataclasses import dataclass, field

import numpy as np
import torch

from dycl.frontend import values as V
from dycl.frontend.desugar import source_text

HINT = (
    "draw it with torch, which the compiled model draws at every call (`torch.randn(4)` for "
    "numpy's `np.random.normal(size=(4,))`, `int(torch.randint(n, ()))` for an index), or "
    "with one of the scalar draws DyCL makes torch's itself (`random.random()`, "
    "`random.uniform(a, b)`, `random.randint(a, b)`, `np.random.rand()`, ...)"
)


@dataclass
class Draws:
    """What a watched run drew from: `python` (Python's `random` or numpy's global
    generator) and `torch` (torch's default generator)."""

    python: bool = False
    torch: bool = False


@dataclass
class _States:
    python: object = field(default_factory=random.getstate)
    numpy: tuple = field(default_factory=np.random.get_state)
    torch: torch.Tensor = field(default_factory=torch.get_rng_state)

    def restore_drawn(self) -> Draws:
        """What was drawn on since, each such generator put back."""
        numpy_now = np.random.get_state()
        numpy_drawn = any(
            not (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b) for a, b in zip(self.numpy, numpy_now)
        )
        drawn = Draws(python=self.python != random.getstate(), torch=not torch.equal(self.torch, torch.get_rng_state()))
        if drawn.python:
            random.setstate(self.python)
        if numpy_drawn:
            np.random.set_state(self.numpy)
        if drawn.torch:
            torch.set_rng_state(self.torch)
        drawn.python = drawn.python or numpy_drawn
        return drawn


class watch:
    """`with watch() as draws:` runs code, then fills `draws` and puts every generator back."""

    def __enter__(self) -> Draws:
        self._states = _States()
        self._draws = Draws()
        return self._draws

    def __exit__(self, *exc) -> bool:
        drawn = self._states.restore_drawn()
        self._draws.python, self._draws.torch = drawn.python, drawn.torch
        return False


def draws_in(source) -> bool:
    """Whether a function calls Python's or numpy's random functions itself: compiled by
    DyCL (inlined), where those draws are lowered or refused at their line, never run inside
    a captured block (export would freeze the example's draw)."""
    return python_draw(source.node, {**source.globals, **source.closure}) is not None


def python_draw(node: ast.AST, namespace: dict) -> str | None:
    """The source of the first call in `node` of a function of Python's `random` or of
    `numpy.random` (by the names `namespace` binds), else None."""
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        if _is_random_function(_resolve(call.func, namespace)):
            return ast.unparse(call)
    return None


def _resolve(expr: ast.expr, namespace: dict):
    if isinstance(expr, ast.Name):
        return namespace[expr.id] if expr.id in namespace else getattr(builtins, expr.id, None)
    if isinstance(expr, ast.Attribute):
        owner = _resolve(expr.value, namespace)
        return getattr(owner, expr.attr, None) if owner is not None else None
    return None


def _is_random_function(obj) -> bool:
    if obj is None:
        return False
    owner = getattr(obj, "__self__", None)
    if isinstance(owner, (random.Random, np.random.RandomState, np.random.Generator)):
        return True
    return getattr(obj, "__module__", None) in ("random", "numpy.random", "numpy.random.mtrand")


def refusal(c, node: ast.AST):
    """The located refusal of a statement or expression that drew on Python's or numpy's
    generator while it ran on example values (`c`: the function compiler)."""
    call = python_draw(node, c.scope.namespace)
    what = f"`{call}`" if call else f"`{source_text(node)}` (in a function it calls)"
    return c.error(
        node,
        f"{what} draws a random number from Python's `random` or numpy's generator: compiled, it "
        "would be drawn once, when the model is compiled, and every call would reuse it",
        HINT,
    )


def evaluated(c, node: ast.AST, run):
    """`run()`, the value of `node` evaluated on import-time values: V.MISSING if it failed or
    drew on torch's generator (the expression is compiled instead); refused if it drew on
    Python's or numpy's."""
    watching = any(isinstance(n, ast.Call) for n in ast.walk(node))  # (only a call draws)
    with watch() if watching else contextlib.nullcontext(Draws()) as draws:
        try:
            value = run()
        except Exception:
            value = V.MISSING
    if draws.python:
        raise refusal(c, node)
    return V.MISSING if draws.torch else value


_UNIFORM = "__dycl_torch.rand((), dtype=__dycl_torch.float64).item()"
_NORMAL = "__dycl_torch.randn((), dtype=__dycl_torch.float64).item()"
# (family, name) -> (the numbers of positional arguments it takes, the torch draw of `a`, `b`)
_LOWERED = {
    **{(family, "random"): ((0,), _UNIFORM) for family in ("python", "numpy")},
    ("numpy", "rand"): ((0,), _UNIFORM),
    ("numpy", "random_sample"): ((0,), _UNIFORM),
    ("numpy", "randn"): ((0,), _NORMAL),
    ("numpy", "standard_normal"): ((0,), _NORMAL),
    **{(family, "uniform"): ((0, 1, 2), f"({{a}} + ({{b}} - {{a}}) * {_UNIFORM})") for family in ("python", "numpy")},
    ("python", "gauss"): ((0, 1, 2), f"({{a}} + {{b}} * {_NORMAL})"),
    ("python", "normalvariate"): ((0, 1, 2), f"({{a}} + {{b}} * {_NORMAL})"),
    ("python", "randint"): ((2,), "__dycl_torch.randint({a}, {b} + 1, ()).item()"),
    ("python", "randrange"): ((1, 2), "__dycl_torch.randint({a}, {b}, ()).item()"),
}
_DEFAULTS = {"uniform": ("0.0", "1.0"), "gauss": ("0.0", "1.0"), "normalvariate": ("0.0", "1.0")}


def lower_draws(source, stmt: ast.stmt) -> ast.stmt:
    """`stmt` with each lowerable draw of Python's `random` or numpy's global generator
    (resolved in the function's namespace) in its own expressions replaced by torch's (the
    statements nested in it are lowered, and rewritten, on their own); the very statement
    when it has none. Other draws are left for `watch` to refuse."""
    namespace = {**source.globals, **source.closure}
    own = _own_expressions(stmt)
    if not any(isinstance(n, ast.Call) and _lowered(n, namespace) is not None
               for parts in own.values() for part in parts for n in ast.walk(part)):
        return stmt

    class Replace(ast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            new = _lowered(node, namespace)
            return node if new is None else new

    rewritten = copy.copy(stmt)  # (shallow: the nested statements stay the parsed ones)
    for name, parts in own.items():
        new = [Replace().visit(copy.deepcopy(part)) for part in parts]
        setattr(rewritten, name, new if isinstance(getattr(stmt, name), list) else new[0])
    return rewritten


def _own_expressions(stmt: ast.stmt) -> dict[str, list[ast.AST]]:
    """The fields of `stmt` that hold its own expressions (an `if`'s test, a `for`'s target and
    iterable, not their bodies), each as a list of its parts."""
    own = {}
    for name, value in ast.iter_fields(stmt):
        parts = value if isinstance(value, list) else [value]
        if parts and all(isinstance(part, (ast.expr, ast.keyword, ast.withitem)) for part in parts):
            own[name] = parts
    return own


def _lowered(call: ast.Call, namespace: dict) -> ast.expr | None:
    function = _resolve(call.func, namespace)
    if not _is_random_function(function) or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    owner = getattr(function, "__self__", None)
    family = "numpy" if isinstance(owner, (np.random.RandomState, np.random.Generator)) or (
        getattr(function, "__module__", None) or "").startswith("numpy") else "python"
    name = getattr(function, "__name__", "")
    if (family, name) not in _LOWERED:
        return None
    counts, template = _LOWERED[(family, name)]
    args = call.args
    if len(args) not in counts or (template.count("{a}") > 1 and not all(map(_pure, args))):
        return None
    texts = [ast.unparse(a) for a in args]
    if name == "randrange":
        texts = ["0", texts[0]] if len(texts) == 1 else texts
    elif len(texts) < 2 and name in _DEFAULTS:
        texts = texts + list(_DEFAULTS[name][len(texts):])
    a, b = (texts + ["", ""])[:2]
    expr = ast.parse(template.format(a=f"({a})", b=f"({b})"), mode="eval").body
    for sub in ast.walk(expr):
        if "lineno" in sub._attributes:
            ast.copy_location(sub, call)
    return expr


def _pure(arg: ast.expr) -> bool:
    """An argument the lowered form may read twice (`a + (b - a) * u`): no calls in it."""
    return not any(isinstance(n, (ast.Call, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)) for n in ast.walk(arg))
