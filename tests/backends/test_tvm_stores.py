"""Stores at index tensors on TVM (`dycl.backends.tvm_stores`): `hx[idx] = v` and
`accum[idx] += h` with `idx` of a runtime length (a `?` dim: `mask.nonzero().squeeze(1)`),
of length 0 and 1, at the dims PyTorch's indexing puts anywhere, with negative and duplicate
indices. Each sub-DNN is compiled by the TVM backend and run on its runtime; the reference
is PyTorch's own `index_put`. Relax's `index_put` failed to compile the first (an index of
a symbolic length) and the second (an index of static length 0)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dycl.backends import compile_subdnns, subdnns_of
from dycl.ir import parse_module
from dycl.runtime import RuntimeOptions
from dycl.runtime.runners import tvm_runner

pytestmark = pytest.mark.slow

V = "!torch.vtensor"


def _store(name: str, data: str, indices: list[str | None], values: str, accumulate: bool) -> str:
    """A sub-DNN `@name(data, *index tensors, values) -> index_put(data, indices, values)`;
    a None index takes its dim whole."""
    given = [i for i in indices if i is not None]
    arguments = ", ".join([f"%data: {V}<{data}>", *[f"%i{k}: {V}<{s},si64>" for k, s in enumerate(given)], f"%v: {V}<{values}>"])
    types = ", ".join([f"{V}<{data}>", *[f"{V}<{s},si64>" for s in given], f"{V}<{values}>"])
    operands, operand_types, k = [], [], 0
    for index in indices:
        if index is None:
            operands.append("%none")
            operand_types.append("!torch.none")
        else:
            operands.append(f"%i{k}")
            operand_types.append(f"{V}<{index},si64>")
            k += 1
    return f'''
  "func.func"() <{{sym_name = "{name}", function_type = ({types}) -> {V}<{data}>, sym_visibility = "private"}}> ({{
  ^bb0({arguments}):
    %none = "torch.constant.none"() : () -> !torch.none
    %list = "torch.prim.ListConstruct"({", ".join(operands)}) : ({", ".join(operand_types)}) -> !torch.list<optional<vtensor>>
    %acc = "torch.constant.bool"() <{{value = {"true" if accumulate else "false"}}}> : () -> !torch.bool
    %r = "torch.aten.index_put"(%data, %list, %v, %acc) : ({V}<{data}>, !torch.list<optional<vtensor>>, {V}<{values}>, !torch.bool) -> {V}<{data}>
    "func.return"(%r) : ({V}<{data}>) -> ()
  }}) {{dycl.subdnn}} : () -> ()'''


STORES = {
    # name: (data, indices, values, accumulate)
    "rows": ("[5,4],f32", ["[?]"], "[?,4],f32", False),  # hx[idx] = rnn_cell(x[idx], hx[idx])
    "rows_added": ("[5,4],f32", ["[?]"], "[?,4],f32", True),  # accum[idx] += h
    "one_row": ("[5,4],f32", ["[1]"], "[4],f32", False),  # a single live row (its values squeezed)
    "no_row": ("[5,4],f32", ["[0]"], "[0,4],f32", True),  # no live row
    "scalar": ("[5],f32", ["[?]"], "[],f32", False),  # x[idx] = 0.5
    "columns": ("[3,5,2],f32", [None, "[?]"], "[3,?,2],f32", True),  # x[:, idx] += v
    "pairs": ("[4,5,3],f32", ["[?]", "[?]"], "[?,3],f32", True),  # x[i, j] += v
    "apart": ("[4,5,3],f32", ["[?]", None, "[?]"], "[?,5],f32", False),  # x[i, :, j] = v (index dims first)
    "runtime_rows": ("[?,4],f32", ["[?]"], "[?,4],f32", False),  # from the end of a dim known at run time
}


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    directory = tmp_path_factory.mktemp("stores")
    module = parse_module('"builtin.module"() ({' + "".join(_store(n, *s) for n, s in STORES.items()) + "\n}) : () -> ()")
    subdnns = list(subdnns_of(module))
    compiled = compile_subdnns(subdnns, {}, "tvm", cache_dir=directory / "cache", progress=False, jobs=1)
    made = {}
    for name, result in compiled.items():
        (file, data), = result.files.items()
        (directory / file).write_bytes(data)
        made[name] = tvm_runner(directory / file, result.meta, RuntimeOptions(threads=1))
    return made


def _expected(data, indices, values, accumulate):
    torch_indices = [None if i is None else torch.from_numpy(i) for i in indices]
    return torch.ops.aten.index_put(torch.from_numpy(data), torch_indices, torch.from_numpy(values), accumulate).numpy()


def _check(runners, name, data, indices, values):
    accumulate = STORES[name][3]
    got = runners[name](data, *[i for i in indices if i is not None], values)[0]
    np.testing.assert_array_equal(got, _expected(data, indices, values, accumulate))


RNG = np.random.default_rng(0)


def _floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("idx", [[4, 0, 2], [1, 3], [0, 1, 2, 3, 4], [3, -1]])
def test_a_store_at_an_index_of_runtime_length(runners, idx):
    idx = np.array(idx, np.int64)
    _check(runners, "rows", _floats(5, 4), [idx], _floats(len(idx), 4))
    _check(runners, "rows_added", _floats(5, 4), [idx], _floats(len(idx), 4))
    _check(runners, "scalar", _floats(5), [idx], np.array(0.5, np.float32))


def test_an_added_store_sums_the_values_of_a_repeated_index(runners):
    _check(runners, "rows_added", _floats(5, 4), [np.array([1, 1, 3, 1], np.int64)], _floats(4, 4))


def test_stores_at_one_and_no_index(runners):
    _check(runners, "one_row", _floats(5, 4), [np.array([2], np.int64)], _floats(4))
    _check(runners, "no_row", _floats(5, 4), [np.zeros(0, np.int64)], _floats(0, 4))


def test_stores_at_index_tensors_of_other_dims(runners):
    _check(runners, "columns", _floats(3, 5, 2), [None, np.array([4, 0, 4], np.int64)], _floats(3, 3, 2))
    i, j = np.array([0, 3, 3], np.int64), np.array([1, 4, 4], np.int64)
    _check(runners, "pairs", _floats(4, 5, 3), [i, j], _floats(3, 3))
    _check(runners, "apart", _floats(4, 5, 3), [np.array([0, 2], np.int64), None, np.array([2, -3], np.int64)], _floats(2, 5))


def test_negative_indices_count_from_the_end_of_a_runtime_dim(runners):
    _check(runners, "runtime_rows", _floats(6, 4), [np.array([-1, 0, -6], np.int64)], _floats(3, 4))


@pytest.mark.parametrize("name, indices, values", [
    ("rows", [[0, 1]], (3, 4)),  # more values than indices
    ("rows", [[0, 1, 2]], (2, 4)),  # fewer
    ("rows_added", [[0, 1, 2, 3]], (2, 4)),
    ("pairs", [[0, 1, 2], [1, 2]], (3, 3)),  # index tensors of different lengths
    ("pairs", [[0, 1], [1, 2, 3]], (2, 3)),
    ("no_row", [[]], (0, 4)),
])
def test_sizes_that_do_not_match_raise_as_eager_does(runners, name, indices, values):
    """The values' rows and the index lengths are separate runtime dims of the sub-DNN:
    checked when it runs, where eager raises too, never a store of garbage or a cut index."""
    data = _floats(*[int(d) for d in STORES[name][0].split("]")[0][1:].replace("?", "5").split(",")])
    indices = [np.array(i, np.int64) for i in indices]
    if name == "no_row":
        indices, values = [np.zeros(0, np.int64)], (2, 4)  # (rows where none can go)
    values = _floats(*values)
    with pytest.raises((RuntimeError, IndexError)):
        _expected(data, indices, values, STORES[name][3])
    with pytest.raises(Exception, match="(?i)mismatch|check failed"):
        runners[name](data, *indices, values)
