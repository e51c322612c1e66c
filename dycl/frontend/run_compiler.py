"""Runs, captured tensor code (`runs.py` holds their helpers).

Maximal straight-line statement runs (and tensor sub-expressions), executed on
example values, captured with torch.export and called from the host function. Statements
that together need more sizes known only at run time than one export takes are split into
one run each (`runs.SplitRun`), and what torch.export cannot capture is explained in the
program's terms. Each function takes the compiler as its context.
"""

from __future__ import annotations

import ast
import copy
import warnings
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch_mlir import ir
from xdsl.ir import Attribute

from dycl.frontend import aliases, by_size, complex_values, data_sizes, exceptions, library_calls, lists, nodes, packed, pytree_values, randomness, runs
from dycl.frontend import values as V
from dycl.frontend.build import NoHostTranslation, RandomOpRefused, drop_unused_constants, erase_after
from dycl.frontend.capture import CapturedRun, SizeTest
from dycl.frontend.errors import DataSize, FrontendError, RuntimeSize
from dycl.frontend.export_rewrites import WeightMutation
from dycl.frontend.export_sizes import DataDependentShape, IntArithmetic, SpecializedInput
from dycl.frontend.liveness import live_before, names_mutated, names_read, written_in
from dycl.frontend.nodes import OPERAND_PREFIX
from dycl.frontend.state import changed_weight

_STATIC_SIZE_HINT = (
    "DyCL compiles sizes that runtime ints give, not sizes that tensor code computes from "
    "tensor values: compute the size in a statement of its own (`n = int(t.max())`, then "
    "`torch.zeros(b, n)`), or give the tensor a size known when the model is imported and "
    "mask what lies past the computed one"
)


def is_run_statement(c, stmt: ast.stmt, env, written_in_run: set[str]) -> bool:
    if isinstance(stmt, (exceptions.Carry, exceptions.Raised)):
        return False  # (flags the visitor sets)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return False  # docstring
    if isinstance(stmt, (ast.FunctionDef, ast.Lambda)):
        return True
    if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
        return False
    if isinstance(stmt, ast.Expr) and c._list_method(stmt.value, env) is not None:
        return False
    if next(c.container_changes(stmt, env), None) is not None:
        return False  # the host changes the list or refuses: never the example run
    if runs.changes_a_list_named(stmt, written_in_run):
        # `g = groups[0]` then `g.append(h)`: the list may be one that other names hold,
        # which the run would not return as changed: the host changes it for all of them
        return False
    if c._needs_host(stmt, env, written_in_run):
        return False
    if runs.stores_into_python_container(stmt, env):
        return False  # the host changes the list (container_statements.store) or refuses: never the example run
    if names_mutated(stmt):
        return True  # `t[m] = v` belongs with the code that made `t`, whatever `v` is
    value = stmt.value
    if value is None or runs.is_packing(value):
        return False
    reads = names_read(stmt) - written_in_run
    if not isinstance(stmt, ast.AugAssign) and all(c._is_constant_name(n, env) for n in reads):
        return c._try_constant(value, env) is V.MISSING
    return True


def condition_into_run(c, run: list, if_stmt: ast.If | ast.Assert, env, written: set[str]) -> ast.If | ast.Assert:
    """Compute a following `if`'s (`assert`'s) tensor condition in the same run (one export, not two)."""
    test = if_stmt.test
    if c._needs_host(test, env, written) or not (names_read(test) & written) or runs.assigned_sizes_only(run, names_read(test) & written):
        return if_stmt
    name = "__dycl_condition"  # one fixed name: identical runs share an export
    assign = ast.Assign(targets=[ast.Name(name, ast.Store())], value=test)
    ast.copy_location(assign, test)
    run.append(assign)
    if isinstance(if_stmt, ast.Assert):
        return nodes.written_as(ast.copy_location(ast.Assert(test=ast.Name(name, ast.Load()), msg=if_stmt.msg), if_stmt), if_stmt)
    merged = ast.If(test=ast.Name(name, ast.Load()), body=if_stmt.body, orelse=if_stmt.orelse)
    return ast.copy_location(merged, if_stmt)


def compile_run_or_split(c, stmts: list[ast.stmt], env: dict, live_after: set[str]) -> None:
    """One run of the statements, or, where together they compute with more sizes known
    only at run time than one run may take (`runs.SplitRun`), one run each."""
    ir_block = ir.InsertionPoint.current.block
    before, saved = len(ir_block.operations), dict(env)
    try:
        c.compile_run(stmts, env, live_after)
        return
    except (runs.SplitRun, DataSize, SizeTest) as failure:
        erase_after(ir_block, before)
        env.clear()
        env.update(saved)
        if isinstance(failure, DataSize) and len(stmts) == 1:  # (a size from the data: made on the host)
            data_sizes.compile_statement(c, stmts[0], env, live_after, failure)
            return
        if isinstance(failure, SizeTest) and len(stmts) == 1:
            c.host_statement(stmts[0], env)
            return
    for k, stmt in enumerate(stmts):
        after = live_before(stmts[k + 1 :], live_after)
        if len(stmts) > 1 and not is_run_statement(c, stmt, env, set()):
            # (`__dycl_condition = rows.size(0) > 0` once `rows = x[mask]` has a size
            # from the data: the host reads it)
            data_sizes.host_statement(c, stmt, env, after)
            continue
        compile_run_or_split(c, [stmt], env, after)


def compile_run(c, stmts: list[ast.stmt], env: dict, live_after: set[str]) -> None:
    inputs = sorted(n for n in live_before(stmts, set()) if n in env)
    # a name the run changes in place is an output only if it is a variable (not `torch`)
    bound = {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    outputs = sorted(n for n in written_in(stmts) & live_after if n in env or n in bound)
    returned = ast.Tuple([ast.Name(n, ast.Load()) for n in outputs], ast.Load())
    result = _run_function(c, stmts, inputs, returned)
    values = _call_run(c, result, stmts, {n: env[n] for n in inputs}, env, live_after)
    for name, value in zip(outputs, values.items if isinstance(values, V.Tup) else ()):
        env[name] = value


def written_expression(c, source: str, where: ast.AST, bindings: dict) -> V.EnvValue:
    """A tensor expression the frontend writes (`source`, on the values in `bindings`),
    captured as a run at `where`'s line."""
    return c.tensor_expression(nodes.parsed(source, where, mode="eval"), dict(bindings))


def tensor_expression(c, expr: ast.expr, env: dict) -> V.EnvValue:
    inputs = sorted(n for n in names_read(expr) if n in env)
    function = _run_function(c, [], inputs, expr, line=expr.lineno)
    return _call_run(c, function, [expr], {n: env[n] for n in inputs}, env, None)


def _run_function(c, stmts, inputs, returned: ast.expr, line: int | None = None):
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
    namespace = dict(c.scope.namespace)
    namespace[runs.MaskedUpdate.HELPER] = runs.masked_update
    namespace[runs.MaskedUpdate.STORE] = runs.subscript_store
    namespace[runs.TensorOfRuntimeInts.HELPER] = runs.tensor_of_ints
    namespace.update(packed.RUN_HELPERS)
    exec(compile(module, c.scope.source.file, "exec"), namespace)
    function = namespace.pop("forward")
    if "forward" in c.scope.namespace:  # a global of that name, which the run may read
        namespace["forward"] = c.scope.namespace["forward"]
    # What the run returns is part of what it is: the same statements with another set
    # of live outputs (the last copy of an unrolled loop) must not share an export.
    function.dycl_code = ast.dump(module)
    return function


def _call_run(c, function, stmts, inputs: dict[str, V.EnvValue], env: dict, live) -> V.EnvValue:
    """Run eagerly for examples, capture, call; the returned structure holds Dyn leaves.

    What the run mutates in place is rebound in `env`, with every alias of it that is in
    `live` (None: every variable), or refused (aliases.py).

    A runtime int enters as a symbolic int (an index or a size: `gate[0, k]`, `x[:, :n]`),
    exported at 2 where its example is 0 or 1, or as a 0-d tensor where export uses it in
    tensor math (`h * k`) or freezes it otherwise (`runs.capture_retrying`)."""
    return runs.capture_retrying(lambda as_tensors, at_two: _capture_run(c, function, stmts, dict(inputs), env, live, as_tensors, at_two))


def _capture_run(c, function, stmts, inputs, env, live, ints_as_tensors: bool, at_two=frozenset()) -> V.EnvValue:
    lines = sorted({s.lineno for s in stmts})
    names = list(inputs)
    for name in names:
        held = V.maybes(inputs[name])
        if held:
            shown = next((c.attributes.describe(n) for n, v in env.items() if any(v is m for m in held)
                          and (not n.startswith("__") or c.attributes.is_variable(n))), name)
            raise c.error(
                stmts[0], f"`{shown}` is None on some paths and a tensor or number on others, and `{runs.statement_text(stmts)}` computes with it",
                f"test `{shown} is None` first (`if {shown} is not None:`), or give it the same kind on every path",
            )
    for name in names:
        if any(isinstance(leaf, V.Packed) for leaf in V.leaves(inputs[name])):
            raise packed.refuse(c, stmts[0], "computes with")
    originals = dict(inputs)
    converted: dict = {}  # (one value held by two inputs stays one value)
    for name in names:
        inputs[name] = scalars_as_tensors(c, inputs[name], ints_as_tensors, converted)
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
            raise c.error(
                stmts[0],
                f"tensor code on {V.describe_type(leaf.type)} whose length is known only at runtime",
                "read its items with an int index (`lst[i]`, `lst[-1]`) or its length, or keep a tensor "
                "that grows with it (`torch.cat`) for tensor code",
            )
        if not (V.is_tensor_type(leaf.type) or leaf.type == V.INT):
            raise c.error(
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
    library_objects = pytree_values.snapshot(made.values())  # (a cache the run may change)
    versions = [leaf.example._version if isinstance(leaf.example, torch.Tensor) else None for leaf in flat_inputs]
    called: list[torch.nn.Module] | None = []
    assigned = {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    with c.attributes.poisoned(env, assigned) as poisons:
        c.state_guard.snapshot()
        globals_guard = aliases.GlobalsGuard(c.scope.namespace)
        try:
            with torch.no_grad(), warnings.catch_warnings(), randomness.watch() as draws:
                warnings.simplefilter("ignore")
                try:
                    with runs.record_calls(c.model, called):
                        eager = function(c.model, **examples)
                except Exception:
                    # torch.cond/while_loop compile their branches with dynamo, which a
                    # forward hook breaks: run plainly and export the whole model.
                    called = None
                    eager = function(c.model, **examples)
        except FrontendError:
            raise
        except Exception as error:
            _refuse_attribute_read(c, stmts, poisons)
            if isinstance(error, TypeError) and "slice indices" in str(error):
                # a runtime int entered as a tensor and met a slice: it is a size
                raise c.error(
                    stmts[0], f"`{runs.statement_text(stmts)}` slices with a runtime Python int (`x[:k]`) "
                    "that it also uses as a number in tensor math",
                    "slice in a statement of its own (`y = x[:k]`), then compute with `y`",
                ) from None
            raise c.unentered.refusal(c.error(stmts[0], f"running lines {lines} on example values failed: {type(error).__name__}: {error}")) from None
        finally:
            _check_model_unchanged(c, stmts, examples)
        _refuse_attribute_read(c, stmts, poisons)
    changed_global = globals_guard.changed()
    if changed_global is not None:
        culprit = next((s for s in stmts if any(isinstance(n, ast.Name) and n.id == changed_global for n in ast.walk(s))), stmts[0])
        raise c.error(
            culprit, f"{runs.quoted(culprit)}a change of `{changed_global}`, a container of the module's globals "
            "(it outlives the call)",
            "state that outlives the call must be the module's: keep it on the module "
            "(`self.history`), or keep a local list and return it",
        )
    if draws.python:  # (export would freeze the example's draw into the sub-DNN)
        culprit = next((s for s in stmts if randomness.python_draw(s, c.scope.namespace)), stmts[0])
        raise randomness.refusal(c, culprit)
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
        dynamic = [_dynamic_dims(leaf.type) for leaf in flat_inputs]
        try:
            cache_key = (
                function.dycl_code,
                (
                    tuple(
                        (name, tuple((l.type, slots[l.value]) for l in V.leaves(value) if isinstance(l, V.Dyn)),
                         c.capturer.cache.signature(runs.substitute(value, None)) if not V.has_dyn(value) else None)
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
                key = (cache_key[0], (cache_key[1], tuple(sorted(sizes.items(), key=str)), tuple(sorted(resized.items(), key=str)),
                                      tuple(sorted(tied.items()))))
                return c.capturer.capture(run, fixed, dims, called, key, frozenset(k for k, d in sizes if d is None),
                                          {where: tie for where, tie in tied.items() if where not in sizes})

            tied: dict[tuple[int, int], int] = {}  # (see by_size.ties_by_example)

            c.capturer.state_values = c.state.buffer_values(c.attributes, env) if c.state else {}
            try:
                captured = runs.capture_past_frozen_sizes(c.capturer, run, examples, dynamic, called, cache_key)
            except Exception as error:
                if not (any(dynamic) and by_size.needs_example_sizes(error)):
                    raise
                # (a view that fixes a runtime size: `freqs[start : start + n].view(1, n, 1, d)`)
                at_example = runs.distinct_examples(flat_inputs, at_two)
                captured, values = by_size.at_example_sizes(
                    c, stmts, lambda: c.capturer.capture(run, at_example, [[] for _ in at_example], called),
                    flat_inputs, dynamic, names, error)
            else:
                _refuse_size_by_path(c, stmts, input_specs, flat_inputs, captured)
                untied, ties = captured, by_size.ties_by_example(captured, flat_inputs, names)
                if ties:
                    try:
                        key = (cache_key[0], (cache_key[1], tuple(sorted(ties.items()))))
                        captured = runs.capture_past_frozen_sizes(c.capturer, run, examples, dynamic, called, key, tied=ties)
                        tied.update(ties)
                    except Exception:
                        pass  # (refused below for its many sizes)
                captured, values = by_size.splice(c, stmts, captured, variant, flat_inputs, names, tied, untied)
        except (FrontendError, runs.SplitRun, SizeTest):
            raise
        except DataDependentShape as error:
            refusal = _data_dependent_shape_error(c, stmts, error)
            raise (DataSize.of(refusal) if error.from_mask else refusal) from None
        except (SpecializedInput, IntArithmetic) as error:
            if not ints_as_tensors:
                raise runs.retry_with_ints(error, flat_inputs, at_two) from None
            if len(stmts) > 1:
                raise runs.SplitRun() from None  # (refused at the statement that needs the constant)
            raise _specialized_int(c, stmts[0], runs.bound_name(inputs, flat_inputs[error.position])) from None
        except WeightMutation as error:  # (a buffer: state kept across calls, compiled again with it as a slot)
            raise changed_weight(c.state, error.name, c.error(
                stmts[0], f"{runs.quoted(stmts[0])}in-place change of the weight `{error.name}` in forward",
                "module state must not change in forward: compute a new tensor instead "
                "(`w = self.w * 2`, not `self.w.mul_(2)`)",
            )) from None
        except Exception as error:
            raise _capture_error(c, stmts, lines, error, flat_inputs, ints_as_tensors, at_two) from None
        mutated = len(captured.mutated_inputs)
        memory = [aliases.storage_of(leaf.example) for leaf in flat_inputs]
        seen = {memory[k] for k in captured.mutated_inputs}
        for leaf, version, place in zip(flat_inputs, versions, memory):
            # The example run changed this input in place, and export did not say so:
            # never drop a mutation, whatever way it was written.
            if version is not None and leaf.example._version != version and place not in seen:
                raise c.error(
                    stmts[0], f"an in-place change of `{runs.bound_name(inputs, leaf)}` that DyCL cannot follow",
                    "compute a new tensor instead (`t = t * 2` rather than an in-place method)",
                )
        for k in captured.mutated_inputs:
            if memory[k] is not None and memory.count(memory[k]) > 1:
                # another input of this run shares the memory, but export saw two values
                raise c._path_dependent_alias(stmts[0], runs.bound_name(inputs, flat_inputs[k]))
        values = c.state.rebind_buffers(c, env, live, stmts[0], captured, values) if c.state else values
        mutations = [
            (flat_inputs[k], V.Dyn(value, type_, flat_inputs[k].example))
            for k, value, type_ in zip(captured.mutated_inputs, values, captured.mutated_types)
        ]
        c._rebind_mutated(env, live, stmts[0], mutations)
        # a result that is the very memory of an input the run changed (`hx[idx], cx[idx] =
        # ...` returns both names of one tensor) is its new value: one IR value, so that the
        # names bound to it stay one tensor (a loop carries them as one)
        new_memory = {aliases.geometry(old.example): new for old, new in mutations if aliases.storage_of(old.example) is not None}
        values = values[mutated:]
        by_runtime_int = any(isinstance(l, V.Dyn) and l.type == V.INT for v in originals.values() for l in V.leaves(v))
        placed = aliases.placed_by_runtime_int(flat_inputs) if by_runtime_int else lambda example: frozenset()
        for k, value, type_, constant in zip(exported, values, captured.result_types, captured.constant):
            leaf = out_leaves[k]
            is_scalar = not isinstance(leaf, torch.Tensor)
            if is_scalar and constant:
                produced[k] = V.Const(leaf)
            elif not is_scalar and aliases.storage_of(leaf) is not None and aliases.geometry(leaf) in new_memory:
                produced[k] = new_memory[aliases.geometry(leaf)]
            else:
                produced[k] = V.Dyn(value, type_, leaf, placed(leaf))
        drop_unused_constants([v for k, v in zip(exported, values) if isinstance(produced[k], V.Const)])
    known = {id(l.value) for _, value in input_specs for l in V.leaves(value) if isinstance(l, V.Const)}
    if flat_inputs and any(k not in produced and runs.picked_object(leaf) and id(leaf) not in known for k, leaf in enumerate(out_leaves)):
        # `self.experts[k]` with a runtime k: the example run picked one module, which
        # would become a constant (every input would get the example's expert); a module
        # the run got as a constant is no choice (`self`, kept by `m.masked_fill_(self.a)`)
        raise c.error(
            stmts[0], f"`{runs.statement_text(stmts)}` picks a module or function by a runtime value",
            "choose with an `if`/`elif` on the value (`if k == 0: y = self.experts[0](x) ...`), "
            "or run every candidate and select the result (`torch.stack([e(x) for e in "
            "self.experts])[k]`)",
        )
    if flat_inputs:  # (`m = Categorical(probs)` read by a later statement)
        runs.refuse_frozen_objects(c, stmts, [l for k, l in enumerate(out_leaves) if k not in produced and id(l) not in known])
    structured = [produced.get(k, V.Const(leaf)) for k, leaf in enumerate(out_leaves)]
    try:
        renewed: list[tuple[V.Tup, V.Tup]] = []
        result = runs.to_env_value(pytree_values.structured(out_spec, structured), c.builder, eager, dict(input_lists), input_lists, renewed)
        for old, new in renewed:  # an input list the run returns: its holders see the run's version
            lists.replace_everywhere(env, old, new)
        changed = pytree_values.changed(library_objects, {id(old) for old, _ in renewed}, input_lists)
        kept = sorted(set(live) - written_in(stmts)) if changed is not None else []  # (names the run binds anew are its results)
        holders = [n for n in kept if pytree_values.holds(env.get(n), changed)]
        if holders:  # (read again later, it would be the version from before the run)
            name = holders[0]
            raise c.error(stmts[0], f"`{runs.statement_text(stmts).splitlines()[0]}` changes `{name}` (a "
                          f"{changed.kind}) without returning it", "use the object the call returns "
                          "(`past_key_values = outputs.past_key_values`) in the same statement's results")
        return result
    except FrontendError as error:  # located here: the statement that built the value
        raise c.error(stmts[0], error.construct, error.hint) from None


def _refuse_size_by_path(c, stmts, input_specs, flat_inputs, captured: CapturedRun) -> None:
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
            if c.capturer.only_returns(captured.func_name, k) and not any(_reads_beyond_passing(stmts, n) for n in names):
                continue
        elif c.runtime_loop_depth or not c.capturer.computes_with(captured.func_name, k) or c.sizes_at_run_time:
            continue
        raise RuntimeSize.of(_shape_by_path_error(c, stmts, names[0], leaf))


def _check_model_unchanged(c, stmts, examples: dict) -> None:
    """Running a run on example values must not have changed the model (restored if so);
    the statement that did it is found by running the run once more, one statement at a
    time (only on this error path)."""
    name = c.state_guard.changed()
    if name is None:
        return
    culprit = stmts[0]
    if len(stmts) > 1 and isinstance(stmts[0], ast.stmt):
        for k, stmt in enumerate(stmts):
            probe = _run_function(c, stmts[: k + 1], sorted(examples), ast.Constant(None))
            c.state_guard.snapshot()
            try:
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    probe(c.model, **examples)
            except Exception:
                pass
            if c.state_guard.changed() is not None:
                culprit = stmt
                break
    raise changed_weight(c.state, name.removeprefix("self."), c.error(
        culprit, f"{runs.quoted(culprit)}a change of the module's state `{name}` in forward (it outlives the call)",
        "module state must not change in forward: return the value (or keep a local "
        "list) instead, and compute new tensors rather than changing weights in place",
    ))


def _shape_by_path_error(c, stmts, name: str, value: V.Dyn) -> FrontendError:
    """Tensor math on a value whose shape differs between paths (a variable assigned
    tensors of two shapes, the stack of a list whose length depends on the path). Only a
    rank that differs is final (`_refuse_size_by_path`): sizes compile as runtime dims."""
    what = ("a tensor whose shape depends on the path taken" if name.startswith(OPERAND_PREFIX)
            else f"`{name}`, {V.describe_type(value.type)}")
    return c.error(
        stmts[0], f"`{runs.statement_text(stmts)}` computes with {what}",
        "give it one rank on every path (reshape it to the same number of dims in each branch), "
        "or do the computation inside each branch",
    )


def scalars_as_tensors(c, value: V.EnvValue, ints_as_tensors: bool, converted: dict) -> V.EnvValue:
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
        items = tuple(scalars_as_tensors(c, i, ints_as_tensors, converted) for i in value.items)
        if any(a is not b for a, b in zip(items, value.items)):
            result = V.Tup(items, value.kind)
    elif isinstance(value, V.Dyn) and (value.type in (V.FLOAT, V.BOOL) or value.type == V.INT and ints_as_tensors):
        dtype = {V.FLOAT: torch.float64, V.BOOL: torch.bool, V.INT: torch.int64}[value.type]
        example = torch.tensor(value.example, dtype=dtype)
        result = c.builder.host_op("torch.prim.NumToTensor.Scalar", [value], V.type_of_example(example), example)
    converted[id(value)] = result
    return result


def _dynamic_dims(type_: Attribute) -> list[int]:
    shape = type_.shape if V.is_tensor_type(type_) else None
    return [k for k, d in enumerate(shape) if d is None] if shape else []


def _capture_error(c, stmts, lines, error, flat_inputs=(), ints_as_tensors=True, at_two=()) -> FrontendError:
    """What torch.export could not capture, in Python terms (its own message stays in
    the error's `detail`, not in what the user reads first)."""
    if at_two:  # (an int exported at 2 where the program allows no 2, `x[0, k]` of a row of 2)
        raise runs.IntsAsTensors()
    if isinstance(error, RandomOpRefused) and len(stmts) > 1:
        raise runs.SplitRun()  # (one run per statement: refused at the one that draws)
    if isinstance(error, NoHostTranslation):  # (from `splice`)
        return c.error(stmts[0], *error.explained(runs.statement_text(stmts).splitlines()[0]))
    if isinstance(error, complex_values.ComplexOpRefused):  # (at the statement that computes it)
        lines = [line for file, line in error.frames if file == c.scope.source.file]
        at = next((s for line in reversed(lines) for s in stmts if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if at is None and len(stmts) > 1:
            raise runs.SplitRun()
        at = at or stmts[0]
        return c.error(at, *error.explained(runs.statement_text([at]).splitlines()[0]))
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if "Constraints violated" in text or "specialized integer from data-dependent" in text:
        # a runtime int used where the graph needs a constant (a size, an index it reads)
        if not ints_as_tensors and any(l.type == V.INT for l in flat_inputs):
            raise runs.IntsAsTensors()
        if len(stmts) > 1:
            raise runs.SplitRun()  # (one run per statement: refused at the one that needs it)
        return _specialized_int(c, stmts[0])
    source = runs.statement_text(stmts)
    in_library = library_calls.refusal_in_library(error, source.splitlines()[0])
    if in_library is not None:  # (transformers' own line: the user's code is not where it fails)
        in_library.detail = text
        return in_library
    packing = next((s for s in stmts for n in ast.walk(s) if isinstance(n, ast.Call) and packed.called_name(n) in packed.PACKING), None)
    if packing is not None:  # (with lengths known here, the run would have been captured)
        failure = c.error(
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
        failure = c.error(
            stmts[0], f"`{source}` indexes a tensor with a runtime Python int that is negative "
            "on the example path (`x[0, k]` with `k < 0`): DyCL cannot capture both signs in one block",
            "make the position non-negative where it is computed (`k = k + n if k < 0 else k` "
            "for a dimension of size n), or index with a tensor (`x.index_select(1, idx)`)",
        )
        failure.detail = text
        return failure
    if "conflicts between user-specified ranges" in text or "specialized" in text:
        failure = c.error(
            stmts[0], f"`{source}` needs a tensor whose size is known only at run time (it depends "
            "on the path, or on a runtime int) to have one particular size",
            "give the tensors it combines the same size on every path (pad or slice them to a "
            "constant size), or do the computation inside each branch",
        )
        failure = RuntimeSize.of(failure)
    elif "data-dependent" in text.lower() or "guard" in text.lower():
        failure = c.error(
            stmts[0], f"`{source}` uses a tensor's value as a Python value (a condition, an "
            "index or a size) inside code that DyCL captures as one block",
            "if it is a condition in a helper or a submodule, call that from forward "
            "(`x = self.helper(x)`, `x = self.block(x)`) so that DyCL compiles the branch, or "
            "use torch.cond; if it is an index or a size, keep it a tensor (masks, "
            "`index_select`, `gather`)",
        )
        if any(data_sizes.makes_data_sizes(s) for s in stmts):  # (`nz.tolist()` of `nz = m.nonzero()`: made on the host first)
            failure = DataSize.of(failure)
    else:
        if len(stmts) > 1 and "used as indices must be" not in text:
            raise runs.SplitRun()  # (one run per statement: refused at the one export fails on)
        failure = c.error(
            stmts[0], f"`{source}` cannot be captured as a tensor program "
            f"(torch.export raised {type(error).__name__})",
            "rewrite it with torch operations on tensors; Python-level work on tensor "
            "values belongs in forward, where DyCL compiles it",
        )
        if "used as indices must be" in text:  # (a uint8 mask: export takes none; data_sizes.py does)
            failure = DataSize.of(failure)
    failure.detail = text
    return failure


def _data_dependent_shape_error(c, stmts, error: DataDependentShape) -> FrontendError:
    """A tensor whose size export could only name by a symbol of the data, at the
    statement that made it (the innermost frame of the user's file among the run's)."""
    lines = [line for file, line in error.frames if file == c.scope.source.file]
    at = next((s for line in reversed(lines) for s in stmts if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
    source = runs.statement_text([at] if at is not None else stmts)
    if error.op == "aten.topk.default":  # (its values alone are lowered: export_rewrites.topk_of_a_runtime_k)
        return c.error(
            at or stmts[0], f"`{source}` reads the indices of `topk` of a `k` known only at run time, "
            "whose order of equal values is topk's own (torch leaves it unspecified)",
            "read only its values (`values, _ = x.topk(k)`: the first k of a descending sort), or take "
            "`topk` of a constant k and slice its values and indices (`x.topk(K)`, then `[:k]`)",
        )
    if error.from_mask:
        return c.error(
            at or stmts[0], f"`{source}` makes a tensor whose size depends on the data in a way "
            "DyCL does not lower (`torch.unique_consecutive`, a mask where DyCL cannot place its positions)",
            "DyCL makes such sizes on the host for `nonzero`, `torch.where(mask)`, `masked_select`, `torch.unique`, "
            "`repeat_interleave` and boolean masks in an index (`x[mask]`, `x[mask] = v`); otherwise keep the full shape "
            "and select with `torch.where(mask, a, b)` or multiply by the mask (`(x * mask).sum()`)",
        )
    if error.op == "aten.select.int":  # (`t[i]` with `i` a 0-d tensor: its position, read by `.item()`)
        return c.error(
            at or stmts[0], f"`{source}` reads at a position that a 0-d tensor holds (`t[i]` where `i` is a tensor), "
            "a read of a view that DyCL does not lower yet (a store there, `t[i] = v`, compiles)",
            "index with a Python int made from it (`t[int(i)]`: a runtime int), or select a copy "
            "(`t.index_select(0, i.view(1))[0]`)",
        )
    return c.error(
        at or stmts[0], f"`{source}` makes a tensor whose size is a number computed from tensor "
        "values (`.tolist()`, `.item()`, `int(t)`)",
        _STATIC_SIZE_HINT,
    )


def _refuse_attribute_read(c, stmts, poisons) -> None:
    """User code inside the run used a module attribute that this call assigned: running
    as one captured block, it would read the module's value instead of the call's."""
    touched = [p for p in poisons if p.touched]
    if touched:
        raise c.error(
            stmts[0], f"`{runs.statement_text(stmts)}` reads `{touched[0].text}` inside code that DyCL runs as one "
            "captured block (a function or helper it does not compile), after forward assigned it",
            f"read `{touched[0].text}` in forward or in a helper called as its own statement "
            "(`y = self.helper(x)`), which DyCL compiles, and pass the value on as an argument",
        )


def _specialized_int(c, stmt, name: str | None = None) -> FrontendError:
    what = f"`{name}`" if name and not name.startswith("operand") else "a runtime Python int"
    return c.error(
        stmt, f"{what} is used where the captured tensor code needs a constant (an index or a "
        "size); export would freeze it to its example value",
        "index with a 1-element index tensor instead (`y[0, idx] = v` with "
        "`idx = t.argmax().reshape(1)`, or `y.index_select(dim, idx)`), keeping the value a "
        "tensor rather than calling int() or .item() on it",
    )


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
