"""MetaSchedule tuning: a time budget, the database kept in the cache beside the library."""

import numpy as np
import pytest

from dycl.api import compile_module
from dycl.ir import parse_module

T = "!torch.vtensor<[16,16],f32>"
MATMUL = f'''"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({T}) -> ({T})}}> ({{
  ^bb0(%x: {T}):
    %y = "func.call"(%x) <{{callee = @subdnn_0}}> : ({T}) -> ({T})
    "func.return"(%y) : ({T}) -> ()
  }}) : () -> ()
  "func.func"() <{{sym_name = "subdnn_0", function_type = ({T}) -> ({T}), sym_visibility = "private"}}> ({{
  ^bb0(%x: {T}):
    %w = "dycl.param"() {{name = "w"}} : () -> {T}
    %y = "torch.aten.mm"(%x, %w) : ({T}, {T}) -> {T}
    "func.return"(%y) : ({T}) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()'''


@pytest.mark.slow  # MetaSchedule is slow here: minutes even for a tiny budget
def test_tuned_library_is_correct_and_tuning_database_is_cached(tmp_path):
    rng = np.random.default_rng(0)
    weights = {"w": rng.standard_normal((16, 16)).astype(np.float32)}
    compiled = compile_module(
        parse_module(MATMUL), weights, "tvm", run_pipeline=False, progress=False,
        cache_dir=tmp_path, tune_seconds=5, tune_trials_per_round=4,
    )
    assert compiled.manifest["subdnns"][0]["tuned"] is True
    x = rng.standard_normal((16, 16)).astype(np.float32)
    np.testing.assert_allclose(compiled(x), x @ weights["w"], rtol=1e-5, atol=1e-5)
    records = list((tmp_path / "tvm-tuning").rglob("database_tuning_record.json"))
    assert records and records[0].stat().st_size > 0
