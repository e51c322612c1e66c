"""Runs: maximal straight-line statement runs (and tensor sub-expressions), executed on
example values, captured with torch.export and called from the host function.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import operator
import warnings
from typing import Any

import torch
import torch.utils._pytree as pytree

from xdsl.ir import Attribute
from dycl.frontend import aliases, lists, nodes
from dycl.frontend.nodes import OPERAND_PREFIX, replace_nodes
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.capture import DataDependentShape, IntArithmetic, SpecializedInput, WeightMutation
from dycl.frontend.errors import FrontendError, RuntimeSize
from dycl.frontend.liveness import live_before, names_mutated, names_read, written_in
from dycl.frontend.rewrite import fresh_id


class RunCompiler:
    """Mixin of FunctionCompiler: what becomes a run, and how a run is captured and called."""

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
        if _changes_a_list_named(stmt, written_in_run):
            # `g = groups[0]` then `g.append(h)`: the list may be one that other names hold,
            # which the run would not return as changed: the host changes it for all of them
            return False
        if self._needs_host(stmt, env, written_in_run):
            return False
        if _stores_into_python_container(stmt, env):
            return False  # the host changes the list (lists.store) or refuses: never the example run
        if names_mutated(stmt):
            return True  # `t[m] = v` belongs with the code that made `t`, whatever `v` is
        value = stmt.value
        if value is None or _is_packing(value):
            return False
        reads = names_read(stmt) - written_in_run
        if not isinstance(stmt, ast.AugAssign) and all(self._is_constant_name(n, env) for n in reads):
            return self._try_constant(value, env) is V.MISSING
        return True

    def _condition_into_run(self, run: list, if_stmt: ast.If, env, written: set[str]) -> ast.If:
        """Compute a following `if`'s tensor condition in the same run (one export, not two)."""
        test = if_stmt.test
        if self._needs_host(test, env, written) or not (names_read(test) & written):
            return if_stmt
        name = "__dycl_condition"  # one fixed name: identical runs share an export
        assign = ast.Assign(targets=[ast.Name(name, ast.Store())], value=test)
        ast.copy_location(assign, test)
        run.append(assign)
        merged = ast.If(test=ast.Name(name, ast.Load()), body=if_stmt.body, orelse=if_stmt.orelse)
        return ast.copy_location(merged, if_stmt)

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
        return any(_is_tensor_value(env.get(name)) for name in mutated)

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
        body = [_MaskedUpdate().visit(_DetachIsIdentity().visit(copy.deepcopy(s))) for s in [*stmts, ret]]
        fdef = ast.FunctionDef(name="__dycl_run", args=args, body=body, decorator_list=[], type_params=[])
        module = ast.Module(body=[fdef], type_ignores=[])
        fix_locations(module, line)
        namespace = dict(self.scope.namespace)
        namespace[_MaskedUpdate.HELPER] = masked_update
        namespace[_MaskedUpdate.STORE] = subscript_store
        exec(compile(module, self.scope.source.file, "exec"), namespace)
        function = namespace["__dycl_run"]
        # What the run returns is part of what it is: the same statements with another set
        # of live outputs (the last copy of an unrolled loop) must not share an export.
        function.dycl_code = ast.dump(module)
        return function

    def _call_run(self, function, stmts, inputs: dict[str, V.EnvValue], env: dict, live) -> V.EnvValue:
        """Run eagerly for examples, capture, call; the returned structure holds Dyn leaves.

        What the run mutates in place is rebound in `env`, with every alias of it that is in
        `live` (None: every variable), or refused (aliases.py).

        A runtime int enters as a symbolic int (an index or a size: `gate[0, k]`, `x[:, :n]`);
        if export uses it as a number in tensor math (`h * k`) or freezes it, the run is
        captured again with the int as a 0-d tensor."""
        try:
            return self._capture_run(function, stmts, dict(inputs), env, live, ints_as_tensors=False)
        except _IntsAsTensors:
            return self._capture_run(function, stmts, dict(inputs), env, live, ints_as_tensors=True)

    def _capture_run(self, function, stmts, inputs, env, live, ints_as_tensors: bool) -> V.EnvValue:
        lines = sorted({s.lineno for s in stmts})
        names = list(inputs)
        for name in names:
            held = V.maybes(inputs[name])
            if held:
                shown = next((n for n, v in env.items() if any(v is m for m in held) and not n.startswith("__")), name)
                raise self.error(
                    stmts[0], f"`{shown}` is None on some paths and a tensor or number on others, and `{_statement_text(stmts)}` computes with it",
                    f"test `{shown} is None` first (`if {shown} is not None:`), or give it the same kind on every path",
                )
        originals = dict(inputs)
        for name in names:
            inputs[name] = self._scalars_as_tensors(inputs[name], ints_as_tensors)
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
            return {name: _substitute(value, lambda leaf: flat[slots[leaf.value]]) for name, value in input_specs}

        input_lists: dict[int, V.Tup] = {}  # (the example run's input lists -> their values in env)
        made: dict[int, Any] = {}
        examples = {name: _example(value, made, input_lists) if value is not V.UNDEF else None for name, value in input_specs}
        in_env = {id(converted): original for name in names for converted, original in _tups_of(inputs[name], originals[name])}
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
                        with _record_calls(self.model, called):
                            eager = function(self.model, **examples)
                    except Exception:
                        # torch.cond/while_loop compile their branches with dynamo, which a
                        # forward hook breaks: run plainly and export the whole model.
                        called = None
                        eager = function(self.model, **examples)
            except FrontendError:
                raise
            except Exception as error:
                _refuse_attribute_read(self, stmts, poisons)
                if isinstance(error, TypeError) and "slice indices" in str(error):
                    # a runtime int entered as a tensor and met a slice: it is a size
                    raise self.error(
                        stmts[0], f"`{_statement_text(stmts)}` slices with a runtime Python int (`x[:k]`): "
                        "the slice's size would depend on the data",
                        "DyCL's sub-networks have static shapes: keep the full shape and mask the "
                        "rows past k (`x * (torch.arange(n) < k)`), or loop over a constant range",
                    ) from None
                raise self.error(stmts[0], f"running lines {lines} on example values failed: {type(error).__name__}: {error}") from None
            finally:
                self._check_model_unchanged(stmts, examples)
            _refuse_attribute_read(self, stmts, poisons)
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
                    tuple(
                        (name, tuple((l.type, slots[l.value]) for l in V.leaves(value) if isinstance(l, V.Dyn)),
                         self.capturer.cache.signature(_substitute(value, None)) if not V.has_dyn(value) else None)
                        for name, value in input_specs
                    ),
                )
                captured = self.capturer.capture(run, _distinct_examples(flat_inputs), dynamic, called, cache_key)
            except FrontendError:
                raise
            except DataDependentShape:
                raise self.error(
                    stmts[0], f"`{_statement_text(stmts)}` makes a tensor whose size depends on the "
                    "data (indexing with a boolean mask, `nonzero`, `masked_select`)",
                    "DyCL's sub-networks have static shapes: keep the full shape and select with "
                    "`torch.where(mask, a, b)` or multiply by the mask (`(x * mask).sum()`)",
                ) from None
            except (SpecializedInput, IntArithmetic) as error:
                if not ints_as_tensors:
                    raise _IntsAsTensors() from None
                raise _specialized_int(self, stmts[0], _bound_name(inputs, flat_inputs[error.position])) from None
            except WeightMutation as error:
                raise self.error(
                    stmts[0], f"in-place change of the weight `{error.name}` in forward",
                    "module state must not change in forward: compute a new tensor instead "
                    "(`w = self.w * 2`, not `self.w.mul_(2)`)",
                ) from None
            except Exception as error:
                raise self._capture_error(stmts, lines, error, flat_inputs, ints_as_tensors) from None
            computed = [k for k, leaf in enumerate(flat_inputs) if _shape_depends_on_path(leaf.type)
                        and self.capturer.computes_with(captured.func_name, k)]
            if computed and not self.runtime_loop_depth:
                # sub-networks have static shapes: such a tensor can only be returned or viewed
                # (in a loop body, it may be a carry that grows, static once dycl-unroll-loops ran)
                leaf = flat_inputs[computed[0]]
                name = next(n for n, value in input_specs if any(l is leaf for l in V.leaves(value)))
                raise RuntimeSize.of(self._shape_by_path_error(stmts, name, leaf))
            values = self.capturer.splice(captured.func_name, [l.value for l in flat_inputs])
            mutated = len(captured.mutated_inputs)
            memory = [aliases.storage_of(leaf.example) for leaf in flat_inputs]
            seen = {memory[k] for k in captured.mutated_inputs}
            for leaf, version, place in zip(flat_inputs, versions, memory):
                # The example run changed this input in place, and export did not say so:
                # never drop a mutation, whatever way it was written.
                if version is not None and leaf.example._version != version and place not in seen:
                    raise self.error(
                        stmts[0], f"an in-place change of `{_bound_name(inputs, leaf)}` that DyCL cannot follow",
                        "compute a new tensor instead (`t = t * 2` rather than an in-place method)",
                    )
            for k in captured.mutated_inputs:
                if memory[k] is not None and memory.count(memory[k]) > 1:
                    # another input of this run shares the memory, but export saw two values
                    raise _path_dependent_alias(self, stmts[0], _bound_name(inputs, flat_inputs[k]))
            self._rebind_mutated(
                env, live, stmts[0],
                [
                    (flat_inputs[k], V.Dyn(value, type_, flat_inputs[k].example))
                    for k, value, type_ in zip(captured.mutated_inputs, values, captured.mutated_types)
                ],
            )
            values = values[mutated:]
            for k, value, type_, constant in zip(exported, values, captured.result_types, captured.constant):
                leaf = out_leaves[k]
                is_scalar = not isinstance(leaf, torch.Tensor)
                produced[k] = V.Const(leaf) if is_scalar and constant else V.Dyn(value, type_, leaf)
        known = {id(l.value) for _, value in input_specs for l in V.leaves(value) if isinstance(l, V.Const)}
        if flat_inputs and any(k not in produced and _picked_object(leaf) and id(leaf) not in known for k, leaf in enumerate(out_leaves)):
            # `self.experts[k]` with a runtime k: the example run picked one module, which
            # would become a constant (every input would get the example's expert); a module
            # the run got as a constant is no choice (`self`, kept by `m.masked_fill_(self.a)`)
            raise self.error(
                stmts[0], f"`{_statement_text(stmts)}` picks a module or function by a runtime value",
                "choose with an `if`/`elif` on the value (`if k == 0: y = self.experts[0](x) ...`), "
                "or run every candidate and select the result (`torch.stack([e(x) for e in "
                "self.experts])[k]`)",
            )
        structured = [produced.get(k, V.Const(leaf)) for k, leaf in enumerate(out_leaves)]
        try:
            renewed: list[tuple[V.Tup, V.Tup]] = []
            result = _to_env_value(pytree.tree_unflatten(structured, out_spec), self.builder, eager, dict(input_lists), input_lists, renewed)
            for old, new in renewed:  # an input list the run returns: its holders see the run's version
                lists.replace_everywhere(env, old, new)
            return result
        except FrontendError as error:  # located here: the statement that built the value
            raise self.error(stmts[0], error.construct, error.hint) from None

    def _rebind_mutated(self, env: dict, live, stmt, mutations: list[tuple[V.Dyn, V.Dyn]]) -> None:
        """Give a tensor mutated in place its new value in every variable bound to it."""
        if not mutations:
            return
        new_values = {old.value: new for old, new in mutations}
        changed: dict[int, tuple[V.Dyn, V.Dyn]] = {}
        views: dict = {}  # (a variable's value, the new value) -> its new value
        for old, new in mutations:
            what = _bound_name(env, old)
            memory = aliases.storage_of(old.example)
            if memory in self.memory_of_inputs:
                raise self.error(
                    stmt, f"in-place change of the forward input `{self.memory_of_inputs[memory]}`"
                    + ("" if what == self.memory_of_inputs[memory] else f" (through `{what}`)"),
                    "PyTorch would change the caller's tensor, which a compiled model cannot: "
                    "mutate a copy (`x = x.clone()` first) if the caller does not read the change",
                )
            if memory in self.memory_of_weights:
                raise self.error(
                    stmt, f"in-place change of the weight `{self.memory_of_weights[memory]}` (through `{what}`)",
                    "module state must not change in forward: compute a new tensor instead",
                )
            if old.may_share:
                raise _path_dependent_alias(self, stmt, what)
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
            return V.Maybe(value.present, self._after_mutation(value.value, name, new_values, changed, stmt, strict, views))
        if not isinstance(value, V.Dyn):
            return value
        if value.value in new_values:
            return new_values[value.value]
        if not strict:
            memory = aliases.storage_of(value.example)
            exact = memory in changed and not value.may_share and aliases.geometry(value.example) == aliases.geometry(changed[memory][0].example)
            return changed[memory][1] if exact else value
        if value.may_share & changed.keys():
            raise _path_dependent_alias(self, stmt, name)
        if isinstance(value.example, list):
            if any(aliases.storage_of(item) in changed for item in value.example):
                raise self.error(
                    stmt, f"in-place change of a tensor that the list `{name}` also holds",
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
                stmt, f"in-place change of a view that `{name}` shares memory with (a different view of the same tensor)",
                "make the view and the in-place change in the same straight-line block, "
                f"or write the new `{name}` explicitly (e.g. `{name} = {name}.clone()` before taking the view)",
            )
        return seen

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
        raise self.error(
            culprit, f"a change of the module's state `{name}` in forward (it outlives the call)",
            "module state must not change in forward: return the value (or keep a local "
            "list) instead, and compute new tensors rather than changing weights in place",
        )

    def _shape_by_path_error(self, stmts, name: str, value: V.Dyn) -> FrontendError:
        """Tensor math on a value whose shape differs between paths (a variable assigned
        tensors of two shapes, or the stack of a list whose length depends on the path)."""
        if name.startswith(OPERAND_PREFIX):  # computed for this statement (`torch.stack(outs)`)
            return self.error(
                stmts[0], f"`{_statement_text(stmts)}` does tensor math on a tensor whose size depends on the "
                "path taken (e.g. the stack of a list that has another length on another path)",
                "DyCL's sub-networks have static shapes: reduce as you go (a running sum and a count), "
                "or pad to a fixed length and mask",
            )
        described = V.describe_type(value.type)
        return self.error(
            stmts[0], f"`{name}` holds {described} (its shape depends on the path taken), and "
            f"`{_statement_text(stmts)}` computes with it",
            "give it one shape on every path (reshape or pad it to the same shape in each branch), "
            "or do the computation inside each branch",
        )

    def _scalars_as_tensors(self, value: V.EnvValue, ints_as_tensors: bool) -> V.EnvValue:
        """A runtime float enters tensor math as a 0-d f64 tensor, a runtime bool as a 0-d
        bool tensor, a runtime int as a 0-d i64 tensor (same promotion as a Python scalar:
        0-d tensors never widen the other operand's dtype; what a tensor cannot do, such as
        `1 - b`, fails on the example and is refused). Inside a run they stay data: `h * l` and `y[0, k] = v` compile to
        tensor ops whatever the value is, where an int would be frozen to its example (an
        index) or left on the host (arithmetic) -- and a use as a size is refused by export."""
        if isinstance(value, V.Tup):
            return V.Tup(tuple(self._scalars_as_tensors(i, ints_as_tensors) for i in value.items), value.kind)
        if isinstance(value, V.Dyn) and value.type in (V.FLOAT, V.BOOL):
            example = torch.tensor(value.example, dtype=torch.float64 if value.type == V.FLOAT else torch.bool)
            return self.builder.host_op("torch.prim.NumToTensor.Scalar", [value], V.type_of_example(example), example)
        if isinstance(value, V.Dyn) and value.type == V.INT and ints_as_tensors:
            example = torch.tensor(value.example, dtype=torch.int64)
            return self.builder.host_op("torch.prim.NumToTensor.Scalar", [value], V.type_of_example(example), example)
        return value

    @staticmethod
    def _dynamic_dims(type_: Attribute) -> list[int]:
        shape = type_.shape if V.is_tensor_type(type_) else None
        return [k for k, d in enumerate(shape) if d is None] if shape else []

    def _capture_error(self, stmts, lines, error, flat_inputs=(), ints_as_tensors=True) -> FrontendError:
        """What torch.export could not capture, in Python terms (its own message stays in
        the error's `detail`, not in what the user reads first)."""
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if "Constraints violated" in text or "specialized integer from data-dependent" in text:
            # a runtime int used where the graph needs a constant (a size, an index it reads)
            if not ints_as_tensors and any(l.type == V.INT for l in flat_inputs):
                raise _IntsAsTensors()
            return _specialized_int(self, stmts[0])
        source = _statement_text(stmts)
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
                stmts[0], f"`{source}` does tensor math on a tensor whose size depends on runtime "
                "control flow (e.g. the stack of a list that grows until a `break`)",
                "DyCL's sub-networks have static shapes: reduce as you go (a running sum and a "
                "count), or pad to a fixed length and mask",
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
        failure.detail = text
        return failure


def _refuse_attribute_read(self, stmts, poisons) -> None:
    """User code inside the run used a module attribute that this call assigned: running
    as one captured block, it would read the module's value instead of the call's."""
    touched = [p for p in poisons if p.touched]
    if touched:
        raise self.error(
            stmts[0], f"`{_statement_text(stmts)}` reads `{touched[0].text}` inside code that DyCL runs as one "
            "captured block (a function or helper it does not compile), after forward assigned it",
            f"read `{touched[0].text}` in forward or in a helper called as its own statement "
            "(`y = self.helper(x)`), which DyCL compiles, and pass the value on as an argument",
        )


def _changes_a_list_named(stmt: ast.stmt, names: set[str]) -> bool:
    from dycl.frontend.liveness import LIST_MUTATORS

    value = stmt.value if isinstance(stmt, ast.Expr) else None
    return (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in LIST_MUTATORS
        and isinstance(value.func.value, ast.Name) and value.func.value.id in names
    )


def _shape_depends_on_path(type_) -> bool:
    return V.is_tensor_type(type_) and (type_.shape is None or None in type_.shape)


def _stores_into_python_container(stmt: ast.stmt, env) -> bool:
    """`lst[k] = v`, `lst[k] += v`, `d[key] = v` on a Python list or container the frontend
    holds (not a tensor): run as user code on the examples, the store would change the
    import-time value itself and leave nothing in the program."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    for target in targets:
        if not isinstance(target, ast.Subscript):
            continue
        direct = isinstance(target.value, ast.Name)  # `lst[k] = v`, not `lst[k][:, 0] = v`
        while isinstance(target, ast.Subscript):
            target = target.value
        if isinstance(target, ast.Name):
            value = env.get(target.id)
            if direct and (lists.is_list(value) or isinstance(value, V.Tup)):
                return True
            if isinstance(value, V.Const) and isinstance(value.value, (list, dict, set, bytearray)):
                return True
    return False


def _statement_text(stmts) -> str:
    text = source_text(stmts[0]).splitlines()[0]
    text = text if len(text) <= 60 else text[:57] + "..."
    return text + (f" (and {len(stmts) - 1} more line(s))" if len(stmts) > 1 else "")


@contextlib.contextmanager
def _record_calls(model: torch.nn.Module, called: list):
    """Collect the modules of `model` a run calls (its wrapper then lifts only their
    weights). Hooks on the model's own modules, not torch's process-wide one: no other
    module, thread or library sees them."""
    handles = [m.register_forward_pre_hook(lambda module, args: called.append(module)) for m in model.modules()]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


# ----- small helpers -------------------------------------------------------------------


_IN_PLACE = {
    ast.Add: (operator.add, operator.iadd), ast.Sub: (operator.sub, operator.isub),
    ast.Mult: (operator.mul, operator.imul), ast.Div: (operator.truediv, operator.itruediv),
}


def masked_update(tensor, index, op: str, value):
    """`tensor[index] op= value`, exactly as Python does it. With a boolean mask of the
    tensor's shape, a scalar value and a floating tensor it is computed as
    `tensor.copy_(torch.where(mask, tensor op value, tensor))`: the same values, in place,
    without `tensor[mask]`, whose size depends on the data (a sub-DNN has static shapes)."""
    plain, in_place = _IN_PLACE[getattr(ast, op)]
    scalar = isinstance(value, (int, float)) and not isinstance(value, bool) or (
        isinstance(value, torch.Tensor) and value.dim() == 0)
    floating = isinstance(value, float) or isinstance(value, torch.Tensor) and value.is_floating_point()
    if (
        scalar and isinstance(tensor, torch.Tensor)
        and isinstance(index, torch.Tensor) and index.dtype == torch.bool and index.shape == tensor.shape
        # an integer tensor: only where Python's in-place op keeps integers (else it raises)
        and (tensor.is_floating_point() or not floating and op != "Div")
    ):
        tensor.copy_(torch.where(index, plain(tensor, value), tensor))
        return
    if _indexes_a_view(tensor, index):
        in_place(tensor[index], value)  # Python's `t[i] = t[i]` that follows is a self-copy
        return
    item = tensor[index]
    tensor[index] = in_place(item, value)


def subscript_store(tensor, index, value):
    """`tensor[index] = value`. An index holding a symbolic int (a runtime int inside a
    capture) with no tensor in it selects a view: the store is a copy into that view.
    `Tensor.__setitem__` would read the int's value, and export would freeze it to its
    example (silently, when that example is 0 or 1)."""
    if not _indexes_a_view(tensor, index):
        tensor[index] = value
        return
    view = tensor[index]
    if isinstance(value, torch.Tensor):
        while value.dim() > view.dim() and value.shape[0] == 1:
            value = value[0]  # `__setitem__` drops a value's leading 1-sized dims too
        view.copy_(value)
    else:
        view.fill_(value)


def _indexes_a_view(tensor, index) -> bool:
    """Basic indexing (ints, slices, None, ...) with at least one symbolic int."""
    if not isinstance(tensor, torch.Tensor):
        return False
    parts = index if isinstance(index, tuple) else (index,)
    flat = [b for p in parts for b in ((p.start, p.stop, p.step) if isinstance(p, slice) else (p,))]
    basic = all(p is None or p is Ellipsis or (isinstance(p, (int, torch.SymInt)) and not isinstance(p, bool)) for p in flat)
    return basic and any(isinstance(p, torch.SymInt) for p in flat)


class _MaskedUpdate(ast.NodeTransformer):
    """`t[i] op= v` and `t[i] = t[i] op v` (same `t`, same `i`) become `masked_update`;
    other stores `t[i] = v` become `subscript_store`."""

    HELPER = "__dycl_masked_update"
    STORE = "__dycl_subscript_store"

    def visit_AugAssign(self, node: ast.AugAssign):
        if isinstance(node.target, ast.Subscript) and type(node.op) in _IN_PLACE:
            return self._call(node, node.target, node.op, node.value)
        return node

    def visit_Assign(self, node: ast.Assign):
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
            target, value = node.targets[0], node.value
            if (
                isinstance(value, ast.BinOp) and type(value.op) in _IN_PLACE
                and isinstance(value.left, ast.Subscript)
                and ast.dump(value.left.value) == ast.dump(target.value)
                and ast.dump(value.left.slice) == ast.dump(target.slice)
            ):
                return self._call(node, target, value.op, value.right)
            call = ast.Call(
                func=ast.Name(self.STORE, ast.Load()),
                args=[_as_load(copy.deepcopy(target.value)), copy.deepcopy(target.slice), value],
                keywords=[],
            )
            return ast.copy_location(ast.Expr(call), node)
        return node

    def _call(self, node, target: ast.Subscript, op, value) -> ast.stmt:
        load = _as_load(copy.deepcopy(target.value))
        call = ast.Call(
            func=ast.Name(self.HELPER, ast.Load()),
            args=[load, copy.deepcopy(target.slice), ast.Constant(type(op).__name__), value],
            keywords=[],
        )
        return ast.copy_location(ast.Expr(call), node)


def _as_load(node: ast.expr) -> ast.expr:
    for sub in ast.walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return node


class _DetachIsIdentity(ast.NodeTransformer):
    """`t.detach()` is `t` at inference: the same memory and values. Export would lose an
    in-place change made through the detached alias (`x.detach().mul_(0.9)` changes x)."""

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "detach" and not node.args and not node.keywords:
            return node.func.value
        return node


def _distinct_examples(flat_inputs: list[V.Dyn]) -> list:
    """Example inputs for export, one tensor per IR value. Two values may share an example
    (after `if c: y = x else: y = x * 0.5`, the join's example of `y` is `x`'s); export
    would take one tensor passed twice for one input and compute `x + y` as `x + x`."""
    seen: set = set()
    examples = []
    for leaf in flat_inputs:
        example = leaf.example
        memory = aliases.storage_of(example)
        if memory is not None and memory in seen:
            example = example.clone()
        seen.add(memory)
        examples.append(example)
    return examples


class _IntsAsTensors(Exception):
    """Capture the run again with its runtime ints as 0-d tensors."""


def _specialized_int(self, stmt, name: str | None = None) -> FrontendError:
    what = f"`{name}`" if name and not name.startswith("operand") else "a runtime Python int"
    return self.error(
        stmt, f"{what} is used where the captured tensor code needs a constant (an index or a "
        "size); export would freeze it to its example value",
        "index with a 1-element index tensor instead (`y[0, idx] = v` with "
        "`idx = t.argmax().reshape(1)`, or `y.index_select(dim, idx)`), keeping the value a "
        "tensor rather than calling int() or .item() on it",
    )


def _picked_object(leaf) -> bool:
    """A run result that is code (a module, a function): chosen by data if the run has inputs."""
    return isinstance(leaf, torch.nn.Module) or callable(leaf) and not isinstance(leaf, type)


def _is_tensor_value(value) -> bool:
    return isinstance(value, V.Dyn) and V.is_tensor_type(value.type)


def _bound_name(env: dict, value: V.Dyn) -> str:
    """A variable bound to `value`, for messages."""
    for name, bound in env.items():
        if any(isinstance(l, V.Dyn) and l.value == value.value for l in V.leaves(bound)):
            return name.split("_", 3)[-1] if name.startswith("__") else name
    return "a tensor"


def _path_dependent_alias(self, stmt, name: str) -> FrontendError:
    return self.error(
        stmt, f"in-place change of `{name}`, which shares memory with another variable on some paths only",
        f"copy it where it is assigned on every path (`{name} = other.clone()`), or rebind instead of mutating",
    )


def _is_packing(value: ast.expr) -> bool:
    """Names and tuples of names: data movement, kept at host level (no run needed)."""
    if isinstance(value, ast.Name):
        return True
    return isinstance(value, (ast.Tuple, ast.List)) and all(
        isinstance(e, (ast.Name, ast.Constant)) for e in value.elts
    )


def _substitute(value, example_of_leaf):
    """The Python value a run receives for `value`; `example_of_leaf(dyn)` gives its leaves."""
    if isinstance(value, V.Tup):
        items = [_substitute(i, example_of_leaf) for i in value.items]
        return items if value.kind == "list" else tuple(items)
    if isinstance(value, V.Dyn):
        return example_of_leaf(value)
    if isinstance(value, V.Const):
        return value.value
    return None


def _example(value, made: dict[int, Any], lists: dict[int, V.Tup]):
    """What the example run gets for `value`: one Python list per list value (`made`, by id),
    each noted in `lists` (id of the Python list -> the value) so that a result that is one of
    them is that very value again."""
    if isinstance(value, V.Tup):
        if id(value) in made:
            return made[id(value)]
        items = [_example(item, made, lists) for item in value.items]
        if value.kind != "list":
            return tuple(items)
        made[id(value)] = items
        lists[id(items)] = value
        return items
    return V.example_of(value)


def _tups_of(converted, original):
    """(converted, original) pairs of the tuples and lists of one value and its conversion."""
    if isinstance(converted, V.Tup) and isinstance(original, V.Tup) and len(converted.items) == len(original.items):
        yield converted, original
        for a, b in zip(converted.items, original.items):
            yield from _tups_of(a, b)


def _to_env_value(structured, builder, example, lists: dict[int, V.Tup], inputs: dict[int, V.Tup] | None = None,
                  renewed: list | None = None) -> V.EnvValue:
    """The run's results as environment values; `example` is what the example run returned,
    whose Python lists say which results are one list (`g = groups[0]`: `g` and the item of
    `groups` are one list value). `lists` starts with the run's input lists (`inputs`): a
    result that is one of them is a new version of that list (its items may have been
    computed again), listed in `renewed` (old value, new value) for its holders."""
    inputs = {} if inputs is None else inputs
    renewed = [] if renewed is None else renewed
    if isinstance(structured, (V.Dyn, V.Const)):
        return structured
    if isinstance(structured, tuple):
        return V.Tup(tuple(_to_env_value(s, builder, e, lists, inputs, renewed) for s, e in zip(structured, example)))
    if isinstance(structured, list) and isinstance(example, list):
        known = lists.get(id(example))
        if known is None or (id(example) in inputs and known is inputs[id(example)]):
            new = V.Tup(tuple(_to_env_value(s, builder, e, lists, inputs, renewed) for s, e in zip(structured, example)), "list")
            if known is not None:
                renewed.append((known, new))
            lists[id(example)] = new
        return lists[id(example)]
    if isinstance(structured, dict):
        if all(isinstance(v, V.Const) for v in structured.values()):
            return V.Const({k: v.value for k, v in structured.items()})
        raise FrontendError("a dict of tensors", "use tuples")
    return V.Const(structured)


def fix_locations(tree: ast.AST, line: int) -> None:
    """Give synthetic nodes a location compile() accepts (copies keep their own)."""
    for node in ast.walk(tree):
        if "lineno" not in node._attributes:
            continue
        if getattr(node, "lineno", None) is None:
            node.lineno = line
        if getattr(node, "col_offset", None) is None:
            node.col_offset = 0
        if getattr(node, "end_lineno", None) is None or node.end_lineno < node.lineno:
            node.end_lineno = node.lineno
        if getattr(node, "end_col_offset", None) is None:
            node.end_col_offset = 0


