"""Which outputs of an ONNX sub-DNN may be written into an input's buffer, and a rewrite that
makes more of them so.

A KV cache write (`k_out[:, :, input_pos] = k_val`, an `index_put` on a sub-DNN argument)
exports as `Transpose(cache) -> ScatterND -> Transpose`: the indexed dim is moved to the
front and back, two copies of the whole cache per write. `write_scatters_in_place` rewrites
that into one scatter on the argument itself (a `ScatterND` of the slices after the indexed
dim), whose work is the written rows. ONNX Runtime's scatter kernels copy their data input into their output
only when the two are different buffers, so an output bound to the argument's own buffer is
written where it lies (`dycl.runtime.runners`: the manifest's `in_place`).

`in_place_pairs` is the fact the runtime relies on: output `j` may share input `i`'s buffer
when a scatter at the top level of the graph computes it from graph input `i` and nothing
else in the graph reads that input (no other node, no subgraph, no graph output): then no
op can read the input after the scatter wrote it, whatever order ONNX Runtime runs them in.
"""

from __future__ import annotations

from collections.abc import Sequence

SCATTERS = ("ScatterND", "ScatterElements")


def in_place_pairs(graph, input_names: Sequence[str | None], output_names: Sequence[str]) -> list[list[int]]:
    """[[output position, input position], ...]: outputs that may be written into an input's
    buffer, by the rule above; positions index `output_names` and `input_names`."""
    readers = _readers(graph)
    graph_outputs = [o.name for o in graph.output]
    graph_inputs = {i.name for i in graph.input}
    producers = {out: node for node in graph.node for out in node.output}
    pairs = []
    for j, name in enumerate(output_names):
        node = producers.get(name)
        if node is None or node.op_type not in SCATTERS or graph_outputs.count(name) != 1:
            continue
        data = node.input[0]
        if data not in graph_inputs or data not in input_names or data in graph_outputs:
            continue
        if readers.get(data) != [node] or list(node.input).count(data) != 1:
            continue
        pairs.append([j, list(input_names).index(data)])
    return pairs


def _readers(graph) -> dict[str, list]:
    """name -> the top-level nodes that read it (a node whose subgraph reads an outer name
    counts as a reader of it, once per reference)."""
    readers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            if name:
                readers.setdefault(name, []).append(node)
        for attr in node.attribute:
            for sub in (*([attr.g] if attr.type == attr.GRAPH else []), *attr.graphs):
                for name in outer_names(sub):
                    readers.setdefault(name, []).append(node)
    return readers


def outer_names(graph) -> set[str]:
    """The names `graph` (a subgraph, nested ones included) reads from enclosing scopes."""
    defined = {v.name for v in graph.input} | {i.name for i in graph.initializer}
    used: set[str] = set()
    for node in graph.node:
        used.update(n for n in node.input if n)
        for attr in node.attribute:
            if attr.type == attr.GRAPH:
                used |= outer_names(attr.g)
            for sub in attr.graphs:
                used |= outer_names(sub)
        defined.update(node.output)
    used.update(v.name for v in graph.output)
    return used - defined


def write_scatters_in_place(model) -> int:
    """Rewrite each `Transpose(x, p) -> ScatterND(·, i, u) -> Transpose(·, p⁻¹)` of the top
    graph, where `x` is a graph input, `i` indexes one dim (shape [n, 1]) and no other node
    reads the intermediate values, into one scatter on `x` along `axis = p[0]`, of `u'`, `u`
    in `x`'s layout (the transpose the exporter put on it, undone): a `ScatterND` whose
    indices address the slices after `axis` (`_slices_along`) when the dims before it are
    static, else a `ScatterElements` (`_elements_along`, one index per element: slower).
    Same values (ScatterND's `reduction` carried over), written in `x`'s layout. Returns how
    many were rewritten."""
    import onnx
    from onnx import helper

    graph = model.graph
    if not any(n.op_type == "ScatterND" for n in graph.node):
        return 0
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
    except Exception:  # noqa: BLE001 - no shapes, no rewrite: the scatter stays as exported
        return 0
    shapes = {v.name: _dims(v) for v in [*inferred.value_info, *inferred.input, *inferred.output]}
    graph_inputs = {i.name for i in graph.input}
    graph_outputs = {o.name for o in graph.output}
    rewritten = 0
    for scatter in [n for n in graph.node if n.op_type == "ScatterND"]:
        readers = _readers(graph)
        producers = {out: node for node in graph.node for out in node.output}
        data, indices, updates = scatter.input
        before = producers.get(data)
        after = readers.get(scatter.output[0], [])
        if before is None or before.op_type != "Transpose" or before.input[0] not in graph_inputs:
            continue
        if readers.get(data) != [scatter] or data in graph_outputs or scatter.output[0] in graph_outputs:
            continue
        if len(after) != 1 or after[0].op_type != "Transpose":
            continue
        (back,) = after
        perm = _perm(before)
        if perm is None or _perm(back) != _inverse(perm):
            continue
        index_shape = shapes.get(indices)
        if index_shape is None or len(index_shape) != 2 or index_shape[1] != 1:
            continue
        axis, inverse = perm[0], _inverse(perm)
        nodes: list = []
        source = producers.get(updates)
        if (source is not None and source.op_type == "Transpose" and _perm(source) == perm
                and readers.get(updates) == [scatter] and updates not in graph_outputs):
            laid_out = source.input[0]  # the exporter transposed the updates: undo it by not doing it
            graph.node.remove(source)
        else:
            laid_out = f"{scatter.output[0]}_updates"
            nodes.append(helper.make_node("Transpose", [updates], [laid_out], perm=inverse))
        reduction = [a.s.decode() for a in scatter.attribute if a.name == "reduction"]
        extra = {"reduction": reduction[0]} if reduction and reduction[0] != "none" else {}
        lead = (shapes.get(before.input[0]) or [None])[:axis]
        name = scatter.output[0]
        if None not in lead and _opset(model) >= 15:
            nodes += _slices_along(name, indices, lead, graph.initializer)
            nodes.append(helper.make_node("ScatterND", [before.input[0], f"{name}_index", laid_out],
                                          [back.output[0]], **extra))
        else:
            nodes += _elements_along(name, indices, laid_out, len(perm), axis, graph.initializer)
            nodes.append(helper.make_node("ScatterElements", [before.input[0], f"{name}_index", laid_out],
                                          [back.output[0]], axis=axis, **extra))
        for old in (before, scatter, back):
            graph.node.remove(old)
        graph.node.extend(nodes)
        rewritten += 1
    if rewritten:
        _sort_topologically(graph)
    return rewritten


def _sort_topologically(graph) -> None:
    """Order the nodes so that each comes after the producers of what it reads (ONNX's rule),
    keeping the present order where it already holds."""
    produced = {out for node in graph.node for out in node.output}
    ready = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    pending, ordered = list(graph.node), []
    while pending:
        for k, node in enumerate(pending):
            needs = {n for n in node.input if n} | outer_names_of(node)
            if all(n in ready or n not in produced for n in needs):
                ordered.append(pending.pop(k))
                ready.update(node.output)
                break
        else:
            raise ValueError("the rewritten ONNX graph has a cycle")
    del graph.node[:]
    graph.node.extend(ordered)


def outer_names_of(node) -> set[str]:
    names: set[str] = set()
    for attr in node.attribute:
        for sub in (*([attr.g] if attr.type == attr.GRAPH else []), *attr.graphs):
            names |= outer_names(sub)
    return names


def _slices_along(name: str, indices: str, lead: Sequence[int], initializers) -> list:
    """Nodes computing `{name}_index`: for index `i` of shape [n, 1] along dim `a =
    len(lead)` of a tensor whose first `a` dims are `lead`, the ScatterND indices of shape
    lead + [n, a + 1] whose tuples (j_0, ..., j_{a-1}, i[s]) address the slices after dim a."""
    import numpy as np
    from onnx import helper, numpy_helper

    axis = len(lead)

    def constant(suffix: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(value.astype(np.int64), f"{name}_{suffix}"))
        return f"{name}_{suffix}"

    nodes = [
        helper.make_node("Shape", [indices], [f"{name}_count"], start=0, end=1),
        helper.make_node("Reshape", [indices, constant("column_shape", np.array([1] * axis + [-1, 1]))],
                         [f"{name}_column"]),
        helper.make_node("Concat", [constant("lead", np.array(lead)), f"{name}_count", constant("one", np.array([1]))],
                         [f"{name}_column_size"], axis=0),
        helper.make_node("Expand", [f"{name}_column", f"{name}_column_size"], [f"{name}_positions"]),
    ]
    if not axis:
        return [*nodes, helper.make_node("Identity", [f"{name}_positions"], [f"{name}_index"])]
    grid = np.stack(np.meshgrid(*[np.arange(d) for d in lead], indexing="ij"), -1).reshape(*lead, 1, axis)
    return nodes + [
        helper.make_node("Concat", [constant("lead_2", np.array(lead)), f"{name}_count",
                                    constant("lead_rank", np.array([axis]))], [f"{name}_grid_size"], axis=0),
        helper.make_node("Expand", [constant("grid_values", grid), f"{name}_grid_size"], [f"{name}_grid"]),
        helper.make_node("Concat", [f"{name}_grid", f"{name}_positions"], [f"{name}_index"], axis=-1),
    ]


def _elements_along(name: str, indices: str, updates: str, rank: int, axis: int, initializers) -> list:
    """Nodes computing `{name}_index`: index `i` of shape [n, 1] along `axis`, expanded to the
    shape of `updates` (ScatterElements' indices)."""
    import numpy as np
    from onnx import helper, numpy_helper

    along = [1] * rank
    along[axis] = -1
    initializers.append(numpy_helper.from_array(np.array(along, dtype=np.int64), f"{name}_index_shape"))
    return [
        helper.make_node("Reshape", [indices, f"{name}_index_shape"], [f"{name}_index_column"]),
        helper.make_node("Shape", [updates], [f"{name}_updates_shape"]),
        helper.make_node("Expand", [f"{name}_index_column", f"{name}_updates_shape"], [f"{name}_index"]),
    ]


def _opset(model) -> int:
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)


def _dims(value) -> list[int | None] | None:
    tensor = value.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]


def _perm(node) -> list[int] | None:
    for attr in node.attribute:
        if attr.name == "perm":
            return list(attr.ints)
    return None


def _inverse(perm: Sequence[int]) -> list[int]:
    inverse = [0] * len(perm)
    for k, p in enumerate(perm):
        inverse[p] = k
    return inverse
