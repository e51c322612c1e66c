"""host_overhead replays sub-DNN outputs: it counts the calls the host makes."""

from dycl.runtime.profile import host_overhead
from tests.foundation.samples import inputs


def test_host_overhead_counts_subdnn_calls(compiled_samples):
    model = compiled_samples("gated_loop", "tvm")
    x = inputs(1)[0].numpy()
    numbers = host_overhead(model, [x], repeat=5)
    # gated_loop: 4 iterations, each a gate sub-DNN and one branch sub-DNN
    assert numbers["subdnn_calls"] == 8
    assert 0 < numbers["host_us"] and numbers["per_subdnn_call_us"] * 8 == numbers["host_us"]
    assert model(x)[1] == model.rebind(model.subdnn_calls)(x)[1]  # rebinding keeps behaviour
