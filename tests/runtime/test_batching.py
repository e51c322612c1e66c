"""The scheduler's join of a batched call's arguments (dycl/runtime/batching.py `rows_of`):
the same rows as `np.concatenate`, and no copy where they already lie side by side."""

from __future__ import annotations

import numpy as np
import pytest

from dycl.runtime.batching import SPAN_BYTES, ArgumentsDiffer, RowPool, Scheduler, rows_of


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


def test_a_batched_calls_results_go_back_to_each_call_by_its_row_count():
    """One row a call (numpy cuts all rows at once) and mixed counts (a slice per call):
    each call gets its own rows of every output, as views of it, 1-D outputs included."""
    scores = np.arange(12, dtype=np.float32).reshape(6, 2).copy()
    words = np.arange(6, dtype=np.int64)
    ones = [(k, (np.empty((1, 3)),)) for k in range(6)]
    mixed = [(7, (np.empty((2, 3)),)), (8, (np.empty((1, 3)),)), (9, (np.empty((3, 3)),))]
    for calls, cuts in ((ones, [0, 1, 2, 3, 4, 5, 6]), (mixed, [0, 2, 3, 6])):
        answers = Scheduler.split(calls, [scores, words])
        assert [index for index, _ in answers] == [index for index, _ in calls]
        for (_, (row_scores, row_words)), start, stop in zip(answers, cuts, cuts[1:]):
            assert np.array_equal(row_scores, scores[start:stop]) and row_scores.base is scores
            assert np.array_equal(row_words, words[start:stop]) and row_words.base is words


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


ROW = SPAN_BYTES // 4  # floats in one big row


def _decoder(steps_of: list[int], given: list, returns_its_features: bool = False):
    """Requests like a captioner's decoder: each gives the same big `features` row at every
    step, with a small state the step returns, and stops after its own number of steps.
    `given` records each batched call's features argument (a copy: the call's own view)."""

    def step(features, state):
        given.append(features.copy())
        out = state + features[:, :1]
        return [features, out] if returns_its_features else [out]

    def program(k):
        features = np.full((1, ROW), float(k + 1), np.float32)
        state = np.zeros((1, 1), np.float32)
        held = []
        for _ in range(steps_of[k]):
            outputs = yield ("step", (features, state))
            state = outputs[-1]
            held.append(outputs[0])
        return state, held

    record = {"name": "step", "batchable": True, "row_bytes": SPAN_BYTES}
    return [program(k) for k in range(len(steps_of))], {"step": step}, [record]


def test_a_decoders_features_are_copied_once_and_then_only_moved_where_requests_stopped():
    """Once a request stops, the features of those that go on no longer lie side by side in
    the array they came from; the row pool copies each once, and afterwards moves only the
    rows past the end into the stopped requests' places. Every call still reads each
    request's own features in the row of its state, and each request gets its own answer."""
    steps_of = [5, 2, 5, 3, 4, 5, 1, 5]
    given: list = []
    programs, calls, records = _decoder(steps_of, given)
    scheduler = Scheduler(calls, records, {})
    copied = []
    place = RowPool.place

    def counting(pool, chunk):
        before = dict(pool.held)
        placed = place(pool, chunk)
        copied.append(sum(before.get(i, (len(chunk),))[0] >= len(chunk) for i, _ in chunk))
        return placed

    RowPool.place = counting
    try:
        results = scheduler.run(programs)
    finally:
        RowPool.place = place
    for k, (state, _) in enumerate(results):
        assert float(state[0, 0]) == steps_of[k] * (k + 1)
    # calls of 8, 7, 6, 5, 4 rows; each call's features, row by row, are live requests' own
    assert [len(g) for g in given] == [8, 7, 6, 5, 4]
    assert all(len(set(g[:, 0])) == len(g) and np.all(g == g[:, :1]) for g in given)
    # the first call reads its rows where they lie; then 7 rows are copied once; then the
    # last row moves into a stopped request's place twice; then the one that stopped is last
    assert copied == [7, 1, 1, 0]


def test_a_step_that_hands_back_its_features_keeps_them_from_the_pool():
    """A runner that returns its argument returns the pool's memory; the scheduler drops
    that pool, so what a request received is never written over by a later call."""
    steps_of = [4, 1, 4, 2, 4]
    programs, calls, records = _decoder(steps_of, [], returns_its_features=True)
    results = Scheduler(calls, records, {}).run(programs)
    for k, (state, held) in enumerate(results):
        assert float(state[0, 0]) == steps_of[k] * (k + 1)
        assert all(np.all(features == k + 1) for features in held)


def test_a_model_that_writes_an_argument_in_place_does_not_pool():
    """An in-place sub-DNN could change an array that a pool copied while its request
    still gives it: such a model joins its rows by copying them at every call."""
    programs, calls, records = _decoder([3, 1, 3], [])
    in_place = {"name": "other", "in_place": [[0, 0]]}
    scheduler = Scheduler(calls, [*records, in_place], {})
    results = scheduler.run(programs)
    assert scheduler.pools is None
    assert [float(state[0, 0]) for state, _ in results] == [3.0, 2.0, 9.0]
