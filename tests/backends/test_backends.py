"""Backends compile sub-DNNs, name the op they cannot take, cache by content."""


import numpy as np
import pytest

from dycl.backends import BackendError, compile_subdnns, subdnns_of
from dycl.backends.cache import cache_key
from dycl.ir import make_context, parse_module
from dycl.passes.pipeline import PipelinePass
from tests.backends.test_fx_rebuild import one_op_subdnn
from tests.foundation.samples import SAMPLES


@pytest.mark.parametrize(
    "backend, op",
    [("onnxruntime", "torch.aten.linalg_matrix_exp"), ("tvm", "torch.aten.special_i0e")],
)
def test_unsupported_op_fails_clearly(backend, op, tmp_path):
    with pytest.raises(BackendError) as info:
        compile_subdnns([one_op_subdnn(op)], {}, backend, cache_dir=tmp_path, progress=False)
    error = info.value
    assert error.op == op and error.subdnn == "subdnn_7" and error.backend == backend
    assert f"op {op} is not supported" in str(error)


def test_unknown_backend_and_option():
    with pytest.raises(ValueError, match="unknown backend 'xla'"):
        compile_subdnns([], {}, "xla")
    with pytest.raises(TypeError, match="unknown tvm backend option"):
        compile_subdnns([], {}, "tvm", {"tune_minutes": 3})


def hcfg_subdnns(sample="gated_loop"):
    module = parse_module(SAMPLES[sample])
    PipelinePass().apply(make_context(), module)
    return list(subdnns_of(module))


def test_cache_hit_and_damage_is_a_miss(sample_weights, tmp_path):
    subdnns = hcfg_subdnns()
    first = compile_subdnns(subdnns, sample_weights, "tvm", cache_dir=tmp_path, progress=False)
    assert not any(c.cached for c in first.values())
    second = compile_subdnns(subdnns, sample_weights, "tvm", cache_dir=tmp_path, progress=False)
    assert all(c.cached for c in second.values())
    assert {n: c.files for n, c in first.items()} == {n: c.files for n, c in second.items()}
    # Damage one cached library: that entry is recompiled, never served broken.
    victim = next(tmp_path.glob("tvm/*/*/*.so"))
    victim.write_bytes(b"garbage")
    third = compile_subdnns(subdnns, sample_weights, "tvm", cache_dir=tmp_path, progress=False)
    assert sum(not c.cached for c in third.values()) == 1


def test_cache_key_depends_on_weights_and_options(sample_weights):
    (subdnn, *_) = hcfg_subdnns("early_exit")
    weights = {k: v.numpy() for k, v in sample_weights.items()}
    content = subdnn.content_key(weights)
    changed = {**weights, "fc.bias": weights["fc.bias"] + 1}
    assert subdnn.content_key(changed) != content
    assert cache_key(content, "tvm", {"target": "llvm"}) != cache_key(content, "tvm", {"target": "c"})
    assert cache_key(content, "tvm", {}) != cache_key(content, "onnxruntime", {})


@pytest.mark.slow  # two worker start-ups (torch import + first export warm-up each)
def test_worker_pool_compiles_the_same_files(sample_weights, tmp_path):
    subdnns = hcfg_subdnns()
    serial = compile_subdnns(subdnns, sample_weights, "tvm", jobs=1, cache_dir=tmp_path / "a", progress=False)
    pooled = compile_subdnns(subdnns, sample_weights, "tvm", jobs=2, cache_dir=tmp_path / "b", progress=False)
    assert list(pooled) == [s.name for s in subdnns]
    for name in serial:
        assert serial[name].meta == pooled[name].meta
        assert np.frombuffer(pooled[name].files[f"{name}.so"], np.uint8).size > 0


@pytest.mark.slow  # a second pool start-up (~10-25 s on 2 busy cores)
def test_worker_pool_reports_backend_errors(tmp_path):
    bad = [one_op_subdnn("torch.aten.special_i0e"), one_op_subdnn("torch.aten.relu")]
    with pytest.raises(BackendError, match="special_i0e"):
        compile_subdnns(bad, {}, "tvm", jobs=2, cache_dir=tmp_path, progress=False)


T23 = "!torch.vtensor<[2,3],f32>"
PASSTHROUGH = f'''"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({T23}, {T23}) -> ({T23}, {T23}, {T23}, {T23})}}> ({{
  ^bb0(%x: {T23}, %unused: {T23}):
    %a, %b, %c, %d = "func.call"(%x, %unused) <{{callee = @subdnn_0}}> : ({T23}, {T23}) -> ({T23}, {T23}, {T23}, {T23})
    "func.return"(%a, %b, %c, %d) : ({T23}, {T23}, {T23}, {T23}) -> ()
  }}) : () -> ()
  "func.func"() <{{sym_name = "subdnn_0", function_type = ({T23}, {T23}) -> ({T23}, {T23}, {T23}, {T23}), sym_visibility = "private"}}> ({{
  ^bb0(%x: {T23}, %unused: {T23}):
    %y = "torch.aten.relu"(%x) : ({T23}) -> {T23}
    "func.return"(%x, %y, %y, %x) : ({T23}, {T23}, {T23}, {T23}) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()'''


@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
def test_unused_arguments_and_repeated_or_passed_through_results(backend):
    from dycl.api import compile_module

    compiled = compile_module(parse_module(PASSTHROUGH), {}, backend, run_pipeline=False, progress=False)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for actual, expected in zip(compiled(x, x), (x, np.maximum(x, 0), np.maximum(x, 0), x)):
        np.testing.assert_array_equal(actual, expected)
