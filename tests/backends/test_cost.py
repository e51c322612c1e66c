"""A sub-DNN's multiply-accumulate estimate, and the thread count the runtime derives."""

import torch
from torch import nn

from dycl.backends import subdnns_of
from dycl.frontend import import_module
from dycl.ir import make_context
from dycl.passes.pipeline import PipelinePass
from dycl.passes.single_thread import SingleThreadPass
from dycl.runtime.runners import SINGLE_THREAD_MACS, threads_for


class ConvThenLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, groups=1)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        y = torch.relu(self.depthwise(self.conv(x)))
        return self.fc(y.flatten(1)) @ torch.ones(10, 4)


def test_macs_count_convolutions_and_products():
    program = import_module(ConvThenLinear().eval(), (torch.randn(1, 3, 8, 8),))
    PipelinePass().apply(make_context(), program.module)
    (subdnn,) = subdnns_of(program.module)
    conv = 8 * 8 * 8 * (3 * 3 * 3)  # output elements x (Cin/groups x kh x kw)
    depthwise = 8 * 8 * 8 * (1 * 3 * 3)
    linear = 10 * 512
    matmul = 4 * 10
    assert subdnn.macs == conv + depthwise + linear + matmul


def test_small_subdnns_run_on_one_thread():
    assert threads_for({"macs": SINGLE_THREAD_MACS - 1}, 4) == 1
    assert threads_for({"macs": SINGLE_THREAD_MACS}, 4) == 4
    assert threads_for({}, 4) == 4  # an artifact written before the estimate existed


def test_a_threads_record_caps_the_threads():
    # `dycl.threads` on a sub-DNN (dycl-single-thread sets it) becomes its record's "threads".
    assert threads_for({"macs": 10**9, "threads": 1}, 4) == 1
    assert threads_for({"macs": 10**9, "threads": 8}, 2) == 2
    assert threads_for({"macs": 10, "threads": 2}, 4) == 2  # over the small-sub-DNN rule too


def test_the_threads_attribute_reaches_the_subdnn_but_not_its_cache_key():
    program = import_module(ConvThenLinear().eval(), (torch.randn(1, 3, 8, 8),))
    PipelinePass().apply(make_context(), program.module)
    (plain,) = subdnns_of(program.module)
    SingleThreadPass(max_macs=plain.macs + 1).apply(make_context(), program.module)
    (marked,) = subdnns_of(program.module)
    assert (plain.threads, marked.threads) == (None, 1)
    assert marked.ir_text == plain.ir_text  # how it runs is not what it computes


def test_a_compiled_model_runs_its_small_subdnns_on_one_thread(compiled_samples):
    from dycl.runtime import CompiledModel

    compiled = compiled_samples("early_exit")  # a few small linear layers
    model = CompiledModel(compiled.directory, threads=2)
    assert model.subdnn_calls
    for runner in model.subdnn_calls.values():
        assert runner.session.get_session_options().intra_op_num_threads == 1


def product(k: int, n: int) -> str:
    """The IR of `x @ w`, x of 1 x k and w a k x n weight: k * n multiply-accumulates a row."""
    return f"""
"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = (!torch.vtensor<[1,{k}],f32>) -> !torch.vtensor<[1,{n}],f32>}}> ({{
  ^bb0(%x: !torch.vtensor<[1,{k}],f32>):
    %w = "dycl.param"() {{name = "w"}} : () -> !torch.vtensor<[{k},{n}],f32>
    %y = "torch.aten.mm"(%x, %w) : (!torch.vtensor<[1,{k}],f32>, !torch.vtensor<[{k},{n}],f32>) -> !torch.vtensor<[1,{n}],f32>
    "func.return"(%y) : (!torch.vtensor<[1,{n}],f32>) -> ()
  }}) : () -> ()
}}) : () -> ()
"""


def test_dycl_single_thread_reaches_the_onnx_runtime_session():
    import numpy as np

    from dycl.api import compile_module
    from dycl.ir import parse_module

    weights = {"w": np.random.default_rng(0).standard_normal((1024, 2048), dtype=np.float32)}
    threads = {}
    for passes in ("dycl-pipeline", "dycl-pipeline,dycl-single-thread{max-macs=10000000}"):
        compiled = compile_module(parse_module(product(1024, 2048)), weights, passes=passes, threads=2, progress=False)
        (record,) = compiled.manifest["subdnns"]
        assert record["macs"] == 1024 * 2048 > SINGLE_THREAD_MACS
        (runner,) = compiled.subdnn_calls.values()
        threads[passes] = runner.session.get_session_options().intra_op_num_threads
    assert list(threads.values()) == [2, 1]


def test_a_batched_call_of_a_small_subdnn_runs_on_every_thread_once_it_is_big_enough():
    """One row of a 1 M-MAC product runs on one thread; run_many's batched calls of it run on
    both threads from WIDE_BATCH_MACS in all, with the same answers."""
    import numpy as np

    from dycl.api import compile_module
    from dycl.ir import parse_module
    from dycl.runtime.runners import WIDE_BATCH_MACS

    rng = np.random.default_rng(0)
    w = rng.standard_normal((1024, 1024), dtype=np.float32)
    compiled = compile_module(parse_module(product(1024, 1024)), {"w": w}, threads=2, progress=False)
    (record,) = compiled.manifest["subdnns"]
    assert record["batchable"] and record["macs"] == 1024 * 1024 < SINGLE_THREAD_MACS
    (runner,) = compiled.subdnn_calls.values()
    assert runner.session.get_session_options().intra_op_num_threads == 1
    wide_rows = -(-WIDE_BATCH_MACS // record["macs"])
    requests = [(rng.standard_normal((1, 1024), dtype=np.float32),) for _ in range(wide_rows - 1)]
    compiled.run_many(requests)
    assert runner.wide_session is None  # one row short: still one thread
    requests.append((rng.standard_normal((1, 1024), dtype=np.float32),))
    answers = compiled.run_many(requests)
    assert compiled.batch_stats[record["name"]]["backend_calls"] == 2
    assert runner.wide_session.get_session_options().intra_op_num_threads == 2
    for (x,), y in zip(requests, answers):
        np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-4)
