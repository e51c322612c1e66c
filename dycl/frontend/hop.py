"""Import `torch.cond` and `torch._higher_order_ops.while_loop` as `scf` ops.

torch-mlir's `GraphNodeImporter` has no `cond` handler, and its `while_loop` handler turns
the loop's additional inputs (weights the body closes over) into loop carries, writing IR
that does not verify. Here both become scf ops whose regions call the branch / body funcs
(imported by FxImporter as private funcs; `stitch.py` inlines them later):

    cond(pred, t, f, ops)          -> scf.if (to_i1(Bool.Tensor(pred))) { call t(ops) } else { call f(ops) }
    while_loop(c, b, carries, inv) -> scf.while (carries) { call c(carries, inv) } do { call b(carries, inv) }

Branch funcs may return static shapes where the cond's result is dynamic (`u0`): a
`torch.tensor_static_info_cast` before each yield gives the joined type.

Python's `%` of two ints (`x.shape[1] % 2`) is imported as `aten.remainder.int`, Python's
own meaning (the sign of the divisor): torch-mlir's table takes it for `aten.fmod`, C's
(the sign of the dividend), which no host op computes and which differs below 0.
"""

from __future__ import annotations

import torch
from torch_mlir import ir
from torch_mlir.extras.fx_importer import GraphNodeImporter, is_builtin_function_or_method


def _i1(context) -> ir.Type:
    return ir.IntegerType.get_signless(1, context)


def tensor_to_i1(value: ir.Value, context) -> ir.Value:
    """`torch_c.to_i1(torch.aten.Bool.Tensor(value))`."""
    as_bool = ir.Operation.create(
        "torch.aten.Bool.Tensor",
        results=[ir.Type.parse("!torch.bool", context)],
        operands=[value],
    ).result
    return ir.Operation.create("torch_c.to_i1", results=[_i1(context)], operands=[as_bool]).result


def cast_to(value: ir.Value, type_: ir.Type) -> ir.Value:
    if value.type == type_:
        return value
    return ir.Operation.create(
        "torch.tensor_static_info_cast", results=[type_], operands=[value]
    ).result


def call(callee: str, operands, result_types) -> list[ir.Value]:
    op = ir.Operation.create(
        "func.call",
        results=list(result_types),
        operands=list(operands),
        attributes={"callee": ir.FlatSymbolRefAttr.get(callee)},
    )
    return list(op.results)


class HopImporter(GraphNodeImporter):
    def _import_symbolic_torch_op(self, loc, node, target):
        if is_builtin_function_or_method(target) and target.__name__ == "mod" and all(
            (a.meta["val"].node.pytype if isinstance(a, torch.fx.Node) else type(a)) is int for a in node.args
        ):
            self._import_torch_op_overload(loc, node, torch.ops.aten.remainder.int)
            return
        super()._import_symbolic_torch_op(loc, node, target)

    def _callee(self, node, graph_node) -> tuple[str, list[ir.Type]]:
        module = getattr(node.graph.owning_module, graph_node.target)
        name = self.fx_importer._graph_module_to_func_name[id(module)]
        func = self.fx_importer.symbol_table[name]
        return name, list(ir.FunctionType(func.attributes["function_type"].value).results)

    def _result_types(self, node) -> list[ir.Type]:
        return [self._cc.value_info_to_type(v) for v in node.meta["val"]]

    def _bind_results(self, node, results):
        self._multi_result_nodes.add(node)
        for index, value in enumerate(results):
            self.bind_node_value(node, value, index)

    def _import_hop_cond(self, loc, node, hop):
        pred, true_fn, false_fn, operands = node.args
        result_types = self._result_types(node)
        with loc, ir.InsertionPoint(self._b):
            condition = tensor_to_i1(self._import_argument(loc, pred), self._c)
            args = [self._import_argument(loc, a) for a in operands]
            if_op = ir.Operation.create(
                "scf.if", results=result_types, operands=[condition], regions=2
            )
            for region, branch in zip(if_op.regions, (true_fn, false_fn)):
                callee, callee_types = self._callee(node, branch)
                with ir.InsertionPoint(region.blocks.append()):
                    values = call(callee, args, callee_types)
                    values = [cast_to(v, t) for v, t in zip(values, result_types)]
                    ir.Operation.create("scf.yield", operands=values)
        self._bind_results(node, if_op.results)

    def _import_hop_while_loop(self, loc, node, hop):
        cond_fn, body_fn, carries, invariants = node.args
        result_types = self._result_types(node)
        with loc, ir.InsertionPoint(self._b):
            initial = [self._import_argument(loc, a) for a in carries]
            fixed = [self._import_argument(loc, a) for a in invariants]
            while_op = ir.Operation.create(
                "scf.while", results=result_types, operands=initial, regions=2
            )
            before = while_op.regions[0].blocks.append(*result_types)
            with ir.InsertionPoint(before):
                callee, callee_types = self._callee(node, cond_fn)
                (flag,) = call(callee, list(before.arguments) + fixed, callee_types)
                ir.Operation.create(
                    "scf.condition",
                    operands=[tensor_to_i1(flag, self._c), *before.arguments],
                )
            after = while_op.regions[1].blocks.append(*result_types)
            with ir.InsertionPoint(after):
                callee, callee_types = self._callee(node, body_fn)
                values = call(callee, list(after.arguments) + fixed, callee_types)
                values = [cast_to(v, t) for v, t in zip(values, result_types)]
                ir.Operation.create("scf.yield", operands=values)
        self._bind_results(node, while_op.results)

