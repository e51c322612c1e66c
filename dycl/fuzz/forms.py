"""Issue 34's constructs ("Frontend v4") as forms of generated programs: the Python that
LLM and research code is written in, each a small statement (`Research`, tagged with its
form) in forward's vector part (x is (1, W), W even), on top level or, for 30% of them, in a
block nested there (an `if` arm, a loop body, a `with`; never after a block's `return`):

- `keyword_call`: calls with keywords, defaults, a positional-only and keyword-only
  parameters (`fz_clip(v, /, bound=2.5, *, floor=None)`, which tests `floor is not None` and
  the data), `*args`/`**kwargs` forwarding (`fz_apply(fn, *args, **kwargs)`, a `**opts`
  dict), a helper wrapped by a `functools.wraps` decorator (`inner(*args, **kwargs)`) as a
  function and as a method, and a module whose `forward(*args, **kwargs)` forwards to a
  method with keyword-only parameters and a runtime test (lucidrains' `Gate`); in half of
  those programs `@torch.no_grad()` on forward;
- `optional_arg`: forward takes `top_k: Optional[int] = None` (or `int | None`), None in
  some calls and an int in 1..W+2 in others (the oracle keeps both kinds among its inputs),
  tested with `if top_k is not None:` (nanoGPT's crop to the top k, on a copy or by
  `torch.where`) or in a conditional expression;
- `starred_unpack`: `fz_head, *fz_tail = torch.split(x, 2, dim=1)`, `*init, last = ...`,
  `first, *middle, final = ...` (with a runtime test), `y, *_ = fz_parts(x)` of a helper
  returning a tuple, `fz_combine(*args)`;
- `complex_rotary`: Llama's rotary embedding, a complex module attribute (a plain attribute
  or a non-persistent buffer, `torch.polar` of the angles) indexed or sliced at a constant, a
  runtime int of the data or forward's `count`, `view_as_complex`, a complex multiply,
  `view_as_real`; or `torch.polar` of runtime angles;
- `dynamic_dim`: forward takes `ctx`, a (T, W) tensor whose dim 0 is marked dynamic
  (`torch._dynamo.mark_dynamic(ctx, 0)`, T in 2..6 drawn per input: one compiled model takes
  every T): its mean, a size test `if ctx.size(0) > b:` (b in 2..4, so inputs fall on both
  sides), positions `torch.arange(0, ctx.size(0))`, a loop over its rows, its last rows;
- `buffer_state`: registered buffers forward changes in place, kept across calls: a 0-d
  step counter (`self.fz_steps += 1`), a KV-cache-like write at the step's slot
  (`self.fz_cache[pos] = x[0]` or `self.fz_cache[:, pos] = x[0]`, `pos` a runtime int or
  a 0-d tensor), `index_copy_`, `mul_` and `+=` on a running mean (`persistent=False`); the
  buffers are read only after every condition (the epilogue, with a test of the counter), so
  that the thresholds calibrated on separate eager runs stay valid; the oracle runs the inputs
  as one sequence of calls and compares the buffers after every call.

Each form draws from a random stream of its own (`_stream`), so that adding a form changes no
other statement, and only research programs (`Generator.researching`) get them:
`generate(seed, research=False)` is unchanged. Module-level code (functions, the decorator,
imports) goes to `Program.classes`, methods to `Program.methods`, buffers to `Program.init`.
`tags` adds the forms a campaign counts that are not statements of their own
(`halting_draw`: a bernoulli draw of probability 0 or 1; `python_draw`: Python's or numpy's
draw below 0 or 1; `python_numbers`: the `.tolist()`
spellings of `data_dependent_size`).
"""

from __future__ import annotations

import random

from dycl.fuzz.program import For, If, Line, Program, Research, Stmt, While, With, all_conditions, forms

FORMS = ("keyword_call", "optional_arg", "starred_unpack", "complex_rotary", "dynamic_dim", "buffer_state", "count_slice",
         "loop_invariant")
PROBABILITY = 0.15  # a research program gets a form (each form drawn on its own)
NESTED_PROBABILITY = 0.3  # ... in a block nested in forward's vector part rather than on top level
# what `tags` adds to `program.forms` for a campaign's per-form counts
DERIVED = ("halting_draw", "python_draw", "python_numbers")
# the issue-34 forms a campaign selects (`python -m dycl.fuzz --form issue34`)
ISSUE_34 = FORMS + DERIVED + ("size_window", "assert", "exception")
RUNTIME_STEP = "int(F.softmax(x, -1)[0, :4].argmax())"  # a runtime int of the data, 0..3

KEYWORD_SOURCE = '''\
import functools


def fz_traced(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)

    return inner


@fz_traced
def fz_mix(v, w=None, *, alpha=0.5, beta=1.0):
    if w is None:
        w = torch.zeros_like(v)
    return alpha * v + beta * w


def fz_clip(v, /, bound=2.5, *, floor=None):
    if floor is not None:
        v = torch.clamp(v, min=floor)
    if v.abs().max() > bound:
        return v * (bound / v.abs().max())
    return v


def fz_apply(fn, *args, **kwargs):
    return fn(*args, **kwargs)


class FzGate(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def step(self, v, *, threshold=0.0, scale=1.0):
        h = self.fc(v)
        if h.sum() > threshold:
            return torch.tanh(h) * scale
        return -torch.tanh(h)

    def forward(self, *args, **kwargs):
        return self.step(*args, **kwargs)
'''
KEYWORD_METHOD = '''\
@fz_traced
def fz_shift(self, v, scale=1.0, *, shift=0.0):
    return torch.tanh(v) * scale + shift
'''
KEYWORD_CALLS = [
    "x = fz_mix(x, beta=1.5)",
    "x = fz_mix(x, w=torch.tanh(x), alpha=0.25)",
    "x = fz_mix(beta=0.5, v=x)",
    "x = fz_clip(x, floor=-1.0)",
    "x = fz_clip(x, 1.5)",
    "x = fz_clip(x, bound=3.0, floor=-0.5)",
    "x = fz_apply(fz_clip, x, bound=1.5)",
    'fz_opts = {"alpha": 0.5, "beta": 0.5}\nx = fz_apply(fz_mix, x, **fz_opts)',
    "x = self.fz_shift(x, 0.5, shift=0.1)",
    "x = x + 0.5 * self.fz_gate(x, threshold=0.5, scale=2.0)",
    "fz_args = (x,)\nx = x * 0.5 + self.fz_gate(*fz_args, scale=0.5)",
]

OPTIONAL_SOURCE = "from typing import Optional"
OPTIONAL_PARAMETERS = ["top_k: Optional[int] = None", "top_k: int | None = None"]
OPTIONAL_USES = [
    "if top_k is not None:\n    fz_v, _ = torch.topk(x, min(top_k, x.size(-1)))\n"
    "    x = torch.where(x < fz_v[:, [-1]], x * 0.5, x)",
    "fz_logits = x.clone()\nif top_k is not None:\n    fz_v, _ = torch.topk(fz_logits, min(top_k, fz_logits.size(-1)))\n"
    "    fz_logits[fz_logits < fz_v[:, [-1]]] = -1.0\nx = x + 0.5 * F.softmax(fz_logits, dim=-1)",
    "fz_k = top_k if top_k is not None else {W}\nfz_v, _ = torch.topk(x, min(fz_k, x.size(-1)))\n"
    "x = x + 0.1 * fz_v.sum(-1, keepdim=True)",
    "x = x * (1.0 if top_k is None else 1.0 / (1 + top_k))",
]

STARRED_SOURCE = '''\
def fz_parts(v):
    return torch.tanh(v), v.sum(), [v.mean()]


def fz_combine(a, b, scale):
    return a * scale + b
'''
STARRED = [
    "fz_head, *fz_tail = torch.split(x, 2, dim=1)\nx = torch.cat([torch.tanh(fz_head)] + fz_tail, 1)",
    "*fz_init, fz_last = x.chunk(2, dim=1)\nx = torch.cat(fz_init + [fz_last * 0.5], 1)",
    "fz_first, *fz_middle, fz_final = torch.split(x, 1, dim=1)\nif fz_first.sum() > fz_final.sum():\n"
    "    x = x * 0.75\nx = x + 0.05 * len(fz_middle) * fz_middle[0]",
    "fz_y, *_ = fz_parts(x)\nx = x + 0.5 * fz_y",
    "fz_y, fz_total, *fz_rest = fz_parts(x)\nx = fz_y + 0.1 * fz_rest[0][0]",
    "fz_args = (x, torch.sigmoid(x), 0.5)\nx = fz_combine(*fz_args)",
]

ROTARY_SOURCE = '''\
def fz_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def fz_rotate(v, freqs_cis):
    v_ = torch.view_as_complex(v.float().reshape(*v.shape[:-1], -1, 2))
    return torch.view_as_real(v_ * freqs_cis).flatten(-2).type_as(v)
'''
ROTARY_TABLE = 16  # positions of the table of rotations
ROTARY = [
    "x = fz_rotate(x, self.fz_freqs[{pos}])",
    "x = fz_rotate(x, self.fz_freqs[{pos} : {pos} + 1])",
    "fz_xc = torch.view_as_complex(x.reshape(1, -1, 2))\nfz_xc = fz_xc * self.fz_freqs[{pos}]\n"
    "x = torch.view_as_real(fz_xc).flatten(1)",
    "for fz_i in range(2):\n    x = torch.tanh(fz_rotate(x, self.fz_freqs[{pos} + fz_i]))",
    "fz_rot = torch.polar(torch.ones({H}), x[0, :{H}])\n"
    "x = torch.view_as_real(torch.view_as_complex(x.reshape(1, -1, 2)) * fz_rot).flatten(1)",
]

DYNAMIC = [
    "x = x + 0.1 * torch.tanh(ctx.mean(0, keepdim=True))",
    "if ctx.size(0) > {b}:\n    x = x * 0.9\nelse:\n    x = x + 0.1 * ctx[-1:]",
    "fz_arange = torch.arange(0, ctx.size(0))\nx = x + 0.05 * (ctx * fz_arange[:, None]).sum(0, keepdim=True) / ctx.size(0)",
    "for fz_t in range(ctx.size(0)):\n    x = x + 0.05 * torch.tanh(ctx[fz_t : fz_t + 1] + x)",
    "x = x + 0.1 * ctx[-2:].mean(0, keepdim=True)",
]

# A beam search's count of live beams, then a slice by it (`k -= len(done)`, `x[:, :k]`): k is
# 3 less two runtime counts, negative where both are large (Python's slice from the end). A
# sub-DNN exported where each count is 3 (k = -3) tied one count to the other.
COUNT_SLICE = (
    "fz_k = 3\nfor fz_j in range(2):\n"
    "    fz_done = (x[0, fz_j : fz_j + 2] > 0).nonzero().squeeze(1)\n"
    "    fz_k -= len(fz_done)\n"
    "x = x + 0.1 * torch.cat((x, x[:, :fz_k] * 0.5), 1)[:, -{W}:]"
)

# A decoder's attention over memory fixed before its loop: the projection of the memory is the
# same at every step (dycl-hoist-invariant computes it once, before the loop), the loop stops
# on the data, and may run no time.
LOOP_INVARIANT = (
    "fz_mem = torch.tanh(x).repeat(64, 1)\nfz_i = 0\n"
    "while fz_i < 3 and float(x.abs().sum()) < {T}:\n"
    "    fz_att = torch.relu(self.fz_proj(fz_mem))\n"
    "    x = torch.tanh(x + 0.1 * fz_att.mean(0, keepdim=True)[:, :{W}] * x)\n"
    "    fz_i += 1"
)

BUFFER_SLOTS = 4
BUFFER_WRITES = {  # layout of fz_cache -> writes at slot `fz_pos`
    "rows": [
        "fz_pos = int(self.fz_steps) % {S}\nself.fz_cache[fz_pos] = x[0]\nself.fz_steps += 1",
        "fz_pos = self.fz_steps % {S}\nself.fz_cache[fz_pos] = torch.tanh(x[0])\nself.fz_steps += 1",
        "self.fz_cache.index_copy_(0, (self.fz_steps % {S}).view(1), x.detach())\nself.fz_steps += 1",
    ],
    "columns": [
        "fz_pos = int(self.fz_steps) % {S}\nself.fz_cache[:, fz_pos] = x[0]\nself.fz_steps += 1",
    ],
}
BUFFER_MEAN = "self.fz_mean.mul_(0.5)\nself.fz_mean += 0.5 * x.detach()[0]"
BUFFER_READS = {
    "rows": "self.fz_cache.mean(0, keepdim=True)",
    "columns": "self.fz_cache.mean(1)[None]",
}


SOURCES = (KEYWORD_SOURCE, OPTIONAL_SOURCE, STARRED_SOURCE, ROTARY_SOURCE)  # module-level code the forms add


def _stream(name: str, seed: int) -> random.Random:
    return random.Random(f"dycl.fuzz.forms/{name}/{seed}")


def _nested(stmt: Stmt) -> list[list[Stmt]]:
    """The statement lists directly inside a statement."""
    if isinstance(stmt, If):
        return [body for _, body in stmt.branches] + ([stmt.orelse] if stmt.orelse is not None else [])
    if isinstance(stmt, (For, While, With)):
        return [stmt.body]
    return []


def _blocks_in(stmts: list[Stmt]):
    yield stmts
    for stmt in stmts:
        for inner in _nested(stmt):
            yield from _blocks_in(inner)


def _ends_in_return(block: list[Stmt]) -> bool:
    return bool(block) and isinstance(block[-1], Line) and block[-1].text.split("\n")[-1].lstrip().startswith("return")


def _insert(program: Program, vector_start: int, rng: random.Random, stmt: Research, nested: bool = True) -> None:
    """On forward's top level (from its vector part on) or, for some, in a block nested there
    (before the block's closing `return`: after it, eager never runs the statement)."""
    body = program.body
    if nested and rng.random() < NESTED_PROBABILITY:
        blocks = [b for s in body[vector_start:] for inner in _nested(s) for b in _blocks_in(inner)]
        if blocks:
            block = rng.choice(blocks)
            block.insert(rng.randint(0, len(block) - _ends_in_return(block)), stmt)
            return
    body.insert(rng.randint(vector_start, len(body) - _ends_in_return(body)), stmt)


def _add_source(program: Program, source: str) -> None:
    if source not in program.classes:
        program.classes.append(source)


def add_forms(program: Program, width: int, vector_start: int, outputs: list[str]) -> None:
    """Issue 34's forms, each on its own stream (a research program's last step)."""
    seed = program.seed
    r = _stream("keyword_call", seed)
    if r.random() < PROBABILITY:
        calls = r.sample(KEYWORD_CALLS, 2)
        _add_source(program, KEYWORD_SOURCE)
        if any("self.fz_shift" in c for c in calls):
            program.methods.append(KEYWORD_METHOD)
        if any("self.fz_gate" in c for c in calls):
            program.modules["fz_gate"] = f"FzGate({width})"
        _insert(program, vector_start, r, Research("\n".join(calls), form="keyword_call"))
        if r.random() < 0.5:
            program.forward_decorators.append("@torch.no_grad()")
    r = _stream("optional_arg", seed)
    if r.random() < PROBABILITY:
        parameter = r.choice(OPTIONAL_PARAMETERS)
        _add_source(program, OPTIONAL_SOURCE)
        program.arguments.append((parameter, "optional_int"))
        _insert(program, vector_start, r, Research(r.choice(OPTIONAL_USES).replace("{W}", str(width)), form="optional_arg"))
    r = _stream("starred_unpack", seed)
    if r.random() < PROBABILITY:
        text = r.choice(STARRED)
        if "fz_parts" in text or "fz_combine" in text:
            _add_source(program, STARRED_SOURCE)
        _insert(program, vector_start, r, Research(text, form="starred_unpack"))
    r = _stream("complex_rotary", seed)
    if r.random() < PROBABILITY:
        _add_source(program, ROTARY_SOURCE)
        table = f"fz_freqs_cis({width}, {ROTARY_TABLE})"
        if r.random() < 0.5:
            program.modules["fz_freqs"] = table  # a plain attribute holding a complex tensor
        else:
            program.init.append(f'self.register_buffer("fz_freqs", {table}, persistent=False)')
        positions = [str(r.randrange(ROTARY_TABLE - 2)), RUNTIME_STEP]
        if "count" in outputs:
            positions.append(f"count % {ROTARY_TABLE - 2}")
        pos = r.choice(positions)
        text = r.choice(ROTARY).replace("{H}", str(width // 2))
        if "{pos}" in text:
            text = f"fz_p = {pos}\n" + text.replace("{pos}", "fz_p")
        _insert(program, vector_start, r, Research(text, form="complex_rotary"))
    r = _stream("dynamic_dim", seed)
    if r.random() < PROBABILITY:
        program.arguments.insert(0, ("ctx", "dynamic_rows"))  # (before any parameter with a default)
        uses = r.sample(DYNAMIC, r.choice([1, 2]))
        text = "\n".join(u.replace("{b}", str(r.randint(2, 4))) for u in uses)
        _insert(program, vector_start, r, Research(text, form="dynamic_dim"))
    r = _stream("buffer_state", seed)
    if r.random() < PROBABILITY:
        layout = r.choice(sorted(BUFFER_WRITES))
        shape = f"{BUFFER_SLOTS}, {width}" if layout == "rows" else f"{width}, {BUFFER_SLOTS}"
        program.init += ['self.register_buffer("fz_steps", torch.tensor(0))',
                         f'self.register_buffer("fz_cache", torch.zeros({shape}))']
        program.buffers += ["fz_steps", "fz_cache"]
        text = r.choice(BUFFER_WRITES[layout]).replace("{S}", str(BUFFER_SLOTS))
        mean = r.random() < 0.5
        if mean:
            program.init.append(f'self.register_buffer("fz_mean", torch.zeros({width}), persistent=False)')
            program.buffers.append("fz_mean")
            text += "\n" + BUFFER_MEAN
        _insert(program, vector_start, r, Research(text, form="buffer_state"))
        read = f"torch.tanh({BUFFER_READS[layout]})" + (" + 0.1 * self.fz_mean[None]" if mean else "")
        gain = r.choice(["(2.0 if int(self.fz_steps) > 2 else 1.0)", "(0.5 if self.fz_steps > 3 else 1.0)", "1.0"])
        # after every condition (forward's last statement): a read of the buffers changes no
        # statistic the thresholds were calibrated on
        program.body.append(Research(f"x = x + 0.1 * {gain} * {read}", form="buffer_state"))
    r = _stream("count_slice", seed)
    if r.random() < PROBABILITY:
        _insert(program, vector_start, r, Research(COUNT_SLICE.replace("{W}", str(width)), form="count_slice"))
    r = _stream("loop_invariant", seed)
    if r.random() < PROBABILITY:
        program.modules["fz_proj"] = f"nn.Linear({width}, 2048)"  # (heavy enough to move: 64 x W x 2048 MACs)
        text = LOOP_INVARIANT.replace("{W}", str(width)).replace("{T}", str(round(r.uniform(0.5, 1.5) * width, 2)))
        _insert(program, vector_start, r, Research(text, form="loop_invariant"))


def tags(program: Program) -> list[str]:
    """`program.forms` and the forms of `DERIVED` the program has, sorted."""
    found = set(forms(program))
    if any("bernoulli" in c.wrap for c in all_conditions(program)):
        found.add("halting_draw")
    if any("random." in c.wrap for c in all_conditions(program)):
        found.add("python_draw")
    if any(isinstance(s, Research) and s.form == "data_dependent_size" and ".tolist()" in s.text for s in _walk(program)):
        found.add("python_numbers")
    return sorted(found)


def _walk(program: Program):
    for stmts in [program.body, *program.helpers.values()]:
        for block in _blocks_in(stmts):
            yield from block


__all__ = ["FORMS", "ISSUE_34", "add_forms", "tags"]
