"""ONNX Runtime thread pools of a loaded model: one pool per session by default; ORT's
process-wide pool with `RuntimeOptions(ort_thread_pool="shared")`, with the same results.

The shared pool is created once per process and then binds every later session of the
process, so that mode only ever runs in a subprocess here."""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dycl
from dycl.runtime import RuntimeOptions, runners
from tests.foundation.samples import inputs

SAMPLES = ("early_exit", "gated_loop")


def _sessions(model):
    return [run.session for run in model.subdnn_calls.values()]


def test_default_is_one_pool_per_session(compiled_samples):
    assert RuntimeOptions().ort_thread_pool == "session"
    assert runners.ort_global_pool() is None
    model = compiled_samples("early_exit")
    options = [s.get_session_options() for s in _sessions(model)]
    assert options and all(o.use_per_session_threads for o in options)
    # Below the one-thread threshold (these sub-DNNs are tiny) a session has no pool at all.
    assert all(o.intra_op_num_threads == 1 for o in options)


def test_shared_pool_holds_every_session_and_changes_no_result(compiled_samples, tmp_path):
    xs = np.stack([x.numpy() for x in inputs(12)])
    np.save(tmp_path / "xs.npy", xs)
    paths = {}
    for sample in SAMPLES:
        model = compiled_samples(sample)
        paths[sample] = model.save(tmp_path / sample)
        (tmp_path / f"{sample}-want.pkl").write_bytes(pickle.dumps([model(x) for x in xs]))
    script = textwrap.dedent(f"""
        import pickle
        import numpy as np, onnxruntime as ort, dycl
        from dycl.runtime import RuntimeOptions, runners

        def same(a, b):
            if isinstance(a, (tuple, list)):
                return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
            if isinstance(a, np.ndarray):
                return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
            return a == b

        runtime = RuntimeOptions(ort_thread_pool="shared")
        xs = np.load({str(tmp_path / "xs.npy")!r})
        for k, (sample, path) in enumerate({ {s: str(p) for s, p in paths.items()} !r}.items()):
            if k:  # the pool exists: a model loaded afterwards joins it whatever its options say
                runtime = RuntimeOptions(ort_thread_pool="session")
            model = dycl.load(path, threads=2, runtime=runtime)
            assert runners.ort_global_pool() == 2
            for run in model.subdnn_calls.values():
                assert run.session.get_session_options().use_per_session_threads is False
            with open({str(tmp_path)!r} + f"/{{sample}}-want.pkl", "rb") as stream:
                want = pickle.load(stream)
            assert same([model(x) for x in xs], want), sample
        # onnxruntime now refuses a session with its own pool in this process (why it is not
        # the default): the runtime never asks for one once the global pool exists.
        options = ort.SessionOptions()
        try:
            ort.InferenceSession(path + "/" + model.manifest["subdnns"][0]["file"], options,
                                 providers=["CPUExecutionProvider"])
        except Exception as err:
            assert "global thread pool" in str(err), err
        else:
            raise AssertionError("onnxruntime accepted a per-session pool after the global one")
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "ok"


def test_unknown_pool_mode_is_refused(compiled_samples):
    model = compiled_samples("early_exit")
    with pytest.raises(dycl.runtime.ArtifactError, match="ort_thread_pool"):
        dycl.load(model.directory, runtime=RuntimeOptions(ort_thread_pool="bogus"))


def test_each_tvm_model_runs_with_its_own_threads(compiled_samples):
    """TVM's pool is per calling thread: a runner sets its model's count on the thread that
    calls it, so a second model's threads no longer depend on which model came first."""
    import threading

    import tvm

    model = compiled_samples("early_exit", "tvm")
    x = inputs(1)[0].numpy()
    one, two = dycl.load(model.directory, threads=1), dycl.load(model.directory, threads=2)
    seen = []

    def calls():  # a fresh thread: its pool is created with the process-wide ceiling
        for m in (two, one, two):
            m(x)
            seen.append(tvm.runtime.num_threads())

    thread = threading.Thread(target=calls)
    thread.start()
    thread.join()
    both = min(2, int(os.environ["TVM_NUM_THREADS"]))
    assert seen == [both, 1, both]


def test_tvm_takes_only_row_major_buffers_without_a_copy():
    """numpy calls `x[:, None]` C-contiguous (a dim of size 1 may have any stride: here 0),
    TVM's compact check does not: such an input is copied (a host unsqueeze of a nonzero
    column failed TVM's call with "expected to be compact array")."""
    column = np.arange(5, dtype=np.int64)[:, None]
    assert column.flags.c_contiguous and column.strides[1] == 0
    assert not runners._compact(column)
    assert runners._compact(np.ascontiguousarray(np.arange(10).reshape(5, 2)))
    assert runners._compact(np.array(column, order="C", copy=True))
