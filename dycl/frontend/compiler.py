"""Compile a forward's (rewritten) statements into the host function.

Walks each statement list with an environment of `values.Const/Dyn/Tup/UNDEF`, and hands
each construct to the module that owns it (each takes the compiler as its context):
- maximal runs of tensor statements are captured (`capture.py`) and called
  (`run_compiler.py`; what they change in place, `mutation.py`);
- host statements (Python scalars and lists that depend on tensor data) become scalar/list
  ops (`host_statements.py`; the expressions they need, `host_values.py`, `host_slices.py`);
- `if` on a runtime condition becomes `scf.if`; both branches are compiled on the same
  example values, and variables that differ are yielded with joined types (`joins.py`);
- loops over things known at import time are unrolled, `for range(N)` whose index is unused
  becomes `scf.for`, bounded `while` loops and loops that `break`/`return` become `scf.while`
  (`loop_compiler.py`);
- calls of helpers DyCL compiles (control flow, attributes forward assigns) are inlined
  (`inlining.py`).
"""

from __future__ import annotations

import ast
import builtins
import copy
from dataclasses import dataclass

import torch
import torch.utils._pytree as pytree
from torch_mlir import ir

from dycl.frontend import aliases, asserts, binding, callees, container_statements, data_sizes, deletes, desugar, dispatch, lists, nodes, optional, packed
from dycl.frontend import host_builtins, host_numpy, predicates, runs, sizes, structure, unentered
from dycl.frontend import host_slices, host_statements, host_values, inlining, joins, loop_compiler, mutation, run_compiler
from dycl.frontend import exceptions, nested_functions, pytree_values, randomness, tensor_lists
from dycl.frontend import expressions as X
from dycl.frontend import values as V
from dycl.frontend.attributes import ModuleAttributes
from dycl.frontend.build import HostBuilder, NoHostTranslation, erase_after
from dycl.frontend.capture import RunCapturer
from dycl.frontend.errors import FrontendError, RuntimeSize
from dycl.frontend.inlining import SwitchScope
from dycl.frontend.liveness import live_before, names_read, written_in
from dycl.frontend.nodes import RETURN_VAR
from dycl.frontend.rewrite import SourceFunction, fresh_id, lower
from dycl.frontend.state import CallState, Widened



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
    captured as runs. Each family of constructs is a module of its own whose functions take
    this compiler as their context (`joins`, `loop_compiler`, `inlining`, `run_compiler`,
    `mutation`, `host_statements`, `host_values`, `host_slices`; builtins and numpy functions
    are tables of handlers keyed by the function, `host_builtins`, `host_numpy`). The class
    binds a family's entry points and the functions other modules call as its methods
    (`compile_run = run_compiler.compile_run`): a family reaches another through them."""

    def __init__(self, model: torch.nn.Module, capturer: RunCapturer, state: CallState | None = None):
        self.model = model
        self.state = state  # the attributes forward keeps from one call to the next (state.py)
        self.state_record: list | None = None  # their arguments and results (func attribute `dycl.state`)
        self.capturer = capturer
        self.builder = HostBuilder(capturer.context)
        self.scope: _Scope | None = None
        self._join_node: ast.AST | None = None
        self.runtime_loop_depth = 0  # (a loop the pipeline unrolls may make shapes static again)
        self.sizes_at_run_time = False  # (see run_compiler._refuse_size_by_path)
        self._scopes: dict[str, _Scope] = {}
        # Memory that runs must not mutate (aliases.py): the weights, the caller's inputs.
        self.state_guard = aliases.StateGuard(model)
        self.memory_of_weights = self.state_guard.memory
        self.memory_of_inputs: dict[int, str] = {}
        self.current = None
        self.attributes = ModuleAttributes(keeps_state=state is not None)  # module attributes forward assigns
        self._length_chains: list[_LengthChain] = []
        # The runtime loops being compiled, innermost last: (their break and return flags,
        # the names read after them), for the joins of their bodies (see joins._join_if).
        self._loop_exits: list[tuple[frozenset[str], set[str]]] = []
        self.unentered = unentered.Loops()  # (runtime loops the example does not enter)
        self.optional_inputs = False  # (some input compiled for None and a value: optional.py)
        self.input_defaults: list = []  # (of the last inputs, which a call may leave out)
        self.paths_apart = 0  # (`if`s whose paths each compile the rest of their block: joins.py)

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
        self.input_defaults = parameters.trailing_defaults()
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
        deletes.check_deletes(source)
        nested_functions.prepare(source, statements)
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
            if exceptions.skipped(self, block, SwitchScope):  # (after a `raise`: exceptions.py)
                continue
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
        block.env[stmt.name] = value if isinstance(value, (V.Dyn, V.Tup, V.Maybe)) or value is V.UNDEF else V.Const(value)
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

    def visit_Raise(self, stmt: ast.Raise, block: Block) -> None:
        exceptions.compile_raise(self, stmt, block)

    def visit_Raised(self, stmt: exceptions.Raised, block: Block) -> None:
        exceptions.compile_raised(self, stmt, block)

    def visit_Carry(self, stmt: exceptions.Carry, block: Block) -> None:
        exceptions.compile_carry(self, stmt, block)

    def visit_Catch(self, stmt: exceptions.Catch, block: Block) -> None:
        exceptions.compile_catch(self, stmt, block)

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
        expanded = self._expand_call(stmt, env) or host_builtins.comprehension_as_loop(self, stmt, env)
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

    # ----- host statements (host_statements.py) ----------------------------------------

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
                if isinstance(sub.func, ast.Attribute) and sub.func.attr in X.SCALAR_METHODS or tensor_lists.reads_runtime_length_values(sub, env, written_in_run):
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
        value = randomness.evaluated(self, expr, lambda: self._eval_constant(expr, env))
        if value is V.MISSING:
            return V.MISSING
        if any(isinstance(leaf, torch.Tensor) for leaf in pytree.tree_leaves(value)):
            return V.MISSING
        if pytree_values.is_node(value):
            return V.MISSING  # (`DynamicCache()`: a run makes it, a value that runs change)
        return value

    def _calls_container_method(self, expr: ast.expr, env) -> bool:
        """Whether `expr` calls a method that changes a Python list, dict or set."""
        for node in ast.walk(expr):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in container_statements.CONTAINER_METHOD_NAMES:
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

        def run():
            value = eval(code, self.scope.namespace, local)
            iterators = (range, enumerate, zip, reversed, map, type({}.items()), type({}.keys()), type({}.values()))
            return list(value) if isinstance(value, iterators) else value

        value = randomness.evaluated(self, expr, run)
        return V.MISSING if isinstance(value, torch.Tensor) else value

    def _eval_constant(self, expr: ast.expr, env):
        local = {n: v.value for n, v in env.items() if isinstance(v, V.Const)}
        code = compile(ast.Expression(_located(expr)), self.scope.source.file, "eval")
        with torch.no_grad():
            return eval(code, self.scope.namespace, local)

    # ----- calls of helpers DyCL compiles (inlining.py) --------------------------------

    _calls_compiled_helper = inlining.calls_compiled_helper
    _expand_call = inlining.expand_call
    _callee = inlining.callee

    # ----- loops (loop_compiler.py) ----------------------------------------------------

    compile_loop = loop_compiler.compile_loop

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

    # ----- host expressions (host_values.py, host_slices.py) ---------------------------

    host_Call = host_values.host_Call
    _eager = host_values.eager
    host_Compare = host_values.host_Compare
    host_BinOp = host_values.host_BinOp
    host_UnaryOp = host_values.host_UnaryOp
    host_BoolOp = host_values.host_BoolOp
    host_Subscript = host_values.host_Subscript
    host_Dict = host_values.host_Dict
    host_Attribute = host_values.host_Attribute
    host_Tuple = host_values.host_Tuple
    host_IfExp = host_values.host_IfExp
    refuse_truth_value = host_values.refuse_truth_value
    host_ListComp = host_values.host_ListComp
    host_GeneratorExp = host_values.host_GeneratorExp
    host_List = host_Tuple
    host_SetComp = host_DictComp = host_GeneratorExp

    _sliced_on_host = host_slices.sliced_on_host
    _store_on_host = host_slices.store_on_host

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


def _located(expr: ast.expr) -> ast.expr:
    runs.fix_locations(expr, getattr(expr, "lineno", 1))
    return expr


__all__ = ["FunctionCompiler"]


def _reads_tensor_values(stmt: ast.stmt) -> bool:
    """Whether `stmt` turns tensor values into Python numbers (`t.tolist()`), which inside
    the run that computes them are data-dependent, and runtime ints after it."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "tolist" for n in ast.walk(stmt))


