"""The scheduler's join of a batched call's arguments (dycl/runtime/batching.py `rows_of`):
the same rows as `np.concatenate`, and no copy where they already lie side by side."""

from __future__ import annotations

import numpy as np
import pytest

from dycl.runtime.batching import SPAN_BYTES, ArgumentsDiffer, Scheduler, rows_of


def _output(rows: int) -> np.ndarray:
    return np.random.default_rng(rows).standard_normal((rows, SPAN_BYTES // 4)).astype(np.float32)


def test_the_slices_a_batched_call_handed_out_join_back_without_a_copy():
    output = _output(8)
    slices = [output[k:k + 1] for k in range(8)]
    for column in (slices, slices[2:6], [output[0:3], output[3:4], output[4:8]]):
        joined = rows_of(column)
        assert np.shares_memory(joined, output)
        assert np.array_equal(joined, np.concatenate(column))


def test_rows_out_of_order_with_a_gap_or_from_two_calls_are_copied():
    output, other = _output(8), _output(8)
    slices = [output[k:k + 1] for k in range(8)]
    for column in (slices[::-1], slices[:2] + slices[3:5], [output[0:1], other[1:2]], [output[:, :4][0:1], output[:, :4][1:2]]):
        joined = rows_of(column)
        assert not np.shares_memory(joined, output)
        assert np.array_equal(joined, np.concatenate(column))


def test_a_batched_call_given_the_previous_ones_results_reads_them_where_they_lie():
    """Two batched calls in a row on the same requests: the second's arguments are the
    first's results, passed on as they were, so the second call reads the first's output
    itself; every request still gets its own answer."""
    given, returned = [], []

    def double(x):
        given.append(x)
        returned.append(x * 2)
        return [returned[-1]]

    def program(k):
        (y,) = yield ("double", (np.full((1, SPAN_BYTES // 4), float(k), np.float32),))
        (z,) = yield ("double", (y,))
        return z

    record = {"name": "double", "batchable": True, "row_bytes": SPAN_BYTES}
    stats: dict = {}
    results = Scheduler({"double": double}, [record], stats).run([program(k) for k in range(4)])
    assert [float(r[0, 0]) for r in results] == [0.0, 4.0, 8.0, 12.0]
    assert len(given) == 2 and given[1].base is returned[0]
    assert stats["double"]["mean_batch"] == 4


def test_calls_that_differ_in_dtype_or_a_dim_past_0_are_batched_by_kind():
    """Calls are joined without being sorted first; where they turn out to differ in dtype
    or in a dim past 0, they are batched kind by kind, never cast or padded to one."""
    seen = []

    def double(x):
        seen.append((x.dtype, x.shape))
        return [x * 2]

    def program(array):
        (y,) = yield ("double", (array,))
        return y

    arrays = [np.full((1, 3), 1.0, np.float32), np.full((2, 3), 2.0, np.float64), np.full((1, 4), 3.0, np.float32),
              np.full((1, 3), 4.0, np.float32), np.full((1, 3), 5.0, np.float64)]
    record = {"name": "double", "batchable": True, "row_bytes": 16}
    stats: dict = {}
    results = Scheduler({"double": double}, [record], stats).run([program(a) for a in arrays])
    for array, result in zip(arrays, results):
        assert result.dtype == array.dtype and np.array_equal(result, array * 2)
    assert sorted(seen, key=str) == sorted([(np.dtype(np.float32), (2, 3)), (np.dtype(np.float64), (3, 3)),
                                            (np.dtype(np.float32), (1, 4))], key=str)
    assert stats["double"] == {"requests": 5, "backend_calls": 3, "mean_batch": 5 / 3}


def test_rows_of_refuses_to_cast_or_to_join_other_dims():
    with pytest.raises(ArgumentsDiffer):
        rows_of([np.zeros((1, 3), np.float32), np.zeros((1, 3), np.float64)])
    with pytest.raises(ArgumentsDiffer):
        rows_of([np.zeros((1, 3), np.float32), np.zeros((1, 4), np.float32)])
