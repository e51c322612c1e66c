"""Compile a forward's (rewritten) statements into the host function.

Walks each statement list with an environment of `values.Const/Dyn/Tup/UNDEF`:
- maximal runs of tensor statements are captured (`capture.py`) and called;
- host statements (Python scalars and lists that depend on tensor data) become scalar/list ops;
- `if` on a runtime condition becomes `scf.if`; both branches are compiled on the same
  example values, and variables that differ are yielded with joined types;
- loops over things known at import time are unrolled, `for range(N)` whose index is unused
  becomes `scf.for`, bounded `while` loops and loops that `break`/`return` become `scf.while`.
"""

from __future__ import annotations

import ast
import builtins
import copy
import types
from dataclasses import dataclass

import torch
import torch.utils._pytree as pytree
from torch_mlir import ir

from xdsl.ir import Attribute
from dycl.frontend import aliases
from dycl.frontend.attributes import PARTIAL, ModuleAttributes
from dycl.frontend import expressions as X
from dycl.frontend import host_builtins, host_numpy, lists
from dycl.frontend import desugar, dispatch, nodes, structure
from dycl.frontend import values as V
from dycl.frontend.build import HostBuilder, erase_after
from dycl.frontend.capture import RunCapturer
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError, RuntimeSize
from dycl.frontend.host_expressions import HOST_EXPRESSIONS, host_tuple, none_test_branches, refuse_truth_value
from dycl.frontend.liveness import live_before, names_read, written_in
from dycl.frontend.loops import LoopCompiler
from dycl.frontend.rewrite import (
    NO_RECEIVER,
    SourceFunction,
    changes_an_argument_list,
    fresh_id,
    has_control_flow,
    inline_call,
    lower,
    parse_function,
)
from dycl.frontend.nodes import RESULT_PREFIX, replace_nodes
from dycl.frontend.runs import RunCompiler, fix_locations
from dycl.dialects.torch_ops import LIST_APPEND

# Functions from these packages are never inlined (their control flow is on Python values).
_LIBRARY_MODULES = {"torch", "numpy", "functools", "typing", "math"}
RETURN_VAR = "__dycl_return"


class _Scope:
    """The source being compiled (for error locations and global names)."""

    def __init__(self, source: SourceFunction):
        self.source = source
        self.namespace = {**source.globals, **source.closure}


class FunctionCompiler(LoopCompiler, RunCompiler):
    def __init__(self, model: torch.nn.Module, capturer: RunCapturer):
        self.model = model
        self.capturer = capturer
        self.builder = HostBuilder(capturer.context)
        self.scope: _Scope | None = None
        self._join_node: ast.AST | None = None
        self.runtime_loop_depth = 0  # (a loop the pipeline unrolls may make shapes static again)
        self._scopes: dict[str, _Scope] = {}
        # Memory that runs must not mutate (aliases.py): the weights, the caller's inputs.
        self.state_guard = aliases.StateGuard(model)
        self.memory_of_weights = self.state_guard.memory
        self.memory_of_inputs: dict[int, str] = {}
        self.current = None
        self.attributes = ModuleAttributes()  # module attributes forward assigns
        self._length_chains: list[_LengthChain] = []

    # ----- entry point -----------------------------------------------------------------

    def compile(self, method, example_inputs: tuple, name: str = "forward"):
        """Build `func.func @<name>`; returns (func op, output tree, input names)."""
        source = parse_function(method.__func__ if hasattr(method, "__func__") else method)
        self.scope = _Scope(source)
        fdef = source.node
        params = [a.arg for a in fdef.args.args]
        if fdef.args.vararg or fdef.args.kwarg or fdef.args.kwonlyargs:
            raise source.error(fdef, "forward with *args/**kwargs", "list the inputs as plain parameters")
        given = params[1 : 1 + len(example_inputs)]
        if len(example_inputs) > len(params) - 1:
            raise source.error(fdef, f"{len(example_inputs)} example inputs for {len(params) - 1} parameters")
        leaves: list[tuple[str, object]] = []  # the function's arguments: (name, example)
        input_tree = [self._flatten_input(fdef, name, e, leaves) for name, e in zip(given, example_inputs)]
        input_types = [V.type_of_example(e) for _, e in leaves]

        func_type = ir.FunctionType.get([self.builder.type(t) for t in input_types], [], self.builder.context)
        module_body = ir.InsertionPoint(self.capturer.module.body)
        func = ir.Operation.create(
            "func.func",
            attributes={"sym_name": ir.StringAttr.get(name), "function_type": ir.TypeAttr.get(func_type)},
            regions=1,
            ip=module_body,
        )
        entry = func.regions[0].blocks.append(*[self.builder.type(t) for t in input_types])

        env: dict[str, V.EnvValue] = {params[0]: V.Const(self.model), RETURN_VAR: V.Const(None)}
        arguments = [V.Dyn(arg, type_, example) for arg, type_, (_, example) in zip(entry.arguments, input_types, leaves)]
        for param, tree in zip(given, input_tree):
            env[param] = _input_value(tree, arguments)
            for memory in aliases.storages(env[param]):
                self.memory_of_inputs[memory] = param
        defaults = fdef.args.defaults
        for param, default in zip(params[len(params) - len(defaults) :], defaults):
            if param not in env:
                env[param] = V.Const(self._eval_constant(default, {}))

        end = fresh_id()
        statements = copy.deepcopy(fdef.body)  # (the parsed function is shared: mark a copy)
        self.attributes.preregister(self.model)
        self.attributes.annotate(statements, params[0], self.model)
        desugar.check_deletes(source)
        body = lower(source, statements, nodes.ReturnTo(RETURN_VAR, end)) + [nodes.Label(end)]
        with ir.InsertionPoint(entry):
            final = self.compile_block(body, env, {RETURN_VAR})
            result = final[RETURN_VAR]
            outputs, tree = self._flatten_result(result, _return_node(fdef))
            ir.Operation.create("func.return", operands=[o.value for o in outputs])
        func_type = ir.FunctionType.get(
            [self.builder.type(t) for t in input_types], [self.builder.type(o.type) for o in outputs]
        )
        func.attributes["function_type"] = ir.TypeAttr.get(func_type)
        return func, tree, [name for name, _ in leaves], input_tree

    def _flatten_input(self, fdef, name: str, example, leaves: list):
        """An example input as a tree of argument indices (like the output tree): a list or
        tuple keeps its length and kind, its items are runtime values (`lengths: list[int]`).
        Tensors are copied: a forward that mutates its input (refused) leaves the caller's alone."""
        if isinstance(example, (list, tuple)):
            kind = "list" if isinstance(example, list) else "tuple"
            return {kind: [self._flatten_input(fdef, f"{name}_{k}", e, leaves) for k, e in enumerate(example)]}
        if example is None:
            return None
        if not isinstance(example, (torch.Tensor, bool, int, float)):
            raise self.error(
                fdef, f"forward input `{name}` is a {type(example).__name__}",
                "pass tensors, Python ints/floats/bools, None, or lists and tuples of them",
            )
        leaves.append((name, example.clone() if isinstance(example, torch.Tensor) else example))
        return len(leaves) - 1

    def _flatten_result(self, value: V.EnvValue, where: ast.AST):
        """Result leaves as IR values and the output tree; errors are located at `where`."""
        outputs: list[V.Dyn] = []

        def visit(item):
            if isinstance(item, V.Tup):
                return {item.kind: [visit(i) for i in item.items]}
            if isinstance(item, V.Maybe):  # None where `present` is false
                present = visit(item.present)
                return {"optional": [present, visit(item.value)]}
            if isinstance(item, V.Const) and item.value is None:
                return {"none": []}  # (no result: a bare None would mean "the one result")
            if isinstance(item, V.Const) and type(item.value) in (list, tuple):  # known here
                kind = "list" if isinstance(item.value, list) else "tuple"
                return visit(V.Tup(tuple(V.Const(v) for v in item.value), kind))
            if isinstance(item, V.Const) and not isinstance(item.value, (bool, int, float)):
                raise self.error(where, f"forward returns a {type(item.value).__name__}", "return tensors, tuples, lists or Python scalars")
            if item is V.UNDEF:
                raise self.error(where, "forward does not return a value on every path")
            outputs.append(self.builder.materialize(item))
            return len(outputs) - 1

        return outputs, visit(value)

    # ----- statement lists -------------------------------------------------------------

    def compile_block(self, stmts: list[ast.stmt], env: dict, live_out: set[str]) -> dict:
        """Compile statements at the current insertion point; returns the environment at the end."""
        block = Block(list(stmts), env, live_out | self.attributes.variables())  # (a later helper may read them)
        while block.i < len(block.stmts):
            self._name_values(block.env)
            stmt = block.stmts[block.i] = self.attributes.bind(block.stmts[block.i], block.env, self.error)
            if getattr(stmt, "lineno", 0):
                self.current = (self.scope.source, stmt)  # where an internal error is reported
            self.visit(stmt, block)
        self._name_values(block.env)
        return block.env

    def visit(self, stmt: ast.stmt, block: Block) -> None:
        """One method per construct, `visit_<statement class>` (the markers of nodes.py
        too); a statement without one is straight-line code (`visit_straight_line`)."""
        getattr(self, f"visit_{type(stmt).__name__}", self.visit_straight_line)(stmt, block)

    def visit_Label(self, stmt: nodes.Label, block: Block) -> None:
        block.i += 1

    def visit_Jump(self, stmt: nodes.Jump, block: Block) -> None:
        block.i = self._label_index(block.stmts, stmt.id, block.i)

    def visit_BindConst(self, stmt: nodes.BindConst, block: Block) -> None:
        value = stmt.value
        block.env[stmt.name] = value if isinstance(value, (V.Dyn, V.Tup, V.Maybe)) else V.Const(value)
        block.i += 1

    def visit_SwitchScope(self, stmt: SwitchScope, block: Block) -> None:
        self.scope = self._scope_for(stmt.source)
        block.i += 1

    def visit_If(self, stmt: ast.If, block: Block) -> None:
        hoisted = self._hoist_test_call(stmt, block.env)
        if hoisted is not None:
            block.replace_current(hoisted)
            return
        self._per_length_on_failure(
            lambda: block.restart(*self.compile_if(block.stmts, block.i, block.env, block.live_out)), block, 1)

    def visit_Loop(self, stmt: nodes.Loop, block: Block) -> None:
        self._per_length_on_failure(
            lambda: block.restart(*self.compile_loop(block.stmts, block.i, block.env, block.live_out)), block, 1)

    def visit_straight_line(self, stmt: ast.stmt, block: Block) -> None:
        """A call of a helper DyCL compiles (inlined here), the longest run of statements
        that become one captured tensor program, or a host statement."""
        env = block.env
        self._refuse_container_change(stmt, env)
        self._refuse_identity_test(stmt, env)
        picked = self._one_arm_per_candidate(stmt, env)
        if picked is not None:
            block.replace_current(picked)
            return
        expanded = self._expand_call(stmt, env)
        if expanded is not None:
            block.restart(expanded + block.stmts[block.i + 1 :], env)
            return
        if not self._is_run_statement(stmt, env, set()):
            if self._per_length_on_failure(lambda: self.host_statement(stmt, env), block, 1):
                block.i += 1
            return
        stmts, i = block.stmts, block.i
        j = i + 1
        written = written_in([stmt])
        while j < len(stmts):
            # module attributes as the run so far leaves them
            stmts[j] = self.attributes.bind(stmts[j], env, self.error, written)
            if not self._is_run_statement(stmts[j], env, written) or self._calls_compiled_helper(stmts[j], env):
                break
            written |= written_in([stmts[j]])
            j += 1
        run = stmts[i:j]
        if j < len(stmts) and isinstance(stmts[j], ast.If):
            stmts[j] = self._condition_into_run(run, stmts[j], env, written)
        if self._per_length_on_failure(lambda: self.compile_run(run, env, live_before(stmts[j:], block.live_out)), block, j - i):
            block.i = j

    def _per_length_on_failure(self, compile_statements, block: Block, count: int) -> bool:
        """Compile `block.stmts[block.i : block.i + count]`; when they do tensor math on a list
        whose length depends on the path but is one of a few known lengths (an unrolled loop
        that may `break`: lists.KnownLengths), undo that and rewrite them as

            if len(lst) == 1: <lst of 1 item> <statements>
            elif ...: ...
            else: <lst of n items> <statements>

        so that each branch has static shapes. When they fail on a value such a chain made
        (`ids = np.array(toks)`, then `ids.sum()`), the chain is undone and made again with
        them in it. Returns False when it rewrote the block."""
        ir_block = ir.InsertionPoint.current.block
        before, saved = len(ir_block.operations), dict(block.env)
        try:
            compile_statements()
            return True
        except RuntimeSize:
            stmts = block.stmts[block.i : block.i + count]
            read = set().union(*(names_read(s) for s in stmts))
            name = next((n for n in sorted(read) if isinstance(block.env.get(n), lists.KnownLengths)), None)
            grown = self._grown_length_chain(stmts, read, ir_block) if name is None else None
            if name is None and grown is None:
                raise
        following = block.stmts[block.i + count :]
        if grown is not None:  # undone back to where the earlier chain started
            chain, between = grown
            self._length_chains.remove(chain)
            chain = _LengthChain(chain.name, chain.lengths, chain.statements + between + stmts, following, ir_block, chain.ops_before, chain.env)
        else:
            chain = _LengthChain(name, saved[name].lengths, stmts, following, ir_block, before, saved)
        erase_after(ir_block, chain.ops_before)
        block.env.clear()
        block.env.update(chain.env)
        self._length_chains.append(chain)
        block.restart(self._length_chain_statements(chain) + following, block.env)
        return False

    def _grown_length_chain(self, stmts, read: set[str], ir_block) -> tuple[_LengthChain, list] | None:
        """The per-length chain compiled earlier in this IR block that `stmts` follow and read
        a value of, with the statements between the two."""
        for chain in reversed(self._length_chains):
            position = next((k for k, s in enumerate(chain.following) if s is stmts[0]), None)
            if position is None or chain.ir_block != ir_block:
                continue
            between = chain.following[:position]
            if read & written_in(chain.statements + between):
                return chain, between
        return None

    @staticmethod
    def _length_chain_statements(chain: _LengthChain) -> list[ast.stmt]:
        first = chain.statements[0]
        length_of = ast.Call(func=ast.Name("len", ast.Load()), args=[ast.Name(chain.name, ast.Load())], keywords=[])
        arms = [
            (length, [nodes.FixLength(chain.name, length, first.lineno), *copy.deepcopy(chain.statements)])
            for length in sorted(chain.lengths)
        ]
        return nodes.equality_chain(length_of, arms, first)

    def visit_FixLength(self, stmt: nodes.FixLength, block: Block) -> None:
        value = block.env[stmt.name]
        fixed = lists.fixed_length(self, value, stmt.length)
        lists.replace_everywhere(block.env, value, fixed)
        block.env[stmt.name] = fixed
        block.i += 1

    def _one_arm_per_candidate(self, stmt: ast.stmt, env: dict) -> list[ast.stmt] | None:
        """`self.experts[k](x)` with a runtime `k`: an `if`/`elif` over the candidates
        (dispatch.py), or None when the statement picks nothing by a runtime index."""
        found = dispatch.runtime_pick(stmt, lambda expr: self._try_constant(expr, env, quiet=True), V.MISSING)
        if found is None:
            return None
        subscript, candidates = found
        return dispatch.one_arm_per_candidate(stmt, subscript, len(candidates), f"{dispatch.PICK_PREFIX}{fresh_id()}")

    def _name_values(self, env: dict) -> None:
        """Give the IR values the names of the variables that hold them (the first name a
        value gets stays): the generated host program reads like the model's forward."""
        for name, value in env.items():
            shown = desugar.display_name(name).removeprefix("self.")
            if not (shown.isidentifier() and shown.isascii()) or shown.startswith("__"):
                continue  # a name DyCL made up (or one MLIR cannot spell, `α`: codegen numbers it)
            for leaf in V.leaves(value):
                if isinstance(leaf, V.Dyn):
                    self.builder.name_result(leaf.value, shown)

    def _hoist_test_call(self, stmt: ast.If, env) -> list[ast.stmt] | None:
        """`if self.decide(x):`, `if self.score(x) > t:` with a helper DyCL compiles: its
        call becomes a statement of its own right before the `if` (Python evaluates the test
        once, first); the test itself (or under `not`) is a call as a statement would be."""
        return self._hoist_nested_call(stmt, stmt.test, env, nested=False)

    @staticmethod
    def _label_index(stmts, label: int, start: int) -> int:
        for k in range(start, len(stmts)):
            if isinstance(stmts[k], nodes.Label) and stmts[k].id == label:
                return k
        raise AssertionError(f"jump to a label outside its statement list ({label})")

    def _scope_for(self, source: SourceFunction) -> _Scope:
        scope = self._scopes.get(source.file + ":" + source.node.name + str(source.node.lineno))
        if scope is None:
            scope = self._scopes[source.file + ":" + source.node.name + str(source.node.lineno)] = _Scope(source)
        return scope

    # ----- if --------------------------------------------------------------------------

    def compile_if(self, stmts, i, env, live_out):
        stmt = stmts[i]
        condition = self.condition(stmt.test, env)
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
        live = live_before(rest, live_out)

        flag = self.builder.to_i1(condition)
        draft = ir.Operation.create("scf.if", results=[], operands=[flag], regions=2)
        self._join_node = stmt
        branch_envs = []
        for region, body, refined in zip(draft.regions, (stmt.body, stmt.orelse), none_test_branches(stmt.test, env)):
            with ir.InsertionPoint(region.blocks.append()):
                branch_envs.append(self.compile_block(body + tail, {**env, **refined}, live))
        env = self._join_if(draft, flag, branch_envs, live, env)
        return rest, env

    def _join_if(self, draft, flag, branch_envs, live, env_before):
        then_env, else_env = branch_envs
        joined = dict(env_before)
        yields: list[tuple[str, list, list]] = []  # (name, then leaves, else leaves)
        blocks = [draft.regions[0].blocks[0], draft.regions[1].blocks[0]]
        for name in sorted(live):
            a, b = then_env.get(name, V.MISSING), else_env.get(name, V.MISSING)
            if a is V.MISSING and b is V.MISSING:
                continue
            if self.attributes.is_variable(name) and any(v is V.MISSING or v is PARTIAL for v in (a, b)):
                joined[name] = PARTIAL  # a module attribute assigned on some paths only
                continue
            a = V.UNDEF if a is V.MISSING else a
            b = V.UNDEF if b is V.MISSING else b
            if V.same_value(a, b):
                joined[name] = a
                continue
            yields.append((name, a, b))

        # Materialise both sides' leaves in their own block, then build the real scf.if.
        then_ops, else_ops, types, examples, shapes = [], [], [], [], []
        for name, a, b in yields:
            with ir.InsertionPoint(blocks[0]):
                a_leaves, structure = self._leaves_for_join(a, b, name)
            with ir.InsertionPoint(blocks[1]):
                b_leaves, _ = self._leaves_for_join(b, a, name)
            start = len(types)
            for la, lb in zip(a_leaves, b_leaves):
                types.append(self._join_type(la.type, lb.type, name))
                # An example only needs the right type: a runtime list's is taken from the
                # side that has items, so that code after the join can run on it
                # (`torch.cat(tokens)` where the example run's decoder stopped at once).
                empty = isinstance(la.example, list) and not la.example
                examples.append(lb.example if empty and isinstance(lb.example, list) else la.example)
            shapes.append((name, structure, start, len(a_leaves)))
            then_ops.extend(a_leaves)
            else_ops.extend(b_leaves)
        for block, leaves in zip(blocks, (then_ops, else_ops)):
            with ir.InsertionPoint(block):
                operands = [self._cast(leaf, t).value for leaf, t in zip(leaves, types)]
                ir.Operation.create("scf.yield", operands=operands)
        if_op = ir.Operation.create(
            "scf.if",
            results=[self.builder.type(t) for t in types],
            operands=[flag],
            regions=2,
            ip=ir.InsertionPoint(draft),
        )
        for old, new in zip(blocks, if_op.regions):
            new_block = new.blocks.append()
            for op in list(old.operations):
                new_block.append(op)
        draft.erase()
        results = list(if_op.results)
        for name, structure, start, count in shapes:
            leaves = [V.Dyn(results[k], types[k], examples[k]) for k in range(start, start + count)]
            joined[name] = V.rebuild(structure, leaves)
            then_value, else_value = then_env.get(name, V.UNDEF), else_env.get(name, V.UNDEF)
            if structure is None:  # a list of a different length on each path: which ones
                joined[name] = lists.with_known_lengths(joined[name], then_value, else_value)
            memory = aliases.path_dependent_memory(then_value, else_value)  # marked before
            if aliases.alias_group(then_env, name, live) != aliases.alias_group(else_env, name, live):
                # shares memory with another variable on one path only: never mutate it
                memory |= aliases.storages(then_value) | aliases.storages(else_value)
            joined[name] = aliases.mark_path_dependent(joined[name], memory)
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

    def _leaves_for_join(self, mine: V.EnvValue, other: V.EnvValue, name: str):
        """Leaves of `mine` as IR values, shaped like `other` where `mine` is undefined."""
        mine, other = self._optionals_for_join(mine, other), self._optionals_for_join(other, mine, build=False)
        if mine is V.UNDEF:
            if other is V.UNDEF:
                raise AssertionError("both sides undefined")
            template = other
            if isinstance(template, (V.Tup, V.Maybe)):
                leaves = [self._placeholder_like(l) for l in V.leaves(template)]
                return leaves, template
            return [self._placeholder_like(template)], None
        list_type = lists.joined_list_type(mine, other)
        if list_type is not None:  # lists of different lengths: one runtime list of their kind of item
            return [lists.as_runtime_list(self, mine, list_type)], None
        if isinstance(mine, V.Tup) and isinstance(other, V.Tup):
            mine = self._nested_lists_for_join(mine, other)
            other = self._nested_lists_for_join(other, mine, build=False)
        if isinstance(mine, V.Tup) or isinstance(other, V.Tup):
            if other is not V.UNDEF and not V.same_structure(mine, other):
                raise self.error(
                    None,
                    f"{_describe(name)} has a different structure on different paths",
                    "return/assign the same tuple or list shape on every path "
                    "(only a list holding just tensors may change length at runtime)",
                )
            return [self._materialize(l, name) for l in V.leaves(mine)], mine
        if isinstance(mine, V.Maybe):
            return [self._materialize(l, name) for l in V.leaves(mine)], mine
        return [self._materialize(mine, name)], None

    def _optionals_for_join(self, mine: V.EnvValue, other: V.EnvValue, build: bool = True) -> V.EnvValue:
        """`mine` as a `Maybe` where one side is None and the other a tensor or a Python
        scalar (`ps = None` on one path, a tensor on the other), in tuples too. build=False
        only shapes `other` alike (no IR)."""
        if isinstance(mine, V.Tup) and isinstance(other, V.Tup) and V.kind_of(mine, True) == V.kind_of(other, True):
            return V.Tup(tuple(self._optionals_for_join(a, b, build) for a, b in zip(mine.items, other.items)), mine.kind)
        if not (_optional_side(mine) and _optional_side(other)) or not any(map(_none_or_maybe, (mine, other))):
            return mine
        if isinstance(mine, V.Maybe):
            return mine
        if _none_or_maybe(mine):  # None here: a placeholder of the other side's type
            template = other.value if isinstance(other, V.Maybe) else other
            return V.Maybe(V.Const(False), self._placeholder_like(template) if build else template)
        return V.Maybe(V.Const(True), mine)

    def _nested_lists_for_join(self, mine: V.Tup, other: V.Tup, build: bool = True) -> V.Tup:
        """`mine` with each list it holds that has another length in `other` (at the same
        place) as a runtime list of their kind of item (`return x, tokens` where `tokens`
        has a length per path). build=False only shapes `other` alike (no IR)."""
        if len(mine.items) != len(other.items):
            return mine
        items = []
        for a, b in zip(mine.items, other.items):
            list_type = lists.joined_list_type(a, b)
            if list_type is not None:
                a = lists.as_runtime_list(self, a, list_type) if build else V.Dyn(None, list_type, [])
            elif isinstance(a, V.Tup) and isinstance(b, V.Tup) and not (a.kind == b.kind == "list" and lists.differ(a, b)):
                a = self._nested_lists_for_join(a, b, build)  # (two lists no one type holds stay as they are)
            items.append(a)
        return V.Tup(tuple(items), mine.kind)

    def _placeholder_like(self, value: V.EnvValue) -> V.Dyn:
        if isinstance(value, V.Const):
            return self._materialize(value, "value")
        return self.builder.placeholder(value.type, value.example)

    def _materialize(self, value: V.EnvValue, name: str) -> V.Dyn:
        if isinstance(value, V.Maybe):
            raise self.error(None, f"{_describe(name)} is None on some paths and {V.kind_of(value.value)} on others",
                             "test `is None` first (`if v is not None:`), or give it the same kind on every path")
        if isinstance(value, V.Const) and not isinstance(value.value, (bool, int, float, type(None))):
            code = isinstance(value.value, torch.nn.Module) or callable(value.value)
            raise self.error(
                None,
                f"{_describe(name)} holds a {type(value.value).__name__} that depends on a runtime condition",
                "call the module or function on each path instead of keeping it in a variable "
                "(`y = self.experts[k](x)`: DyCL branches on `k` and each branch calls its own)"
                if code else "only tensors, Python scalars, tuples and lists of tensors can differ between paths",
            )
        return self.builder.materialize(value)

    def _join_type(self, a: Attribute, b: Attribute, name: str) -> Attribute:
        try:
            return V.join_types(a, b)
        except FrontendError as error:
            raise self.error(None, f"{_describe(name)}: {error.construct}", error.hint) from None

    def _cast(self, leaf: V.Dyn, type_: Attribute) -> V.Dyn:
        if leaf.type == type_:
            return leaf
        if V.is_tensor_type(type_):
            return self.builder.cast(leaf, type_)
        if V.is_list_type(type_):
            # (joins refuse lists of two kinds; only a list of known items is made anew)
            if lists.fits(leaf, type_):
                return lists.as_runtime_list(self, leaf, type_)
            raise self.error(None, f"{V.describe_type(leaf.type)} where {V.describe_type(type_)} is expected",
                             "keep one kind of item in the list on every path")
        return leaf

    # ----- host statements ---------------------------------------------------------------

    def host_statement(self, stmt: ast.stmt, env: dict) -> None:
        """A statement the host program runs: `host_<statement class>`."""
        if self.mutates_tensor(stmt, env):
            self.compile_mutation_with_host_operands(stmt, env)
            return
        handler = getattr(self, f"host_{type(stmt).__name__}", None)
        if handler is None:
            raise self.error(stmt, f"`{type(stmt).__name__}` statement", "")
        handler(stmt, env)

    def host_Expr(self, stmt: ast.Expr, env: dict) -> None:
        if isinstance(stmt.value, ast.Constant):
            return  # a docstring
        if self._list_method(stmt.value, env) is not None:
            lists.mutate(self, stmt.value, env)
            return
        self.expression(stmt.value, env)  # evaluated for its errors; the value is dropped

    def host_Assign(self, stmt: ast.Assign, env: dict) -> None:
        value = self.expression(stmt.value, env)
        if len(stmt.targets) > 1 and all(isinstance(t, ast.Name) for t in stmt.targets):
            value = lists.bound_list(self, value, env)  # `a = b = []`: one list, two names
        for target in stmt.targets:
            self._assign(target, value, env)

    def host_AugAssign(self, stmt: ast.AugAssign, env: dict) -> None:
        binop = ast.copy_location(ast.BinOp(left=_load(stmt.target), op=stmt.op, right=stmt.value), stmt)
        value = self.expression(binop, env)
        old = env.get(stmt.target.id) if isinstance(stmt.target, ast.Name) else None
        if lists.is_list(old) and isinstance(stmt.op, (ast.Add, ast.Mult)):
            # `lst += [x]` extends the list in place: every name bound to it sees the change
            lists.rebind(self, env, stmt.target.id, old, lists.bound_list(self, value, {}), stmt, f"`{source_text(stmt)}`")
            return
        self._assign(stmt.target, value, env)

    def host_AnnAssign(self, stmt: ast.AnnAssign, env: dict) -> None:
        if stmt.value is not None:
            self._assign(stmt.target, self.expression(stmt.value, env), env)

    def host_Delete(self, stmt: ast.Delete, env: dict) -> None:
        lists.delete(self, stmt, env)  # one target each (desugar.split_delete)

    def _assign(self, target: ast.expr, value: V.EnvValue, env: dict) -> None:
        if isinstance(target, ast.Name) and target.id == RETURN_VAR:
            host_numpy.refuse_numpy_result(self, target, value)
        refuse_truth_value(self, target, value)
        if isinstance(target, ast.Name):
            env[target.id] = lists.bound_list(self, value, env)
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, V.Const):
                # `outs, confs = [], []`: each `[]` is a new list, as `outs = []` makes one
                items = [V.Tup((), "list") if type(v) is list and not v else V.Const(v) for v in value.value]
            elif isinstance(value, V.Tup):
                items = list(value.items)
            else:
                raise self.error(target, "unpacking a runtime value", "index it explicitly")
            if len(items) != len(target.elts):
                raise self.error(target, "unpacking a tuple of the wrong length")
            for sub, item in zip(target.elts, items):
                self._assign(sub, item, env)
            return
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and lists.is_list(env.get(target.value.id)):
            lists.store(self, target, value, env)
            return
        held = env.get(target.value.id) if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) else None
        if isinstance(held, V.Const) and isinstance(held.value, dict):
            raise self.error(
                target, f"`{source_text(target)} = ...` changes a dict in forward",
                "DyCL keeps only dicts built whole: collect the values in variables and build the dict "
                f"once they are final (`{target.value.id} = {{...}}`), or keep tensors in a tuple",
            )
        raise self.error(target, "assignment to an attribute or item", "assign to a local variable (module state cannot change in forward)")

    def _list_value(self, value: V.Tup) -> V.EnvValue:
        """What a Python list bound to a name becomes: constants stay one Python list; a
        list of tensors (or `[]`) becomes a runtime list, which may grow under runtime
        conditions (its items stay known while it is built in straight-line code:
        `lists.StaticList`); any other mix (`[logits, count]`) keeps its structure, like a tuple."""
        if value.items and all(isinstance(i, V.Const) for i in value.items):
            return V.Const([i.value for i in value.items])
        if all(isinstance(i, V.Dyn) and V.is_tensor_type(i.type) for i in value.items):
            return lists.static_list(self, value.items)
        return value

    def _list_method(self, expr: ast.expr, env) -> str | None:
        """The method of a bare `name.method(...)` (or `rows[0].method(...)`) statement that
        changes a host list (or a container the host holds: those are refused when compiled)."""
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            holder = self.receiver_value(expr.func.value, env)
            method = expr.func.attr
            if lists.is_list(holder) and method in lists.LIST_METHODS:
                return method
            if isinstance(holder, V.Const) and method in lists.CONTAINER_MUTATORS.get(type(holder.value), ()):
                return method
        return None

    def receiver_value(self, receiver: ast.expr, env) -> V.EnvValue | None:
        """The value a list method is called on, found without running anything: a name, or
        an item of a list known here (`rows[0]`); None when it takes computing."""
        if isinstance(receiver, ast.Name):
            return env.get(receiver.id)
        if not isinstance(receiver, ast.Subscript):
            return None
        constant = self._try_constant(receiver, env, quiet=True)
        if constant is not V.MISSING:
            return V.Const(constant)
        key = self._try_constant(receiver.slice, env, quiet=True)  # `rows[i % 3]` in an unrolled loop
        if isinstance(key, int) and not isinstance(receiver.slice, ast.Constant):
            receiver = ast.copy_location(ast.Subscript(value=receiver.value, slice=ast.Constant(key), ctx=ast.Load()), receiver)
        shaped = self.try_structure(receiver, env)
        return None if shaped is V.MISSING else structure.as_env_value(shaped)

    def container_changes(self, stmt: ast.stmt, env):
        """(call, receiver, held value, whether a runtime index picks it) of each list, dict
        or set method in `stmt` that changes its receiver, but a statement of its own on a list
        the frontend follows (`lst.append(x)`, `rows[0].append(x)`)."""
        top = stmt.value if isinstance(stmt, ast.Expr) and self._list_method(stmt.value, env) else None
        for node in ast.walk(stmt):
            if node is top or not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in lists.CONTAINER_METHOD_NAMES:
                continue
            receiver = node.func.value
            holder, picked = self.receiver_value(receiver, env), False
            if holder is None and isinstance(receiver, ast.Subscript):
                root = _root_of(receiver)
                holder, picked = (env.get(root.id) if isinstance(root, ast.Name) else None), True
            if lists.is_list(holder) or (isinstance(holder, V.Const) and isinstance(holder.value, (dict, set))):
                yield node, receiver, holder, picked

    def _refuse_identity_test(self, node: ast.AST, env) -> None:
        """`y is x` of runtime values: whether two names hold one object, which depends on the
        path taken and is not a value DyCL computes (`v is None` is: values.Maybe)."""
        for sub in ast.walk(node):
            if not (isinstance(sub, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in sub.ops)):
                continue
            operands = [sub.left, *sub.comparators]
            if any(isinstance(o, ast.Constant) and o.value is None for o in operands):
                continue
            if all(self._try_constant(o, env, quiet=True) is not V.MISSING for o in operands):
                continue
            raise self.error(
                sub, f"`{source_text(sub)}` tests whether two names hold one tensor or value object",
                "keep a bool that records which value was assigned (`changed = True` where the new one is)",
            )

    def _refuse_container_change(self, stmt: ast.stmt, env) -> None:
        """Evaluating such a change here would change the import's own copy of the list, not
        the program's (`container_changes`)."""
        for node, receiver, holder, picked in self.container_changes(stmt, env):
            text, method = source_text(node), node.func.attr
            if picked:
                raise self.error(
                    node, f"`{text}` changes a list picked by a runtime index",
                    f"pick it with an `if` instead, each branch changing one list at a constant index "
                    f"(`if k == 0: {source_text(_root_of(receiver))}[0].{method}(...)`)",
                )
            raise self.error(
                node, f"`{text}` changes a {V.kind_of(holder)} inside an expression",
                f"bind it to a name and change it in a statement of its own: `item = {source_text(receiver)}`, "
                f"then `item.{method}(...)`",
            )

    def _runtime_append(self, holder: V.Dyn, item: V.EnvValue, expr: ast.Call) -> V.EnvValue:
        if isinstance(holder, lists.StaticList) and lists.list_type_of_item(item) != holder.type:
            # items known: a list of tensors meeting a Python value keeps a fixed structure
            # (`[x, 3]`); an empty one or one of Python values stays a Python list for now
            # (a join with a list of another length makes it a runtime list of its kind)
            return V.Tup(holder.items + (item,), "list")
        lists.check_item_kind(self, holder, item, expr, "`append`")
        item = self._materialize(item, "list item")
        op = ir.Operation.create(LIST_APPEND, results=[self.builder.type(holder.type)], operands=[holder.value, item.value])
        if isinstance(holder, lists.StaticList):
            return lists.StaticList(op.result, holder.type, holder.example + [item.example], items=holder.items + (item,))
        appended = V.Dyn(op.result, holder.type, holder.example + [item.example])
        if isinstance(holder, lists.KnownLengths):  # one longer, whichever length it had
            return lists.KnownLengths(appended.value, appended.type, appended.example, lengths=frozenset(n + 1 for n in holder.lengths))
        return appended

    # ----- expressions -------------------------------------------------------------------

    def condition(self, expr: ast.expr, env) -> V.EnvValue:
        value = self.expression(expr, env)
        if isinstance(value, V.Maybe):
            raise self.error(expr, f"`if {desugar.source_text(expr)}:` of a value that is None on some paths",
                             f"test it with `is None` (`if {desugar.source_text(expr)} is not None:`)")
        if isinstance(value, V.Const):
            return V.Const(bool(value.value))
        if isinstance(value, V.Tup):
            return V.Const(bool(value.items))
        if V.is_list_type(value.type):
            return host_builtins.truth(self, value, expr)  # `if lst:` is `len(lst) != 0`
        return value

    def expression(self, expr: ast.expr, env) -> V.EnvValue:
        """Const when known at import time; host ops where needed; otherwise a captured run."""
        self._refuse_identity_test(expr, env)
        if isinstance(expr, ast.List) and not expr.elts:
            return V.Tup((), "list")  # becomes a runtime list once assigned
        constant = self._try_constant(expr, env)
        if constant is not V.MISSING:
            return V.Const(constant)
        shaped = V.MISSING if isinstance(expr, ast.Name) else self.try_structure(expr, env)
        # (`len(lengths)`, `lengths[1:]`, `lengths[0]`; a bare name keeps its very value)
        if shaped is not V.MISSING:
            value = structure.env_value(shaped)
            return value if isinstance(value, (V.Dyn, V.Tup, V.Maybe)) else V.Const(value)
        if isinstance(expr, ast.Name):
            value = env.get(expr.id, V.UNDEF)
            if value is V.UNDEF:
                raise self.error(expr, f"`{expr.id}` may be used before it is assigned")
            return value
        if isinstance(expr, (ast.Tuple, ast.List)):
            return host_tuple(self, expr, env)
        if not self._needs_host(expr, env, set()):
            return self.tensor_expression(expr, env)
        handler = HOST_EXPRESSIONS.get(type(expr))
        if handler is None:
            raise self.error(expr, f"`{ast.unparse(expr)}` mixes runtime Python values into an expression DyCL cannot split")
        return handler(self, expr, env)

    def _needs_host(self, node: ast.AST, env, written_in_run: set[str]) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
                sub = ast.Name(sub.target.id, ast.Load())  # `n += 1` reads n
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in written_in_run:
                value = env.get(sub.id)
                if isinstance(value, V.Dyn) and not V.is_tensor_type(value.type):
                    return True
                if isinstance(value, V.Tup) and any(
                    isinstance(l, V.Dyn) and not V.is_tensor_type(l.type) for l in V.leaves(value)
                ):
                    return True
                if host_numpy.is_numpy(value) or V.holds_maybe(value):  # (numpy semantics, `is None`)
                    return True
            elif isinstance(sub, ast.Call):
                if isinstance(sub.func, ast.Attribute) and sub.func.attr in X.SCALAR_METHODS:
                    return True
                if isinstance(sub.func, ast.Attribute) and sub.func.attr == "numpy" and not sub.args:
                    if any(n in written_in_run or not self._is_constant_name(n, env) for n in names_read(sub)):
                        return True  # `t.cpu().numpy()` of a runtime tensor: a numpy value
                func = self._try_constant(sub.func, env, quiet=True)
                if X.known(X.REJECTED_CALLS, func):
                    raise self.error(sub, *X.REJECTED_CALLS[func])
                if X.known(X.SCALAR_BUILTINS, func) or X.known(X.HOST_TORCH_FUNCTIONS, func) or func is builtins.len:
                    return True
                # any()/all() (and max/min with a key or over a comprehension) decide with
                # Python `bool()` on their items: on the host when an item is a runtime value
                if host_numpy.is_numpy_function(func) and any(
                    n in written_in_run or not self._is_constant_name(n, env) for n in names_read(sub)
                ):
                    return True  # numpy on runtime values: lowered to torch on the host
                if X.known(host_builtins.DECIDING, func) or (
                    func in (builtins.max, builtins.min)
                    and (any(k.arg == "key" for k in sub.keywords) or any(isinstance(a, host_builtins.COMPREHENSIONS) for a in sub.args))
                ):
                    if any(n in written_in_run or not self._is_constant_name(n, env) for n in names_read(sub)):
                        return True
            elif isinstance(sub, (ast.BoolOp, ast.IfExp)):
                return True
            elif isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.Not):
                return True
        return False

    def _is_constant_name(self, name: str, env) -> bool:
        value = env.get(name, V.MISSING)
        return value is V.MISSING or isinstance(value, V.Const)

    def _try_constant(self, expr: ast.expr, env, quiet: bool = False):
        """The value of `expr` if it reads only import-time constants and is not a tensor."""
        reads = names_read(expr)
        if not all(self._is_constant_name(n, env) for n in reads):
            return V.MISSING
        if self._calls_container_method(expr, env):
            return V.MISSING  # (it would change the import's own list: `_refuse_container_change`)
        try:
            value = self._eval_constant(expr, env)
        except Exception:
            return V.MISSING
        if any(isinstance(leaf, torch.Tensor) for leaf in pytree.tree_leaves(value)):
            return V.MISSING
        return value

    def _calls_container_method(self, expr: ast.expr, env) -> bool:
        """Whether `expr` calls a method that changes a Python list, dict or set."""
        for node in ast.walk(expr):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in lists.CONTAINER_METHOD_NAMES:
                receiver = self._try_constant(node.func.value, env, quiet=True)
                if receiver is V.MISSING or isinstance(receiver, (list, dict, set)):
                    return True
        return False

    def try_structure(self, expr: ast.expr, env):
        """`expr` evaluated on the structure of its runtime values (structure.py): the
        items of `for l in lengths`, `len(lengths)`; V.MISSING if it looks inside them."""
        if not structure.is_structural(expr) or not structure.is_builtin_namespace_clean(self.scope.namespace):
            return V.MISSING
        memo: dict = {}
        local = {n: structure.tokens(v, memo) for n, v in env.items() if v is not V.UNDEF}
        code = compile(ast.Expression(_located(expr)), self.scope.source.file, "eval")
        try:
            value = eval(code, self.scope.namespace, local)
            if isinstance(value, (range, enumerate, zip, reversed, map)):
                value = list(value)
        except Exception:
            return V.MISSING
        if isinstance(value, torch.Tensor):
            return V.MISSING
        return value

    def _eval_constant(self, expr: ast.expr, env):
        local = {n: v.value for n, v in env.items() if isinstance(v, V.Const)}
        code = compile(ast.Expression(_located(expr)), self.scope.source.file, "eval")
        with torch.no_grad():
            return eval(code, self.scope.namespace, local)

    # ----- inlining ----------------------------------------------------------------------

    def _calls_compiled_helper(self, stmt: ast.stmt, env) -> bool:
        """Whether the statement calls a helper that DyCL compiles itself (`_expand_call`
        inlines it, or refuses it inside an expression): it starts a new step, not a run."""
        top = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr, ast.AugAssign)) else None
        return any(
            isinstance(sub, ast.Call) and self._callee(sub, env, nested=sub is not top) is not None
            for sub in ast.walk(stmt)
        )

    def _expand_call(self, stmt: ast.stmt, env) -> list[ast.stmt] | None:
        """Inline `x = helper(...)`/`helper(...)` when the helper has control flow."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            value = stmt.value
        elif isinstance(stmt, (ast.Expr, ast.AugAssign)):
            value = stmt.value
        else:
            return None
        callee = self._callee(value, env) if isinstance(value, ast.Call) else None
        if callee is None:
            hoisted = self._hoist_nested_call(stmt, value, env)
            if hoisted is not None:
                return hoisted
            self._reject_nested_helpers(value, env)
            return None
        function, receiver = callee
        result_var = f"{RESULT_PREFIX}{fresh_id()}"
        inlined, bindings = inline_call(self.scope.source, function, receiver, value, result_var, self.attributes.annotate)
        binds = [nodes.BindConst(name, obj, stmt.lineno) for name, obj in bindings.items()]
        replaced = _replace_value(stmt, ast.Name(result_var, ast.Load()))
        return [SwitchScope(function), *binds, *inlined, SwitchScope(self.scope.source), replaced]

    def _callee(self, call_node: ast.Call, env, nested: bool = False):
        """(source, receiver) of a helper that DyCL compiles (inlines) rather than running it
        inside a captured block: one with control flow or module attributes forward assigns
        (always), or, called as a statement of its own (not `nested` in an expression), one
        that uses what only DyCL's desugaring compiles (`_desugared`)."""
        func = self._try_constant(call_node.func, env, quiet=True)
        if func is V.MISSING:
            return None
        if isinstance(func, torch.nn.Module):
            function, receiver = type(func).forward, func
        elif hasattr(func, "__self__") and isinstance(func.__self__, torch.nn.Module) and hasattr(func, "__func__"):
            function, receiver = func.__func__, func.__self__
        elif isinstance(func, types.FunctionType):
            function, receiver = func, NO_RECEIVER  # a plain helper function of the user's code
        else:
            return None
        if (getattr(function, "__module__", None) or "").partition(".")[0] in _LIBRARY_MODULES:
            return None
        try:
            source = parse_function(function)
        except FrontendError:
            return None
        must = has_control_flow(source.node) or self.attributes.concerns(source.node) or changes_an_argument_list(source.node)
        if not must and (nested or not _desugared(source.node)):
            return None  # runs inside a captured block
        return source, receiver

    def _hoist_nested_call(self, stmt: ast.stmt, expr: ast.expr, env, nested: bool = True) -> list[ast.stmt] | None:
        """`return self.forward_single(x, p), p`: a call of a helper DyCL compiles, inside an
        expression, becomes a statement of its own right before (`__hoist = ...`) when Python
        evaluates it unconditionally and calls nothing before it (so that the order of effects
        is kept); None otherwise."""
        call, _ = self._evaluation_order_search(expr, env, nested)
        if not isinstance(call, ast.Call):
            return None
        name = f"__hoist{fresh_id()}"
        assign = ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())], value=call), stmt)
        return [assign, replace_nodes(stmt, {id(call): name})]

    def _evaluation_order_search(self, node: ast.AST, env, nested: bool = True):
        """(the compiled helper call evaluated first, or None, or False when one exists but
        cannot move; whether any call is evaluated in `node`), in Python's evaluation order
        through the expressions whose order is fixed and unconditional. `nested=False`: `node`
        (or the operand of a `not` at its top) is a call at statement level (`_callee`)."""
        if isinstance(node, ast.Call) and self._callee(node, env, nested=nested) is not None:
            return node, True
        if isinstance(node, (ast.Tuple, ast.List)):
            children = node.elts
        elif isinstance(node, ast.BinOp):
            children = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and not nested:
            return self._evaluation_order_search(node.operand, env, nested)
        elif isinstance(node, (ast.UnaryOp, ast.Starred)):
            children = [getattr(node, "operand", None) or node.value]
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            children = [node.value] + ([node.slice] if isinstance(node, ast.Subscript) else [])
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            children = [node.left, *node.comparators]
        elif isinstance(node, ast.Call):
            children = [node.func, *node.args, *(k.value for k in node.keywords)]
        else:  # conditional or scoped evaluation (`a if c else b`, `and`, comprehensions)
            inner = any(isinstance(n, ast.Call) and self._callee(n, env, nested=True) is not None for n in ast.walk(node))
            return (False if inner else None), any(isinstance(n, ast.Call) for n in ast.walk(node))
        called = False
        for child in children:
            found, child_called = self._evaluation_order_search(child, env)
            if found is not None:
                return (False if called or found is False else found), True
            called |= child_called
        return None, called or isinstance(node, ast.Call)

    def _reject_nested_helpers(self, expr: ast.expr, env) -> None:
        for sub in ast.walk(expr):
            if isinstance(sub, ast.Call) and sub is not expr and self._callee(sub, env, nested=True) is not None:
                raise self.error(
                    sub,
                    f"call of `{desugar.source_text(sub.func)}` inside an expression (DyCL compiles that "
                    "helper itself: it has control flow, or uses module attributes that forward assigns)",
                    "assign its result to a variable first: `y = self.helper(x)`",
                )

    # ----- errors ------------------------------------------------------------------------

    def internal_error(self, error: Exception) -> FrontendError:
        """An exception that is not a FrontendError: a DyCL bug, reported at the user's
        statement being compiled, never as a raw traceback."""
        source, stmt = self.current or (self.scope.source, self.scope.source.node)
        # (a statement the frontend wrote, a `FixLength`, has no text: its kind instead)
        text = (desugar.source_text(stmt).splitlines() or [type(stmt).__name__])[0][:60]
        detail = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
        failure = source.error(
            stmt, f"DyCL failed to compile `{text}` (internal {type(error).__name__}{': ' + detail if detail else ''})",
            "this is a bug in DyCL, not in the model: please report it; rewriting the statement "
            "in simpler steps may avoid it",
        )
        failure.detail = detail
        return failure

    def error(self, node, construct: str, hint: str = "") -> FrontendError:
        """Located at `node`, or at the `if` being joined when the problem is a join."""
        return self.scope.source.error(node if node is not None else self._join_node, construct, hint)


@dataclass
class _LengthChain:
    """Statements compiled once per length of the list `name` (`_per_length_on_failure`):
    what the statements after them need to add themselves to the chain."""

    name: str
    lengths: frozenset
    statements: list[ast.stmt]  # as written, before the chain
    following: list[ast.stmt]  # the block's statements after them
    ir_block: ir.Block
    ops_before: int  # the IR block's ops before the chain
    env: dict  # the variables before the chain


class Block:
    """A statement list being compiled: the position, the environment there, and what is
    live after the list. A `visit_` method moves the position, or restarts the list when
    it rewrote it (an `if` compiled with the statements up to its join, a helper inlined)."""

    def __init__(self, stmts: list[ast.stmt], env: dict, live_out: set[str]):
        self.stmts = stmts
        self.i = 0
        self.env = env
        self.live_out = live_out

    def replace_current(self, stmts: list[ast.stmt]) -> None:
        self.stmts = self.stmts[: self.i] + stmts + self.stmts[self.i + 1 :]

    def restart(self, stmts: list[ast.stmt], env: dict) -> None:
        self.stmts, self.env, self.i = stmts, env, 0


class SwitchScope(nodes.FrontendStmt):
    """Marks where inlined code of another source file starts/ends (for error locations)."""

    _fields = ()
    _shared = ("source",)

    def __init__(self, source: SourceFunction):
        super().__init__()
        self.source = source
        self.lineno = 0


def _input_value(tree, arguments: list) -> V.EnvValue:
    if tree is None:
        return V.Const(None)
    if isinstance(tree, int):
        return arguments[tree]
    (kind, items), = tree.items()
    return V.Tup(tuple(_input_value(t, arguments) for t in items), kind)


def _desugared(fdef: ast.FunctionDef) -> bool:
    """A helper using what DyCL's own rewriting compiles and torch.export alone may not:
    `with torch.no_grad():`, `.data`, `.numpy()`, a call of a picked module (`heads[k](x)`),
    subscript stores (a masked read-modify-write `x[m] = x[m] * 0.5` has a data-dependent
    size inside export)."""
    for n in ast.walk(fdef):
        if isinstance(n, ast.With) or isinstance(n, ast.Attribute) and n.attr in ("data", "numpy"):
            return True  # (`.numpy()`: numpy on a tensor is host code, never a captured block)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript):
            return True  # `self.experts[k](x)`: a pick by a runtime index is DyCL's (dispatch.py)
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
        if any(isinstance(t, ast.Subscript) for t in targets):
            return True
    return False


def _return_node(fdef: ast.FunctionDef) -> ast.AST:
    """The forward's `return` when it has one (where a bad result is written), else its `def`."""
    returns = [n for n in ast.walk(fdef) if isinstance(n, ast.Return)]
    return returns[0] if len(returns) == 1 else fdef


def _none_or_maybe(value) -> bool:
    return isinstance(value, V.Maybe) or isinstance(value, V.Const) and value.value is None


def _optional_side(value) -> bool:
    """None, or what may be None on other paths: a tensor or a Python scalar."""
    if _none_or_maybe(value):
        return True
    if isinstance(value, V.Dyn):
        return not V.is_list_type(value.type)
    return isinstance(value, V.Const) and type(value.value) in (bool, int, float)


def _describe(name: str) -> str:
    return "the return value" if name == RETURN_VAR else f"`{desugar.display_name(name)}`"


def _load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.copy_location(ast.Name(target.id, ast.Load()), target)
    if isinstance(target, ast.Subscript):  # `lst[k] += v` on a list (`_assign` stores it)
        return ast.copy_location(ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load()), target)
    raise FrontendError("augmented assignment to an attribute or item")


def _replace_value(stmt: ast.stmt, value: ast.expr) -> ast.stmt:
    value = ast.copy_location(value, stmt)
    if isinstance(stmt, ast.Assign):
        new = ast.Assign(targets=stmt.targets, value=value)
    elif isinstance(stmt, ast.AugAssign):
        new = ast.AugAssign(target=stmt.target, op=stmt.op, value=value)
    else:
        new = ast.Expr(value=ast.Constant(None))
    return ast.copy_location(new, stmt)


def _root_of(expr: ast.expr) -> ast.expr:
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return expr


def _located(expr: ast.expr) -> ast.expr:
    fix_locations(expr, getattr(expr, "lineno", 1))
    return expr


__all__ = ["FunctionCompiler"]
