"""The HCFG (heterogeneous control-flow graph) of an outlined module.

Nodes are the host function's entry, its control ops (`scf.if`, `scf.for`, `scf.while`),
its calls of sub-DNNs and its return; data edges are the values one node passes to another
(through any host ops in between: views, `Bool.Tensor`, scalar arithmetic), labelled with
their types; control edges link a control op to the nodes inside its regions.

    hcfg = HCFG.from_module(module)       # after dycl-outline (or dycl-pipeline)
    print(hcfg.summary())                 # sub-DNN count, ops per sub-DNN, host ops, bytes
    dot_text = hcfg.to_dot()              # Graphviz
    hcfg.render("hcfg.png")               # where Graphviz's `dot` is installed

`contract_violations(module)` checks a module against the HCFG contract of
docs/conventions.md ("The HCFG"), one rule of `CONTRACT` at a time. What a sub-DNN's
signature and the host may hold is asked of the stages that read them (the backends'
`tensor_spec`, codegen's `translates`), so that the check and those stages cannot differ.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects import builtin, func, scf
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from dycl.backends.subdnn import tensor_spec
from dycl.codegen.emit import translates
from dycl.dialects import torch as t
from dycl.dialects.dycl import is_kept_if, subdnn_threads
from dycl.passes._common import (
    CONSTANT_OPS,
    CONTROL_OPS,
    REGION_NAMES,
    HCFGError,
    check_function,
    format_type,
    host_functions,
    is_host_tensor_compute,
    is_subdnn,
    locate,
    op_text,
    tensor_bytes,
)

__all__ = [
    "HCFG", "HCFGNode", "HCFGEdge", "HCFGSummary", "CallSummary", "CONTRACT", "Violation", "contract_violations",
]

_TERMINATORS = (func.ReturnOp, scf.YieldOp, scf.ConditionOp)


@dataclass
class HCFGNode:
    id: str
    kind: str
    """"entry", "call", "if", "for", "while" or "return"."""
    label: str
    op: Operation | None = None
    callee: str | None = None
    parent: str | None = None
    """The control node whose region holds this node."""
    region: str | None = None
    inputs: list[Attribute] = field(default_factory=list)
    outputs: list[Attribute] = field(default_factory=list)


@dataclass(frozen=True)
class HCFGEdge:
    src: str
    dst: str
    type: Attribute | None
    kind: str = "data"
    """"data" (a value) or "control" (a region of a control op)."""
    label: str = ""


@dataclass(frozen=True)
class CallSummary:
    node: str
    callee: str
    input_bytes: int
    output_bytes: int


@dataclass
class HCFGSummary:
    function: str
    subdnn_count: int
    ops_per_subdnn: dict[str, int]
    host_op_count: int
    host_ops: dict[str, int]
    control_op_count: int
    calls: list[CallSummary]
    host_compute_ops: list[str] = field(default_factory=list)
    """Tensor compute left in the host (it reads a run-time scalar): where it is."""
    threads: dict[str, int] = field(default_factory=dict)
    """The sub-DNNs that say how many threads may run them at most (`dycl.threads`)."""

    @property
    def call_count(self) -> int:
        return len(self.calls)

    def __str__(self) -> str:
        lines = [
            f"HCFG of @{self.function}: {self.subdnn_count} sub-DNNs, "
            f"{self.call_count} call sites, {self.control_op_count} control ops, "
            f"{self.host_op_count} host ops",
            "sub-DNNs (ops, constants and weight references excluded):",
        ]
        lines += [
            f"  @{name}: {n} ops" + (f", at most {self.threads[name]} thread(s)" if name in self.threads else "")
            for name, n in self.ops_per_subdnn.items()
        ]
        lines.append("host ops:")
        lines += [f"  {name}: {n}" for name, n in sorted(self.host_ops.items())]
        if self.host_compute_ops:
            lines.append("tensor compute left in the host (reads a run-time scalar):")
            lines += [f"  {where}" for where in self.host_compute_ops]
        lines.append("calls (input bytes -> output bytes):")
        lines += [
            f"  {c.node} @{c.callee}: {c.input_bytes} -> {c.output_bytes}" for c in self.calls
        ]
        return "\n".join(lines)


def subdnn_op_count(fn: func.FuncOp) -> int:
    """Ops that do work: not constants, weight references, lists or the return."""
    return sum(
        1
        for op in fn.body.block.ops
        if not isinstance(op, (*CONSTANT_OPS, t.ListConstructOp, func.ReturnOp))
    )


class HCFG:
    def __init__(self, module: builtin.ModuleOp, function: func.FuncOp):
        self.module = module
        self.function = function
        self.subdnns: dict[str, func.FuncOp] = {
            op.sym_name.data: op for op in module.ops if is_subdnn(op)
        }
        self.nodes: dict[str, HCFGNode] = {}
        self.edges: list[HCFGEdge] = []
        self._node_of: dict[Operation, str] = {}
        self._sources: dict[SSAValue, frozenset[tuple[str, str]]] = {}
        self._build()

    @classmethod
    def from_module(cls, module: builtin.ModuleOp, function: str | None = None) -> HCFG:
        """The HCFG of host function `function` (default: `forward`, else the first)."""
        hosts = list(host_functions(module))
        if not hosts:
            raise ValueError("the module has no host function")
        if function is None:
            chosen = next((f for f in hosts if f.sym_name.data == "forward"), hosts[0])
        else:
            matches = [f for f in hosts if f.sym_name.data == function]
            if not matches:
                raise ValueError(f"no host function @{function} in the module")
            chosen = matches[0]
        return cls(module, chosen)

    # ------------------------------------------------------------------ building

    def _add(self, node: HCFGNode) -> HCFGNode:
        self.nodes[node.id] = node
        if node.op is not None:
            self._node_of[node.op] = node.id
        return node

    def _build(self) -> None:
        fn = self.function
        entry = self._add(HCFGNode("entry", "entry", f"@{fn.sym_name.data}",
                                   outputs=list(fn.function_type.inputs)))
        self._entry_block = fn.body.block
        self._create_nodes(fn.body.block, None, None)
        for node in list(self.nodes.values()):
            if node is not entry:
                self._connect(node)
        self.edges = list(dict.fromkeys(self.edges))

    def _create_nodes(self, block: Block, parent: str | None, region: str | None) -> None:
        for op in block.ops:
            if isinstance(op, func.CallOp):
                callee = op.callee.root_reference.data
                kind = "call" if callee in self.subdnns else "host-call"
                self._add(HCFGNode(f"n{len(self.nodes)}", kind, f"@{callee}", op, callee,
                                   parent, region, list(op.operand_types), list(op.result_types)))
            elif isinstance(op, CONTROL_OPS):
                kind = op.name.removeprefix("scf.")
                node = self._add(HCFGNode(f"n{len(self.nodes)}", kind, op.name, op, None,
                                          parent, region, list(op.operand_types),
                                          list(op.result_types)))
                for name, reg in zip(REGION_NAMES[type(op)], op.regions):
                    for inner in reg.blocks:
                        self._create_nodes(inner, node.id, name)
            elif isinstance(op, func.ReturnOp) and block is self.function.body.block:
                self._add(HCFGNode("return", "return", "return", op, None, parent, region,
                                   list(op.operand_types)))

    def _connect(self, node: HCFGNode) -> None:
        op = node.op
        assert op is not None
        if node.parent is not None:
            self.edges.append(HCFGEdge(node.parent, node.id, None, "control", node.region or ""))
        values: list[tuple[SSAValue, str]] = [(v, "") for v in op.operands]
        if isinstance(op, CONTROL_OPS):
            if isinstance(op, scf.ForOp):
                values = [(v, "") for v in op.iter_args]
            # What the regions hand back to the control op (yields, while condition).
            for reg in op.regions:
                for block in reg.blocks:
                    last = block.last_op
                    if isinstance(last, (scf.YieldOp, scf.ConditionOp)):
                        values += [(v, "yield") for v in last.operands]
        for value, tag in values:
            for src, via in self._trace(value):
                if src == node.id:
                    continue
                label = format_type(value.type)
                if via:
                    label += f" via {via}"
                if tag:
                    label = f"{tag} {label}"
                self.edges.append(HCFGEdge(src, node.id, value.type, "data", label))

    def _trace(self, value: SSAValue) -> frozenset[tuple[str, str]]:
        """The nodes `value` comes from, and the host ops it passes through."""
        if value in self._sources:
            return self._sources[value]
        self._sources[value] = frozenset()  # cycles through loop carries
        result: set[tuple[str, str]] = set()
        owner = value.owner
        if isinstance(value, BlockArgument):
            parent = owner.parent_op() if isinstance(owner, Block) else None
            if owner is self._entry_block:
                result.add(("entry", ""))
            elif parent is not None and parent in self._node_of:
                result.add((self._node_of[parent], ""))
        elif isinstance(owner, Operation):
            if owner in self._node_of:
                result.add((self._node_of[owner], ""))
            elif not isinstance(owner, CONSTANT_OPS):
                name = t.op_name(owner).removeprefix("torch.").removeprefix("aten.")
                for operand in owner.operands:
                    for src, via in self._trace(operand):
                        result.add((src, f"{via}+{name}" if via else name))
        self._sources[value] = frozenset(result)
        return self._sources[value]

    # ------------------------------------------------------------------ outputs

    def summary(self) -> HCFGSummary:
        host_ops: dict[str, int] = {}
        host_compute: list[str] = []
        control = 0
        for op in self.function.walk():
            if op is self.function or isinstance(op, (*_TERMINATORS, func.CallOp)):
                continue
            if isinstance(op, CONTROL_OPS):
                control += 1
                continue
            if isinstance(op, CONSTANT_OPS):
                continue
            name = t.op_name(op)
            host_ops[name] = host_ops.get(name, 0) + 1
            if is_host_tensor_compute(op):
                host_compute.append(locate(op))
        calls = [
            CallSummary(
                node.id,
                node.callee or "",
                sum(tensor_bytes(ty) or 0 for ty in node.inputs),
                sum(tensor_bytes(ty) or 0 for ty in node.outputs),
            )
            for node in self.nodes.values()
            if node.kind == "call"
        ]
        return HCFGSummary(
            function=self.function.sym_name.data,
            subdnn_count=len(self.subdnns),
            ops_per_subdnn={name: subdnn_op_count(fn) for name, fn in self.subdnns.items()},
            host_op_count=sum(host_ops.values()),
            host_ops=host_ops,
            control_op_count=control,
            calls=calls,
            host_compute_ops=host_compute,
            threads={name: n for name, fn in self.subdnns.items() if (n := subdnn_threads(fn)) is not None},
        )

    def to_dot(self) -> str:
        lines = [
            f'digraph "{self.function.sym_name.data}" {{',
            "  rankdir=TB;",
            '  node [fontname="Helvetica", fontsize=10];',
            '  edge [fontname="Helvetica", fontsize=9];',
        ]
        shapes = {"entry": "invhouse", "return": "house", "call": "box",
                  "host-call": "box", "if": "diamond", "for": "hexagon", "while": "hexagon"}
        for node in self.nodes.values():
            label = node.label
            if node.kind == "call" and node.callee in self.subdnns:
                label += f"\\n{subdnn_op_count(self.subdnns[node.callee])} ops"
            style = ', style="rounded,filled", fillcolor="#dbe9f6"' if node.kind == "call" else ""
            lines.append(f'  {node.id} [label="{_escape(label)}", shape={shapes[node.kind]}{style}];')
        for edge in self.edges:
            attrs = [f'label="{_escape(edge.label)}"']
            if edge.kind == "control":
                attrs.append("style=dashed")
                attrs.append('color="gray40"')
            lines.append(f"  {edge.src} -> {edge.dst} [{', '.join(attrs)}];")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def render(self, path: str | Path, format: str | None = None) -> Path:
        """Write the graph with Graphviz's `dot` (PNG/SVG/PDF by the file suffix)."""
        dot = shutil.which("dot")
        if dot is None:
            raise RuntimeError("Graphviz `dot` is not installed; write to_dot() to a file instead")
        path = Path(path)
        fmt = format or path.suffix.lstrip(".") or "png"
        subprocess.run([dot, f"-T{fmt}", "-o", str(path)], input=self.to_dot(), text=True,
                       check=True)
        return path


def _escape(text: str) -> str:
    return text.replace('"', '\\"')


# ------------------------------------------------------------------ the contract

CONTRACT: dict[str, str] = {
    "one-block-functions": "every function is one block ending in func.return (structured control flow)",
    "subdnn-private": "a sub-DNN is a private func.func marked dycl.subdnn, with a body",
    "subdnn-tensor-signature": "every argument and result of a sub-DNN is a !torch.vtensor of known rank and dtype",
    "subdnn-straight-line": "the only region op in a sub-DNN is an scf.if marked dycl.keep",
    "host-translatable": "the host holds only ops host code generation translates: control flow, calls of "
    "the module's functions, scalar/list ops and computation-free tensor ops",
}
"""The rules of the HCFG contract (docs/conventions.md, "The HCFG"), by name."""


@dataclass(frozen=True)
class Violation:
    rule: str
    """A key of `CONTRACT`."""
    function: str
    op: Operation | None
    detail: str

    def __str__(self) -> str:
        where = f"@{self.function}" if self.op is None else locate(self.op)
        if self.op is not None and not where.startswith("@"):
            where = f"@{self.function} ({where})"
        text = f"rule '{self.rule}' ({CONTRACT[self.rule]}): {where}: {self.detail}"
        return text if self.op is None else f"{text}: {op_text(self.op)}"


def contract_violations(module: builtin.ModuleOp) -> list[Violation]:
    """Every way `module` breaks the HCFG contract, function by function in module order."""
    found: list[Violation] = []
    for fn in module.ops:
        if not isinstance(fn, func.FuncOp):
            continue
        name = fn.sym_name.data
        if is_subdnn(fn):
            if fn.sym_visibility is None or fn.sym_visibility.data != "private":
                found.append(Violation("subdnn-private", name, None, "a sub-DNN that is not private"))
            if fn.is_declaration:
                found.append(Violation("subdnn-private", name, None, "a sub-DNN without a body"))
                continue
        elif fn.is_declaration:
            continue
        try:
            check_function(fn)
        except HCFGError as err:
            found.append(Violation("one-block-functions", name, None, str(err)))
            continue
        found += _subdnn_violations(fn) if is_subdnn(fn) else _host_violations(module, fn)
    return found


def _subdnn_violations(fn: func.FuncOp) -> list[Violation]:
    name = fn.sym_name.data
    found = []
    signature = fn.function_type
    for kind, types in (("argument", signature.inputs), ("result", signature.outputs)):
        for i, type_ in enumerate(types):
            try:
                tensor_spec(type_, f"{kind} {i}")
            except ValueError as err:
                found.append(Violation("subdnn-tensor-signature", name, None, str(err)))
    for op in fn.walk():
        if op is not fn and op.regions and not is_kept_if(op):
            found.append(Violation("subdnn-straight-line", name, op, f"{t.op_name(op)} in a sub-DNN"))
    return found


def _host_violations(module: builtin.ModuleOp, fn: func.FuncOp) -> list[Violation]:
    name = fn.sym_name.data
    defined = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration}
    found = []
    for op in fn.walk():
        if op is fn:
            continue
        if isinstance(op, func.CallOp):
            if op.callee.root_reference.data not in defined:
                found.append(Violation("host-translatable", name, op, "a call of a function the module does not define"))
        elif not translates(op):
            found.append(Violation("host-translatable", name, op, f"{t.op_name(op)} has no Python translation"))
    return found
