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
import dataclasses
import builtins
import contextlib
import copy
import warnings
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch_mlir import ir

from xdsl.ir import Attribute
from dycl.frontend import aliases, asserts, binding, by_size, callees, complex_values
from dycl.frontend.attributes import PARTIAL, ModuleAttributes
from dycl.frontend.state import CallState, Widened, changed_weight
from dycl.frontend import expressions as X
from dycl.frontend import data_sizes, host_builtins, host_numpy, lists, packed, predicates, sizes
from dycl.frontend import desugar, dispatch, host_expressions, loops, nodes, optional, runs, structure, unentered
from dycl.frontend import values as V
from dycl.frontend.build import HostBuilder, NoHostTranslation, RandomOpRefused, drop_unused_constants, erase_after
from dycl.frontend.capture import CapturedRun, DataDependentShape, IntArithmetic, RunCapturer, SizeTest, SpecializedInput, WeightMutation
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import DataSize, FrontendError, RuntimeSize
from dycl.frontend.liveness import MUTATING_METHODS, live_before, names_mutated, names_read, written_in
from dycl.frontend.rewrite import (
    SourceFunction,
    changes_an_argument_list,
    fresh_id,
    has_control_flow,
    inline_call,
    lower,
    parse_function,
    unroll,
)
from dycl.frontend.nodes import OPERAND_PREFIX, RESULT_PREFIX, replace_nodes
from dycl.dialects.torch_ops import LIST_APPEND, LIST_ITEM, LIST_LENGTH

# Functions from these packages are never inlined (their control flow is on Python values).
_LIBRARY_MODULES = {"torch", "numpy", "functools", "typing", "math"}
RETURN_VAR = "__dycl_return"


class _Scope:
    """The source being compiled (for error locations and global names)."""

    def __init__(self, source: SourceFunction):
        self.source = source
        self.namespace = {**source.globals, **source.closure}


class FunctionCompiler:
    """The one visitor of a forward's statements and expressions, over one environment.

    Statements dispatch by node type to `visit_<node>` (control flow: `If`, `Loop`, ...) or,
    for statements on host values, `host_<node>` (`host_Assign`, ...); expressions that need
    the host dispatch to `host_<node>` (`host_Call`, `host_Compare`, ...). Tensor code is
    captured as runs. Builtins and numpy functions are tables of handlers keyed by the
    function (`host_builtins`, `host_numpy`) that take this compiler as their context."""

    def __init__(self, model: torch.nn.Module, capturer: RunCapturer, state: CallState | None = None):
        self.model = model
        self.state = state  # the attributes forward keeps from one call to the next (state.py)
        self.state_record: list | None = None  # their arguments and results (func attribute `dycl.state`)
        self.capturer = capturer
        self.builder = HostBuilder(capturer.context)
        self.scope: _Scope | None = None
        self._join_node: ast.AST | None = None
        self.runtime_loop_depth = 0  # (a loop the pipeline unrolls may make shapes static again)
        self.sizes_at_run_time = False  # (see _refuse_size_by_path)
        self._scopes: dict[str, _Scope] = {}
        # Memory that runs must not mutate (aliases.py): the weights, the caller's inputs.
        self.state_guard = aliases.StateGuard(model)
        self.memory_of_weights = self.state_guard.memory
        self.memory_of_inputs: dict[int, str] = {}
        self.current = None
        self.attributes = ModuleAttributes(keeps_state=state is not None)  # module attributes forward assigns
        self._length_chains: list[_LengthChain] = []
        # The runtime loops being compiled, innermost last: (their break and return flags,
        # the names read after them), for the joins of their bodies (see _join_if).
        self._loop_exits: list[tuple[frozenset[str], set[str]]] = []
        self.unentered = unentered.Loops()  # (runtime loops the example does not enter)
        self.optional_inputs = False  # (some input compiled for None and a value: optional.py)

    # ----- entry point -----------------------------------------------------------------

    def compile(self, method, example_inputs: tuple, name: str = "forward", fixed_kinds: bool = False):
        """Build `func.func @<name>`; returns (func op, output tree, input names, input tree).
        `fixed_kinds`: an optional input takes only its example's kind (optional.py)."""
        source, receiver = callees.entry(method, self.model)
        self.scope = _Scope(source)
        fdef = source.node
        parameters = binding.Entry(source, receiver, example_inputs)  # (Python's binding of the examples)
        inputs = optional.Inputs(self, fdef, optional.optional_parameters(method, fdef), fixed_kinds)
        input_tree = [inputs.tree(name, e) for name, e in zip(parameters.names, example_inputs)]
        self.optional_inputs, leaves = inputs.maybes, inputs.leaves  # the arguments: (name, example)
        user_leaves = len(leaves)
        if self.state is not None:
            leaves += self.state.arguments()  # (after the model's inputs)
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
        self.unentered.entry, self.unentered.user_arguments, self.unentered.input_tree = entry, user_leaves, input_tree

        arguments = [V.Dyn(arg, type_, example) for arg, type_, (_, example) in zip(entry.arguments, input_types, leaves)]
        values = [optional.input_value(tree, arguments) for tree in input_tree]
        env: dict[str, V.EnvValue] = {**parameters.env(values), RETURN_VAR: V.Const(None)}
        for name, value in zip(parameters.names, values):
            self.memory_of_inputs.update(dict.fromkeys(aliases.storages(value), name))

        end = fresh_id()
        statements = copy.deepcopy(fdef.body)  # (the parsed function is shared: mark a copy)
        self.attributes.preregister(self.model)
        if self.state is not None:
            self.state.register(self.attributes)
            self.state.bind(self.attributes, env, arguments[user_leaves:])
        self.attributes.annotate(statements, parameters.self_name, receiver)
        desugar.check_deletes(source)
        body = lower(source, statements, nodes.ReturnTo(RETURN_VAR, end)) + [nodes.Label(end)]
        with ir.InsertionPoint(entry):
            final = self.compile_block(body, env, {RETURN_VAR})
            result = final[RETURN_VAR]
            states = []
            if self.state is not None:
                states = self.state.finals(self.attributes, final)
                if self.state.widen(states, self.error, fdef):
                    raise Widened()
            outputs, tree = self._flatten_result(V.Tup((result, *states)), _return_node(fdef))
            (tree, *state_trees), = tree.values()
            self.state_record = None if self.state is None else self.state.record(user_leaves, state_trees)
            ir.Operation.create("func.return", operands=[o.value for o in outputs])
        func_type = ir.FunctionType.get(
            [self.builder.type(t) for t in input_types], [self.builder.type(o.type) for o in outputs]
        )
        func.attributes["function_type"] = ir.TypeAttr.get(func_type)
        return func, tree, [name for name, _ in leaves], input_tree

    def _flatten_result(self, value: V.EnvValue, where: ast.AST):
        """Result leaves as IR values and the output tree; errors are located at `where`."""
        outputs: list[V.Dyn] = []

        def visit(item):
            if isinstance(item, V.Tup) and isinstance(item.kind, V.DictKind):
                return {"dict": [[key, visit(i)] for key, i in zip(item.kind.keys, item.items)]}
            if isinstance(item, V.Tup):
                return {item.kind: [visit(i) for i in item.items]}
            if isinstance(item, V.Const) and type(item.value) is dict and all(type(k) in (str, int) for k in item.value):
                return visit(V.dict_value({k: V.Const(v) for k, v in item.value.items()}))
            if isinstance(item, V.Maybe):  # None where `present` is false
                present = visit(item.present)
                return {"optional": [present, visit(item.value)]}
            if isinstance(item, V.Const) and item.value is None:
                return {"none": []}  # (no result: a bare None would mean "the one result")
            if isinstance(item, V.Const) and type(item.value) in (list, tuple):  # known here
                kind = "list" if isinstance(item.value, list) else "tuple"
                return visit(V.Tup(tuple(V.Const(v) for v in item.value), kind))
            if isinstance(item, V.Const) and not isinstance(item.value, (bool, int, float)):
                raise self.error(where, f"forward returns a {type(item.value).__name__}", "return tensors, tuples, lists, dicts or Python scalars")
            if item is V.UNDEF:
                raise self.error(where, "forward does not return a value on every path")
            if isinstance(item, V.Packed):
                raise packed.refuse(self, where, "returns")
            if isinstance(item, V.Dyn) and isinstance(item.example, torch.Tensor) and item.example.is_complex():
                raise self.error(
                    where, f"forward returns a complex tensor ({item.example.dtype})",
                    "return its real view (`torch.view_as_real(z)`): DyCL computes complex values as their real views",
                )
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

    def visit_Assert(self, stmt: ast.Assert, block: Block) -> None:
        if self._per_length_on_failure(lambda: asserts.compile_assert(self, stmt, block.env), block, 1):
            block.i += 1

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
            if self._per_length_on_failure(lambda: data_sizes.host_statement(self, stmt, env, block.live_out), block, 1):
                block.i += 1
            return
        stmts, i = block.stmts, block.i
        j = i + 1
        written = written_in([stmt])
        while j < len(stmts):
            if _reads_tensor_values(stmts[j - 1]):
                break  # (`n = max(t.tolist())`: n is a runtime int after the run, a size it may give)
            # module attributes as the run so far leaves them
            stmts[j] = self.attributes.bind(stmts[j], env, self.error, written)
            if not self._is_run_statement(stmts[j], env, written) or self._calls_compiled_helper(stmts[j], env):
                break
            written |= written_in([stmts[j]])
            j += 1
        run = stmts[i:j]
        merged = self._condition_into_run(run, stmts[j], env, written) if j < len(stmts) and isinstance(stmts[j], (ast.If, ast.Assert)) else None
        following = stmts[j:] if merged is None else [merged, *stmts[j + 1 :]]
        if self._per_length_on_failure(lambda: self._compile_run_or_split(run, env, live_before(following, block.live_out)), block, j - i):
            if merged is not None:
                # (only now: a block rewritten per list length compiles `stmts[i:j]` again,
                # without the condition's assignment, and then the `if` as written)
                stmts[j] = merged
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
                if self.sizes_at_run_time:
                    raise
                erase_after(ir_block, before)
                block.env.clear()
                block.env.update(saved)
                self.sizes_at_run_time = True  # (sub-DNNs with dims known only at run time)
                try:
                    compile_statements()
                finally:
                    self.sizes_at_run_time = False
                return True
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
        for region, body, refined in zip(draft.regions, (stmt.body, stmt.orelse), host_expressions.none_test_branches(stmt.test, env)):
            with ir.InsertionPoint(region.blocks.append()):
                branch_envs.append(self.compile_block(body + tail, {**env, **refined}, live))
        env = self._join_if(draft, flag, branch_envs, live, env)
        return rest, env

    def _join_if(self, draft, flag, branch_envs, live, env_before):
        then_env, else_env = branch_envs
        joined = dict(env_before)
        yields: list[tuple[str, list, list]] = []  # (name, then leaves, else leaves)
        blocks = [draft.regions[0].blocks[0], draft.regions[1].blocks[0]]
        read_after_exit = [self._read_after_exit(branch) for branch in branch_envs]
        for name in sorted(live):
            a, b = then_env.get(name, V.MISSING), else_env.get(name, V.MISSING)
            if a is V.MISSING and b is V.MISSING:
                continue
            if self.attributes.is_variable(name) and any(v is V.MISSING or v is PARTIAL for v in (a, b)):
                joined[name] = PARTIAL  # a module attribute assigned on some paths only
                continue
            a = V.UNDEF if a is V.MISSING else a
            b = V.UNDEF if b is V.MISSING else b
            # what a branch that leaves the loop (`break`, `return`) holds in a name nothing
            # reads after the loop is never read: the other branch's value decides its type
            # (module attributes the call assigns are read anywhere: never dropped)
            local = not self.attributes.is_variable(name)
            dead = [local and read is not None and name not in read for read in read_after_exit]
            if dead[0] or dead[1]:
                a, b = (V.UNDEF if dead[0] else a), (V.UNDEF if dead[1] else b)
                if a is V.UNDEF and b is V.UNDEF:
                    joined[name] = V.UNDEF  # (left on both paths: never read again)
                    continue
            if V.same_value(a, b):
                joined[name] = a
                continue
            parts = _differing_parts(a, b)
            if parts is None:
                yields.append((name, (), a, b))
                continue
            joined[name] = a  # the items both paths share stay as they are (`hist["h"]`)
            yields.extend((name, path, part_a, part_b) for path, part_a, part_b in parts)

        # Materialise both sides' leaves in their own block, then build the real scf.if.
        then_ops, else_ops, types, examples, shapes = [], [], [], [], []
        for name, path, a, b in yields:
            described = _part_name(name, then_env.get(name), path)
            with ir.InsertionPoint(blocks[0]):
                a_leaves, structure = self._leaves_for_join(a, b, described)
            with ir.InsertionPoint(blocks[1]):
                b_leaves, _ = self._leaves_for_join(b, a, described)
            start = len(types)
            for la, lb in zip(a_leaves, b_leaves):
                types.append(self._join_type(la.type, lb.type, name))
                # An example only needs the right type: a runtime list's is taken from the
                # side that has items, so that code after the join can run on it
                # (`torch.cat(tokens)` where the example run's decoder stopped at once).
                empty = isinstance(la.example, list) and not la.example
                examples.append(lb.example if empty and isinstance(lb.example, list) else la.example)
            shapes.append((name, path, structure, start, len(a_leaves)))
            then_ops.extend(a_leaves)
            else_ops.extend(b_leaves)
        results = self._close_if(draft, blocks, (then_ops, else_ops), types)
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

    def _read_after_exit(self, branch_env: dict) -> set[str] | None:
        """The names read after the runtime loop this branch leaves (its `break` or
        `return` flag is set), or None when it stays in every loop being compiled."""
        for exits, read in reversed(self._loop_exits):
            if any(V.same_value(branch_env.get(flag), V.Const(True)) for flag in exits):
                return read
        return None

    def _leaves_for_join(self, mine: V.EnvValue, other: V.EnvValue, name: str):
        """Leaves of `mine` as IR values, shaped like `other` where `mine` is undefined."""
        if isinstance(mine, V.Packed) or isinstance(other, V.Packed):
            raise self.error(
                None, f"{_describe(name)} is a packed sequence whose lengths are runtime values, made on each path",
                "pack once, after the `if` (choose the padded tensor and the lengths in the `if`)",
            )
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
                dicts = [v.kind.keys for v in (mine, other) if isinstance(v, V.Tup) and isinstance(v.kind, V.DictKind)]
                if len(dicts) == 2 and set(dicts[0]) != set(dicts[1]):
                    raise self.error(
                        None, f"{_describe(name)} is a dict with keys {list(dicts[0])} on one path and {list(dicts[1])} on another",
                        "give it the same keys on every path (`out['aux'] = None` where there is no value)",
                    )
                raise self.error(
                    None,
                    f"{_describe(name)} has a different structure on different paths",
                    "return/assign the same tuple, list or dict shape on every path "
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
        if isinstance(value, V.Tup):
            return V.Tup(tuple(self._placeholder_like(i) for i in value.items), value.kind)
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

    # ----- host statements -------------------------------------------------------------

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
        self.refuse_truth_value(target, value)
        if isinstance(target, ast.Name):
            env[target.id] = lists.bound_list(self, value, env)
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, V.Const):
                # `outs, confs = [], []`: each `[]` is a new list, as `outs = []` makes one
                items = [V.Tup((), "list") if type(v) is list and not v else V.Const(v) for v in value.value]
            elif isinstance(value, V.Tup):
                items = list(value.items)
            elif isinstance(value, V.Packed) and len(target.elts) == 4:  # (data, batch_sizes, sorted_indices, unsorted_indices)
                items = [packed.read(self, target, value, k) for k in range(4)]
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
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and lists.is_dict(env.get(target.value.id)):
            lists.dict_store(self, target, value, env)
            return
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

    # ----- expressions -----------------------------------------------------------------

    def condition(self, expr: ast.expr, env, statement: str | None = None) -> V.EnvValue:
        value = self.expression(expr, env)
        if isinstance(value, V.Maybe):
            raise self.error(expr, f"`{statement or f'if {desugar.source_text(expr)}:'}` of a value that is None on some paths",
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
        if isinstance(expr, ast.Dict) and any(isinstance(v, ast.List) for v in expr.values):
            return self.host_Dict(expr, env)  # `{"h": [], "c": []}`: lists that may grow
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
            return self.host_Tuple(expr, env)
        if not self._needs_host(expr, env, set()):
            return self.tensor_expression(expr, env)
        handler = getattr(self, f"host_{type(expr).__name__}", None)
        if handler is None:
            raise self.error(expr, f"`{ast.unparse(expr)}` mixes runtime Python values into an expression DyCL cannot split")
        return handler(expr, env)

    def _needs_host(self, node: ast.AST, env, written_in_run: set[str]) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
                sub = ast.Name(sub.target.id, ast.Load())  # `n += 1` reads n
            if sizes.compares_runtime_size(sub, env, written_in_run):
                return True  # (`rows.size(0) > 0` of `rows = x[mask]`)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in written_in_run:
                value = env.get(sub.id)
                if isinstance(value, V.Dyn) and not V.is_tensor_type(value.type) or isinstance(value, V.Packed):
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
                if packed.packs_runtime_lengths(self, sub, func, env):
                    return True
                if X.known(X.SCALAR_BUILTINS, func) or predicates.is_predicate_call(sub, func) or func is builtins.len:
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
            if isinstance(value, (range, enumerate, zip, reversed, map, type({}.items()), type({}.keys()), type({}.values()))):
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

    # ----- inlining --------------------------------------------------------------------

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
        bind = binding.binder(self, function, receiver, value, env)
        arguments, body, bindings = inline_call(function, value, result_var, bind, self.attributes.annotate)
        binds = [nodes.BindConst(name, obj, stmt.lineno) for name, obj in bindings.items()]
        arguments = [nodes.written_as(argument, stmt) for argument in arguments]
        replaced = _replace_value(stmt, ast.Name(result_var, ast.Load()))
        return [*binds, *arguments, SwitchScope(function), *body, SwitchScope(self.scope.source), replaced]

    def _callee(self, call_node: ast.Call, env, nested: bool = False):
        """(source, receiver) of a helper that DyCL compiles (inlines) rather than running it
        inside a captured block: one with control flow or module attributes forward assigns
        (always), or, called as a statement of its own (not `nested` in an expression), one
        that uses what only DyCL's desugaring compiles (`_desugared`)."""
        func = self._try_constant(call_node.func, env, quiet=True)
        if func is V.MISSING:
            return None
        resolved = callees.function_of(func)
        if resolved is None:
            return None
        function, receiver = resolved
        if (getattr(function, "__module__", None) or "").partition(".")[0] in _LIBRARY_MODULES:
            return None
        try:
            source = parse_function(function)
        except FrontendError:
            return None
        bodies = [source.node, *binding.wrapped_bodies(function, _LIBRARY_MODULES)]  # (a wrapper runs them too)
        must = self._passes_runtime_scalars(call_node, env) or any(
            has_control_flow(n) or self.attributes.concerns(n) or changes_an_argument_list(n) or _packs_sequences(n)
            or data_sizes.makes_data_sizes(n) for n in bodies) or binding.forwards_to_compiled(self, source, receiver, call_node, env)
        if not must and (nested or not any(_desugared(n) for n in bodies)):
            return None  # runs inside a captured block
        return source, receiver

    @staticmethod
    def _passes_runtime_scalars(call: ast.Call, env) -> bool:
        """Whether a call passes Python numbers known only at run time (`ks(x, lengths)` with
        `lengths` a list argument): inlined, they stay numbers (a size, an index), where a
        captured block would take them as tensors."""
        def runtime_scalar(leaf) -> bool:
            return isinstance(leaf, V.Dyn) and not V.is_tensor_type(leaf.type) and not V.is_list_type(leaf.type) and leaf.type != V.NONE
        names = [a.id for a in [*call.args, *(k.value for k in call.keywords)] if isinstance(a, ast.Name)]
        return any(runtime_scalar(leaf) for n in names if n in env for leaf in V.leaves(env[n]))

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

    # ----- loops -----------------------------------------------------------------------
    # Unrolled when they iterate over import-time values (or use their index), `scf.for`
    # for `range(N)` with an unused index, `scf.for`/`scf.while` otherwise. Carried variables
    # reach a fixed point: the body is compiled with the types they have on entry, and again
    # with joined types when the end of the body disagrees (a tensor that grows becomes
    # `[1,?]`); constants that change in the body become carried IR values.

    def compile_loop(self, stmts, i, env, live_out):
        loop: nodes.Loop = stmts[i]
        node = loop.node
        rest = stmts[i + 1 :]
        if isinstance(node, ast.For):
            return self._compile_for(loop, rest, env, live_out)
        return self._compile_while(loop, rest, env, live_out)

    def _compile_for(self, loop: nodes.Loop, rest, env, live_out):
        node: ast.For = loop.node
        iterable = self._try_constant(node.iter, env)
        structural = False
        if iterable is V.MISSING:
            iterable = self.try_structure(node.iter, env)  # `for l in lengths` (a list input)
            if isinstance(iterable, dict):  # `for key in outputs`: its keys
                iterable = list(iterable)
            structural = isinstance(iterable, (list, tuple))
            if not structural:
                iterable = V.MISSING  # a tensor or runtime list: not a structure to unroll
        if iterable is V.MISSING:
            iterable = self._static_range(node.iter, env)  # `range(t.shape[0])`
        if iterable is V.MISSING:
            as_while = self._runtime_iteration(loop, env)
            if as_while is not None:
                return as_while + rest, env
            raise self.error(
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
                with self._undone_on(loops.LoopStructureError):
                    return self._compile_runtime_loop(loop, rest, env, live_out, trip=iterable)
            except loops.LoopStructureError:
                if len(iterable) > loops.MAX_UNROLL:
                    raise
                # `states` is None, then a tuple: a constant trip count can be unrolled instead
        if isinstance(iterable, range) and not read_after and loops.unrolled_copies(node.body, len(iterable)) > loops.MAX_UNROLLED_COPIES:
            try:  # (the index a runtime int: `x[:, i] = ...` as for `range(n)`)
                with self._undone_on(FrontendError):
                    return self._compile_runtime_loop(loop, rest, env, live_out, trip=iterable, index=node.target)
            except FrontendError:
                pass  # unrolled, however many copies that takes
        items = list(iterable)
        if len(items) > loops.MAX_UNROLL:
            raise self.error(node, f"loop of {len(items)} iterations whose index is used", f"keep loops that use their index under {loops.MAX_UNROLL} iterations")
        self._refuse_resizing_the_iterated_list(node, env)
        if structural and structure.has_list_token(items):
            # `for g in groups` over lists: each iteration binds the item `groups` holds when
            # it starts (as Python's iterator reads it), not the one there was before the loop:
            # an earlier iteration may have changed it (`g.append(h)` under an `if`)
            bind = lambda k: [loops.item_assignment(node, k)]  # noqa: E731
            return unroll(self.scope.source, loop, list(range(len(items))), bind) + rest, env
        unrolled = unroll(self.scope.source, loop, items, lambda item: self._bind_target(node.target, item))
        return unrolled + rest, env

    def _refuse_resizing_the_iterated_list(self, node: ast.For, env) -> None:
        """A loop over a list that its body grows or shrinks runs over the items Python's
        iterator would see at each step, which unrolling over the items at the start does not."""
        iterated = {name for name in names_read(node.iter) if lists.is_list(env.get(name))}
        for sub in (n for stmt in node.body for n in ast.walk(stmt)):
            receiver = sub.func.value if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in MUTATING_METHODS else None
            if isinstance(sub, ast.Delete):
                receiver = next((t.value for t in sub.targets if isinstance(t, ast.Subscript)), None)
            if isinstance(receiver, ast.Name) and receiver.id in iterated:
                raise self.error(
                    sub, f"`{source_text(sub)}` changes the length of `{receiver.id}`, which the `for` loop goes over",
                    f"loop over a copy (`for ... in list({receiver.id}):`) if the new items should not be visited",
                )
        rebound = {n.id for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if rebound & iterated and structure.has_list_token(self.try_structure(node.iter, env)):
            name = sorted(rebound & iterated)[0]
            raise self.error(node, f"a `for` over lists held in `{name}`, which its body binds again",
                             f"loop over a name the body leaves alone (`items = {name}` before the loop)")

    @contextlib.contextmanager
    def _undone_on(self, error_type):
        """Erase the host ops built inside this block (and restore the scope) if it raises."""
        block = ir.InsertionPoint.current.block
        before = len(block.operations)
        scope = self.scope
        try:
            yield
        except error_type:
            erase_after(block, before)
            self.scope = scope
            raise

    def _static_range(self, call: ast.expr, env):
        """`range(...)` whose arguments read runtime values but are known here (a static
        size: `range(mask.shape[0])`), else V.MISSING. Only side-effect-free arguments are
        evaluated (they are evaluated again if the loop turns out to be a runtime one)."""
        if not (isinstance(call, ast.Call) and self._try_constant(call.func, env, quiet=True) is range):
            return V.MISSING
        pure = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Load, ast.operator, ast.unaryop)
        if call.keywords or not all(isinstance(n, pure) for arg in call.args for n in ast.walk(arg)):
            return V.MISSING
        values = [self.expression(arg, env) for arg in call.args]
        if not all(isinstance(v, V.Const) and isinstance(v.value, int) for v in values):
            return V.MISSING
        try:
            return range(*(v.value for v in values))
        except (TypeError, ValueError):
            return V.MISSING

    def _runtime_iteration(self, loop: nodes.Loop, env) -> list[ast.stmt] | None:
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
        if isinstance(call, ast.Call) and self._try_constant(call.func, env, quiet=True) is range:
            if call.keywords or any(isinstance(a, ast.Starred) for a in call.args) or not 1 <= len(call.args) <= 3:
                return None
            args = list(call.args)
            first = args[0] if len(args) > 1 else ast.Constant(0)
            last = args[1] if len(args) > 1 else args[0]
            step = self._try_constant(args[2], env) if len(args) == 3 else 1
            if not isinstance(step, int) or isinstance(step, bool) or step == 0:
                raise self.error(call, "`range` with a step known only at runtime (or 0)", "use a constant step")
            # Python evaluates range's arguments in order, once
            head = [nodes.assign(f"__start{uid}", first, node), nodes.assign(stop, last, node), nodes.assign(k, ast.Name(f"__start{uid}", ast.Load()), node)]
            test = f"{k} {'<' if step > 0 else '>'} {stop}"
            item = ast.Name(k, ast.Load())
        else:
            start = self._enumerate_start(call, env)  # `enumerate(rows)`: its items count from `start`
            iterated = self.expression(call if start is None else call.args[0], env)  # evaluated once, as Python does
            if isinstance(iterated, V.Dyn) and V.is_tensor_type(iterated.type):
                return self._unrolled_rows(loop, iterated, env, start)
            if start is not None:
                iterated = self.expression(call, env)
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

    def _enumerate_start(self, call: ast.expr, env) -> int | None:
        if not (isinstance(call, ast.Call) and self._try_constant(call.func, env, quiet=True) is enumerate and call.args
                and not call.keywords and len(call.args) <= 2 and not any(isinstance(a, ast.Starred) for a in call.args)):
            return None
        start = self._try_constant(call.args[1], env) if len(call.args) == 2 else 0
        return start if type(start) is int else None

    def _unrolled_rows(self, loop: nodes.Loop, tensor: V.Dyn, env: dict, start: int | None = None) -> list[ast.stmt]:
        """`for row in t` (or a numpy array) whose first dimension is static: one copy of the
        body per row. The rows are read before the loop, so a body that changes a row or
        `t` in place (a row is a view of `t` in PyTorch and numpy) is refused."""
        node: ast.For = loop.node
        memory = aliases.storage_of(tensor.example)
        views = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)} | {
            name for name, value in env.items() if memory is not None and memory in aliases.storages(value)
        }
        changed = next((n for stmt in node.body for n in ast.walk(stmt) if names_mutated(n) & views), None)
        if changed is not None:
            raise self.error(
                changed, "an in-place change inside a `for` over the rows of a tensor or array (each row is a view)",
                "loop over `range(len(t))` and index `t[i]` where you read it",
            )
        rows = [host_numpy.mark(row, [tensor]) for row in host_builtins.tensor_rows(self, tensor, node.iter, "`for`")]
        if isinstance(tensor, host_numpy.NumpyValue):
            # numpy's integers index and count as Python ints do (`self.experts[k]`, `gate[0, k]`)
            rows = [host_numpy.integer_item(self, row) or row for row in rows]
        if start is not None:
            rows = [V.Tup((start + k, row)) for k, row in enumerate(rows)]
        return unroll(self.scope.source, loop, rows, lambda row: self._bind_target(node.target, row))

    def _bind_target(self, target: ast.expr, item) -> list[ast.stmt]:
        if isinstance(target, ast.Name):
            return [nodes.BindConst(target.id, structure.env_value(item), target.lineno)]
        if isinstance(target, (ast.Tuple, ast.List)):
            items = list(item.items) if isinstance(item, V.Tup) else list(item)
            if len(items) != len(target.elts):
                raise self.error(target, "loop target does not match the items")
            return [s for t, v in zip(target.elts, items) for s in self._bind_target(t, v)]
        raise self.error(target, "loop target that is not a name or tuple of names")

    def _compile_while(self, loop: nodes.Loop, rest, env, live_out):
        # (the host runs it as Python would: a loop that never ends in PyTorch never ends here)
        return self._compile_runtime_loop(loop, rest, env, live_out, trip=None)

    def _compile_runtime_loop(self, loop: nodes.Loop, rest, env, live_out, trip: range | None, index: ast.expr | None = None):
        """scf.for (a range whose index is unused, no break/return) or scf.while; `index`:
        the target a constant range's runtime counter is bound to at each step."""
        node = loop.node
        source = self.scope.source
        uid = fresh_id()
        body_end = fresh_id()
        brk, ret_flag, ret_var, counter = f"__brk{uid}", f"__returned{uid}", f"__retval{uid}", f"__count{uid}"
        has_break = any(isinstance(n, ast.Break) for n in loops.own_statements(node.body))
        flat_body = lower(
            source,
            node.body,
            nodes.ReturnFromLoop(ret_var, ret_flag, body_end),
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
        carried = self._carried_names(flat_body, node, live_after_loop)
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
            if self.attributes.is_variable(name) and (state[name] is V.UNDEF or state[name] is PARTIAL):
                state[name] = V.UNDEF
                unassigned_before.add(name)
        always_runs = use_for and len(trip) > 0
        for name, value in state.items():
            if V.has_dyn(value):
                state[name] = self._carried(value, value, node, name)

        # Python shares a list between the names bound to it: one the loop carries changes
        # for all of them (`alias = toks` before the loop, `toks.append(t)` inside)
        followers = lists.sharing(env, carried)
        retyped_lists: dict[str, FrontendError] = {}
        exits = frozenset(name for name in (brk, ret_flag) if name in extra)
        read_on_exit = live_after_loop | (names_read(node.test) if isinstance(node, ast.While) else set())
        with self._compiling_loop(exits, read_on_exit):
            for _attempt in range(8):
                try:
                    if use_for:
                        op, end_env = self._build_for(node, trip, state, env, flat_body, live_after_loop, followers)
                    else:
                        op, end_env = self._build_while(node, trip, state, env, flat_body, counter, brk, ret_flag, has_break, loop.has_return, live_after_loop, followers)
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
                self._check_sharing(node, followers, end_env)
                # A variable the body changed that liveness did not see written (an alias of a
                # tensor mutated in place) is carried too, unless nothing reads it again (a dead
                # alias must not make the carry look shared on some iterations only).
                for name in sorted(set(env) - written_in(flat_body)):
                    if name not in read_first and name not in live_after_loop:
                        continue
                    if name not in carried and name not in followers and name in end_env and not V.same_value(end_env[name], env[name]):
                        carried.append(name)
                        state[name] = self._carried(env[name], env[name], node, name) if V.has_dyn(env[name]) else env[name]
                        changed = True
                for name in carried:
                    entry, end = state[name], end_env.get(name, V.UNDEF)
                    if isinstance(entry, loops.Carried):
                        end_types = self._loop_types(end, node, name)
                        if len(end_types) != len(entry.types) or not V.same_structure(end, entry.structure):
                            raise self._structure_error(node, name)
                        joined = [self._join_type(a, b, name) for a, b in zip(entry.types, end_types)]
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
                            raise self._structure_error(node, name)
                        state[name] = self._carried(entry, end, node, name)
                        changed = True
                if not changed:
                    break
                op.erase()
            else:
                raise self.error(node, "loop-carried values do not settle on one type", "keep each carried tensor's rank and dtype fixed")

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
        return after, env

    @contextlib.contextmanager
    def _compiling_loop(self, exits: frozenset[str], read_on_exit: set[str]):
        self._loop_exits.append((exits, read_on_exit))
        try:
            yield
        finally:
            self._loop_exits.pop()

    def _check_sharing(self, node, followers: dict[str, str], end_env: dict) -> None:
        """Names sharing a list at the loop's start share it at the end of the body: else
        one was bound to a new list on some path, and which list the other is afterwards
        depends on the path (a change through it could not be followed)."""
        for follower, leader in followers.items():
            if end_env.get(follower) is not end_env.get(leader):
                raise self.error(
                    node,
                    f"`{follower}` and `{leader}` are one list before this loop, and the loop binds "
                    "one of them to another list on some paths",
                    f"copy the list where you need two (`{follower} = list({leader})`), or "
                    "change the list in place (`lst.append`, `lst[k] = v`) instead of rebinding the name",
                )

    def _carried(self, initial, typed_like, node, name) -> loops.Carried:
        """`initial` before the loop, typed (and shaped) like `typed_like`."""
        if V.holds_maybe(initial) or V.holds_maybe(typed_like):
            raise self._structure_error(node, name)  # None on some paths (a constant range unrolls)
        structure = typed_like if isinstance(typed_like, V.Tup) else None
        return loops.Carried(
            initial,
            self._loop_types(typed_like, node, name),
            [V.example_of(l) for l in V.leaves(typed_like)],
            structure,
            aliases.path_dependent_memory(initial, typed_like),
        )

    def _loop_types(self, value, node, name) -> list[Attribute]:
        if isinstance(value, V.Tup):
            return [self._loop_type(leaf, node, name) for leaf in V.leaves(value)]
        return [self._loop_type(value, node, name)]

    def _carried_names(self, flat_body, node, live_after: set[str]) -> list[str]:
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

    def _loop_type(self, value, node, name) -> Attribute:
        if isinstance(value, V.Dyn):
            return value.type
        if isinstance(value, V.Const) and isinstance(value.value, (bool, int, float)):
            return V.type_of_example(value.value)
        if isinstance(value, V.Const) and value.value is None or value is V.UNDEF:
            raise self._structure_error(node, name)
        list_type = lists.common_list_type(value) if lists.is_list(value) else None
        if list_type is not None:
            return list_type  # a list of known items, carried as a runtime list
        raise self.error(node, f"{_quoted(node)}`{name}` changes in a runtime loop but is not a tensor, scalar or list of tensors")

    def _structure_error(self, node, name) -> loops.LoopStructureError:
        error = self.error(
            node, f"{_quoted(node)}`{name}` changes structure in a runtime loop (e.g. None, then a tensor or a tuple)",
            f"give `{name}` its final structure before the loop (e.g. zeros of the right shape), "
            "or loop over `range(N)` with a constant N so that DyCL unrolls the loop",
        )
        return loops.LoopStructureError(error.construct, error.hint, file=error.file, line=error.line)

    def _initial_values(self, state, node) -> list[V.Dyn]:
        self._join_node = node  # (what cannot be carried is refused at the loop)
        values = []
        for name, entry in loops.carried_items(state):
            if entry.initial is V.UNDEF:
                leaves = [self.builder.placeholder(t, e) for t, e in zip(entry.types, entry.examples)]
            elif len(entry.types) == 1 and V.is_list_type(entry.types[0]) and lists.is_list(entry.initial):
                leaves = [lists.as_runtime_list(self, entry.initial, entry.types[0])]
            else:
                leaves = [self._materialize(l, name) for l in V.leaves(entry.initial)]
                # (`logits = None` before a loop that assigns a tensor: the None enters as a
                # tensor-typed value, returned as None only if the loop never assigns it)
                if len(leaves) != len(entry.types):
                    raise self._structure_error(node, name)
            values.extend(self._cast(l, t) for l, t in zip(leaves, entry.types))
        return values

    def _body_env(self, env, state, block_args, followers: dict[str, str]):
        body_env = dict(env)
        args = iter(block_args)
        for name, entry in loops.carried_items(state):
            leaves = [V.Dyn(next(args), t, e, entry.may_share) for t, e in zip(entry.types, entry.examples)]
            body_env[name] = V.rebuild(entry.structure, leaves)
        for follower, leader in followers.items():
            body_env[follower] = body_env[leader]
        return body_env

    def _yield(self, end_env, state, node, terminator="scf.yield"):
        self._join_node = node
        operands = []
        for name, entry in loops.carried_items(state):
            leaves = [self._materialize(l, name) for l in V.leaves(end_env[name])]
            operands.extend(self._cast(l, t).value for l, t in zip(leaves, entry.types))
        ir.Operation.create(terminator, operands=operands)

    def _compile_body(self, op, flat_body, body_env, state, live_after_loop) -> dict:
        self.runtime_loop_depth += 1
        try:
            return self.compile_block(flat_body, body_env, set(state) | live_after_loop)
        except lists.ListKindMismatch as mismatch:
            name = loops.retypable_list(body_env, state, mismatch)
            if name is None:
                raise
            op.erase()
            raise loops.CarriedListKind(name, mismatch) from None
        finally:
            self.runtime_loop_depth -= 1

    def _build_for(self, node, trip: range, state, env, flat_body, live_after_loop, followers):
        inits = self._initial_values(state, node)
        index = ir.IndexType.get(self.builder.context)
        bounds = [
            ir.Operation.create("arith.constant", results=[index], attributes={"value": ir.IntegerAttr.get(index, v)}).result
            for v in (trip.start, trip.stop, trip.step)
        ]
        types = [self.builder.type(t) for _, entry in loops.carried_items(state) for t in entry.types]
        op = ir.Operation.create("scf.for", results=types, operands=bounds + [v.value for v in inits], regions=1)
        block = op.regions[0].blocks.append(index, *types)
        with ir.InsertionPoint(block):
            body_env = self._body_env(env, state, list(block.arguments)[1:], followers)
            end_env = self._compile_body(op, flat_body, body_env, state, live_after_loop)
            self._yield(end_env, state, node)
        return op, end_env

    def _build_while(self, node, trip, state, env, flat_body, counter, brk, ret_flag, has_break, has_return, live_after_loop, followers):
        inits = self._initial_values(state, node)
        types = [self.builder.type(t) for _, entry in loops.carried_items(state) for t in entry.types]
        op = ir.Operation.create("scf.while", results=types, operands=[v.value for v in inits], regions=2)
        before = op.regions[0].blocks.append(*types)
        with ir.InsertionPoint(before):
            before_env = self._body_env(env, state, list(before.arguments), followers)
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
            condition = self.condition(test, before_env)
            if isinstance(condition, V.Const):
                condition = self.builder.constant(bool(condition.value))
            flag = self.builder.to_i1(condition)
            ir.Operation.create("scf.condition", operands=[flag, *before.arguments])
        after = op.regions[1].blocks.append(*types)
        with ir.InsertionPoint(after), self.unentered.body(condition):
            body_env = self._body_env(env, state, list(after.arguments), followers)
            end_env = self._compile_body(op, flat_body, body_env, state, live_after_loop)
            self._yield(end_env, state, node)
        return op, end_env

    # ----- runs ------------------------------------------------------------------------
    # Maximal straight-line statement runs (and tensor sub-expressions), executed on
    # example values, captured with torch.export and called from the host function.

    def _is_run_statement(self, stmt: ast.stmt, env, written_in_run: set[str]) -> bool:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return False  # docstring
        if isinstance(stmt, (ast.FunctionDef, ast.Lambda)):
            return True
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
            return False
        if isinstance(stmt, ast.Expr) and self._list_method(stmt.value, env) is not None:
            return False
        if next(self.container_changes(stmt, env), None) is not None:
            return False  # the host changes the list or refuses: never the example run
        if runs.changes_a_list_named(stmt, written_in_run):
            # `g = groups[0]` then `g.append(h)`: the list may be one that other names hold,
            # which the run would not return as changed: the host changes it for all of them
            return False
        if self._needs_host(stmt, env, written_in_run):
            return False
        if runs.stores_into_python_container(stmt, env):
            return False  # the host changes the list (lists.store) or refuses: never the example run
        if names_mutated(stmt):
            return True  # `t[m] = v` belongs with the code that made `t`, whatever `v` is
        value = stmt.value
        if value is None or runs.is_packing(value):
            return False
        reads = names_read(stmt) - written_in_run
        if not isinstance(stmt, ast.AugAssign) and all(self._is_constant_name(n, env) for n in reads):
            return self._try_constant(value, env) is V.MISSING
        return True

    def _condition_into_run(self, run: list, if_stmt: ast.If | ast.Assert, env, written: set[str]) -> ast.If | ast.Assert:
        """Compute a following `if`'s (`assert`'s) tensor condition in the same run (one export, not two)."""
        test = if_stmt.test
        if self._needs_host(test, env, written) or not (names_read(test) & written) or runs.assigned_sizes_only(run, names_read(test) & written):
            return if_stmt
        name = "__dycl_condition"  # one fixed name: identical runs share an export
        assign = ast.Assign(targets=[ast.Name(name, ast.Store())], value=test)
        ast.copy_location(assign, test)
        run.append(assign)
        if isinstance(if_stmt, ast.Assert):
            return nodes.written_as(ast.copy_location(ast.Assert(test=ast.Name(name, ast.Load()), msg=if_stmt.msg), if_stmt), if_stmt)
        merged = ast.If(test=ast.Name(name, ast.Load()), body=if_stmt.body, orelse=if_stmt.orelse)
        return ast.copy_location(merged, if_stmt)

    def _compile_run_or_split(self, stmts: list[ast.stmt], env: dict, live_after: set[str]) -> None:
        """One run of the statements, or, where together they compute with more sizes known
        only at run time than one run may take (`runs.SplitRun`), one run each."""
        ir_block = ir.InsertionPoint.current.block
        before, saved = len(ir_block.operations), dict(env)
        try:
            self.compile_run(stmts, env, live_after)
            return
        except (runs.SplitRun, DataSize, SizeTest) as failure:
            erase_after(ir_block, before)
            env.clear()
            env.update(saved)
            if isinstance(failure, DataSize) and len(stmts) == 1:  # (a size from the data: made on the host)
                data_sizes.compile_statement(self, stmts[0], env, live_after, failure)
                return
            if isinstance(failure, SizeTest) and len(stmts) == 1:
                self.host_statement(stmts[0], env)
                return
        for k, stmt in enumerate(stmts):
            after = live_before(stmts[k + 1 :], live_after)
            if len(stmts) > 1 and not self._is_run_statement(stmt, env, set()):
                # (`__dycl_condition = rows.size(0) > 0` once `rows = x[mask]` has a size
                # from the data: the host reads it)
                data_sizes.host_statement(self, stmt, env, after)
                continue
            self._compile_run_or_split([stmt], env, after)

    def compile_run(self, stmts: list[ast.stmt], env: dict, live_after: set[str]) -> None:
        inputs = sorted(n for n in live_before(stmts, set()) if n in env)
        # a name the run changes in place is an output only if it is a variable (not `torch`)
        bound = {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        outputs = sorted(n for n in written_in(stmts) & live_after if n in env or n in bound)
        returned = ast.Tuple([ast.Name(n, ast.Load()) for n in outputs], ast.Load())
        result = self._run_function(stmts, inputs, returned)
        values = self._call_run(result, stmts, {n: env[n] for n in inputs}, env, live_after)
        for name, value in zip(outputs, values.items if isinstance(values, V.Tup) else ()):
            env[name] = value

    def mutates_tensor(self, stmt: ast.stmt, env: dict) -> bool:
        """`t += k` / `t[k] = v` on a tensor variable (not `n += 1` on an int)."""
        mutated = set().union(*(names_mutated(sub) for sub in ast.walk(stmt)))
        return any(runs.is_tensor_value(env.get(name)) for name in mutated)

    def compile_mutation_with_host_operands(self, stmt: ast.stmt, env: dict) -> None:
        """A tensor mutation whose operands are runtime Python values (`z += k` with
        `k = float(...)`, `y[0, k] = 5.0` with `k = int(...)`): the operands are computed on
        the host first, then the statement itself runs, in place, so that aliases see it."""
        operands = [stmt.value] if getattr(stmt, "value", None) is not None else []
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            # `x[0, k].mul_(v)`: the receiver is changed in place, where it is
            operands = [*call.args, *(k.value for k in call.keywords)]
            targets = [call.func.value]
        for target in targets:
            while isinstance(target, (ast.Subscript, ast.Attribute)):
                if isinstance(target, ast.Subscript):
                    operands.append(target.slice)
                target = target.value
        scoped = dict(env)
        replacements = {}
        while any(isinstance(o, (ast.Tuple, ast.Slice)) for o in operands):
            # the parts of `x[0, k:k + 1]`: a slice is no value of its own
            operands = [
                p for o in operands
                for p in (o.elts if isinstance(o, ast.Tuple) else [o.lower, o.upper, o.step] if isinstance(o, ast.Slice) else [o])
                if p is not None
            ]
        for operand in operands:
            if self._needs_host(operand, env, set()):
                name = f"{OPERAND_PREFIX}{fresh_id()}"
                scoped[name] = self.expression(operand, env)
                replacements[id(operand)] = name
        rewritten = replace_nodes(stmt, replacements)
        if not self._store_on_host(rewritten, scoped):
            self.compile_run([rewritten], scoped, set(scoped))
        for name in env:
            if scoped[name] is not env[name]:
                env[name] = scoped[name]

    def written_expression(self, source: str, where: ast.AST, bindings: dict) -> V.EnvValue:
        """A tensor expression the frontend writes (`source`, on the values in `bindings`),
        captured as a run at `where`'s line."""
        return self.tensor_expression(nodes.parsed(source, where, mode="eval"), dict(bindings))

    def tensor_expression(self, expr: ast.expr, env: dict) -> V.EnvValue:
        inputs = sorted(n for n in names_read(expr) if n in env)
        function = self._run_function([], inputs, expr, line=expr.lineno)
        return self._call_run(function, [expr], {n: env[n] for n in inputs}, env, None)

    def _run_function(self, stmts, inputs, returned: ast.expr, line: int | None = None):
        line = line if line is not None else stmts[0].lineno
        args = ast.arguments(
            posonlyargs=[], args=[ast.arg("__dycl_model")] + [ast.arg(n) for n in inputs],
            kwonlyargs=[], kw_defaults=[], defaults=[],
        )
        ret = ast.Return(returned)
        body = [runs.MaskedUpdate().visit(runs.TensorOfRuntimeInts().visit(runs.DetachIsIdentity().visit(copy.deepcopy(s))))
                for s in [*stmts, ret]]
        # Named `forward`: export records the stack frames of functions so named (and only
        # those), so each op it captures keeps the user's file and line.
        fdef = ast.FunctionDef(name="forward", args=args, body=body, decorator_list=[], type_params=[])
        module = ast.Module(body=[fdef], type_ignores=[])
        runs.fix_locations(module, line)
        namespace = dict(self.scope.namespace)
        namespace[runs.MaskedUpdate.HELPER] = runs.masked_update
        namespace[runs.MaskedUpdate.STORE] = runs.subscript_store
        namespace[runs.TensorOfRuntimeInts.HELPER] = runs.tensor_of_ints
        namespace.update(packed.RUN_HELPERS)
        exec(compile(module, self.scope.source.file, "exec"), namespace)
        function = namespace.pop("forward")
        if "forward" in self.scope.namespace:  # a global of that name, which the run may read
            namespace["forward"] = self.scope.namespace["forward"]
        # What the run returns is part of what it is: the same statements with another set
        # of live outputs (the last copy of an unrolled loop) must not share an export.
        function.dycl_code = ast.dump(module)
        return function

    def _call_run(self, function, stmts, inputs: dict[str, V.EnvValue], env: dict, live) -> V.EnvValue:
        """Run eagerly for examples, capture, call; the returned structure holds Dyn leaves.

        What the run mutates in place is rebound in `env`, with every alias of it that is in
        `live` (None: every variable), or refused (aliases.py).

        A runtime int enters as a symbolic int (an index or a size: `gate[0, k]`, `x[:, :n]`),
        exported at 2 where its example is 0 or 1, or as a 0-d tensor where export uses it in
        tensor math (`h * k`) or freezes it otherwise (`runs.capture_retrying`)."""
        return runs.capture_retrying(lambda as_tensors, at_two: self._capture_run(function, stmts, dict(inputs), env, live, as_tensors, at_two))

    def _capture_run(self, function, stmts, inputs, env, live, ints_as_tensors: bool, at_two=frozenset()) -> V.EnvValue:
        lines = sorted({s.lineno for s in stmts})
        names = list(inputs)
        for name in names:
            held = V.maybes(inputs[name])
            if held:
                shown = next((self.attributes.describe(n) for n, v in env.items() if any(v is m for m in held)
                              and (not n.startswith("__") or self.attributes.is_variable(n))), name)
                raise self.error(
                    stmts[0], f"`{shown}` is None on some paths and a tensor or number on others, and `{runs.statement_text(stmts)}` computes with it",
                    f"test `{shown} is None` first (`if {shown} is not None:`), or give it the same kind on every path",
                )
        for name in names:
            if any(isinstance(leaf, V.Packed) for leaf in V.leaves(inputs[name])):
                raise packed.refuse(self, stmts[0], "computes with")
        originals = dict(inputs)
        converted: dict = {}  # (one value held by two inputs stays one value)
        for name in names:
            inputs[name] = self._scalars_as_tensors(inputs[name], ints_as_tensors, converted)
        # One flat input per IR value: two names bound to one tensor (`z = y`) stay one
        # tensor inside the run, so that a mutation through one reaches the other.
        slots: dict = {}
        flat_inputs: list[V.Dyn] = []
        for name in names:
            for leaf in V.leaves(inputs[name]):
                if isinstance(leaf, V.Dyn) and leaf.value not in slots:
                    slots[leaf.value] = len(flat_inputs)
                    flat_inputs.append(leaf)
        input_specs = [(name, inputs[name]) for name in names]
        for leaf in flat_inputs:
            if V.is_list_type(leaf.type):
                raise self.error(
                    stmts[0],
                    f"tensor code on {V.describe_type(leaf.type)} whose length is known only at runtime",
                    "read its items with an int index (`lst[i]`, `lst[-1]`) or its length, or keep a tensor "
                    "that grows with it (`torch.cat`) for tensor code",
                )
            if not (V.is_tensor_type(leaf.type) or leaf.type == V.INT):
                raise self.error(
                    stmts[0],
                    f"tensor math on {V.describe_type(leaf.type)} computed at runtime",
                    "keep data-dependent values as tensors (e.g. `t` instead of `t.item()`) or use them only in conditions",
                )

        def rebuild(flat):
            made: dict = {}  # (a list or dict two inputs hold is one container in the run too)
            return {name: runs.substitute(value, lambda leaf: flat[slots[leaf.value]], made) for name, value in input_specs}

        input_lists: dict[int, V.Tup] = {}  # (the example run's input lists -> their values in env)
        made: dict[int, Any] = {}
        examples = {name: runs.example_value(value, made, input_lists) if value is not V.UNDEF else None for name, value in input_specs}
        in_env = {id(converted): original for name in names for converted, original in runs.tups_of(inputs[name], originals[name])}
        input_lists = {key: in_env.get(id(value), value) for key, value in input_lists.items()}
        versions = [leaf.example._version if isinstance(leaf.example, torch.Tensor) else None for leaf in flat_inputs]
        called: list[torch.nn.Module] | None = []
        assigned = {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        with self.attributes.poisoned(env, assigned) as poisons:
            self.state_guard.snapshot()
            try:
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        with runs.record_calls(self.model, called):
                            eager = function(self.model, **examples)
                    except Exception:
                        # torch.cond/while_loop compile their branches with dynamo, which a
                        # forward hook breaks: run plainly and export the whole model.
                        called = None
                        eager = function(self.model, **examples)
            except FrontendError:
                raise
            except Exception as error:
                self._refuse_attribute_read(stmts, poisons)
                if isinstance(error, TypeError) and "slice indices" in str(error):
                    # a runtime int entered as a tensor and met a slice: it is a size
                    raise self.error(
                        stmts[0], f"`{runs.statement_text(stmts)}` slices with a runtime Python int (`x[:k]`) "
                        "that it also uses as a number in tensor math",
                        "slice in a statement of its own (`y = x[:k]`), then compute with `y`",
                    ) from None
                raise self.unentered.refusal(self.error(stmts[0], f"running lines {lines} on example values failed: {type(error).__name__}: {error}")) from None
            finally:
                self._check_model_unchanged(stmts, examples)
            self._refuse_attribute_read(stmts, poisons)
        out_leaves, out_spec = pytree.tree_flatten(eager)
        # Python scalars a run computes from its inputs are exported too: export tells
        # whether they are constants (shapes, configuration) or runtime values (`.tolist()`,
        # dims that are unknown in the host IR) -- never a silent specialisation.
        exported = [
            k for k, leaf in enumerate(out_leaves)
            if isinstance(leaf, torch.Tensor) or (flat_inputs and isinstance(leaf, (bool, int, float)))
        ]

        def run(model, *flat):
            result = function(model, **rebuild(flat))
            leaves = pytree.tree_leaves(result)
            return tuple(leaves[k] for k in exported)

        produced: dict[int, V.EnvValue] = {}
        # A run that returns nothing is still captured when it takes tensors: it may mutate
        # them (an unknown helper, `y.relu_()`), and export is what tells.
        if exported or any(V.is_tensor_type(l.type) for l in flat_inputs):
            dynamic = [self._dynamic_dims(leaf.type) for leaf in flat_inputs]
            try:
                cache_key = (
                    function.dycl_code,
                    (
                        tuple(
                            (name, tuple((l.type, slots[l.value]) for l in V.leaves(value) if isinstance(l, V.Dyn)),
                             self.capturer.cache.signature(runs.substitute(value, None)) if not V.has_dyn(value) else None)
                            for name, value in input_specs
                        ),
                        runs.container_layout(value for _, value in input_specs),
                    ),
                )
                examples = runs.distinct_examples(flat_inputs, at_two)
                if any(dynamic):  # (export specializes a dim whose example is 0 or 1)
                    examples = [runs.at_least_two(e, dims) for e, dims in zip(examples, dynamic)]
                names = [runs.bound_name(inputs, leaf) for leaf in flat_inputs]

                def variant(sizes: dict[tuple[int, int], int], resized: dict | None = None) -> CapturedRun:
                    """The run captured with the dims of `sizes` that size (0 or 1), and the
                    dims of `resized` exported from examples of that size, still dynamic."""
                    resized = resized or {}
                    fixed = [runs.resized(runs.narrowed(e, [(d, n) for (k, d), n in sizes.items() if k == position]),
                                          [(d, n) for (k, d), n in resized.items() if k == position]) for position, e in enumerate(examples)]
                    dims = [[d for d in ds if (position, d) not in sizes] for position, ds in enumerate(dynamic)]
                    key = (cache_key[0], (cache_key[1], tuple(sorted(sizes.items(), key=str)), tuple(sorted(resized.items(), key=str))))
                    return self.capturer.capture(run, fixed, dims, called, key, frozenset(k for k, d in sizes if d is None))

                self.capturer.state_values = self.state.buffer_values(self.attributes, env) if self.state else {}
                try:
                    captured = runs.capture_past_frozen_sizes(self.capturer, run, examples, dynamic, called, cache_key)
                except Exception as error:
                    if not (any(dynamic) and by_size.needs_example_sizes(error)):
                        raise
                    # (a view that fixes a runtime size: `freqs[start : start + n].view(1, n, 1, d)`)
                    at_example = runs.distinct_examples(flat_inputs, at_two)
                    captured, values = by_size.at_example_sizes(
                        self, stmts, lambda: self.capturer.capture(run, at_example, [[] for _ in at_example], called),
                        flat_inputs, dynamic, names, error)
                else:
                    self._refuse_size_by_path(stmts, input_specs, flat_inputs, captured)
                    captured, values = by_size.splice(self, stmts, captured, variant, flat_inputs, names)
            except (FrontendError, runs.SplitRun, SizeTest):
                raise
            except DataDependentShape as error:
                refusal = self._data_dependent_shape_error(stmts, error)
                raise (DataSize.of(refusal) if error.from_mask else refusal) from None
            except (SpecializedInput, IntArithmetic) as error:
                if not ints_as_tensors:
                    raise runs.retry_with_ints(error, flat_inputs, at_two) from None
                raise self._specialized_int(stmts[0], runs.bound_name(inputs, flat_inputs[error.position])) from None
            except WeightMutation as error:  # (a buffer: state kept across calls, compiled again with it as a slot)
                raise changed_weight(self.state, error.name, self.error(
                    stmts[0], f"{_quoted(stmts[0])}in-place change of the weight `{error.name}` in forward",
                    "module state must not change in forward: compute a new tensor instead "
                    "(`w = self.w * 2`, not `self.w.mul_(2)`)",
                )) from None
            except Exception as error:
                raise self._capture_error(stmts, lines, error, flat_inputs, ints_as_tensors, at_two) from None
            mutated = len(captured.mutated_inputs)
            memory = [aliases.storage_of(leaf.example) for leaf in flat_inputs]
            seen = {memory[k] for k in captured.mutated_inputs}
            for leaf, version, place in zip(flat_inputs, versions, memory):
                # The example run changed this input in place, and export did not say so:
                # never drop a mutation, whatever way it was written.
                if version is not None and leaf.example._version != version and place not in seen:
                    raise self.error(
                        stmts[0], f"an in-place change of `{runs.bound_name(inputs, leaf)}` that DyCL cannot follow",
                        "compute a new tensor instead (`t = t * 2` rather than an in-place method)",
                    )
            for k in captured.mutated_inputs:
                if memory[k] is not None and memory.count(memory[k]) > 1:
                    # another input of this run shares the memory, but export saw two values
                    raise self._path_dependent_alias(stmts[0], runs.bound_name(inputs, flat_inputs[k]))
            values = self.state.rebind_buffers(self, env, live, stmts[0], captured, values) if self.state else values
            self._rebind_mutated(
                env, live, stmts[0],
                [
                    (flat_inputs[k], V.Dyn(value, type_, flat_inputs[k].example))
                    for k, value, type_ in zip(captured.mutated_inputs, values, captured.mutated_types)
                ],
            )
            values = values[mutated:]
            by_runtime_int = any(isinstance(l, V.Dyn) and l.type == V.INT for v in originals.values() for l in V.leaves(v))
            placed = aliases.placed_by_runtime_int(flat_inputs) if by_runtime_int else lambda example: frozenset()
            for k, value, type_, constant in zip(exported, values, captured.result_types, captured.constant):
                leaf = out_leaves[k]
                is_scalar = not isinstance(leaf, torch.Tensor)
                produced[k] = V.Const(leaf) if is_scalar and constant else V.Dyn(value, type_, leaf, placed(leaf))
            drop_unused_constants([v for k, v in zip(exported, values) if isinstance(produced[k], V.Const)])
        known = {id(l.value) for _, value in input_specs for l in V.leaves(value) if isinstance(l, V.Const)}
        if flat_inputs and any(k not in produced and runs.picked_object(leaf) and id(leaf) not in known for k, leaf in enumerate(out_leaves)):
            # `self.experts[k]` with a runtime k: the example run picked one module, which
            # would become a constant (every input would get the example's expert); a module
            # the run got as a constant is no choice (`self`, kept by `m.masked_fill_(self.a)`)
            raise self.error(
                stmts[0], f"`{runs.statement_text(stmts)}` picks a module or function by a runtime value",
                "choose with an `if`/`elif` on the value (`if k == 0: y = self.experts[0](x) ...`), "
                "or run every candidate and select the result (`torch.stack([e(x) for e in "
                "self.experts])[k]`)",
            )
        if flat_inputs:  # (`m = Categorical(probs)` read by a later statement)
            runs.refuse_frozen_objects(self, stmts, [l for k, l in enumerate(out_leaves) if k not in produced and id(l) not in known])
        structured = [produced.get(k, V.Const(leaf)) for k, leaf in enumerate(out_leaves)]
        try:
            renewed: list[tuple[V.Tup, V.Tup]] = []
            result = runs.to_env_value(pytree.tree_unflatten(structured, out_spec), self.builder, eager, dict(input_lists), input_lists, renewed)
            for old, new in renewed:  # an input list the run returns: its holders see the run's version
                lists.replace_everywhere(env, old, new)
            return result
        except FrontendError as error:  # located here: the statement that built the value
            raise self.error(stmts[0], error.construct, error.hint) from None

    def _refuse_size_by_path(self, stmts, input_specs, flat_inputs, captured: CapturedRun) -> None:
        """Tensor math on a tensor whose shape depends on the path (or a runtime size) raises
        RuntimeSize, which `_per_length_on_failure` takes first as a chance to compile the
        statements once per length of a list; failing that, they are compiled again with
        `sizes_at_run_time` set, and only a rank that depends on the path is refused. (In a
        loop body it may be a carry that grows, static once dycl-unroll-loops ran.)"""
        for k, leaf in enumerate(flat_inputs):
            if not runs.shape_depends_on_path(leaf.type):
                continue
            names = [n for n, value in input_specs if any(l is leaf for l in V.leaves(value))]
            if leaf.type.shape is None:
                # export would read the example's rank and shape as constants (`y.dim()`,
                # `y.shape[0]`, `y[0]`), in loops too: only passing it on is compiled
                if self.capturer.only_returns(captured.func_name, k) and not any(_reads_beyond_passing(stmts, n) for n in names):
                    continue
            elif self.runtime_loop_depth or not self.capturer.computes_with(captured.func_name, k) or self.sizes_at_run_time:
                continue
            raise RuntimeSize.of(self._shape_by_path_error(stmts, names[0], leaf))

    def runtime_check(self, condition: V.EnvValue, node: ast.AST, message: str) -> None:
        """Raise `message` (located at `node`) at run time where `condition` is false: a
        check eager makes (`pack_padded_sequence`'s lengths). A check known here to fail is
        the program's error, raised now."""
        if isinstance(condition, V.Const):
            if not condition.value:
                raise self.error(node, message)
            return

        def fail() -> list:
            ir.Operation.create("dycl.error", attributes={"message": ir.StringAttr.get(str(self.error(node, message)))})
            return []
        self.select(condition, lambda: [], fail)

    def select(self, condition: V.Dyn, then_fn, else_fn) -> list[ir.Value]:
        """An `scf.if` on a runtime bool whose arms build IR values (`then_fn()`,
        `else_fn()`: one list each, of one kind item by item); its results, types joined.
        Marked `dycl.by_size`: the frontend made it, no `if` of the user's."""
        draft = ir.Operation.create("scf.if", results=[], operands=[self.builder.to_i1(condition)], regions=2)
        blocks, arms = [], []
        for region, build in zip(draft.regions, (then_fn, else_fn)):
            block = region.blocks.append()
            with ir.InsertionPoint(block):
                arms.append([V.Dyn(v, V.parse_type(str(v.type)), None) for v in build()])
            blocks.append(block)
        types = [V.join_types(a.type, b.type) for a, b in zip(*arms)]
        return self._close_if(draft, blocks, arms, types, {BY_SIZE: ir.UnitAttr.get()})

    def _close_if(self, draft: ir.Operation, blocks, arms, types, attributes=None) -> list[ir.Value]:
        """The results of the `scf.if` that `draft` (result-less, its two regions built in
        `blocks`) stands for: each block yields its leaves of `arms` cast to the joined
        `types`, the ops move into the real op, made in the draft's place, and the draft goes."""
        for block, leaves in zip(blocks, arms):
            with ir.InsertionPoint(block):
                ir.Operation.create("scf.yield", operands=[self._cast(leaf, t).value for leaf, t in zip(leaves, types)])
        if_op = ir.Operation.create(
            "scf.if", results=[self.builder.type(t) for t in types], operands=[draft.operands[0]], regions=2,
            attributes=attributes or {}, ip=ir.InsertionPoint(draft),
        )
        for old, new in zip(blocks, if_op.regions):
            new_block = new.blocks.append()
            for op in list(old.operations):
                new_block.append(op)
        draft.erase()
        return list(if_op.results)

    def _rebind_mutated(self, env: dict, live, stmt, mutations: list[tuple[V.Dyn, V.Dyn]]) -> None:
        """Give a tensor mutated in place its new value in every variable bound to it."""
        if not mutations:
            return
        new_values = {old.value: new for old, new in mutations}
        changed: dict[int, tuple[V.Dyn, V.Dyn]] = {}
        views: dict = {}  # (a variable's value, the new value) -> its new value
        for old, new in mutations:
            what = runs.bound_name(env, old)
            memory = aliases.storage_of(old.example)
            if memory in self.memory_of_inputs:
                raise self.error(
                    stmt, f"{_quoted(stmt)}in-place change of the forward input `{self.memory_of_inputs[memory]}`"
                    + ("" if what == self.memory_of_inputs[memory] else f" (through `{what}`)"),
                    "PyTorch would change the caller's tensor, which a compiled model cannot: "
                    "mutate a copy (`x = x.clone()` first) if the caller does not read the change",
                )
            if memory in self.memory_of_weights:
                raise self.error(
                    stmt, f"{_quoted(stmt)}in-place change of the weight `{self.memory_of_weights[memory]}` (through `{what}`)",
                    "module state must not change in forward: compute a new tensor instead",
                )
            if old.may_share:
                raise self._path_dependent_alias(stmt, what)
            if memory is not None:
                changed[memory] = (old, new)
        for name in list(env):
            # a dead variable is rebound where that is exact, and never a reason to refuse
            strict = live is None or name in live
            env[name] = self._after_mutation(env[name], name, new_values, changed, stmt, strict, views)

    def _after_mutation(self, value, name, new_values, changed, stmt, strict: bool, views: dict):
        if isinstance(value, V.Tup):
            return V.Tup(tuple(self._after_mutation(i, name, new_values, changed, stmt, strict, views) for i in value.items), value.kind)
        if isinstance(value, V.Maybe):
            inner = self._after_mutation(value.value, name, new_values, changed, stmt, strict, views)
            return value if inner is value.value else V.Maybe(value.present, inner)
        if not isinstance(value, V.Dyn):
            return value
        if value.value in new_values:
            return new_values[value.value]
        if isinstance(value, lists.StaticList):  # (`outs.append(x)`, then `x.relu_()`)
            return self._list_after_mutation(value, name, new_values, changed, stmt, strict, views)
        if not strict:
            memory = aliases.storage_of(value.example)
            exact = memory in changed and not value.may_share and aliases.geometry(value.example) == aliases.geometry(changed[memory][0].example)
            return changed[memory][1] if exact else value
        if value.may_share & changed.keys():
            raise self._path_dependent_alias(stmt, name)
        if isinstance(value.example, list):
            if any(aliases.storage_of(item) in changed for item in value.example):
                raise self.error(
                    stmt, f"{_quoted(stmt)}in-place change of a tensor that the list `{name}` also holds",
                    f"append a copy (`{name}.append(t.clone())`) or rebind instead of mutating (`t = t * 2`)",
                )
            return value
        memory = aliases.storage_of(value.example)
        if memory not in changed:
            return value
        old, new = changed[memory]
        if aliases.geometry(value.example) == aliases.geometry(old.example):
            return new
        seen = views.get((value.value, new.value))
        if seen is None:
            seen = views[(value.value, new.value)] = self._other_view_after_mutation(value, old, new, stmt)
        if seen is None:
            raise self.error(
                stmt, f"{_quoted(stmt)}in-place change of a view that `{name}` shares memory with (a different view of the same tensor)",
                "make the view and the in-place change in the same straight-line block, "
                f"or write the new `{name}` explicitly (e.g. `{name} = {name}.clone()` before taking the view)",
            )
        return seen

    def _list_after_mutation(self, value, name, new_values, changed, stmt, strict: bool, views: dict):
        """A list whose items are known here, after a change of a tensor it holds: the list
        of the items' new values. Every name bound to the list gets the one new list."""
        key = ("list", value.value, strict)
        if key not in views:
            items = [self._after_mutation(i, name, new_values, changed, stmt, strict, views) for i in value.items]
            same = all(a is b for a, b in zip(items, value.items))
            views[key] = value if same else lists.static_list(self, items, value.type)
        return views[key]

    def _other_view_after_mutation(self, value: V.Dyn, old: V.Dyn, new: V.Dyn, stmt) -> V.Dyn | None:
        """The new value of `value`, a different view of the memory of `old`, which a run
        changed in place to `new`: computed from `new` when one of the two is a contiguous
        tensor that covers the other (`hist` and `v = hist.view(-1)`), unchanged when they
        share no element; None otherwise."""
        written = aliases.positions_in(old.example, value.example)  # old's elements in value
        if written is not None and written.numel() == 0:
            return value
        if written is not None and written.unique().numel() == written.numel():
            source = "__value.reshape(-1).index_put((__positions,), __new.reshape(-1)).reshape(__value.shape)"
            positions = written
        else:
            positions = aliases.positions_in(value.example, old.example)  # value's elements in old
            if positions is None:
                return None
            source = f"__new.reshape(-1)[__positions].reshape({tuple(value.example.shape)})"
        result = self.written_expression(source, stmt, {"__value": value, "__new": new, "__positions": V.Const(positions)})
        # its example is still the view the example run changed: later changes through one
        # of the two views reach the other again
        return V.Dyn(result.value, result.type, value.example, value.may_share)

    def _check_model_unchanged(self, stmts, examples: dict) -> None:
        """Running a run on example values must not have changed the model (restored if so);
        the statement that did it is found by running the run once more, one statement at a
        time (only on this error path)."""
        name = self.state_guard.changed()
        if name is None:
            return
        culprit = stmts[0]
        if len(stmts) > 1 and isinstance(stmts[0], ast.stmt):
            for k, stmt in enumerate(stmts):
                probe = self._run_function(stmts[: k + 1], sorted(examples), ast.Constant(None))
                self.state_guard.snapshot()
                try:
                    with torch.no_grad(), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        probe(self.model, **examples)
                except Exception:
                    pass
                if self.state_guard.changed() is not None:
                    culprit = stmt
                    break
        raise changed_weight(self.state, name.removeprefix("self."), self.error(
            culprit, f"{_quoted(culprit)}a change of the module's state `{name}` in forward (it outlives the call)",
            "module state must not change in forward: return the value (or keep a local "
            "list) instead, and compute new tensors rather than changing weights in place",
        ))
    def _shape_by_path_error(self, stmts, name: str, value: V.Dyn) -> FrontendError:
        """Tensor math on a value whose shape differs between paths (a variable assigned
        tensors of two shapes, the stack of a list whose length depends on the path). Only a
        rank that differs is final (`_refuse_size_by_path`): sizes compile as runtime dims."""
        what = ("a tensor whose shape depends on the path taken" if name.startswith(OPERAND_PREFIX)
                else f"`{name}`, {V.describe_type(value.type)}")
        return self.error(
            stmts[0], f"`{runs.statement_text(stmts)}` computes with {what}",
            "give it one rank on every path (reshape it to the same number of dims in each branch), "
            "or do the computation inside each branch",
        )

    def _scalars_as_tensors(self, value: V.EnvValue, ints_as_tensors: bool, converted: dict) -> V.EnvValue:
        """A runtime float enters tensor math as a 0-d f64 tensor, a runtime bool as a 0-d
        bool tensor, a runtime int as a 0-d i64 tensor (same promotion as a Python scalar:
        0-d tensors never widen the other operand's dtype; what a tensor cannot do, such as
        `1 - b`, fails on the example and is refused). Inside a run they stay data: `h * l` and `y[0, k] = v` compile to
        tensor ops whatever the value is, where an int would be frozen to its example (an
        index) or left on the host (arithmetic) -- and a use as a size is refused by export.
        `converted` (by id) makes a value two inputs hold (a list `inner = d["a"]` also names)
        one converted value, and a list or dict with nothing to convert stays itself."""
        if id(value) in converted:
            return converted[id(value)]
        result = value
        if isinstance(value, V.Tup):
            items = tuple(self._scalars_as_tensors(i, ints_as_tensors, converted) for i in value.items)
            if any(a is not b for a, b in zip(items, value.items)):
                result = V.Tup(items, value.kind)
        elif isinstance(value, V.Dyn) and (value.type in (V.FLOAT, V.BOOL) or value.type == V.INT and ints_as_tensors):
            dtype = {V.FLOAT: torch.float64, V.BOOL: torch.bool, V.INT: torch.int64}[value.type]
            example = torch.tensor(value.example, dtype=dtype)
            result = self.builder.host_op("torch.prim.NumToTensor.Scalar", [value], V.type_of_example(example), example)
        converted[id(value)] = result
        return result

    @staticmethod
    def _dynamic_dims(type_: Attribute) -> list[int]:
        shape = type_.shape if V.is_tensor_type(type_) else None
        return [k for k, d in enumerate(shape) if d is None] if shape else []

    def _capture_error(self, stmts, lines, error, flat_inputs=(), ints_as_tensors=True, at_two=()) -> FrontendError:
        """What torch.export could not capture, in Python terms (its own message stays in
        the error's `detail`, not in what the user reads first)."""
        if at_two:  # (an int exported at 2 where the program allows no 2, `x[0, k]` of a row of 2)
            raise runs.IntsAsTensors()
        if isinstance(error, RandomOpRefused) and len(stmts) > 1:
            raise runs.SplitRun()  # (one run per statement: refused at the one that draws)
        if isinstance(error, NoHostTranslation):  # (from `splice`)
            return self.error(stmts[0], *error.explained(runs.statement_text(stmts).splitlines()[0]))
        if isinstance(error, complex_values.ComplexOpRefused):  # (at the statement that computes it)
            lines = [line for file, line in error.frames if file == self.scope.source.file]
            at = next((s for line in reversed(lines) for s in stmts if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
            if at is None and len(stmts) > 1:
                raise runs.SplitRun()
            at = at or stmts[0]
            return self.error(at, *error.explained(runs.statement_text([at]).splitlines()[0]))
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if "Constraints violated" in text or "specialized integer from data-dependent" in text:
            # a runtime int used where the graph needs a constant (a size, an index it reads)
            if not ints_as_tensors and any(l.type == V.INT for l in flat_inputs):
                raise runs.IntsAsTensors()
            return self._specialized_int(stmts[0])
        source = runs.statement_text(stmts)
        packing = next((s for s in stmts for n in ast.walk(s) if isinstance(n, ast.Call) and _called_name(n) in _PACKING), None)
        if packing is not None:  # (with lengths known here, the run would have been captured)
            failure = self.error(
                packing, f"`{runs.statement_text([packing])}` packs sequences whose lengths are known only at "
                "run time: the packed batch has as many rows as the lengths add up to",
                "DyCL lowers `pack_padded_sequence` with runtime lengths where the forward or a helper "
                "method calls it (its RNNs, `pad_packed_sequence`, `.data`): call it there, not inside "
                "code DyCL captures whole",
            )
            failure.detail = text
            return failure
        if type(error).__name__ == "ValueRangeError" and any(
            l.type == V.INT and isinstance(l.example, int) and l.example < 0 for l in flat_inputs
        ):
            failure = self.error(
                stmts[0], f"`{source}` indexes a tensor with a runtime Python int that is negative "
                "on the example path (`x[0, k]` with `k < 0`): DyCL cannot capture both signs in one block",
                "make the position non-negative where it is computed (`k = k + n if k < 0 else k` "
                "for a dimension of size n), or index with a tensor (`x.index_select(1, idx)`)",
            )
            failure.detail = text
            return failure
        if "conflicts between user-specified ranges" in text or "specialized" in text:
            failure = self.error(
                stmts[0], f"`{source}` needs a tensor whose size is known only at run time (it depends "
                "on the path, or on a runtime int) to have one particular size",
                "give the tensors it combines the same size on every path (pad or slice them to a "
                "constant size), or do the computation inside each branch",
            )
            failure = RuntimeSize.of(failure)
        elif "data-dependent" in text.lower() or "guard" in text.lower():
            failure = self.error(
                stmts[0], f"`{source}` uses a tensor's value as a Python value (a condition, an "
                "index or a size) inside code that DyCL captures as one block",
                "if it is a condition in a helper or a submodule, call that from forward "
                "(`x = self.helper(x)`, `x = self.block(x)`) so that DyCL compiles the branch, or "
                "use torch.cond; if it is an index or a size, keep it a tensor (masks, "
                "`index_select`, `gather`)",
            )
        else:
            failure = self.error(
                stmts[0], f"`{source}` cannot be captured as a tensor program "
                f"(torch.export raised {type(error).__name__})",
                "rewrite it with torch operations on tensors; Python-level work on tensor "
                "values belongs in forward, where DyCL compiles it",
            )
            if "used as indices must be" in text:  # (a uint8 mask: export takes none; data_sizes.py does)
                failure = DataSize.of(failure)
        failure.detail = text
        return failure

    def _data_dependent_shape_error(self, stmts, error: DataDependentShape) -> FrontendError:
        """A tensor whose size export could only name by a symbol of the data, at the
        statement that made it (the innermost frame of the user's file among the run's)."""
        lines = [line for file, line in error.frames if file == self.scope.source.file]
        at = next((s for line in reversed(lines) for s in stmts if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        source = runs.statement_text([at] if at is not None else stmts)
        if error.from_mask:
            return self.error(
                at or stmts[0], f"`{source}` makes a tensor whose size depends on the data in a way "
                "DyCL does not lower (`torch.unique_consecutive`, a mask where DyCL cannot place its positions)",
                "DyCL makes such sizes on the host for `nonzero`, `torch.where(mask)`, `masked_select`, `torch.unique`, "
                "`repeat_interleave` and boolean masks in an index (`x[mask]`, `x[mask] = v`); otherwise keep the full shape "
                "and select with `torch.where(mask, a, b)` or multiply by the mask (`(x * mask).sum()`)",
            )
        return self.error(
            at or stmts[0], f"`{source}` makes a tensor whose size is a number computed from tensor "
            "values (`.tolist()`, `.item()`, `int(t)`)",
            _STATIC_SIZE_HINT,
        )

    def _refuse_attribute_read(self, stmts, poisons) -> None:
        """User code inside the run used a module attribute that this call assigned: running
        as one captured block, it would read the module's value instead of the call's."""
        touched = [p for p in poisons if p.touched]
        if touched:
            raise self.error(
                stmts[0], f"`{runs.statement_text(stmts)}` reads `{touched[0].text}` inside code that DyCL runs as one "
                "captured block (a function or helper it does not compile), after forward assigned it",
                f"read `{touched[0].text}` in forward or in a helper called as its own statement "
                "(`y = self.helper(x)`), which DyCL compiles, and pass the value on as an argument",
            )

    def _specialized_int(self, stmt, name: str | None = None) -> FrontendError:
        what = f"`{name}`" if name and not name.startswith("operand") else "a runtime Python int"
        return self.error(
            stmt, f"{what} is used where the captured tensor code needs a constant (an index or a "
            "size); export would freeze it to its example value",
            "index with a 1-element index tensor instead (`y[0, idx] = v` with "
            "`idx = t.argmax().reshape(1)`, or `y.index_select(dim, idx)`), keeping the value a "
            "tensor rather than calling int() or .item() on it",
        )

    def _path_dependent_alias(self, stmt, name: str) -> FrontendError:
        return self.error(
            stmt, f"{_quoted(stmt)}in-place change of `{name}`, which shares memory with another variable on some paths only "
            "(or where a runtime int places it: `x[:k]`, `x[i]`)",
            f"copy it where it is assigned on every path (`{name} = other.clone()`), or rebind instead of mutating",
        )

    # ----- host expressions ------------------------------------------------------------
    # `expression` dispatches here by AST node type (`host_<node>`) when an
    # expression needs values that must stay outside captured runs (Python scalars from tensor
    # data, lists of data-dependent length, conditions). Tensor math over operands computed
    # this way is one captured run (`_apply`).

    def host_Call(self, expr: ast.Call, env) -> V.EnvValue:
        size = sizes.host_size(self, expr, env)
        if size is not None:
            return size
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in X.SCALAR_METHODS and not expr.args:
            tensor = self._materialize(self.expression(expr.func.value, env), "tensor")
            example = self._eager(expr, lambda: tensor.example.item())
            return self.builder.host_op("torch.aten.item", [tensor], V.type_of_example(example), example)
        func = self._try_constant(expr.func, env, quiet=True)
        result = predicates.host_call(self, expr, env, func)
        if result is not None:
            return result
        handler = host_expressions.handler_of(host_builtins.HANDLERS, func)
        if handler is not None:
            result = handler(self, expr, env)
            if result is not None:
                return result
        if host_numpy.is_numpy_function(func):
            return host_numpy.numpy_call(self, expr, env, func)
        receiver = None
        if func is V.MISSING and isinstance(expr.func, ast.Attribute) and (
            expr.func.attr == "numpy" or isinstance(expr.func.value, ast.Name) or self._needs_host(expr.func.value, env, set())
        ):
            receiver = self.expression(expr.func.value, env)  # `t.numpy()`, `probs.max()` on a numpy value
            result = host_numpy.method_call(self, expr, env, receiver)
            if result is not None:
                return result
        if X.known(host_numpy.TORCH_FROM_NUMPY, func):
            result = host_numpy.torch_from_numpy(self, expr, env, func)
            if result is not None:
                return result
        args = [self.expression(a, env) for a in expr.args]
        made_or_read = packed.call(self, expr, env, func, args)
        if made_or_read is not None:
            return made_or_read
        if X.known(X.SCALAR_BUILTINS, func) and len(args) == 1 and not expr.keywords:
            (arg,) = args
            arg = self._materialize(arg, "argument")
            example = self._eager(expr, lambda: func(arg.example))
            source_kind = "Tensor" if V.is_tensor_type(arg.type) else V.scalar_name(arg.type)
            if V.type_of_example(example) == arg.type:
                return arg
            return self.builder.host_op(host_expressions.conversion_op(func, source_kind), [arg], V.type_of_example(example), example)
        if func is builtins.len and len(args) == 1 and isinstance(args[0], V.Dyn) and V.is_list_type(args[0].type):
            return self.builder.host_op(LIST_LENGTH, [args[0]], V.INT, len(args[0].example))
        host_numpy.refuse_numpy_argument(self, expr, args, func)
        if X.known(X.LIST_FUNCTIONS, func) and args and isinstance(args[0], lists.StaticList) and args[0].items:
            # items known: stacked inside a run, with a static shape
            return self._apply(expr, env, host_expressions.call_operands(expr, receiver, [V.Tup(args[0].items, "list"), *args[1:]]))
        if X.known(X.LIST_FUNCTIONS, func) and args and isinstance(args[0], V.Dyn) and args[0].type == V.TENSOR_LIST:
            return self._stack_or_cat(expr, func, args, env)
        # Anything else: tensor math over the already-computed operands.
        return self._apply(expr, env, host_expressions.call_operands(expr, receiver, args))

    def _eager(self, node, compute):
        """A Python conversion of an example value, as eager Python would do it; its error (a
        tensor of several elements to a bool, ...) is the program's, located at `node`."""
        try:
            return compute()
        except (RuntimeError, ValueError, TypeError) as error:
            raise self.error(node, f"`{source_text(node)}`: {type(error).__name__}: {error}") from None

    def _stack_or_cat(self, expr, func, args, env):
        dim = args[1] if len(args) > 1 else V.Const(0)
        for keyword in expr.keywords:
            if keyword.arg == "dim":
                dim = self.expression(keyword.value, env)
        if not isinstance(dim, V.Const):
            raise self.error(expr, "runtime `dim` of stack/cat", "use a constant dim")
        items = args[0].example
        example = func(items, dim.value) if items else None
        if example is None:
            raise RuntimeSize.of(self.error(expr, f"`{source_text(expr)}` of a list that is empty on the example path", "append at least once before the condition, or check DyCL's example inputs"))
        name = X.LIST_FUNCTIONS[func]
        type_ = X.stacked_type(example, dim.value)
        return self.builder.host_op(f"torch.aten.{name}", [args[0], self.builder.constant(int(dim.value))], type_, example)

    def host_Compare(self, expr: ast.Compare, env) -> V.EnvValue:
        operands = [self.expression(e, env) for e in [expr.left, *expr.comparators]]
        if len(operands) == 2 and type(expr.ops[0]) in (ast.In, ast.NotIn) and isinstance(operands[0], V.Const) and (
            isinstance(operands[1], V.Tup) and isinstance(operands[1].kind, V.DictKind)
        ):  # `"aux" in outputs`: its keys are known here
            return V.Const((operands[0].value in operands[1].kind.keys) == isinstance(expr.ops[0], ast.In))
        if len(operands) == 2 and type(expr.ops[0]) in (ast.Is, ast.IsNot) and any(isinstance(o, V.Maybe) for o in operands):
            return self.is_none_test(expr, operands)
        if len(operands) == 2 and type(expr.ops[0]) in (ast.In, ast.NotIn) and not host_expressions.is_tensor(operands[0]):
            return self._membership(expr, *operands)
        if any(host_expressions.is_tensor(o) for o in operands):
            return host_numpy.mark(self._apply(expr, env, host_expressions.known_values([expr.left, *expr.comparators], operands)), operands)
        if all(isinstance(o, V.Const) for o in operands) and all(type(op) in X.PY_COMPARE for op in expr.ops):
            # known here although it reads runtime values (`len(lst) > 1` of a list of known items)
            return V.Const(all(X.PY_COMPARE[type(op)](a.value, b.value) for op, a, b in zip(expr.ops, operands, operands[1:])))
        result = None
        for (op, left, right) in zip(expr.ops, operands, operands[1:]):
            name = X.COMPARE_OPS.get(type(op))
            if name is None:
                raise self.error(expr, f"`{source_text(expr)}`: `{_COMPARISON_WORDS.get(type(op), type(op).__name__)}` between runtime values")
            pair = self._scalar_pair(left, right, expr)
            example = X.PY_COMPARE[type(op)](pair[0].example, pair[1].example)
            kind = V.scalar_name(pair[0].type)
            value = self.builder.host_op(f"torch.aten.{name}.{kind}", list(pair), V.BOOL, example)
            result = value if result is None else self.builder.host_op(
                "torch.aten.__and__.bool", [result, value], V.BOOL, result.example and value.example
            )
        return result

    def _membership(self, expr: ast.Compare, item: V.EnvValue, container: V.EnvValue) -> V.EnvValue:
        """`k in (1, 2)` / `k not in [0, 3]` of a runtime Python scalar: `k == 1 or k == 2`, as
        Python's `in` compares (an item of another kind, a str or None, is never equal)."""
        if isinstance(container, V.Const) and isinstance(container.value, (list, tuple, set, frozenset)):
            candidates = [V.Const(v) for v in container.value]
        elif isinstance(container, V.Tup) and not isinstance(container.kind, V.DictKind):
            candidates = list(container.items)
        else:
            raise self.error(expr, f"`{source_text(expr)}`: `in` on a {V.kind_of(container)} of runtime values", "compare with each item (`k == a or k == b`)")
        found = None
        for candidate in candidates:
            if isinstance(candidate, V.Const) and not isinstance(candidate.value, (bool, int, float)):
                continue  # (a str, None: never equal to a number)
            if host_expressions.is_tensor(candidate) or not isinstance(candidate, (V.Const, V.Dyn)):
                raise self.error(expr, f"`{source_text(expr)}`: `in` over a container holding a {V.kind_of(candidate)}", "compare with each item (`k == a or k == b`)")
            a, b = self._scalar_pair(item, candidate, expr)
            equal = self.builder.host_op(f"torch.aten.eq.{V.scalar_name(a.type)}", [a, b], V.BOOL, a.example == b.example)
            found = equal if found is None else self.builder.host_op(
                "torch.aten.__or__.bool", [found, equal], V.BOOL, found.example or equal.example
            )
        if found is None:
            return V.Const(isinstance(expr.ops[0], ast.NotIn))
        if isinstance(expr.ops[0], ast.NotIn):
            return self.builder.host_op("torch.aten.__not__", [found], V.BOOL, not found.example)
        return found

    def is_none_test(self, expr: ast.Compare, operands) -> V.EnvValue:
        """`v is None` / `v is not None` of a value that is None on some paths: its `present`."""
        value, other = operands if isinstance(operands[0], V.Maybe) else operands[::-1]
        if not (isinstance(other, V.Const) and other.value is None):
            raise self.error(expr, f"`{source_text(expr)}`: `is` between a value that is None on some paths and another value", "compare with None: `v is None`")
        present = self.builder.materialize(value.present)
        if isinstance(expr.ops[0], ast.IsNot):
            return present
        return self.builder.host_op("torch.aten.__not__", [present], V.BOOL, not present.example)

    def _scalar_pair(self, left, right, node):
        """Both operands as IR scalars of one kind, as Python's numeric tower mixes them: a bool
        with an int is an int, anything with a float is a float."""
        for side in (left, right):
            self.refuse_truth_value(node, side)
            if not (isinstance(side, V.Dyn) or (isinstance(side, V.Const) and isinstance(side.value, (bool, int, float)))):
                raise self.error(node, f"`{source_text(node)}`: arithmetic on a {V.kind_of(side)} and runtime values")
        left, right = self._materialize(left, "operand"), self._materialize(right, "operand")
        for side in (left, right):
            if side.type not in (V.INT, V.FLOAT, V.BOOL):
                raise self.error(node, f"`{source_text(node)}`: arithmetic on {V.describe_type(side.type)}")
        if left.type == right.type:
            return left, right
        target = V.FLOAT if V.FLOAT in (left.type, right.type) else V.INT

        def convert(side):
            if side.type == V.BOOL:
                side = self.builder.host_op("torch.aten.Int.bool", [side], V.INT, int(side.example))
            if side.type == V.INT and target == V.FLOAT:
                side = self.builder.host_op("torch.aten.Float.Scalar", [side], V.FLOAT, float(side.example))
            return side

        return convert(left), convert(right)

    def host_BinOp(self, expr: ast.BinOp, env) -> V.EnvValue:
        left, right = self.expression(expr.left, env), self.expression(expr.right, env)
        if isinstance(expr.op, ast.Add) and (lists.is_list(left) or lists.is_list(right)):
            ops = lists.ListOps(self, expr, f"`{source_text(expr)}`")
            if not (lists.is_list(left) and lists.is_list(right)):
                raise self.error(expr, f"`{source_text(expr)}` adds a list and a {V.kind_of(right if lists.is_list(left) else left)}", "add lists to lists")
            return ops.concat(left, right)
        if isinstance(expr.op, ast.Mult) and (lists.is_list(left) or lists.is_list(right)):
            lst, count = (left, right) if lists.is_list(left) else (right, left)
            ops = lists.ListOps(self, expr, f"`{source_text(expr)}`")
            if not (isinstance(count, V.Const) and type(count.value) is int):
                raise self.error(expr, f"`{source_text(expr)}` repeats a list a number of times computed at runtime", "repeat it a constant number of times")
            items = lists.items_of(lst)
            if items is None:
                raise self.error(expr, f"`{source_text(expr)}` repeats a list whose length is only known at runtime", "build the list in a loop")
            return ops.rebuild(lst, list(items) * count.value)
        if host_expressions.is_tensor(left) or host_expressions.is_tensor(right):
            if host_numpy.is_numpy(left) or host_numpy.is_numpy(right):
                host_numpy.check_binary(self, expr, expr.op, left, right)
            return host_numpy.mark(self._apply(expr, env, host_expressions.known_values([expr.left, expr.right], [left, right])), [left, right])
        spec = X.BINARY_OPS.get(type(expr.op))
        if spec is None:
            raise self.error(expr, f"`{type(expr.op).__name__}` on runtime Python scalars")
        name, always_float = spec
        a, b = self._scalar_pair(left, right, expr)
        if a.type == V.BOOL:
            a, b = (self.builder.host_op("torch.aten.Int.bool", [s], V.INT, int(s.example)) for s in (a, b))
        if always_float and a.type == V.INT:
            a, b = (self.builder.host_op("torch.aten.Float.Scalar", [s], V.FLOAT, float(s.example)) for s in (a, b))
        py = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y, ast.Mult: lambda x, y: x * y,
              ast.FloorDiv: lambda x, y: x // y, ast.Mod: lambda x, y: x % y, ast.Div: lambda x, y: x / y}[type(expr.op)]
        example = py(a.example, b.example)
        return self.builder.host_op(f"torch.aten.{name}.{V.scalar_name(a.type)}", [a, b], V.type_of_example(example), example)

    def host_UnaryOp(self, expr: ast.UnaryOp, env) -> V.EnvValue:
        operand = self.expression(expr.operand, env)
        if isinstance(expr.op, ast.Not):
            as_bool = self._to_bool(operand, expr)
            if isinstance(as_bool, V.Const):
                return V.Const(not as_bool.value)
            return self.builder.host_op("torch.aten.__not__", [as_bool], V.BOOL, not as_bool.example)
        if host_expressions.is_tensor(operand):
            return host_numpy.mark(self._apply(expr, env, host_expressions.known_values([expr.operand], [operand])), [operand])
        if isinstance(expr.op, ast.USub):
            value = self._materialize(operand, "operand")
            return self.builder.host_op(f"torch.aten.neg.{V.scalar_name(value.type)}", [value], value.type, -value.example)
        raise self.error(expr, f"`{type(expr.op).__name__}` on a runtime Python scalar")

    def _to_bool(self, value: V.EnvValue, node) -> V.EnvValue:
        return host_builtins.truth(self, value, node)

    def host_BoolOp(self, expr: ast.BoolOp, env) -> V.EnvValue:
        """`a and b` / `a or b` as Python evaluates them: an operand is computed only when the
        ones before it do not decide (an `scf.if` when they decide at runtime), and the value is
        the operand that decided (a bool when all operands are bools)."""
        return self._boolop(expr, list(expr.values), env, isinstance(expr.op, ast.And))

    def _boolop(self, expr, values, env, is_and: bool) -> V.EnvValue:
        first = self.expression(values[0], env)
        if len(values) == 1:
            return first
        truth = host_builtins.truth(self, first, values[0])
        if isinstance(truth, V.Const):
            return self._boolop(expr, values[1:], env, is_and) if truth.value == is_and else first
        if host_expressions.is_bool(first) and all(host_expressions.is_simple(v) for v in values[1:]):
            # the rest cannot fail or cost anything: computed eagerly, combined on the host
            rest = self._boolop(expr, values[1:], env, is_and)
            if host_expressions.is_bool(rest):
                rest = host_builtins.truth(self, rest, expr)
                if isinstance(rest, V.Const):
                    return rest if rest.value != is_and else truth
                name = "__and__" if is_and else "__or__"
                example = (truth.example and rest.example) if is_and else (truth.example or rest.example)
                return self.builder.host_op(f"torch.aten.{name}.bool", [truth, rest], V.BOOL, example)

        def rest(scope):
            return self._boolop(expr, values[1:], scope, is_and)

        def decided(scope):
            return first

        then_fn, else_fn = (rest, decided) if is_and else (decided, rest)
        # (`self.key is not None and torch.equal(x, self.key)`: the rest knows `self.key`)
        return self._conditional(expr, env, truth, then_fn, else_fn, truth_if_mixed=True,
                                 refinements=host_expressions.none_test_branches(values[0], env))

    def host_Subscript(self, expr: ast.Subscript, env) -> V.EnvValue:
        size = sizes.host_size(self, expr, env)
        if size is not None:
            return size
        holder = self.expression(expr.value, env)
        if isinstance(holder, V.Packed):
            key = self._try_constant(expr.slice, env, quiet=True)
            if type(key) is not int:
                raise packed.refuse(self, expr, "indexes with something other than a constant int")
            return packed.read(self, expr, holder, key)
        if not (lists.is_list(holder) or isinstance(holder, V.Tup) or isinstance(holder, V.Const) and isinstance(holder.value, tuple)):
            sliced = self._sliced_on_host(expr, holder, env)
            if sliced is not None:
                return host_numpy.mark(sliced, [holder])
            return host_numpy.mark(self._apply(expr, env, host_expressions.known_values([expr.value], [holder])), [holder])
        if isinstance(holder, V.Tup) and isinstance(holder.kind, V.DictKind):
            return self._dict_item(expr, holder, self.expression(expr.slice, env))
        key = lists.subscript_key(self, expr.slice, env)
        ops = lists.ListOps(self, expr, f"`{source_text(expr)}`")
        if isinstance(holder, V.Tup) and holder.kind != "list":  # a tuple: items known
            constant = lists.const_key(key)
            if constant is None:
                return self._runtime_index_into_known(expr, env, holder, key)
            _, picked = ops.python(holder, lambda items: items[constant])
            return V.Tup(tuple(picked), holder.kind) if isinstance(constant, slice) else picked
        picked = ops.get(holder, key)
        if picked is not None:
            return picked
        if not (isinstance(holder, V.Dyn) and V.is_list_type(holder.type)):
            return self._runtime_index_into_known(expr, env, holder, key)
        return self._runtime_item(expr, holder, key)

    def _sliced_on_host(self, expr: ast.Subscript, holder, env) -> V.Dyn | None:
        """`x[:k]`, `emb[:k, t]`: a tensor indexed by slices (step 1) and ints, some of them
        runtime ints, as host slices and selects; a dim cut by a runtime bound is known only at
        run time (`[?, 8]`). Such a view may not be changed in place, nor its tensor while it
        lives: where it lies in the tensor is a runtime value. None for any other index
        (computed by a run)."""
        keys = self._host_index_keys(expr, holder, env)
        if keys is None:
            return None
        chain = self._host_views(holder, keys)
        if not chain:
            return None
        value = chain[-1][-1]
        memory = aliases.storage_of(holder.example)
        return dataclasses.replace(value, may_share=value.may_share | holder.may_share | ({memory} if memory is not None else set()))

    def _host_index_keys(self, expr: ast.Subscript, holder, env) -> list | None:
        """The keys of `holder[...]` when the host indexes it: slices of step 1 and ints, some
        bound or index a runtime int; None otherwise."""
        if not (isinstance(holder, V.Dyn) and V.is_tensor_type(holder.type) and holder.type.shape is not None
                and isinstance(holder.example, torch.Tensor)):
            return None
        parts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
        if len(parts) > holder.type.rank or not all(_plain_index(p, env) for p in parts):
            return None  # (plain parts have no effects: the run that computes it otherwise may compute them again)
        def value(node):  # (a numpy integer, `order[0]`, indexes as the Python int it is)
            found = self.expression(node, env)
            return host_numpy.integer_item(self, found) or found if host_numpy.is_numpy(found) else found
        keys = []
        for part in parts:
            if isinstance(part, ast.Slice):
                keys.append(slice(*(None if b is None else value(b) for b in (part.lower, part.upper, part.step))))
            else:
                keys.append(value(part))

        def index(value) -> bool:
            return value is None or isinstance(value, V.Const) and lists.is_int(value.value) or isinstance(value, V.Dyn) and value.type == V.INT
        flat = [b for k in keys for b in ((k.start, k.stop, k.step) if isinstance(k, slice) else (k,))]
        steps = [k.step for k in keys if isinstance(k, slice) and k.step is not None]
        if (not all(index(b) for b in flat) or not any(isinstance(b, V.Dyn) for b in flat)
                or not all(isinstance(k, slice) or k is not None for k in keys) or not all(isinstance(st, V.Const) and st.value == 1 for st in steps)):
            return None
        return keys

    def _host_views(self, holder: V.Dyn, keys: list) -> list[tuple] | None:
        """The host slices and selects of `holder[keys]`, one (base, dim, key, view) each."""
        example = lambda b: None if b is None else b.example if isinstance(b, V.Dyn) else b.value
        value, shape, dim, chain = holder, list(holder.type.shape), 0, []
        for key in keys:
            if isinstance(key, slice):
                if key.start is None and key.stop is None:
                    dim += 1
                    continue
                picked = value.example[(slice(None),) * dim + (slice(example(key.start), example(key.stop)),)]
                shape[dim] = None if isinstance(key.start, V.Dyn) or isinstance(key.stop, V.Dyn) or shape[dim] is None else picked.shape[dim]
                bounds = [self._materialize(b, "slice bound") if b is not None else self.builder.constant(None) for b in (key.start, key.stop)]
                operands = [self.builder.constant(dim), *bounds, self.builder.constant(1)]
                view = self.builder.host_op("torch.aten.slice.Tensor", [value, *operands], holder.type.with_shape(shape), picked)
                chain.append((value, "torch.aten.slice_scatter", operands, view))
                dim += 1
            else:
                at = example(key)
                if not -value.example.shape[dim] <= at < value.example.shape[dim]:
                    if not value.example.shape[dim]:
                        return None
                    at = 0  # (another path's index: this example is never compared)
                del shape[dim]
                operands = [self.builder.constant(dim), self._materialize(key, "index")]
                view = self.builder.host_op("torch.aten.select.int", [value, *operands], holder.type.with_shape(shape), value.example.select(dim, at))
                chain.append((value, "torch.aten.select_scatter", operands, view))
            value = view
        return chain

    def _store_on_host(self, stmt: ast.stmt, env: dict) -> bool:
        """`out[:k, t] = v` (or `+=`) with a runtime slice bound: the host takes the view, stores `v`
        (broadcast and cast to the view, as `copy_` does) and scatters it back; every alias
        of `out` sees the change. False (nothing computed) for any other statement."""
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AugAssign) else []
        if not (len(targets) == 1 and isinstance(targets[0], ast.Subscript) and isinstance(targets[0].value, ast.Name)):
            return False
        target = targets[0]
        holder = env.get(target.value.id)
        parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        bounds = [b for p in parts if isinstance(p, ast.Slice) for b in (p.lower, p.upper) if b is not None]
        if not any(isinstance(b, ast.Name) and isinstance(env.get(b.id), V.Dyn) and env[b.id].type == V.INT for b in bounds):
            return False
        keys = self._host_index_keys(target, holder, env)
        chain = self._host_views(holder, keys) if keys is not None else None
        if not chain:
            return False
        if holder.may_share:
            raise self._path_dependent_alias(stmt, target.value.id)
        view = chain[-1][-1]
        source = self.expression(stmt.value, env)
        if isinstance(stmt, ast.AugAssign):  # `out[:k] += v`: the view's new value, of its dtype (as torch's in-place op)
            combined = ast.unparse(ast.BinOp(ast.Name("__view", ast.Load()), stmt.op, ast.Name("__value", ast.Load())))
            source = self.written_expression(combined, stmt, {"__view": view, "__value": source})
            if not (isinstance(source, V.Dyn) and V.is_tensor_type(source.type) and source.type.element_type == view.type.element_type):
                raise self.error(stmt, f"`{source_text(stmt)}` makes a {V.describe_type(source.type)} that `{target.value.id}` cannot hold in place",
                                 f"convert it first (`... = (...).to({target.value.id}.dtype)`)")
        if isinstance(source, V.Const) and isinstance(source.value, (bool, int, float)):
            source = self.written_expression("__dycl_torch.full_like(__view, __value)", stmt, {"__view": view, "__value": source})
        elif not (isinstance(source, V.Dyn) and source.type == view.type):
            source = self.written_expression("__value.expand_as(__view).to(__view.dtype)", stmt, {"__view": view, "__value": source})
        try:  # the store on the examples, as eager makes it (another path's may not fit)
            with torch.no_grad():
                view.example.copy_(source.example)
        except Exception:
            pass
        new = source
        for base, scatter, operands, _ in reversed(chain):
            new = self.builder.host_op(scatter, [base, new, *operands], base.type, base.example)
        self._rebind_mutated(env, None, stmt, [(holder, V.Dyn(new.value, holder.type, holder.example))])
        return True

    def _dict_item(self, expr: ast.Subscript, holder: V.Tup, key: V.EnvValue) -> V.EnvValue:
        """`d[key]` of a dict whose keys are known here."""
        if not isinstance(key, V.Const):
            raise self.error(expr, f"`{source_text(expr)}` reads a dict at a key computed at runtime", "pick the item with an `if` on the key")
        if key.value not in holder.kind.keys:
            raise self.error(expr, f"`{source_text(expr)}`: KeyError: {key.value!r} (the dict has {', '.join(map(repr, holder.kind.keys)) or 'no keys'})")
        return holder.items[holder.kind.keys.index(key.value)]

    def host_Dict(self, expr: ast.Dict, env) -> V.EnvValue:
        """`{"logits": y, "exit": k}` with keys known here (a `**d` spreads a dict's items)."""
        entries: dict = {}
        for key_node, value_node in zip(expr.keys, expr.values):
            value = self.expression(value_node, env)
            if key_node is None:
                if isinstance(value, V.Const) and type(value.value) is dict:
                    value = V.dict_value({k: V.Const(v) for k, v in value.value.items()})
                if not (isinstance(value, V.Tup) and isinstance(value.kind, V.DictKind)):
                    raise self.error(value_node, f"`**{source_text(value_node)}` spreads a {V.kind_of(value)} into a dict")
                entries.update(zip(value.kind.keys, value.items))
                continue
            key = self._try_constant(key_node, env)
            if key is V.MISSING or type(key) not in (str, int):
                raise self.error(key_node, f"a dict key `{source_text(key_node)}` that is not a str or int known when the model is imported", "key the dict by constant strs or ints")
            entries[key] = value
        return V.dict_value(entries)

    def _runtime_index_into_known(self, expr: ast.Subscript, env, holder, key) -> V.EnvValue:
        """A list or tuple whose items are known here, read at a runtime index: on the host
        when the items are tensors, or Python scalars of one type (the host's `lst[k]` has
        Python's meaning: negative from the end, IndexError past it); else a run."""
        items = lists.items_of(holder)
        kinds = {lists.list_type_of_item(item) for item in items or ()}
        if len(kinds) != 1 or None in kinds:
            return self._apply(expr, env, host_expressions.known_values([expr.value], [holder]))
        return self._runtime_item(expr, lists.static_list(self, items, kinds.pop()), key)

    def _runtime_item(self, expr: ast.Subscript, holder: V.Dyn, key) -> V.EnvValue:
        """`holder[key]` with a runtime int `key`, read on the host."""
        index = self._materialize(key, "index")
        index = host_numpy.integer_item(self, index) or index  # (a numpy integer: through `__index__`)
        if index.type != V.INT:
            raise self.error(expr, f"indexing a list with {V.describe_type(index.type)}", "index it with an int")
        if not holder.example:
            raise RuntimeSize.of(self.error(
                expr, f"`{source_text(expr)}` of a list that is empty on the example path",
                "check DyCL's example inputs: the list must have items when the model is imported",
            ))
        example = lists.safe_item(holder.example, index.example)
        return self.builder.host_op(LIST_ITEM, [holder, index], lists.item_ir_type(holder), example)

    def host_Attribute(self, expr: ast.Attribute, env) -> V.EnvValue:
        value = self.expression(expr.value, env)
        if isinstance(value, V.Packed):
            return packed.read(self, expr, value, expr.attr)
        result = host_numpy.attribute(self, expr, value)
        if result is not None:
            return result
        return self._apply(expr, env, host_expressions.known_values([expr.value], [value]))

    def host_Tuple(self, expr, env) -> V.EnvValue:
        kind = "list" if isinstance(expr, ast.List) else "tuple"
        return V.Tup(tuple(self.expression(e, env) for e in expr.elts), kind)

    def host_IfExp(self, expr: ast.IfExp, env) -> V.EnvValue:
        """`a if cond else b`: a constant condition picks a branch; a runtime one becomes an
        `scf.if` whose regions compute only their own branch (as Python evaluates only one)."""
        test = host_builtins.truth(self, self.expression(expr.test, env), expr.test)
        if isinstance(test, V.Const):
            return self.expression(expr.body if test.value else expr.orelse, env)
        return self._conditional(
            expr, env, test,
            lambda scope: self.expression(expr.body, scope),
            lambda scope: self.expression(expr.orelse, scope),
            refinements=host_expressions.none_test_branches(expr.test, env),
        )

    def _conditional(self, expr, env, test: V.Dyn, then_fn, else_fn, truth_if_mixed: bool = False,
                     refinements: tuple[dict, dict] = ({}, {})) -> V.EnvValue:
        """The value `then_fn(scope)` or `else_fn(scope)` computes, chosen by the runtime bool
        `test`: an scf.if whose regions compute only their own branch, joined like an if.
        With truth_if_mixed (`a and b` of a bool and a tensor), values of different kinds are
        joined as their truth values: a `host_expressions.TruthValue`, which only a condition may use.
        `refinements` are what each branch knows of a value None on some paths (`is None`)."""
        flag = self.builder.to_i1(test)
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
                raise self.error(
                    expr, f"`{source_text(expr)}` changes `{changed[0]}` on one of its paths",
                    "write it as an `if` statement",
                )
            blocks.append(block)
        then_value, else_value = values
        mixed = truth_if_mixed and V.kind_of(then_value, detailed=True) != V.kind_of(else_value, detailed=True)
        if mixed:
            for k, block in enumerate(blocks):
                with ir.InsertionPoint(block):
                    values[k] = self._materialize(host_builtins.truth(self, values[k], expr), "truth value")
            then_value, else_value = values
        name = source_text(expr)
        saved, self._join_node = self._join_node, expr
        try:
            with ir.InsertionPoint(blocks[0]):
                then_leaves, structure = self._leaves_for_join(then_value, else_value, name)
            with ir.InsertionPoint(blocks[1]):
                else_leaves, _ = self._leaves_for_join(else_value, then_value, name)
            types = [self._join_type(a.type, b.type, name) for a, b in zip(then_leaves, else_leaves)]
        except FrontendError:
            draft.erase()
            raise
        finally:
            self._join_node = saved
        results = self._close_if(draft, blocks, (then_leaves, else_leaves), types)
        taken = then_leaves if test.example else else_leaves  # the example path's values
        leaves = [V.Dyn(result, t, leaf.example) for result, t, leaf in zip(results, types, taken)]
        if mixed:
            (leaf,) = leaves
            return host_expressions.TruthValue(leaf.value, leaf.type, leaf.example, source=name)
        return V.rebuild(structure, leaves)

    def refuse_truth_value(self, node, value) -> None:
        for leaf in V.leaves(value) if isinstance(value, (V.Tup, V.Dyn)) else ():
            if isinstance(leaf, host_expressions.TruthValue):
                raise self.error(
                    node, f"the value of `{leaf.source}` (one of its operands, a bool or a tensor depending on the path)",
                    "use it only as a condition, or write `bool(a) and bool(b)`",
                )

    def _apply(self, expr: ast.expr, env, known: dict | None = None) -> V.EnvValue:
        """Tensor math over sub-expressions that needed host handling: each operand slot (a
        direct child expression, a method call's receiver, a slice bound) is computed first (host
        ops or runs) and becomes an input of one run. `known` holds values already computed for
        some of these nodes, by id of the node (`host_expressions.known_values`)."""
        known = known or {}
        children = list(host_expressions.operand_slots(expr, env))
        local = {}
        replacements = {}
        for child in children:
            if not self._needs_host(child, env, set()):
                continue
            value = known.get(id(child))
            if value is None:
                value = self.expression(child, env)
            self.refuse_truth_value(child, value)
            name = f"{OPERAND_PREFIX}{fresh_id()}"
            local[name] = value
            replacements[id(child)] = name
        memo: dict = {}
        copied = copy.deepcopy(expr, memo)
        by_copy = {id(memo[key]): name for key, name in replacements.items()}
        rewritten = replace_nodes(copied, by_copy)
        scoped = {**env, **local}
        try:
            result = self.tensor_expression(ast.copy_location(rewritten, expr), scoped)
        except FrontendError as error:
            raise _quoting(error, rewritten, expr) from None
        for name in env:  # a run that mutates a tensor in place rebinds it (and its aliases)
            if scoped[name] is not env[name]:
                env[name] = scoped[name]
        return result


    host_List = host_Tuple

    def host_ListComp(self, expr: ast.ListComp, env) -> V.EnvValue:
        return host_builtins.host_list_comprehension(self, expr, env)

    def host_GeneratorExp(self, expr: ast.expr, env) -> V.EnvValue:
        return host_builtins.host_generator(self, expr, env)

    host_SetComp = host_DictComp = host_GeneratorExp

    # ----- errors ----------------------------------------------------------------------

    def internal_error(self, error: Exception) -> FrontendError:
        """An exception that is not a FrontendError: a DyCL bug, reported at the user's
        statement being compiled, never as a raw traceback."""
        source, stmt = self.current or (self.scope.source, self.scope.source.node)
        # (a statement the frontend wrote, a `FixLength`, has no text: its kind instead)
        text = (desugar.source_text(stmt).splitlines() or [type(stmt).__name__])[0][:60]
        if isinstance(error, NoHostTranslation):
            return source.error(stmt, *error.explained(text))
        detail = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
        failure = source.error(
            stmt, f"DyCL failed to compile `{text}` (internal {type(error).__name__}{': ' + detail if detail else ''})",
            "this is a bug in DyCL, not in the model: please report it; rewriting the statement "
            "in simpler steps may avoid it",
        )
        failure.detail = detail
        return failure

    def error(self, node, construct: str, hint: str = "") -> FrontendError:
        """Located at `node`, or at the `if` being joined when the problem is a join; the
        frontend's own names (an inlined helper's locals) as the user wrote them."""
        where = node if node is not None else self._join_node
        return self.scope.source.error(where, desugar.display_name(construct), desugar.display_name(hint))


def _quoted(stmt) -> str:
    """"`<the statement>`: " for a refusal's message (which must quote the user's statement at its line)."""
    return "" if stmt is None else f"`{runs.statement_text([stmt])}`: "


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


def _packs_sequences(fdef: ast.FunctionDef) -> bool:
    """A helper that packs sequences: their lengths may be runtime values, which only DyCL's
    lowering of packed sequences (packed.py) compiles, never one captured block."""
    return any(isinstance(n, ast.Call) and _called_name(n) in _PACKING for n in ast.walk(fdef))


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
    if isinstance(value, V.Tup) and value.kind == "tuple" and value.items:  # (`self.state = (h, c)`)
        return all(isinstance(i, V.Dyn) and V.is_tensor_type(i.type) for i in value.items)
    return isinstance(value, V.Const) and type(value.value) in (bool, int, float)


_PACKING = {"pack_padded_sequence", "pack_sequence"}
_COMPARISON_WORDS = {ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
BY_SIZE = "dycl.by_size"  # (the attribute of an scf.if the frontend made: a run picked by a runtime size, or a check eager makes)
_STATIC_SIZE_HINT = (
    "DyCL compiles sizes that runtime ints give, not sizes that tensor code computes from "
    "tensor values: compute the size in a statement of its own (`n = int(t.max())`, then "
    "`torch.zeros(b, n)`), or give the tensor a size known when the model is imported and "
    "mask what lies past the computed one"
)


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


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


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


def _quoting(error: FrontendError, rewritten: ast.expr, written: ast.expr) -> FrontendError:
    """`error` quoting the expression as the user wrote it (`torch.tensor(durations)`), not
    with the operands computed before its run (`torch.tensor(<runtime value>)`)."""
    shown, source = source_text(rewritten), source_text(written)
    if shown == source or shown not in error.construct:
        return error
    return type(error)(error.construct.replace(shown, source), error.hint, file=error.file, line=error.line)


def _located(expr: ast.expr) -> ast.expr:
    runs.fix_locations(expr, getattr(expr, "lineno", 1))
    return expr


__all__ = ["FunctionCompiler"]


def _plain_index(node: ast.expr, env) -> bool:
    """An index part the host may compute before knowing whether it stores: constants and
    names of Python scalars, in arithmetic and slices."""
    if isinstance(node, ast.Slice):
        return all(part is None or _plain_index(part, env) for part in (node.lower, node.upper, node.step))
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and (
            host_numpy.is_numpy(env.get(node.value.id)) or lists.is_list(env.get(node.value.id))):
        return _plain_index(node.slice, env)  # an item of a numpy array or a list (`order[0]`, `lengths[i]`)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and not (isinstance(env.get(sub.id), V.Const) or isinstance(env.get(sub.id), V.Dyn) and (
                not V.is_tensor_type(env[sub.id].type) or host_numpy.is_numpy(env[sub.id]) and not env[sub.id].type.shape)):
            return False
        if not isinstance(sub, (ast.Name, ast.Constant, ast.UnaryOp, ast.BinOp, ast.operator, ast.unaryop, ast.Load)):
            return False
    return True


def _reads_tensor_values(stmt: ast.stmt) -> bool:
    """Whether `stmt` turns tensor values into Python numbers (`t.tolist()`), which inside
    the run that computes them are data-dependent, and runtime ints after it."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "tolist" for n in ast.walk(stmt))


def _reads_beyond_passing(stmts, name: str) -> bool:
    """Whether the statements read `name` other than to pass it on whole: as the value (or
    an item of a tuple or list display) that an assignment binds or a `return` returns."""
    passed: set[int] = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Assign, ast.Return, ast.AnnAssign)) and node.value is not None:
                pending = [node.value]
                while pending:
                    value = pending.pop()
                    if isinstance(value, (ast.Tuple, ast.List)):
                        pending.extend(value.elts)
                    elif isinstance(value, ast.Starred):
                        pending.append(value.value)
                    elif isinstance(value, ast.Name):
                        passed.add(id(value))
    return any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) and id(node) not in passed
               for stmt in stmts for node in ast.walk(stmt))
