"""`if` statements and conditional expressions, and the join of their paths.

An `if` on a runtime condition is an `scf.if` whose arms are compiled on the same example
values, each with the statements up to the join; a variable that differs between them is
yielded with the joined type of its two values (`values.join_types`): None on one path and
a tensor or scalar on the other is a `values.Maybe`, lists of different lengths one runtime
list, and what a branch that leaves a runtime loop holds in a name nothing reads after it
does not decide the type. Where the paths leave a variable of another kind on each (a uint8
mask and a bool one), or aliased on one path only and changed in place later in the block,
the statements after the `if` are compiled in each arm instead (`PathsDiffer`). `a if c
else b`, `and` and `or` join their values alike (`conditional`). `select` and
`runtime_check` make the `scf.if`s the frontend writes itself (a run picked by a runtime
size, a check eager makes). Each function takes the compiler as its context.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import torch
from torch_mlir import ir
from xdsl.ir import Attribute

from dycl.frontend import aliases, desugar, exceptions, host_builtins, host_expressions, lists, nodes
from dycl.frontend import values as V
from dycl.frontend.attributes import PARTIAL
from dycl.frontend.build import erase_after
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError, PathsDiffer
from dycl.frontend.liveness import live_before, names_item_stored, names_mutated
from dycl.frontend.nodes import RETURN_VAR

BY_SIZE = "dycl.by_size"  # (the attribute of an scf.if the frontend made: a run picked by a runtime size, or a check eager makes)
# `if`s whose paths each compile the statements after them (a variable of another kind on
# each): every one doubles what follows it, so past this many in one function the join is refused.
MAX_PATHS_APART = 8


def compile_if(c, stmts, i, env, live_out):
    stmt = stmts[i]
    condition = c.condition(stmt.test, env)
    if isinstance(condition, V.Const):  # configuration: resolved while importing
        chosen = stmt.body if condition.value else stmt.orelse
        return chosen + stmts[i + 1 :], env
    # The join is the furthest label a jump of the branches, or of the code they take
    # along up to that label, goes to (an unrolled loop's `break` joins at the loop's end,
    # but a `return` after it inside the loop goes further).
    targets, join = nodes.jump_targets(stmt.body + stmt.orelse), i
    while True:
        found = [k for k in range(i + 1, len(stmts)) if isinstance(stmts[k], nodes.Label) and stmts[k].id in targets]
        further = max(found, default=i)
        if further <= join:
            break
        join = further
        targets = targets | nodes.jump_targets(stmts[i + 1 : join + 1])
    tail, rest = stmts[i + 1 : join + 1], stmts[join + 1 :]
    if not rest:
        return [], _compile_arms(c, stmt, condition, tail, env, live_out, ChangedLater())
    block, scope, chains = ir.InsertionPoint.current.block, c.scope, list(c._length_chains)
    before = len(block.operations)
    try:
        return rest, _compile_arms(c, stmt, condition, tail, env, live_before(rest, live_out), ChangedLater.by(rest))
    except PathsDiffer:
        if c.paths_apart >= MAX_PATHS_APART:
            raise
        erase_after(block, before)
        c.scope, c._length_chains[:] = scope, chains
        c.paths_apart += 1
    # A variable of another kind on each path (`mask` uint8 where a loop never ran, bool
    # where it did), or aliased on one path only and changed in place later (`cx = hx`
    # where no state was given): each path goes on to the end of the block on its own,
    # where every statement sees its path's kinds and aliases, as eager does.
    return [], _compile_arms(c, stmt, condition, tail + rest, env, live_out, ChangedLater())


@dataclass(frozen=True)
class ChangedLater:
    """What the statements after an `if`, in its block, may change in place, by their syntax:
    `in_place` (`h += 0.5`, `hx[idx] = v`, `outputs["final"] = y`, `z.add_(1)`), of which
    `items_only` are changed only by storing or deleting an item (a change of no tensor's
    memory where the variable is a dict or a list: its item is rebound)."""

    in_place: frozenset[str] = frozenset()
    items_only: frozenset[str] = frozenset()

    @classmethod
    def by(cls, stmts: list[ast.stmt]) -> "ChangedLater":
        subs = [sub for stmt in stmts for sub in ast.walk(stmt)]
        in_place = frozenset().union(*map(names_mutated, subs))
        deeper = frozenset().union(*(names_mutated(sub) - names_item_stored(sub) for sub in subs))
        return cls(in_place, in_place - deeper)

    def memory_of(self, name: str, values) -> bool:
        """Whether the memory of a tensor `name` holds (as `values`, one per path) may change."""
        if name not in self.in_place:
            return False
        return name not in self.items_only or not all(map(_is_container, values))


def _is_container(value) -> bool:
    """A dict or list (known or runtime): storing an item rebinds it, no tensor changes."""
    if isinstance(value, V.Tup):
        return value.kind == "list" or isinstance(value.kind, V.DictKind)
    return isinstance(value, V.Dyn) and V.is_list_type(value.type)


def _compile_arms(c, stmt, condition, stmts, env, live, changed_later: ChangedLater) -> dict:
    flag = c.builder.to_i1(condition)
    draft = ir.Operation.create("scf.if", results=[], operands=[flag], regions=2)
    c._join_node = stmt
    branch_envs = []
    for region, body, refined in zip(draft.regions, (stmt.body, stmt.orelse), host_expressions.none_test_branches(stmt.test, env)):
        with ir.InsertionPoint(region.blocks.append()):
            branch_envs.append(c.compile_block(body + stmts, {**env, **refined}, live))
    c._join_node = stmt
    return _join_if(c, draft, flag, branch_envs, live, env, changed_later)


def _join_if(c, draft, flag, branch_envs, live, env_before, changed_later: ChangedLater = ChangedLater()):
    """`changed_later`: what the statements after the join (in its block) change in place;
    a variable aliased on one path only that they change raises `PathsDiffer`, as a
    variable of another kind on each path does where statements follow."""
    if all(map(exceptions.dead, branch_envs)):  # (both paths raise: nothing after runs)
        _close_if(c, draft, [r.blocks[0] for r in draft.regions], ([], []), [])
        return {**env_before, exceptions.DEAD: V.Const(True)}
    then_env, else_env, carried = exceptions.for_join(branch_envs)
    live = live | carried
    joined = dict(env_before)
    yields: list[tuple[str, list, list]] = []  # (name, then leaves, else leaves)
    blocks = [draft.regions[0].blocks[0], draft.regions[1].blocks[0]]
    read_after_exit = [_read_after_exit(c, branch) for branch in branch_envs]
    for name in sorted(live):
        a, b = then_env.get(name, V.MISSING), else_env.get(name, V.MISSING)
        if a is V.MISSING and b is V.MISSING:
            continue
        if c.attributes.is_variable(name) and any(v is V.MISSING or v is PARTIAL for v in (a, b)):
            joined[name] = PARTIAL  # a module attribute assigned on some paths only
            continue
        a = V.UNDEF if a is V.MISSING else a
        b = V.UNDEF if b is V.MISSING else b
        if V.same_value(a, b):  # (defined before the `if`: kept, as the lists holding it keep it)
            joined[name] = a
            continue
        # (from here on the two differ: the rule below only makes one side UNDEF)
        # what a branch that leaves the loop (`break`, `return`) holds in a name nothing
        # reads after the loop is never read: the other branch's value decides its type
        # (module attributes the call assigns are read anywhere: never dropped)
        local = not c.attributes.is_variable(name)
        dead = [local and read is not None and name not in read for read in read_after_exit]
        if dead[0] or dead[1]:
            a, b = (V.UNDEF if dead[0] else a), (V.UNDEF if dead[1] else b)
            if a is V.UNDEF and b is V.UNDEF:
                joined[name] = V.UNDEF  # (left on both paths: never read again)
                continue
        parts = _differing_parts(a, b)
        if parts is None:
            yields.append((name, (), a, b))
            continue
        joined[name] = a  # the items both paths share stay as they are (`hist["h"]`)
        yields.extend((name, path, part_a, part_b) for path, part_a, part_b in parts)

    _apart_if_aliased_on_one_path(c, {name for name, *_ in yields}, then_env, else_env, live, changed_later)
    # names bound to one tensor on both paths (`cx = hx`) stay one tensor: one result for both
    one_tensor = _one_tensor(yields)
    yields = [y for y in yields if y[0] not in one_tensor]
    # Materialise both sides' leaves in their own block, then build the real scf.if.
    then_ops, else_ops, types, examples, shapes = [], [], [], [], []
    for name, path, a, b in yields:
        described = _part_name(name, then_env.get(name), path)
        with ir.InsertionPoint(blocks[0]):
            a_leaves, structure = _leaves_for_join(c, a, b, described)
        with ir.InsertionPoint(blocks[1]):
            b_leaves, _ = _leaves_for_join(c, b, a, described)
        start = len(types)
        for la, lb in zip(a_leaves, b_leaves):
            try:
                types.append(join_type(c, la.type, lb.type, name))
            except FrontendError as error:  # (compiled again per path where statements follow)
                raise PathsDiffer.of(error) from None
            # An example only needs the right type: a runtime list's is taken from the
            # side that has items, so that code after the join can run on it
            # (`torch.cat(tokens)` where the example run's decoder stopped at once), and a
            # placeholder's (the name undefined on one side, or a path that raised or leaves
            # it unread) from the side that has a value: code after the join runs on it (a
            # `top_k` of 0 after `if torch.isnan(x).any(): raise ...` made `topk` empty: fuzz
            # seed 400578), and its memory is what the join keeps (`hx` still `hx_list[0]`
            # where a loop went on).
            empty = isinstance(la.example, list) and not la.example
            examples.append(lb.example if a is V.UNDEF or empty and isinstance(lb.example, list) else la.example)
        shapes.append((name, path, structure, start, len(a_leaves)))
        then_ops.extend(a_leaves)
        else_ops.extend(b_leaves)
    results = _close_if(c, draft, blocks, (then_ops, else_ops), types)
    for name, path, structure, start, count in shapes:
        leaves = [V.Dyn(results[k], types[k], examples[k]) for k in range(start, start + count)]
        part = V.rebuild(structure, leaves)
        if structure is None:  # a list of a different length on each path: which ones
            part = lists.with_known_lengths(part, lists.value_at(then_env, (name, path)), lists.value_at(else_env, (name, path)))
        joined[name] = lists.with_value_at(joined[name], path, part) if path else part
    for name in dict.fromkeys(name for name, *_ in shapes):
        then_value, else_value = then_env.get(name, V.UNDEF), else_env.get(name, V.UNDEF)
        memory = aliases.path_dependent_memory(then_value, else_value)  # marked before
        if aliases.alias_group(then_env, name, live) != aliases.alias_group(else_env, name, live):
            # shares memory with another variable on one path only: never mutate it
            memory |= aliases.storages(then_value) | aliases.storages(else_value)
        joined[name] = aliases.mark_path_dependent(joined[name], memory)
    for follower, leader in one_tensor.items():
        joined[follower] = joined[leader]
    # Python shares a list between the names bound to it: a change on one path through
    # one of them is a change for all of them after the join
    for follower, leader in lists.sharing(env_before, sorted(n for n in live if n in env_before)).items():
        if follower not in joined or leader not in joined:
            continue
        if all(lists.same_list(branch.get(follower), branch.get(leader)) for branch in (then_env, else_env)):
            joined[follower] = joined[leader]
        else:  # one path bound one of them to another list: which one it is depends on the path
            joined[follower], joined[leader] = lists.path_dependent(joined[follower]), lists.path_dependent(joined[leader])
    # ... and so do the items of tuples and lists that hold it (`pair = (acc, x)`)
    for places in lists.shared_places(env_before, sorted(n for n in live if n in env_before)):
        places = [place for place in places if place[0] in joined and lists.value_at(joined, place) is not V.UNDEF]
        if len(places) < 2:
            continue
        one = all(
            all(lists.same_list(lists.value_at(branch, places[0]), lists.value_at(branch, place)) for place in places[1:])
            for branch in (then_env, else_env)
        )
        leader = lists.value_at(joined, places[0])
        for name, path in places[1:] if one else places:
            new = leader if one else lists.path_dependent(lists.value_at(joined, (name, path)))
            joined[name] = lists.with_value_at(joined[name], path, new)
    return joined


def _one_tensor(yields: list) -> dict[str, str]:
    """follower -> leader: names yielded whole that hold the very tensor an earlier one holds,
    on each path where either is read again (a change through one must reach the other after
    the join, too). A path that leaves the loop where nothing reads them again (`break`
    before `hx = accum_hx / n`) holds neither: one tensor on the other path is one tensor."""
    found: dict[str, str] = {}
    whole = [(name, a, b) for name, path, a, b in yields if not path and _tensor_or_unread(a) and _tensor_or_unread(b)]
    for k, (leader, a, b) in enumerate(whole):
        if leader in found:
            continue
        for name, other_a, other_b in whole[k + 1 :]:
            if name not in found and _same_tensor_or_unread(other_a, a) and _same_tensor_or_unread(other_b, b):
                found[name] = leader
    return found


def _is_tensor(value) -> bool:
    return isinstance(value, V.Dyn) and V.is_tensor_type(value.type)


def _tensor_or_unread(value) -> bool:
    return value is V.UNDEF or _is_tensor(value)


def _same_tensor_or_unread(a, b) -> bool:
    return a is V.UNDEF and b is V.UNDEF or _is_tensor(a) and _is_tensor(b) and a.value == b.value


def _apart_if_aliased_on_one_path(c, names, then_env: dict, else_env: dict, live, changed_later: ChangedLater) -> None:
    """Raise `PathsDiffer` where a variable shares memory with another on one path only
    (`cx = hx` where no state was given, two tensors where it was) and a statement after
    the join changes one of them in place: the change reaches the other on that path only,
    so each path compiles the statements after the `if` on its own."""
    for name in sorted(names):
        groups = [aliases.alias_group(env, name, live) for env in (then_env, else_env)]
        if groups[0] == groups[1]:
            continue
        involved = {name} | {other for other, _ in groups[0] | groups[1]}
        # (`outputs["final"] = y` on the dict that holds `y` on one path rebinds an item:
        # the join's mark keeps any later change of that memory refused, as before)
        changed = sorted(n for n in involved if changed_later.memory_of(n, (then_env.get(n), else_env.get(n))))
        if changed:
            raise PathsDiffer.of(c.error(None, f"`{name}` shares memory with another variable on one path only, and `{changed[0]}` is changed in place later"))


def _read_after_exit(c, branch_env: dict) -> set[str] | None:
    """The names read after the runtime loop this branch leaves (its `break` or
    `return` flag is set), or None when it stays in every loop being compiled."""
    for exits, read in reversed(c._loop_exits):
        if any(V.same_value(branch_env.get(flag), V.Const(True)) for flag in exits):
            return read
    return None


def _leaves_for_join(c, mine: V.EnvValue, other: V.EnvValue, name: str):
    """Leaves of `mine` as IR values, shaped like `other` where `mine` is undefined."""
    if isinstance(mine, V.Packed) or isinstance(other, V.Packed):
        raise c.error(
            None, f"{_describe(name)} is a packed sequence whose lengths are runtime values, made on each path",
            "pack once, after the `if` (choose the padded tensor and the lengths in the `if`)",
        )
    mine, other = _optionals_for_join(c, mine, other), _optionals_for_join(c, other, mine, build=False)
    if mine is V.UNDEF:
        if other is V.UNDEF:
            raise AssertionError("both sides undefined")
        template = other
        if isinstance(template, (V.Tup, V.Maybe)):
            leaves = [_placeholder_like(c, l) for l in V.leaves(template)]
            return leaves, template
        return [_placeholder_like(c, template)], None
    list_type = lists.joined_list_type(mine, other)
    if list_type is not None:  # lists of different lengths: one runtime list of their kind of item
        return [lists.as_runtime_list(c, mine, list_type)], None
    if isinstance(mine, V.Tup) and isinstance(other, V.Tup):
        mine = _nested_lists_for_join(c, mine, other)
        other = _nested_lists_for_join(c, other, mine, build=False)
    if isinstance(mine, V.Tup) or isinstance(other, V.Tup):
        if other is not V.UNDEF and not V.same_structure(mine, other):
            dicts = [v.kind.keys for v in (mine, other) if isinstance(v, V.Tup) and isinstance(v.kind, V.DictKind)]
            if len(dicts) == 2 and set(dicts[0]) != set(dicts[1]):
                raise c.error(
                    None, f"{_describe(name)} is a dict with keys {list(dicts[0])} on one path and {list(dicts[1])} on another",
                    "give it the same keys on every path (`out['aux'] = None` where there is no value)",
                )
            raise c.error(
                None,
                f"{_describe(name)} has a different structure on different paths",
                "return/assign the same tuple, list or dict shape on every path "
                "(only a list holding just tensors may change length at runtime)",
            )
        return [materialize(c, l, name) for l in V.leaves(mine)], mine
    if isinstance(mine, V.Maybe):
        return [materialize(c, l, name) for l in V.leaves(mine)], mine
    return [materialize(c, mine, name)], None


def _optionals_for_join(c, mine: V.EnvValue, other: V.EnvValue, build: bool = True) -> V.EnvValue:
    """`mine` as a `Maybe` where one side is None and the other a tensor or a Python
    scalar (`ps = None` on one path, a tensor on the other), in tuples too. build=False
    only shapes `other` alike (no IR)."""
    if isinstance(mine, V.Tup) and isinstance(other, V.Tup) and V.kind_of(mine, True) == V.kind_of(other, True):
        return V.Tup(tuple(_optionals_for_join(c, a, b, build) for a, b in zip(mine.items, other.items)), mine.kind)
    if not (_optional_side(mine) and _optional_side(other)) or not any(map(_none_or_maybe, (mine, other))):
        return mine
    if isinstance(mine, V.Maybe):
        return mine
    if _none_or_maybe(mine):  # None here: a placeholder of the other side's type
        template = other.value if isinstance(other, V.Maybe) else other
        return V.Maybe(V.Const(False), _placeholder_like(c, template) if build else template)
    return V.Maybe(V.Const(True), mine)


def _nested_lists_for_join(c, mine: V.Tup, other: V.Tup, build: bool = True) -> V.Tup:
    """`mine` with each list it holds that has another length in `other` (at the same
    place) as a runtime list of their kind of item (`return x, tokens` where `tokens`
    has a length per path). build=False only shapes `other` alike (no IR)."""
    if len(mine.items) != len(other.items):
        return mine
    items = []
    for a, b in zip(mine.items, other.items):
        list_type = lists.joined_list_type(a, b)
        if list_type is not None:
            a = lists.as_runtime_list(c, a, list_type) if build else V.Dyn(None, list_type, [])
        elif isinstance(a, V.Tup) and isinstance(b, V.Tup) and not (a.kind == b.kind == "list" and lists.differ(a, b)):
            a = _nested_lists_for_join(c, a, b, build)  # (two lists no one type holds stay as they are)
        items.append(a)
    return V.Tup(tuple(items), mine.kind)


def _placeholder_like(c, value: V.EnvValue) -> V.Dyn:
    if isinstance(value, V.Tup):
        return V.Tup(tuple(_placeholder_like(c, i) for i in value.items), value.kind)
    if isinstance(value, V.Const):
        return materialize(c, value, "value")
    return c.builder.placeholder(value.type, value.example)


def materialize(c, value: V.EnvValue, name: str) -> V.Dyn:
    if isinstance(value, V.Maybe):
        raise c.error(None, f"{_describe(name)} is None on some paths and {V.kind_of(value.value)} on others",
                      "test `is None` first (`if v is not None:`), or give it the same kind on every path")
    if isinstance(value, V.Const) and not isinstance(value.value, (bool, int, float, type(None))):
        code = isinstance(value.value, torch.nn.Module) or callable(value.value)
        raise c.error(
            None,
            f"{_describe(name)} holds a {type(value.value).__name__} that depends on a runtime condition",
            "call the module or function on each path instead of keeping it in a variable "
            "(`y = self.experts[k](x)`: DyCL branches on `k` and each branch calls its own)"
            if code else "only tensors, Python scalars, tuples and lists of tensors can differ between paths",
        )
    return c.builder.materialize(value)


def join_type(c, a: Attribute, b: Attribute, name: str) -> Attribute:
    try:
        return V.join_types(a, b)
    except FrontendError as error:
        raise c.error(None, f"{_describe(name)}: {error.construct}", error.hint) from None


def cast(c, leaf: V.Dyn, type_: Attribute) -> V.Dyn:
    if leaf.type == type_:
        return leaf
    if V.is_tensor_type(type_):
        return c.builder.cast(leaf, type_)
    if V.is_list_type(type_):
        # (joins refuse lists of two kinds; only a list of known items is made anew)
        if lists.fits(leaf, type_):
            return lists.as_runtime_list(c, leaf, type_)
        raise c.error(None, f"{V.describe_type(leaf.type)} where {V.describe_type(type_)} is expected",
                      "keep one kind of item in the list on every path")
    return leaf


def runtime_check(c, condition: V.EnvValue, node: ast.AST, message: str, kind: str | None = None) -> None:
    """Raise `message` (located at `node`) at run time where `condition` is false: a
    check eager makes (`pack_padded_sequence`'s lengths), as the exception `kind` eager
    raises when given (a `dycl.error` kind), else a RuntimeError. A check known here to
    fail is the program's error, raised now."""
    if isinstance(condition, V.Const):
        if not condition.value:
            raise c.error(node, message)
        return

    def fail() -> list:
        attributes = {"message": ir.StringAttr.get(str(c.error(node, message)))}
        if kind is not None:
            attributes["kind"] = ir.StringAttr.get(kind)
        ir.Operation.create("dycl.error", attributes=attributes)
        return []
    c.select(condition, lambda: [], fail)


def select(c, condition: V.Dyn, then_fn, else_fn) -> list[ir.Value]:
    """An `scf.if` on a runtime bool whose arms build IR values (`then_fn()`,
    `else_fn()`: one list each, of one kind item by item); its results, types joined.
    Marked `dycl.by_size`: the frontend made it, no `if` of the user's."""
    draft = ir.Operation.create("scf.if", results=[], operands=[c.builder.to_i1(condition)], regions=2)
    blocks, arms = [], []
    for region, build in zip(draft.regions, (then_fn, else_fn)):
        block = region.blocks.append()
        with ir.InsertionPoint(block):
            arms.append([V.Dyn(v, V.parse_type(str(v.type)), None) for v in build()])
        blocks.append(block)
    types = [V.join_types(a.type, b.type) for a, b in zip(*arms)]
    return _close_if(c, draft, blocks, arms, types, {BY_SIZE: ir.UnitAttr.get()})


def _close_if(c, draft: ir.Operation, blocks, arms, types, attributes=None) -> list[ir.Value]:
    """The results of the `scf.if` that `draft` (result-less, its two regions built in
    `blocks`) stands for: each block yields its leaves of `arms` cast to the joined
    `types`, the ops move into the real op, made in the draft's place, and the draft goes."""
    for block, leaves in zip(blocks, arms):
        with ir.InsertionPoint(block):
            ir.Operation.create("scf.yield", operands=[cast(c, leaf, t).value for leaf, t in zip(leaves, types)])
    if_op = ir.Operation.create(
        "scf.if", results=[c.builder.type(t) for t in types], operands=[draft.operands[0]], regions=2,
        attributes=attributes or {}, ip=ir.InsertionPoint(draft),
    )
    for old, new in zip(blocks, if_op.regions):
        new_block = new.blocks.append()
        for op in list(old.operations):
            new_block.append(op)
    draft.erase()
    return list(if_op.results)


def conditional(c, expr, env, test: V.Dyn, then_fn, else_fn, truth_if_mixed: bool = False,
                refinements: tuple[dict, dict] = ({}, {})) -> V.EnvValue:
    """The value `then_fn(scope)` or `else_fn(scope)` computes, chosen by the runtime bool
    `test`: an scf.if whose regions compute only their own branch, joined like an if.
    With truth_if_mixed (`a and b` of a bool and a tensor), values of different kinds are
    joined as their truth values: a `host_expressions.TruthValue`, which only a condition may use.
    `refinements` are what each branch knows of a value None on some paths (`is None`)."""
    flag = c.builder.to_i1(test)
    draft = ir.Operation.create("scf.if", results=[], operands=[flag], regions=2)
    blocks, values = [], []
    for region, branch, refined in zip(draft.regions, (then_fn, else_fn), refinements):
        block = region.blocks.append()
        before = {**env, **refined}
        scope = dict(before)
        with ir.InsertionPoint(block):
            values.append(branch(scope))
        changed = sorted(n for n in before if scope.get(n) is not before[n])
        if changed:
            draft.erase()
            raise c.error(
                expr, f"`{source_text(expr)}` changes `{changed[0]}` on one of its paths",
                "write it as an `if` statement",
            )
        blocks.append(block)
    then_value, else_value = values
    mixed = truth_if_mixed and V.kind_of(then_value, detailed=True) != V.kind_of(else_value, detailed=True)
    if mixed:
        for k, block in enumerate(blocks):
            with ir.InsertionPoint(block):
                values[k] = materialize(c, host_builtins.truth(c, values[k], expr), "truth value")
        then_value, else_value = values
    name = source_text(expr)
    saved, c._join_node = c._join_node, expr
    try:
        with ir.InsertionPoint(blocks[0]):
            then_leaves, structure = _leaves_for_join(c, then_value, else_value, name)
        with ir.InsertionPoint(blocks[1]):
            else_leaves, _ = _leaves_for_join(c, else_value, then_value, name)
        types = [join_type(c, a.type, b.type, name) for a, b in zip(then_leaves, else_leaves)]
    except FrontendError:
        draft.erase()
        raise
    finally:
        c._join_node = saved
    results = _close_if(c, draft, blocks, (then_leaves, else_leaves), types)
    taken = then_leaves if test.example else else_leaves  # the example path's values
    leaves = [V.Dyn(result, t, leaf.example) for result, t, leaf in zip(results, types, taken)]
    if mixed:
        (leaf,) = leaves
        return host_expressions.TruthValue(leaf.value, leaf.type, leaf.example, source=name)
    return V.rebuild(structure, leaves)


def _differing_parts(a, b, path: tuple = ()) -> list | None:
    """(path, then part, else part) for the items of two tuples or dicts of one shape that
    differ between the paths, when some item is the very same value on both (a list a dict
    holds that neither path changed stays the list it is); None to join them whole."""
    if not (isinstance(a, V.Tup) and isinstance(b, V.Tup) and a.kind == b.kind and a.kind != "list"
            and len(a.items) == len(b.items)):
        return None
    parts, kept = [], False
    for k, (x, y) in enumerate(zip(a.items, b.items)):
        if V.same_value(x, y):
            kept = True
            continue
        inner = _differing_parts(x, y, (*path, k))
        kept = kept or inner is not None
        parts.extend(inner if inner is not None else [((*path, k), x, y)])
    return parts if kept else None


def _part_name(name: str, value, path: tuple) -> str:
    """`pair[1]`, `hist['c']`: the item at `path` of the variable `name`, for messages."""
    for k in path:
        key = value.kind.keys[k] if isinstance(value, V.Tup) and isinstance(value.kind, V.DictKind) else k
        name = f"{name}[{key!r}]"
        value = value.items[k] if isinstance(value, V.Tup) else None
    return name


def _describe(name: str) -> str:
    return "the return value" if name == RETURN_VAR else f"`{desugar.display_name(name)}`"


def _none_or_maybe(value) -> bool:
    return isinstance(value, V.Maybe) or isinstance(value, V.Const) and value.value is None


def _optional_side(value) -> bool:
    """None, or what may be None on other paths: a tensor or a Python scalar."""
    if _none_or_maybe(value):
        return True
    if isinstance(value, V.Dyn):
        return not V.is_list_type(value.type)
    if isinstance(value, V.Tup) and value.kind == "tuple" and value.items:  # (`self.state = (h, c)`)
        return all(isinstance(i, V.Dyn) and V.is_tensor_type(i.type) for i in value.items)
    return isinstance(value, V.Const) and type(value.value) in (bool, int, float)
