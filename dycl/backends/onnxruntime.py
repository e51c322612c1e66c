"""ONNX Runtime backend: sub-DNN -> torch.export -> ONNX (dynamo exporter) -> `.onnx`.

The ONNX file embeds the weights as initializers. The file is checked by opening an
`InferenceSession` once, so an op ONNX Runtime has no kernel for fails at compile time.

A kept `scf.if` exports as an ONNX `If` whose arms read the outer graph's values by name.
Each initializer only one arm reads is moved into that arm's subgraph: ONNX Runtime applies
its NCHWc convolution layout inside an arm only to weights the arm owns
(docs/keep-branches.md, Q3).
"""

from __future__ import annotations

import functools
import logging
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dycl.backends.backend import Backend
from dycl.backends.compiled import CompiledSubDNN, blame_op, op_names_of
from dycl.backends.errors import BackendError
from dycl.backends.fx_rebuild import export, export_side_by_side
from dycl.backends.onnx_in_place import in_place_pairs, outer_names, write_scatters_in_place
from dycl.backends.subdnn import SubDNN

NAME = "onnxruntime"


@dataclass(frozen=True)
class OnnxRuntimeOptions:
    opset: int | None = None
    """The ONNX opset to export to; None: the exporter's default."""


class OnnxRuntimeBackend(Backend):
    name = NAME
    Options = OnnxRuntimeOptions
    tool_packages = ("torch", "onnx", "onnxscript", "onnxruntime")
    batches = True
    dynamic_batch = True
    options: OnnxRuntimeOptions

    def compile(self, subdnn: SubDNN, weights: Mapping[str, Any]) -> CompiledSubDNN:
        if subdnn.batch_rows is not None:
            try:
                return self._compile(subdnn, weights)
            except BackendError:  # the exporter needed a static dim 0: one request per call
                compiled = self._compile(subdnn.static(), weights)
                compiled.meta["batchable"] = False
                return compiled
        return self._compile(subdnn, weights)

    def _compile(self, subdnn: SubDNN, weights: Mapping[str, Any]) -> CompiledSubDNN:
        program = export(subdnn, weights, NAME)
        model_bytes, in_place = _to_onnx(subdnn, program, self.options.opset)
        input_names, output_names = _check_with_session(subdnn, model_bytes)
        return _compiled(subdnn, model_bytes, input_names, output_names, in_place)

    def compile_batch(self, subdnns: Sequence[SubDNN], weights: Mapping[str, Any]) -> dict[str, CompiledSubDNN]:
        """Several sub-DNNs through one export, cut back into one ONNX model each.

        The exporter sets up its decomposition tables on every call (~0.4 s, more than a
        small sub-DNN's own work), so a network's sub-DNNs go through together. Each part
        is checked by its own session like a lone compile; if anything in the joint route
        fails, every sub-DNN is compiled alone, so an error still names its sub-DNN and op.
        """
        # A sub-DNN with an If cannot be cut out of the joint model: onnx.utils.Extractor
        # does not follow the names an If's arms read from the outer graph.
        joint = [s for s in subdnns if not _has_branches(s)]
        if len(joint) >= 2:
            try:
                results = _compile_side_by_side(joint, weights, self.options.opset)
            except Exception:  # noqa: BLE001 - the lone compiles below report the real error
                results = {}
        else:
            results = {}
        rest = [s for s in subdnns if s.name not in results]
        results.update(super().compile_batch(rest, weights))
        return {s.name: results[s.name] for s in subdnns}


def _compiled(subdnn: SubDNN, model_bytes: bytes, input_names: list[str], output_names: list[str],
              in_place: list[list[int]]) -> CompiledSubDNN:
    meta = {"file": f"{subdnn.name}.onnx", "input_names": input_names, "output_names": output_names}
    if in_place:
        meta["in_place"] = in_place
    return CompiledSubDNN(name=subdnn.name, backend=NAME, files={f"{subdnn.name}.onnx": model_bytes}, meta=meta)


def _in_place(model, input_names: list[str], output_names: list[str]) -> list[list[int]]:
    """Write scatters into their sub-DNN argument's layout, then the outputs that may share
    an argument's buffer (`dycl.backends.onnx_in_place`; the manifest's `in_place`)."""
    write_scatters_in_place(model)
    return in_place_pairs(model.graph, input_names, output_names)


def _compile_side_by_side(subdnns, weights, opset: int | None) -> dict[str, CompiledSubDNN]:
    import onnx.utils

    inputs = [[f"s{k}_in{i}" for i in range(len(s.inputs))] for k, s in enumerate(subdnns)]
    outputs = [[f"s{k}_out{j}" for j in range(len(s.outputs))] for k, s in enumerate(subdnns)]
    program = export_side_by_side(list(subdnns), weights, NAME)
    joint = export_onnx(
        program, opset, [n for ns in inputs for n in ns], [n for ns in outputs for n in ns]
    ).model_proto
    present = {value.name for value in joint.graph.input}
    extractor = onnx.utils.Extractor(joint)
    results = {}
    for subdnn, input_names, output_names in zip(subdnns, inputs, outputs):
        kept = [n for n in input_names if n in present]  # the exporter drops unread inputs
        model = extractor.extract_model(kept, output_names)
        in_place = _in_place(model, input_names, output_names)
        model_bytes = model.SerializeToString()
        _check_with_session(subdnn, model_bytes)
        results[subdnn.name] = _compiled(subdnn, model_bytes, input_names, output_names, in_place)
    return results


def _to_onnx(subdnn: SubDNN, program, opset: int | None) -> tuple[bytes, list[list[int]]]:
    """The ONNX model's bytes and the outputs that may share an argument's buffer."""
    input_names = [f"in{i}" for i in range(len(subdnn.inputs))]
    output_names = [f"out{i}" for i in range(len(subdnn.outputs))]
    try:
        onnx_program = export_onnx(program, opset, input_names=input_names, output_names=output_names)
    except Exception as err:
        text = str(err)
        op = blame_op(op_names_of(subdnn.ir_text), text)
        missing = _NO_TRANSLATION.search(text)
        if missing:
            aten_op = f"{missing.group(1)}.{missing.group(2)}"
            reason = f"the ONNX exporter has no translation for {aten_op}"
            if op is None:  # an op that torch.export's decompositions produced
                op = f"torch.{missing.group(1)}"
                reason += " (produced by decomposing an op of this sub-DNN)"
            raise BackendError(NAME, subdnn.name, reason, op) from err
        raise BackendError(NAME, subdnn.name, f"ONNX export failed: {_summary(text)}", op) from err
    model = onnx_program.model_proto
    sink_arm_initializers(model.graph)
    in_place = _in_place(model, input_names, output_names)
    return model.SerializeToString(), in_place


def _has_branches(subdnn: SubDNN) -> bool:
    return '"scf.if"' in subdnn.ir_text


_ARMS = ("then_branch", "else_branch")


def sink_arm_initializers(graph) -> int:
    """Move each initializer of `graph` that one `If` arm reads, and nothing else, into that
    arm's subgraph (then the same inside the arms, for nested ifs); returns how many moved.
    An initializer nothing reads is dropped (the exporter leaves one beside an If, and
    ONNX Runtime warns about it on every load)."""
    readers: dict[str, set] = {}
    for k, node in enumerate(graph.node):
        for name in node.input:
            readers.setdefault(name, set()).add((k, None))
        for attr in node.attribute:
            arm = attr.name if node.op_type == "If" and attr.name in _ARMS else None
            for sub in (*([attr.g] if attr.type == attr.GRAPH else []), *attr.graphs):
                for name in outer_names(sub):  # another op's subgraph (a Loop) pins it
                    readers.setdefault(name, set()).add((k, arm))
    for output in graph.output:
        readers.setdefault(output.name, set()).add((-1, None))
    moved = 0
    for init in list(graph.initializer):
        if init.name not in readers:
            graph.initializer.remove(init)
            continue
        (reader, *others) = readers[init.name]
        k, arm = reader
        if others or arm is None:
            continue
        subgraph = next(a.g for a in graph.node[k].attribute if a.name == arm)
        subgraph.initializer.append(init)
        graph.initializer.remove(init)
        moved += 1
    for node in graph.node:
        for attr in node.attribute:
            if attr.name in _ARMS and node.op_type == "If":
                moved += sink_arm_initializers(attr.g)
    return moved


def export_onnx(program, opset: int | None, input_names: list[str], output_names: list[str]):
    """`torch.onnx.export(program, dynamo=True)` with the op registry built once per process.

    The public entry point rebuilds the registry of torchlib translations on every call:
    ~1.5 s, three quarters of a small sub-DNN's export. The exporter only reads it, so one
    registry per opset serves every export. The exporter's progress and deprecation
    chatter is silenced (a compile of 40 sub-DNNs must not flood the terminal); its
    errors still arrive as exceptions.
    """
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with warnings.catch_warnings(), _quiet():
        warnings.simplefilter("ignore")
        return _export_onnx(program, opset, input_names, output_names)


def _export_onnx(program, opset, input_names, output_names):
    import torch

    try:
        from torch.onnx import _constants as onnx_constants
        from torch.onnx._internal.exporter import _constants, _core
    except ImportError:  # a torch whose private layout moved: take the slow public path
        return torch.onnx.export(
            program, (), dynamo=True, verbose=False, opset_version=opset,
            input_names=input_names, output_names=output_names,
        )
    opset = opset or onnx_constants.ONNX_DEFAULT_OPSET
    return _core.export(
        program,
        registry=_registry(max(opset, _constants.TORCHLIB_OPSET)),
        input_names=input_names,
        output_names=output_names,
        opset_version=opset,
        verbose=False,
    )


@functools.cache
def _registry(opset: int):
    from torch.onnx._internal.exporter import _registration

    return _registration.ONNXRegistry.from_torchlib(opset_version=opset)


_NO_TRANSLATION = re.compile(r"No ONNX function found for <OpOverload\(op='([\w.]+)', overload='(\w+)'\)>")


def _check_with_session(subdnn: SubDNN, model_bytes: bytes) -> tuple[list[str], list[str]]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    try:
        session = ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
    except Exception as err:
        text = str(err)
        op = _onnx_op_in(text)
        raise BackendError(NAME, subdnn.name, f"ONNX Runtime rejected the model: {_summary(text)}", op) from err
    return [i.name for i in session.get_inputs()], [o.name for o in session.get_outputs()]


def _onnx_op_in(text: str) -> str | None:
    match = re.search(r"op_type[:=]\s*\"?(\w+)", text) or re.search(r"for (\w+)\(\d+\) node", text)
    return f"onnx.{match.group(1)}" if match else None


def _summary(text: str, limit: int = 600) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    # torch.onnx puts the useful sentence near the end of a long report.
    useful = [line for line in lines if "Error" in line or "error" in line or "not" in line]
    summary = " | ".join((useful or lines)[-3:])
    return summary[:limit]


def _quiet():
    """Silence stdout while the exporter runs (it prints progress even with verbose=False)."""
    import contextlib
    import os

    stack = contextlib.ExitStack()
    devnull = stack.enter_context(open(os.devnull, "w"))
    stack.enter_context(contextlib.redirect_stdout(devnull))
    return stack
