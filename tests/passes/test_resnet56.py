"""The pipeline on a ResNet-56-sized early-exit network (the zoo's SDN backbone and exits)
through the frontend: 7 static sub-DNNs, a host of flag reads, exact against eager."""

import pytest
import torch
import torch.nn.functional as F

from dycl.hcfg import HCFG
from dycl.interpreter import output_tree, run_function, unflatten
from tests.passes import support


@pytest.mark.slow
def test_sdn_resnet56_pipeline():
    from dycl.frontend import import_module
    from dycl.zoo import sdn, sdn_backbones

    class ExitResNet56(sdn.EarlyExitNetwork):
        # The zoo's forward ends with `torch.stack(confidences).argmax().item()`, which the
        # frontend does not take yet; this one returns the final head when no exit fires.
        def forward(self, x):
            for i, (segment, classifier) in enumerate(
                zip(self.segments, self.internal_classifiers)
            ):
                x = segment(x)
                logits = classifier(x)
                if F.softmax(logits, dim=1).max() >= self.threshold:
                    return logits, i
            return self.final_classifier(self.tail(x)), 6

    torch.manual_seed(0)
    model = ExitResNet56(sdn_backbones.resnet56(), threshold=0.15).eval()
    program = import_module(model, (torch.randn(1, 3, 32, 32),))
    after = support.apply("dycl-pipeline", program.module)
    support.check_hcfg(after)
    summary = HCFG.from_module(after).summary()
    assert summary.subdnn_count == 7 and summary.control_op_count == 6
    assert set(summary.host_ops) == {"torch.aten.Bool.Tensor", "torch_c.to_i1"}
    gen = torch.Generator().manual_seed(1)
    for scale in (0.1, 1.0, 10.0):
        x = torch.randn(1, 3, 32, 32, generator=gen) * scale
        got = run_function(after, [x], program.weights)
        assert support.same(got, run_function(program.module, [x], program.weights))
        with torch.no_grad():
            assert support.same(unflatten(output_tree(program.function), got), model(x))
