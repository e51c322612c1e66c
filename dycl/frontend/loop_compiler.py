"""Loops (`loops.py` holds their helpers).

Unrolled when they iterate over import-time values (or use their index), `scf.for`
for `range(N)` with an unused index, `scf.for`/`scf.while` otherwise. Carried variables
reach a fixed point: the body is compiled with the types they have on entry, and again
with joined types when the end of the body disagrees (a tensor that grows becomes
`[1,?]`); constants that change in the body become carried IR values. A value whose kind
changes in the first iteration (a uint8 mask that comes back bool) has that iteration
compiled apart (`_peeled`, `_peeled_while`). Each function takes the compiler as its context.
"""

from __future__ import annotations

import ast
import contextlib
import copy
from typing import Any

from torch_mlir import ir
from xdsl.ir import Attribute

from dycl.frontend import aliases, exceptions, held_items, host_builtins, host_numpy, lists, loops, nodes, runs, structure
from dycl.frontend import values as V
from dycl.frontend.attributes import PARTIAL
from dycl.frontend.build import erase_after
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError
from dycl.frontend.liveness import MUTATING_METHODS, live_before, names_mutated, names_read, names_rebound, written_in
from dycl.frontend.rewrite import fresh_id, lower, unroll


def compile_loop(c, stmts, i, env, live_out):
    loop: nodes.Loop = stmts[i]
    node = loop.node
    rest = stmts[i + 1 :]
    if isinstance(node, ast.For):
        return _compile_for(c, loop, rest, env, live_out)
    return _compile_while(c, loop, rest, env, live_out)


def _compile_for(c, loop: nodes.Loop, rest, env, live_out):
    node: ast.For = loop.node
    iterable = c._try_constant(node.iter, env)
    structural = False
    if iterable is V.MISSING:
        iterable = c.try_structure(node.iter, env)  # `for l in lengths` (a list input)
        if isinstance(iterable, dict):  # `for key in outputs`: its keys
            iterable = list(iterable)
        structural = isinstance(iterable, (list, tuple))
        if not structural:
            iterable = V.MISSING  # a tensor or runtime list: not a structure to unroll
    if iterable is V.MISSING:
        iterable = _static_range(c, node.iter, env)  # `range(t.shape[0])`
    if iterable is V.MISSING:
        as_while = _runtime_iteration(c, loop, env)
        if as_while is not None:
            return as_while + rest, env
        raise c.error(
            node,
            "`for` over a value computed at runtime",
            "loop over `range(n)` (n may be a runtime int), a list, a ModuleList, or "
            "zip/enumerate of them",
        )
    target_names = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    body_reads = set().union(*(names_read(s) for s in node.body))
    # a runtime loop binds no index: unroll when the body or the code after it reads it
    read_after = target_names & live_before(rest, live_out)
    if isinstance(iterable, range) and not (target_names & body_reads) and not read_after:
        try:
            with _undone_on(c, loops.LoopStructureError):
                return _compile_runtime_loop(c, loop, rest, env, live_out, trip=iterable)
        except loops.LoopStructureError as error:
            if getattr(node, "dycl_peeled", None) == BREAK:
                raise  # (the loop it was peeled from is unrolled instead)
            # a kind that changes in the first iteration only (a uint8 mask, then a bool
            # one), or a structure in a loop too long to unroll: that iteration apart
            long = len(iterable) > loops.MAX_UNROLL
            peeled = _peeled(c, loop, iterable) if long or getattr(error, "loop", None) is node else None
            if peeled is not None:
                return peeled + rest, env
            if long:
                raise
            if loops.can_break(node.body):
                compiled = _compiled_peeled(c, loop, iterable, rest, env, live_out)
                if compiled is not None:
                    return compiled
            # `states` is None, then a tuple: a constant trip count can be unrolled instead
            # (one copy per iteration: its sizes are static, which every backend compiles)
    if isinstance(iterable, range) and not read_after and loops.unrolled_copies(node.body, len(iterable)) > loops.MAX_UNROLLED_COPIES:
        try:  # (the index a runtime int: `x[:, i] = ...` as for `range(n)`)
            with _undone_on(c, FrontendError):
                return _compile_runtime_loop(c, loop, rest, env, live_out, trip=iterable, index=node.target)
        except FrontendError as error:
            # a kind that changes in the first iteration only: that iteration apart; else
            # unrolled, however many copies that takes
            peeled = _peeled(c, loop, iterable) if getattr(error, "loop", None) is node else None
            if peeled is not None:
                return peeled + rest, env
            if loops.can_break(node.body) and len(iterable) > loops.MAX_NESTED_UNROLL:
                # each unrolled iteration would sit inside the `if` of the one before: too
                # deep to compile, so the runtime form's refusal is the answer
                raise
    items = list(iterable)
    if len(items) > loops.MAX_UNROLL:
        raise c.error(node, f"loop of {len(items)} iterations whose index is used", f"keep loops that use their index under {loops.MAX_UNROLL} iterations")
    _refuse_resizing_the_iterated_list(c, node, env)
    if structural and structure.has_list_token(items):
        # `for g in groups` over lists: each iteration binds the item `groups` holds when
        # it starts (as Python's iterator reads it), not the one there was before the loop:
        # an earlier iteration may have changed it (`g.append(h)` under an `if`)
        bind = lambda k: [loops.item_assignment(node, k)]  # noqa: E731
        return unroll(c.scope.source, loop, list(range(len(items))), bind) + rest, env
    unrolled = unroll(c.scope.source, loop, items, lambda item: _bind_target(c, node.target, item))
    return unrolled + rest, env


BREAK = "break"  # (`dycl_peeled` of the rest of a loop peeled because it can `break`)


def _compiled_peeled(c, loop: nodes.Loop, trip: range, rest, env, live_out):
    """A loop that can `break` ends each iteration in a host decision, so unrolling it
    fuses nothing; it would compile one sub-DNN per iteration (a decoder's step once per
    cache length). Its first iteration is peeled (`_peeled`) and the rest compiled as a
    runtime loop, here and now: where that fails, None, and the loop is unrolled as before."""
    peeled = _peeled(c, loop, trip, BREAK)
    if peeled is None:
        return None
    try:
        with _undone_on(c, FrontendError):
            after = c.compile_block(peeled, dict(env), live_before(rest, live_out))
    except FrontendError:
        return None
    return rest, after


def _peeled(c, loop: nodes.Loop, trip: range, why: Any = True) -> list[ast.stmt] | None:
    """A loop whose carried values change structure or kind in its first iteration only (an
    empty cache, then one holding a tensor per layer; `h = None`, then a tensor; a uint8
    mask, then a bool one), its first iteration apart (unrolled) and the others a runtime
    loop at the end of it, where the first iteration goes on (a `break` there jumps past
    it, as out of the whole loop):

        <body, first item>
        for <target> in <the range after the first item>: <body>

    So the rest starts from the values of the path that goes on (a decoder's next token,
    not the prompt it replaced on the path that stopped). None when that is not Python's
    meaning as written (a `continue` would skip the rest, a `return` leaves from inside
    both loops) or was done already (the rest is not peeled again: what still changes
    there is unrolled or refused)."""
    node: ast.For = loop.node
    if len(trip) < 2 or loop.has_return or getattr(node, "dycl_peeled", False):
        return None
    if any(isinstance(n, ast.Continue) for n in loops.own_statements(node.body)):
        return None
    rest_range = f"__rest_range{fresh_id()}"
    rest = copy.copy(node)
    rest.iter = nodes.located(ast.Name(rest_range, ast.Load()), node)
    rest.dycl_peeled = why
    nodes.written_as(rest, node)
    first = copy.copy(node)
    first.body = [*node.body, rest]
    head = unroll(c.scope.source, nodes.Loop(first, loop.returns), [trip[0]], lambda item: _bind_target(c, node.target, item))
    return [nodes.BindConst(rest_range, trip[1:], node.lineno), *head]


def _peeled_while(c, loop: nodes.Loop) -> list[ast.stmt] | None:
    """A `while` whose carried values change kind in its first iteration only (a uint8 mask
    before the loop, a bool one after an iteration), its first iteration apart (unrolled,
    its test an `if` that leaves it) and the others a runtime loop:

        __went_on = False
        if not <test>: break ; <body> ; __went_on = True      (one unrolled iteration)
        if __went_on:
            while <test>: <body>

    The test is evaluated before every iteration, as Python does. After the loop the
    variable is of the kind it entered with where the loop never ran and of the other one
    where it did: the `if` that joins them compiles each path on its own (joins.py). None
    when that is not Python's meaning as written (as `_peeled`; a `while ... else`), or
    was done already."""
    node: ast.While = loop.node
    if loop.has_return or node.orelse or getattr(node, "dycl_peeled", False):
        return None
    if any(isinstance(n, ast.Continue) for n in loops.own_statements(node.body)):
        return None
    went_on = f"__went_on{fresh_id()}"
    not_test = nodes.located(ast.UnaryOp(op=ast.Not(), operand=copy.deepcopy(node.test)), node)
    stop = nodes.located(ast.If(test=not_test, body=[nodes.located(ast.Break(), node)], orelse=[]), node)
    first = copy.copy(node)
    first.body = [stop, *node.body, nodes.assign(went_on, ast.Constant(True), node)]
    head = unroll(c.scope.source, nodes.Loop(first, loop.returns), [None], lambda item: [])
    rest = copy.copy(node)
    rest.dycl_peeled = True
    nodes.written_as(rest, node)
    guarded = nodes.located(ast.If(test=ast.Name(went_on, ast.Load()), body=[nodes.Loop(rest, loop.returns)], orelse=[]), node)
    return [nodes.assign(went_on, ast.Constant(False), node), *head, guarded]


def _refuse_resizing_the_iterated_list(c, node: ast.For, env) -> None:
    """A loop over a list that its body grows or shrinks runs over the items Python's
    iterator would see at each step, which unrolling over the items at the start does not."""
    iterated = {name for name in names_read(node.iter) if lists.is_list(env.get(name))}
    for sub in (n for stmt in node.body for n in ast.walk(stmt)):
        receiver = sub.func.value if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in MUTATING_METHODS else None
        if isinstance(sub, ast.Delete):
            receiver = next((t.value for t in sub.targets if isinstance(t, ast.Subscript)), None)
        if isinstance(receiver, ast.Name) and receiver.id in iterated:
            raise c.error(
                sub, f"`{source_text(sub)}` changes the length of `{receiver.id}`, which the `for` loop goes over",
                f"loop over a copy (`for ... in list({receiver.id}):`) if the new items should not be visited",
            )
    rebound = {n.id for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if rebound & iterated and structure.has_list_token(c.try_structure(node.iter, env)):
        name = sorted(rebound & iterated)[0]
        raise c.error(node, f"a `for` over lists held in `{name}`, which its body binds again",
                      f"loop over a name the body leaves alone (`items = {name}` before the loop)")


@contextlib.contextmanager
def _undone_on(c, error_type):
    """Erase the host ops built inside this block (and restore the scope) if it raises."""
    block = ir.InsertionPoint.current.block
    before = len(block.operations)
    scope = c.scope
    try:
        yield
    except error_type:
        erase_after(block, before)
        c.scope = scope
        raise


def _static_range(c, call: ast.expr, env):
    """`range(...)` whose arguments read runtime values but are known here (a static
    size: `range(mask.shape[0])`), else V.MISSING. Only side-effect-free arguments are
    evaluated (they are evaluated again if the loop turns out to be a runtime one)."""
    if not (isinstance(call, ast.Call) and c._try_constant(call.func, env, quiet=True) is range):
        return V.MISSING
    pure = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Load, ast.operator, ast.unaryop)
    if call.keywords or not all(isinstance(n, pure) for arg in call.args for n in ast.walk(arg)):
        return V.MISSING
    values = [c.expression(arg, env) for arg in call.args]
    if not all(isinstance(v, V.Const) and isinstance(v.value, int) for v in values):
        return V.MISSING
    try:
        return range(*(v.value for v in values))
    except (TypeError, ValueError):
        return V.MISSING


def _runtime_iteration(c, loop: nodes.Loop, env) -> list[ast.stmt] | None:
    """`for i in range(a, b, step)` with runtime bounds, or `for t in lst` over a list
    whose length is known only at runtime, as the `while` loop Python runs:

        __seq = lst; __k = 0                     __stop = b; __k = a
        while __k < len(__seq):                  while __k < __stop:   (> for step < 0)
            t = __seq[__k]; __k = __k + 1            i = __k; __k = __k + step
            <body>                                   <body>

    (a list iterator reads the list's length at every step, so an append in the body
    is iterated over too; `range` evaluates its arguments once). None: not such a loop."""
    node: ast.For = loop.node
    uid = fresh_id()
    k, stop, seq = f"__k{uid}", f"__stop{uid}", f"__seq{uid}"
    call = node.iter
    if isinstance(call, ast.Call) and c._try_constant(call.func, env, quiet=True) is range:
        if call.keywords or any(isinstance(a, ast.Starred) for a in call.args) or not 1 <= len(call.args) <= 3:
            return None
        args = list(call.args)
        first = args[0] if len(args) > 1 else ast.Constant(0)
        last = args[1] if len(args) > 1 else args[0]
        step = c._try_constant(args[2], env) if len(args) == 3 else 1
        if not isinstance(step, int) or isinstance(step, bool) or step == 0:
            raise c.error(call, "`range` with a step known only at runtime (or 0)", "use a constant step")
        # Python evaluates range's arguments in order, once
        head = [nodes.assign(f"__start{uid}", first, node), nodes.assign(stop, last, node), nodes.assign(k, ast.Name(f"__start{uid}", ast.Load()), node)]
        test = f"{k} {'<' if step > 0 else '>'} {stop}"
        item = ast.Name(k, ast.Load())
    else:
        start = _enumerate_start(c, call, env)  # `enumerate(rows)`: its items count from `start`
        if start is None and _reversed_argument(c, call, env) is not None:
            backwards = c.expression(_reversed_argument(c, call, env), env)
            if isinstance(backwards, V.Dyn) and V.is_tensor_type(backwards.type):
                return _unrolled_rows(c, loop, backwards, env, reverse=True)  # `reversed(x.numpy())`
        iterated = c.expression(call if start is None else call.args[0], env)  # evaluated once, as Python does
        if isinstance(iterated, V.Dyn) and V.is_tensor_type(iterated.type):
            return _unrolled_rows(c, loop, iterated, env, start)
        if start is not None:
            iterated = c.expression(call, env)
        if not lists.is_runtime_list(iterated):
            return None
        step = 1
        head = [nodes.BindConst(seq, iterated, node.lineno), nodes.assign(k, ast.Constant(0), node)]
        test = f"{k} < len({seq})"
        item = ast.Subscript(value=ast.Name(seq, ast.Load()), slice=ast.Name(k, ast.Load()), ctx=ast.Load())
    bind = nodes.located(ast.Assign(targets=[node.target], value=item), node)
    advance = nodes.parsed(f"{k} = {k} + {step}", node)[0]
    condition = nodes.parsed(test, node, mode="eval")
    loop_node = nodes.located(ast.While(test=condition, body=[bind, advance, *node.body], orelse=[]), node)
    nodes.written_as(loop_node, node)  # (messages at the loop quote the user's `for`)
    return [*head, nodes.Loop(loop_node, loop.returns)]


def _enumerate_start(c, call: ast.expr, env) -> int | None:
    if not (isinstance(call, ast.Call) and c._try_constant(call.func, env, quiet=True) is enumerate and call.args
            and not call.keywords and len(call.args) <= 2 and not any(isinstance(a, ast.Starred) for a in call.args)):
        return None
    start = c._try_constant(call.args[1], env) if len(call.args) == 2 else 0
    return start if type(start) is int else None


def _reversed_argument(c, call: ast.expr, env) -> ast.expr | None:
    """`a` of `reversed(a)`, else None."""
    if (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords and not isinstance(call.args[0], ast.Starred)
            and c._try_constant(call.func, env, quiet=True) is reversed):
        return call.args[0]
    return None


def _unrolled_rows(c, loop: nodes.Loop, tensor: V.Dyn, env: dict, start: int | None = None, reverse: bool = False) -> list[ast.stmt]:
    """`for row in t` (or a numpy array, or `reversed(t)`: last row first) whose first
    dimension is static: one copy of the body per row. The rows are read before the loop, so a body that changes a row or
    `t` in place (a row is a view of `t` in PyTorch and numpy) is refused."""
    node: ast.For = loop.node
    memory = aliases.storage_of(tensor.example)
    views = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)} | {
        name for name, value in env.items() if memory is not None and memory in aliases.storages(value)
    }
    changed = next((n for stmt in node.body for n in ast.walk(stmt) if names_mutated(n) & views), None)
    if changed is not None:
        raise c.error(
            changed, "an in-place change inside a `for` over the rows of a tensor or array (each row is a view)",
            "loop over `range(len(t))` and index `t[i]` where you read it",
        )
    rows = [host_numpy.mark(row, [tensor]) for row in host_builtins.tensor_rows(c, tensor, node.iter, "`for`")]
    if isinstance(tensor, host_numpy.NumpyValue):
        # numpy's integers index and count as Python ints do (`self.experts[k]`, `gate[0, k]`)
        rows = [host_numpy.integer_item(c, row) or row for row in rows]
    if reverse:
        rows.reverse()
    if start is not None:
        rows = [V.Tup((start + k, row)) for k, row in enumerate(rows)]
    return unroll(c.scope.source, loop, rows, lambda row: _bind_target(c, node.target, row))


def _bind_target(c, target: ast.expr, item) -> list[ast.stmt]:
    if isinstance(target, ast.Name):
        return [nodes.BindConst(target.id, structure.env_value(item), target.lineno)]
    if isinstance(target, (ast.Tuple, ast.List)):
        items = list(item.items) if isinstance(item, V.Tup) else list(item)
        if len(items) != len(target.elts):
            raise c.error(target, "loop target does not match the items")
        return [s for t, v in zip(target.elts, items) for s in _bind_target(c, t, v)]
    raise c.error(target, "loop target that is not a name or tuple of names")


def _compile_while(c, loop: nodes.Loop, rest, env, live_out):
    # (the host runs it as Python would: a loop that never ends in PyTorch never ends here)
    try:
        with _undone_on(c, loops.CarriedKindChange):
            return _compile_runtime_loop(c, loop, rest, env, live_out, trip=None)
    except loops.CarriedKindChange as error:
        peeled = _peeled_while(c, loop) if error.loop is loop.node else None
        if peeled is None:
            raise
        return peeled + rest, env


def _compile_runtime_loop(c, loop: nodes.Loop, rest, env, live_out, trip: range | None, index: ast.expr | None = None):
    """scf.for (a range whose index is unused, no break/return) or scf.while; `index`:
    the target a constant range's runtime counter is bound to at each step."""
    node = loop.node
    source = c.scope.source
    uid = fresh_id()
    body_end = fresh_id()
    brk, ret_flag, ret_var, counter = f"__brk{uid}", f"__returned{uid}", f"__retval{uid}", f"__count{uid}"
    has_break = any(isinstance(n, ast.Break) for n in loops.own_statements(node.body))
    flat_body = lower(
        source,
        node.body,
        exceptions.loop_body(nodes.ReturnFromLoop(ret_var, ret_flag, body_end), loop),
        on_break=lambda line: [nodes.BindConst(brk, True, line), nodes.Jump(body_end, line)],
        on_continue=lambda line: [nodes.Jump(body_end, line)],
    ) + [nodes.Label(body_end)]
    use_for = trip is not None and not has_break and not loop.has_return and index is None
    extra: dict[str, V.EnvValue] = {}
    if has_break:
        extra[brk] = V.Const(False)
    if loop.has_return:
        extra[ret_flag] = V.Const(False)
        extra[ret_var] = V.UNDEF
    if trip is not None and not use_for:
        extra[counter] = V.Const(trip.start)
        increment = ast.parse(f"{counter} = {counter} + {trip.step}").body[0]
        increment.lineno = node.lineno
        flat_body = [increment] + flat_body
        if index is not None:
            flat_body = [nodes.located(ast.Assign(targets=[copy.deepcopy(index)], value=ast.Name(counter, ast.Load())), node)] + flat_body

    post: list[ast.stmt] = []
    if loop.has_return:
        test = ast.Name(ret_flag, ast.Load())
        post_if = ast.If(test=test, body=loop.returns.statements(ast.Name(ret_var, ast.Load()), node.lineno), orelse=[])
        post_if.lineno = node.lineno
        post.append(post_if)
    after = post + rest
    live_after_loop = live_before(after, live_out) | set(extra)
    carried = _carried_names(c, flat_body, node, live_after_loop)
    env = {**env, **extra}
    # name -> loops.Carried (IR-typed) or an EnvValue that has not changed in the loop so far
    state: dict[str, Any] = {name: env.get(name, V.UNDEF) for name in carried}
    # Names the body may read before it assigns them: a None there is a value the body
    # reads (`h = self.gru(x, h)` with `h = None` first), never a stand-in for a tensor.
    read_first = live_before(flat_body, set(carried) | live_after_loop)
    if isinstance(node, ast.While):
        read_first |= names_read(node.test)
    # A module attribute the loop assigns that the call had not assigned before it
    # (attributes.py): a read before the body assigns it is refused when the body is
    # compiled (the first iteration reads the module's value); after the loop it holds
    # the module's value still if the loop may not run, or the body may not assign it.
    unassigned_before, partial_after = set(), set()
    for name in carried:
        if c.attributes.is_variable(name) and (state[name] is V.UNDEF or state[name] is PARTIAL):
            state[name] = V.UNDEF
            unassigned_before.add(name)
    always_runs = use_for and len(trip) > 0
    for name, value in state.items():
        if V.has_dyn(value):
            state[name] = _carried(c, value, value, node, name)

    # Python shares a list between the names bound to it: one the loop carries changes
    # for all of them (`alias = toks` before the loop, `toks.append(t)` inside)
    followers = lists.sharing(env, carried)
    # ... and a tensor between the names bound to it (`cx = hx` before the loop, `hx[idx],
    # cx[idx] = ...` inside): carried once while the body keeps them one tensor
    one_tensor = _one_tensor(env, carried, followers)
    for follower in one_tensor:
        carried.remove(follower)
        del state[follower]
    followers.update(one_tensor)
    # ... and a list built here holds a carried tensor itself (`hx_list.append(hx)` in an
    # earlier time step, then `hx[idx] = ...` in this loop): its item follows the name
    rebound = names_rebound(flat_body)  # (a list keeps the tensor a rebound name held)
    holders = held_items.lists_holding(env, carried, followers, read_first | live_after_loop, rebound)
    not_held: set[str] = set()
    retyped_lists: dict[str, FrontendError] = {}
    exits = frozenset(name for name in (brk, ret_flag) if name in extra)
    read_on_exit = live_after_loop | (names_read(node.test) if isinstance(node, ast.While) else set())
    with _compiling_loop(c, exits, read_on_exit):
        for _attempt in range(8):
            try:
                if use_for:
                    op, end_env = _build_for(c, node, trip, state, env, flat_body, live_after_loop, followers, holders)
                else:
                    op, end_env = _build_while(c, node, trip, state, env, flat_body, counter, brk, ret_flag, has_break, loop.has_return, live_after_loop, followers, holders)
            except loops.CarriedListKind as retyped:
                # a list that enters the loop with known items (`tokens = []`) holds what
                # the body appends: carry a runtime list of that kind and build it again
                # (once: a body that appends two kinds is refused where it appends)
                if retyped.name in retyped_lists:
                    first = retyped_lists[retyped.name]  # where the first kind met the second
                    raise FrontendError(first.construct, first.hint, file=first.file, line=first.line) from None
                retyped_lists[retyped.name] = retyped.mismatch
                entry = state[retyped.name]
                state[retyped.name] = loops.Carried(entry.initial, [retyped.list_type], entry.examples, entry.structure, entry.may_share)
                continue
            changed = False
            _check_sharing(c, node, {f: l for f, l in followers.items() if f not in one_tensor}, end_env)
            for name, held in list(holders.items()):
                if not held_items.still_held(env[name], end_env.get(name), held, end_env):
                    del holders[name]  # (carried below, as any list the body changed)
                    not_held.add(name)
                    changed = True
            for follower, leader in list(one_tensor.items()):
                if not held_items.same_tensor(end_env.get(follower), end_env.get(leader)):
                    # one tensor when the loop starts, two after an iteration: carried
                    # apart (their aliasing differs between iterations: never mutated)
                    del one_tensor[follower], followers[follower]
                    carried.append(follower)
                    state[follower] = _carried(c, env[follower], env[follower], node, follower)
                    changed = True
            # A variable the body changed that liveness did not see written (an alias of a
            # tensor mutated in place) is carried too, unless nothing reads it again (a dead
            # alias must not make the carry look shared on some iterations only).
            # A list holding such a tensor follows it instead (the tensors first, so that
            # the lists holding them are seen).
            unseen = [
                name for name in sorted(set(env) - written_in(flat_body))
                if (name in read_first or name in live_after_loop) and name not in carried and name not in followers
                and name not in holders and name in end_env and not V.same_value(end_env[name], env[name])
            ]
            for name in sorted(unseen, key=lambda n: isinstance(env[n], lists.StaticList)):
                if isinstance(env[name], lists.StaticList) and name not in not_held:
                    holders.update(held_items.lists_holding(env, carried, followers, {name}, rebound))
                    if name in holders:
                        changed = True
                        continue
                carried.append(name)
                state[name] = _carried(c, env[name], env[name], node, name) if V.has_dyn(env[name]) else env[name]
                changed = True
            for name in carried:
                entry, end = state[name], end_env.get(name, V.UNDEF)
                if isinstance(entry, loops.Carried):
                    end_types = _loop_types(c, end, node, name)
                    if len(end_types) != len(entry.types) or not V.same_structure(end, entry.structure):
                        raise _structure_error(c, node, name)
                    joined = _joined_types(c, node, name, entry.types, end_types)
                    if joined != entry.types:
                        state[name] = entry = loops.Carried(entry.initial, joined, entry.examples, entry.structure, entry.may_share)
                        changed = True
                    if not entry.may_share and aliases.alias_group(env, name, carried) != aliases.alias_group(end_env, name, carried):
                        # aliasing differs between iterations: never mutate this carry (the
                        # end-of-body examples are new in every attempt: mark it only once)
                        memory = aliases.storages(env.get(name, V.UNDEF)) | aliases.storages(end) or frozenset({0})
                        state[name] = loops.Carried(entry.initial, entry.types, entry.examples, entry.structure, memory)
                        changed = True
                elif end is PARTIAL:
                    partial_after.add(name)  # assigned on some paths of the body only
                elif not (end is V.UNDEF or V.same_value(end, entry)):
                    if name in read_first and loops.holds_none(entry):
                        raise _structure_error(c, node, name)
                    state[name] = _carried(c, entry, end, node, name)
                    changed = True
            if not changed:
                break
            op.erase()
        else:
            raise c.error(node, "loop-carried values do not settle on one type", "keep each carried tensor's rank and dtype fixed")

    env = dict(env)
    results = iter(op.results)
    for name, entry in loops.carried_items(state):
        end = end_env.get(name)
        examples = [V.example_of(l) for l in V.leaves(end)] if end not in (None, V.UNDEF) else entry.examples
        leaves = [V.Dyn(next(results), t, e, entry.may_share) for t, e in zip(entry.types, examples)]
        env[name] = V.rebuild(entry.structure, leaves)
    env.update({name: PARTIAL for name in unassigned_before if name in partial_after or not always_runs})
    if trip is not None and not loop.has_return:
        for name in carried:
            if name in env:  # (syntax may count a name no variable holds: `torch` of `torch.relu_(x)`)
                env[name] = loops.length_after_for(env[name], state[name], node, trip, name, followers)
    for follower, leader in followers.items():
        env[follower] = env[leader]
    for name, held in holders.items():
        env[name] = held_items.with_held_items(c, env[name], held, env)
    return after, env


@contextlib.contextmanager
def _compiling_loop(c, exits: frozenset[str], read_on_exit: set[str]):
    c._loop_exits.append((exits, read_on_exit))
    try:
        yield
    finally:
        c._loop_exits.pop()


def _check_sharing(c, node, followers: dict[str, str], end_env: dict) -> None:
    """Names sharing a list at the loop's start share it at the end of the body: else
    one was bound to a new list on some path, and which list the other is afterwards
    depends on the path (a change through it could not be followed)."""
    for follower, leader in followers.items():
        if end_env.get(follower) is not end_env.get(leader):
            raise c.error(
                node,
                f"`{follower}` and `{leader}` are one list before this loop, and the loop binds "
                "one of them to another list on some paths",
                f"copy the list where you need two (`{follower} = list({leader})`), or "
                "change the list in place (`lst.append`, `lst[k] = v`) instead of rebinding the name",
            )


def _one_tensor(env: dict, carried: list[str], followers: dict[str, str]) -> dict[str, str]:
    """follower -> leader: the carried names bound to the very tensor an earlier carried name
    is bound to."""
    found: dict[str, str] = {}
    for k, leader in enumerate(carried):
        value = env.get(leader)
        if leader in found or leader in followers or not (isinstance(value, V.Dyn) and V.is_tensor_type(value.type)):
            continue
        for name in carried[k + 1 :]:
            if name not in found and name not in followers and held_items.same_tensor(env.get(name), value):
                found[name] = leader
    return found


def _carried(c, initial, typed_like, node, name) -> loops.Carried:
    """`initial` before the loop, typed (and shaped) like `typed_like`."""
    if V.holds_maybe(initial) or V.holds_maybe(typed_like):
        raise _structure_error(c, node, name)  # None on some paths (a constant range unrolls)
    structure = typed_like if isinstance(typed_like, V.Tup) else None
    return loops.Carried(
        initial,
        _loop_types(c, typed_like, node, name),
        [V.example_of(l) for l in V.leaves(typed_like)],
        structure,
        aliases.path_dependent_memory(initial, typed_like),
    )


def _loop_types(c, value, node, name) -> list[Attribute]:
    if isinstance(value, V.Tup):
        return [_loop_type(c, leaf, node, name) for leaf in V.leaves(value)]
    return [_loop_type(c, value, node, name)]


def _carried_names(c, flat_body, node, live_after: set[str]) -> list[str]:
    """Names the body writes that are live at the loop header (a fixed point)."""
    written = written_in(flat_body)
    live = set(live_after)
    if isinstance(node, ast.While):
        live |= names_read(node.test)
    while True:
        grown = live | live_before(flat_body, live)
        if grown == live:
            break
        live = grown
    return sorted(written & live)


def _joined_types(c, node, name, entry_types: list[Attribute], end_types: list[Attribute]) -> list[Attribute]:
    """The carried types that hold both what enters the loop and what an iteration leaves;
    a kind that differs (a uint8 mask, then a bool one) is `CarriedKindChange`."""
    for a, b in zip(entry_types, end_types):
        try:
            c._join_type(a, b, name)
        except FrontendError:
            error = c.error(
                node, f"{runs.quoted(node)}`{name}` is {V.describe_type(a)} when the loop starts and "
                f"{V.describe_type(b)} after an iteration",
                f"give `{name}` the kind the loop leaves before it (e.g. `{name} = {name}.bool()`)",
            )
            change = loops.CarriedKindChange(error.construct, error.hint, file=error.file, line=error.line)
            change.loop = node  # (a loop nested in the body that cannot peel raises it too)
            raise change from None
    return [c._join_type(a, b, name) for a, b in zip(entry_types, end_types)]


def _loop_type(c, value, node, name) -> Attribute:
    if isinstance(value, V.Dyn):
        return value.type
    if isinstance(value, V.Const) and isinstance(value.value, (bool, int, float)):
        return V.type_of_example(value.value)
    if isinstance(value, V.Const) and value.value is None or value is V.UNDEF:
        raise _structure_error(c, node, name)
    list_type = lists.common_list_type(value) if lists.is_list(value) else None
    if list_type is not None:
        return list_type  # a list of known items, carried as a runtime list
    raise c.error(node, f"{runs.quoted(node)}`{name}` changes in a runtime loop but is not a tensor, scalar or list of tensors")


def _structure_error(c, node, name) -> loops.LoopStructureError:
    error = c.error(
        node, f"{runs.quoted(node)}`{name}` changes structure in a runtime loop (e.g. None, then a tensor or a tuple)",
        f"give `{name}` its final structure before the loop (e.g. zeros of the right shape), "
        "or loop over `range(N)` with a constant N so that DyCL unrolls the loop",
    )
    return loops.LoopStructureError(error.construct, error.hint, file=error.file, line=error.line)


def _initial_values(c, state, node) -> list[V.Dyn]:
    c._join_node = node  # (what cannot be carried is refused at the loop)
    values = []
    for name, entry in loops.carried_items(state):
        if entry.initial is V.UNDEF:
            leaves = [c.builder.placeholder(t, e) for t, e in zip(entry.types, entry.examples)]
        elif len(entry.types) == 1 and V.is_list_type(entry.types[0]) and lists.is_list(entry.initial):
            leaves = [lists.as_runtime_list(c, entry.initial, entry.types[0])]
        else:
            leaves = [c._materialize(l, name) for l in V.leaves(entry.initial)]
            # (`logits = None` before a loop that assigns a tensor: the None enters as a
            # tensor-typed value, returned as None only if the loop never assigns it)
            if len(leaves) != len(entry.types):
                raise _structure_error(c, node, name)
        values.extend(c._cast(l, t) for l, t in zip(leaves, entry.types))
    return values


def _body_env(c, env, state, block_args, followers: dict[str, str], holders: dict[str, dict[int, str]]):
    body_env = dict(env)
    args = iter(block_args)
    for name, entry in loops.carried_items(state):
        leaves = [V.Dyn(next(args), t, e, entry.may_share) for t, e in zip(entry.types, entry.examples)]
        body_env[name] = V.rebuild(entry.structure, leaves)
    for follower, leader in followers.items():
        body_env[follower] = body_env[leader]
    for name, held in holders.items():
        body_env[name] = held_items.with_held_items(c, env[name], held, body_env)
    return body_env


def _yield(c, end_env, state, node, terminator="scf.yield"):
    c._join_node = node
    operands = []
    for name, entry in loops.carried_items(state):
        leaves = [c._materialize(l, name) for l in V.leaves(end_env[name])]
        operands.extend(c._cast(l, t).value for l, t in zip(leaves, entry.types))
    ir.Operation.create(terminator, operands=operands)


def _compile_body(c, op, flat_body, body_env, state, live_after_loop, followers: dict[str, str]) -> dict:
    c.runtime_loop_depth += 1
    try:
        # (a name the loop carries as another's tensor is live as that one is: a join in
        # the body keeps the two one tensor, which the end of the body is checked for)
        return c.compile_block(flat_body, body_env, set(state) | live_after_loop | set(followers))
    except lists.ListKindMismatch as mismatch:
        name = loops.retypable_list(body_env, state, mismatch)
        if name is None:
            raise
        op.erase()
        raise loops.CarriedListKind(name, mismatch) from None
    finally:
        c.runtime_loop_depth -= 1


def _build_for(c, node, trip: range, state, env, flat_body, live_after_loop, followers, holders):
    inits = _initial_values(c, state, node)
    index = ir.IndexType.get(c.builder.context)
    bounds = [
        ir.Operation.create("arith.constant", results=[index], attributes={"value": ir.IntegerAttr.get(index, v)}).result
        for v in (trip.start, trip.stop, trip.step)
    ]
    types = [c.builder.type(t) for _, entry in loops.carried_items(state) for t in entry.types]
    op = ir.Operation.create("scf.for", results=types, operands=bounds + [v.value for v in inits], regions=1)
    block = op.regions[0].blocks.append(index, *types)
    with ir.InsertionPoint(block):
        body_env = _body_env(c, env, state, list(block.arguments)[1:], followers, holders)
        end_env = _compile_body(c, op, flat_body, body_env, state, live_after_loop, followers)
        _yield(c, end_env, state, node)
    return op, end_env


def _build_while(c, node, trip, state, env, flat_body, counter, brk, ret_flag, has_break, has_return, live_after_loop, followers, holders):
    inits = _initial_values(c, state, node)
    types = [c.builder.type(t) for _, entry in loops.carried_items(state) for t in entry.types]
    op = ir.Operation.create("scf.while", results=types, operands=[v.value for v in inits], regions=2)
    before = op.regions[0].blocks.append(*types)
    with ir.InsertionPoint(before):
        before_env = _body_env(c, env, state, list(before.arguments), followers, holders)
        tests = []
        if trip is not None:
            tests.append(nodes.parsed(f"{counter} < {trip.stop}" if trip.step > 0 else f"{counter} > {trip.stop}", node, mode="eval"))
        else:
            tests.append(node.test)
        if has_break:
            tests.append(nodes.parsed(f"not {brk}", node, mode="eval"))
        if has_return:
            tests.append(nodes.parsed(f"not {ret_flag}", node, mode="eval"))
        test = tests[0] if len(tests) == 1 else nodes.located(ast.BoolOp(op=ast.And(), values=tests), node)
        condition = c.condition(test, before_env)
        if isinstance(condition, V.Const):
            condition = c.builder.constant(bool(condition.value))
        flag = c.builder.to_i1(condition)
        ir.Operation.create("scf.condition", operands=[flag, *before.arguments])
    after = op.regions[1].blocks.append(*types)
    with ir.InsertionPoint(after), c.unentered.body(condition):
        body_env = _body_env(c, env, state, list(after.arguments), followers, holders)
        end_env = _compile_body(c, op, flat_body, body_env, state, live_after_loop, followers)
        _yield(c, end_env, state, node)
    return op, end_env
