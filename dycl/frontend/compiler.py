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
from dataclasses import dataclass

import torch
import torch.utils._pytree as pytree
from torch_mlir import ir

from dycl.frontend import aliases, asserts, binding, callees, data_sizes, desugar, dispatch, host_builtins
from dycl.frontend import host_expressions, host_numpy, host_slices, host_statements, inlining, joins, lists
from dycl.frontend import loop_compiler, mutation, nodes, optional, packed, predicates, run_compiler, runs, sizes
from dycl.frontend import structure, unentered
from dycl.frontend import expressions as X
from dycl.frontend import values as V
from dycl.frontend.attributes import ModuleAttributes
from dycl.frontend.state import CallState, Widened
from dycl.frontend.build import HostBuilder, NoHostTranslation, erase_after
from dycl.frontend.capture import RunCapturer
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError, RuntimeSize
from dycl.frontend.liveness import live_before, names_read, written_in
from dycl.frontend.rewrite import SourceFunction, fresh_id, lower
from dycl.frontend.nodes import OPERAND_PREFIX, RETURN_VAR, replace_nodes
from dycl.dialects.torch_ops import LIST_ITEM, LIST_LENGTH
from dycl.frontend.inlining import SwitchScope
from dycl.frontend.joins import BY_SIZE  # noqa: F401 (tests import it from here)

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

    _hoist_test_call = inlining.hoist_test_call

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

    # ----- if and joins (joins.py) -----------------------------------------------------

    compile_if = joins.compile_if
    _materialize = joins.materialize
    _join_type = joins.join_type
    _cast = joins.cast
    runtime_check = joins.runtime_check
    select = joins.select
    _conditional = joins.conditional


    host_statement = host_statements.host_statement
    host_Expr = host_statements.host_Expr
    host_Assign = host_statements.host_Assign
    host_AugAssign = host_statements.host_AugAssign
    host_AnnAssign = host_statements.host_AnnAssign
    host_Delete = host_statements.host_Delete
    _list_value = host_statements.list_value
    _list_method = host_statements.list_method
    receiver_value = host_statements.receiver_value
    container_changes = host_statements.container_changes
    _refuse_identity_test = host_statements.refuse_identity_test
    _refuse_container_change = host_statements.refuse_container_change
    _runtime_append = host_statements.runtime_append


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

    # ----- calls of helpers DyCL compiles (inlining.py) --------------------------------

    _calls_compiled_helper = inlining.calls_compiled_helper
    _expand_call = inlining.expand_call
    _callee = inlining.callee


    compile_loop = loop_compiler.compile_loop

    # Unrolled when they iterate over import-time values (or use their index), `scf.for`
    # for `range(N)` with an unused index, `scf.for`/`scf.while` otherwise. Carried variables
    # reach a fixed point: the body is compiled with the types they have on entry, and again
    # with joined types when the end of the body disagrees (a tensor that grows becomes
    # `[1,?]`); constants that change in the body become carried IR values.

    # ----- runs (run_compiler.py), in-place changes (mutation.py) ----------------------

    _is_run_statement = run_compiler.is_run_statement
    _condition_into_run = run_compiler.condition_into_run
    _compile_run_or_split = run_compiler.compile_run_or_split
    compile_run = run_compiler.compile_run
    written_expression = run_compiler.written_expression
    tensor_expression = run_compiler.tensor_expression
    _scalars_as_tensors = run_compiler.scalars_as_tensors

    mutates_tensor = mutation.mutates_tensor
    compile_mutation_with_host_operands = mutation.compile_mutation_with_host_operands
    _rebind_mutated = mutation.rebind_mutated
    _path_dependent_alias = mutation.path_dependent_alias


    # ----- host expressions ------------------------------------------------------------

    _sliced_on_host = host_slices.sliced_on_host
    _store_on_host = host_slices.store_on_host

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


def _return_node(fdef: ast.FunctionDef) -> ast.AST:
    """The forward's `return` when it has one (where a bad result is written), else its `def`."""
    returns = [n for n in ast.walk(fdef) if isinstance(n, ast.Return)]
    return returns[0] if len(returns) == 1 else fdef


_COMPARISON_WORDS = {ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}


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


def _reads_tensor_values(stmt: ast.stmt) -> bool:
    """Whether `stmt` turns tensor values into Python numbers (`t.tolist()`), which inside
    the run that computes them are data-dependent, and runtime ints after it."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "tolist" for n in ast.walk(stmt))


