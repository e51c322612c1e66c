"""Make `forward` the module's only function: inline the calls that remain after capture.

Runs are spliced into `forward` as they are captured; what remains are calls of the
branch/body funcs FxImporter writes for imported `torch.cond`/`while_loop`. Inlining them
leaves one function whose control flow is scf and whose math is torch ops (`dycl-outline`
re-splits it later).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.rewriter import InsertPoint, Rewriter


def inline_private_calls(module: ModuleOp, root: str) -> None:
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    forward = functions[root]
    while True:
        calls = [
            op
            for op in forward.walk()
            if isinstance(op, func.CallOp) and op.callee.root_reference.data in functions
        ]
        if not calls:
            break
        for call in calls:
            _inline(call, functions[call.callee.root_reference.data])
    for name, function in functions.items():
        if name != root:
            module.body.block.erase_op(function)


def _inline(call: func.CallOp, callee: func.FuncOp) -> None:
    body = callee.body.clone()
    block = body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    # A run may return one of its arguments unchanged: that becomes the call's operand.
    arguments = {arg: operand for arg, operand in zip(block.args, call.operands)}
    returned = [arguments.get(value, value) for value in ret.operands]
    block.erase_op(ret)
    Rewriter.inline_block(block, InsertPoint.before(call), call.operands)
    for result, value in zip(call.results, returned):
        result.replace_all_uses_with(value)
    call.detach()
    call.erase()
