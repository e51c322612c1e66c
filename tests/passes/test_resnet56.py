"""The pipeline on the zoo's SDN ResNet-56 (early exits, a host list of confidences)
through the frontend: 7 static sub-DNNs, a host of flag reads and list ops, exact on every
path against eager."""

import pytest
import torch

from dycl.hcfg import HCFG
from dycl.interpreter import output_tree, run_function, unflatten
from tests.passes import support


@pytest.mark.slow
def test_sdn_resnet56_pipeline():
    from dycl.frontend import import_module
    from dycl.zoo import REGISTRY

    entry = REGISTRY["sdn_resnet"]
    model = entry.build(0)
    program = import_module(model, entry.example_inputs())
    after = support.apply("dycl-pipeline", program.module)
    support.check_hcfg(after)
    summary = HCFG.from_module(after).summary()
    assert summary.subdnn_count == 7 and summary.control_op_count == 6
    assert set(summary.host_ops) <= {
        "torch.aten.Bool.Tensor", "torch_c.to_i1", "torch.aten.append.t",
        "torch.prim.ListConstruct", "torch.aten.item", "torch.aten.__getitem__.t",
    }
    exits = set()
    for inputs in entry.path_inputs():
        got = run_function(after, list(inputs), program.weights)
        assert support.same(got, run_function(program.module, list(inputs), program.weights))
        with torch.no_grad():
            want = model(*inputs)
        out = unflatten(output_tree(program.function), got)
        assert support.same(out, want)
        exits.add(out[1])
    assert exits == set(range(7))
