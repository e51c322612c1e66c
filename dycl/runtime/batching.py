"""Many requests through one compiled model: the scheduler of `CompiledModel.run_many`.

Each request runs its own host program, as a generator (`bind_stepwise` in host.py) that
stops at every sub-DNN call and yields `(sub-DNN name, arguments)`. The scheduler keeps
every request's pending call and, round by round, answers the calls of one sub-DNN:

- the sub-DNN picked is the one earliest in the program (the manifest lists sub-DNNs in
  first-call order), so that requests behind catch up with the ones ahead before those
  move on, and calls meet;
- if the compiler marked it batchable (manifest `"batchable"`: every op maps the rows of
  dim 0 independently, every input and output carries the rows at dim 0; the backend
  compiled it with a dynamic dim 0), the waiting calls whose arguments agree in dtype and
  in every dim but 0 are joined along dim 0 into one backend call (`rows_of`: a view where
  they already lie side by side, a copy otherwise), and its results split back by each
  request's row count;
- a big argument that requests give again call after call as the same array (a decoder's
  encoder features, at every step) is joined from a `RowPool` once those rows no longer lie
  side by side: the pool copies a row once and then only moves rows into the places that
  stopped requests left;
- a batched call takes at most `BATCH_BYTES // row_bytes` rows (the manifest's
  `"row_bytes"`: the sub-DNN's largest tensor per row), more calls if more wait, so that
  a call's memory stays bounded (below);
- any other sub-DNN runs request by request.

Which requests share a call changes nothing in the results: a batchable sub-DNN computes
each row from that row alone. `batch_stats` records the mean batch each sub-DNN got.

Given a `failures` mapping, one request's error is that request's alone: a host program
that raises stops there, and a batched call that raises is run again call by call, so the
error reaches only the requests whose own call fails and the others go on.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


BATCH_BYTES = 32 << 20
"""A batched call's largest tensor stays under this (this machine's L3 cache). It was 2 MiB
(the L2), from an SDN-MobileNet block at one thread: 0.13 ms per row at batch 1-8, 0.52 at
16, 0.59 at 32. At 2 threads, wall clock, bigger batches cost no more per row: a
Caption-ResNeXt encoder (512 KiB a row) took 1.25 / 1.18 / 1.14 / 1.15 ms per row at
4 / 8 / 16 / 32 rows. Against static batched ORT at N = 32 (one process, 31 rounds in ABBA
order, 2026-11-29), 2 / 8 MiB / no cap gave Caption-ResNeXt 0.85 / 0.91 / 0.91x, Caption-
GoogLeNet 0.87 / 0.93 / 0.95x, and SDN-MobileNet, SDN-ResNet and SkipNet-FF the same within
3%. The cap stays only to bound a call's memory when many requests wait."""

SPAN_BYTES = 64 << 10
"""Rows smaller than this are copied without looking for a span: reading an array's address
costs a few microseconds, about the copy of 16 KiB."""


class ArgumentsDiffer(ValueError):
    """The calls of one batched call do not agree in dtype or in a dim past 0."""


def rows_of(column: Sequence[np.ndarray]) -> np.ndarray:
    """The arrays of `column` joined along dim 0. Where they are consecutive rows of one
    array, in order (the slices a batched call handed its requests, given back by the same
    requests in the same order: a decoder's features and state, step after step), that is
    a view of those rows and nothing is copied; otherwise a copy. `ArgumentsDiffer` where
    they differ in dtype or in a dim past 0 (numpy checks that in the copy, no cast)."""
    first = column[0]
    view = _joined_view(column) if first.nbytes >= SPAN_BYTES else None
    if view is not None:
        return view
    try:
        return np.concatenate(column, axis=0, dtype=first.dtype, casting="no")
    except (ValueError, TypeError) as error:
        raise ArgumentsDiffer(str(error)) from error


def _joined_view(column: Sequence[np.ndarray]) -> np.ndarray | None:
    """`column` joined as a view of the array whose consecutive rows it is, if it is."""
    owner = column[0].base
    start = _first_row_in(owner, column)
    return None if start is None else owner[start:start + sum(a.shape[0] for a in column)]


def _first_row_in(owner: Any, column: Sequence[np.ndarray]) -> int | None:
    """Where `column` begins in the C-contiguous array `owner`, if it is whole rows of it,
    one after another (each array's address is read once: that is the costly part)."""
    first = column[0]
    dtype, shape = first.dtype, first.shape[1:]
    if not (type(owner) is np.ndarray and owner.flags.c_contiguous and owner.strides[0]
            and owner.shape[1:] == shape and owner.dtype == dtype
            and all(a.base is owner and a.shape[1:] == shape and a.dtype == dtype for a in column)):
        return None
    address = first.ctypes.data
    start, misaligned = divmod(address - owner.ctypes.data, owner.strides[0])
    if misaligned:
        return None
    for a in column:
        if a.ctypes.data != address or not a.flags.c_contiguous:
            return None
        address += a.nbytes
    return start


class RowPool:
    """A batchable sub-DNN's own copy of the big arguments (`columns`: positions in its
    argument list) that its requests give it call after call as the same array, one row per
    request, packed at the front of one buffer per argument.

    Once some requests have stopped, the rows of those that go on no longer lie side by
    side where they came from, and `rows_of` would copy every one of them at every call
    (Caption-ResNeXt: 192 KiB a row, 139 rows over one call of 32 requests). A pool copies
    a row once, when it first sees that array, and then only moves the rows past the end
    into the places the stopped requests left. The buffers are the scheduler's alone: a
    runner reads them during its call, and a result that shares their memory (a runner
    that hands back an argument) makes the scheduler drop the pool. Only models where no
    sub-DNN writes an argument in place (the manifest's `in_place`) pool: nothing can then
    change an array the pool copied while its request still gives it."""

    def __init__(self, columns: tuple[int, ...], args: Sequence[np.ndarray], capacity: int):
        self.columns = columns
        self.buffers = [np.empty((capacity, *args[k].shape[1:]), args[k].dtype) for k in columns]
        self.held: dict[int, tuple[int, tuple]] = {}  # request -> (its row, the arrays copied there)

    def fits(self, columns: tuple[int, ...], args: Sequence[np.ndarray], count: int) -> bool:
        """Whether this pool holds `columns` with room for `count` rows like those of `args`."""
        return columns == self.columns and count <= len(self.buffers[0]) and all(
            _rows_like(args[k], b) for k, b in zip(columns, self.buffers))

    def place(self, chunk: list[tuple[int, tuple]]) -> tuple[list[tuple[int, tuple]], dict[int, np.ndarray]] | None:
        """`chunk` in the order of its rows here and the held arguments joined (views of the
        buffers); None where an argument is not one row of a buffer's dtype and shape
        (`rows_of` then joins, or refuses, them). The pool `fits` the call."""
        count = len(chunk)
        rows: list = [None] * count
        held: dict[int, tuple[int, tuple]] = {}
        copies = []  # (request, its arguments, the held ones, the row here they move from or None)
        for index, args in chunk:
            arrays = tuple(args[k] for k in self.columns)
            kept = self.held.get(index)
            if kept is not None and all(a is b for a, b in zip(kept[1], arrays)):
                if kept[0] < count:
                    rows[kept[0]] = (index, args)
                    held[index] = kept
                else:
                    copies.append((index, args, arrays, kept[0]))
            elif all(type(a) is np.ndarray and a.shape[:1] == (1,) and _rows_like(a, b) for a, b in zip(arrays, self.buffers)):
                copies.append((index, args, arrays, None))
            else:
                return None
        free = [row for row, taken in enumerate(rows) if taken is None]
        for (index, args, arrays, source), row in zip(copies, free):
            for buffer, array in zip(self.buffers, arrays):
                buffer[row] = array[0] if source is None else buffer[source]
            rows[row] = (index, args)
            held[index] = (row, arrays)
        self.held = held
        return rows, {k: buffer[:count] for k, buffer in zip(self.columns, self.buffers)}


def _rows_like(array: np.ndarray, buffer: np.ndarray) -> bool:
    """Whether `array`'s rows are rows of `buffer`: the same dims past 0 and dtype."""
    return array.shape[1:] == buffer.shape[1:] and array.dtype == buffer.dtype


class Scheduler:
    """Runs host programs (`bind_stepwise` generators) to the end, answering their sub-DNN
    calls with `calls` (name -> runner); `records` are the manifest's sub-DNN records, in
    first-call order; `stats` (name -> counts) is updated in place."""

    def __init__(self, calls: Mapping[str, Any], records: Sequence[Mapping[str, Any]], stats: dict[str, Any]):
        self.calls = calls
        self.order = {r["name"]: k for k, r in enumerate(records)}
        self.batchable = {r["name"] for r in records if r.get("batchable")}
        self.max_rows = {r["name"]: max(1, BATCH_BYTES // r["row_bytes"]) for r in records if r.get("row_bytes")}
        self.stats = stats
        self.pools: dict[str, RowPool] | None = None if any(r.get("in_place") for r in records) else {}
        self.joined_before: set[str] = set()  # sub-DNNs with big arguments: a pool pays from their second call

    def run(self, programs: list, failures: dict[int, Exception] | None = None) -> list[Any]:
        """Each program's results, in order. Without `failures` the first error raises; with
        it, a failed program's error is stored there under its index (its result is None)."""
        results: list[Any] = [None] * len(programs)
        waiting: dict[str, list[tuple[int, tuple]]] = {}  # sub-DNN -> its calls, in the order they came

        def advance(index: int, value: Any) -> None:
            try:
                name, args = programs[index].send(value)
            except StopIteration as stop:
                results[index] = stop.value
                return
            except Exception as error:
                if failures is None:
                    raise
                failures[index] = error
                return
            calls = waiting.get(name)
            if calls is None:
                waiting[name] = [(index, args)]
            else:
                calls.append((index, args))

        for index, program in enumerate(programs):
            if inspect.isgenerator(program):
                advance(index, None)
            else:  # a host program that calls no sub-DNN
                results[index] = program
        unknown = len(self.order)
        while waiting:
            name = min(waiting, key=lambda n: self.order.get(n, unknown))
            calls = waiting.pop(name)
            try:
                answers = self.answer(name, calls)
            except Exception:
                if failures is None:
                    raise
                answers = self.answer_alone(name, calls, programs, failures)
            for index, outputs in answers:
                advance(index, outputs)
        return results

    def answer(self, name: str, calls: list[tuple[int, tuple]]) -> list[tuple[int, list]]:
        run = self.calls[name]
        if name not in self.batchable or len(calls) == 1:
            self.record(name, len(calls), len(calls))
            return [(index, run(*args)) for index, args in calls]
        return self.batched(name, run, calls)

    def batched(self, name: str, run: Any, calls: list[tuple[int, tuple]]) -> list[tuple[int, list]]:
        answers = []
        chunks = self.chunks(name, calls)
        for chunk in chunks:
            if len(chunk) == 1:
                index, args = chunk[0]
                answers.append((index, run(*args)))
                self.record(name, 1, 1)
                continue
            # (one pool per sub-DNN: the calls of a round split in several would take turns at its rows)
            chunk, pooled, pool = self.pooled(name, chunk) if len(chunks) == 1 else (chunk, {}, None)
            try:
                joined = [pooled[k] if k in pooled else rows_of(column)
                          for k, column in enumerate(zip(*(args for _, args in chunk)))]
            except ArgumentsDiffer:
                # Rare: calls of several kinds wait together. Joining first and sorting only
                # when that fails spares every call the per-request key (22 us a call of 24
                # requests, about a sixth of the time batching took on SkipNet).
                kinds = self.kinds(chunk)
                if len(kinds) == 1:
                    raise
                for kind in kinds:
                    answers.extend(self.batched(name, run, kind))
                continue
            outputs = run(*joined)
            if pool is not None and any(np.may_share_memory(output, b) for output in outputs for b in pool.buffers):
                self.pools.pop(name)  # a result is the pool's memory: the buffers are the requests' now
            answers.extend(self.split(chunk, outputs))
            self.record(name, len(chunk), 1)
        return answers

    def pooled(self, name: str, chunk: list[tuple[int, tuple]]
               ) -> tuple[list[tuple[int, tuple]], dict[int, np.ndarray], RowPool | None]:
        """`chunk`, perhaps reordered, its big arguments (`SPAN_BYTES` a row) joined where
        that costs no full copy (position -> array: views where they lie side by side in one
        array, else rows of the sub-DNN's `RowPool`), and the pool if one joined them.
        Nothing joined where there are none, or they do not fit a pool."""
        first = chunk[0][1]
        big = tuple(k for k, a in enumerate(first) if type(a) is np.ndarray and a.nbytes >= SPAN_BYTES)
        if not big or self.pools is None or name not in self.joined_before:
            if big:
                self.joined_before.add(name)
            return chunk, {}, None
        views = {}
        for k in big:
            views[k] = _joined_view([args[k] for _, args in chunk])
            if views[k] is None:
                break
        else:
            return chunk, views, None
        pool = self.pools.get(name)
        if pool is None or not pool.fits(big, first, len(chunk)):
            pool = self.pools[name] = RowPool(big, first, len(chunk))
        placed = pool.place(chunk)
        return (*placed, pool) if placed is not None else (chunk, {}, None)

    @staticmethod
    def kinds(calls: list[tuple[int, tuple]]) -> list[list[tuple[int, tuple]]]:
        """`calls` by the dtype and the dims past 0 of every argument."""
        kinds: dict[tuple, list[tuple[int, tuple]]] = {}
        for index, args in calls:
            key = tuple((a.dtype, a.shape[1:]) for a in args)  # (the dtype itself: its `.str` is a new string each time)
            kinds.setdefault(key, []).append((index, args))
        return list(kinds.values())

    def chunks(self, name: str, calls: list[tuple[int, tuple]]) -> list[list[tuple[int, tuple]]]:
        """`calls` in calls of at most `max_rows` rows, of even sizes."""
        rows = sum(args[0].shape[0] for _, args in calls)
        count = -(-rows // self.max_rows.get(name, rows or 1))
        size = -(-len(calls) // count)
        return [calls[k:k + size] for k in range(0, len(calls), size)]

    @staticmethod
    def split(calls: list[tuple[int, tuple]], outputs: Sequence[np.ndarray]) -> list[tuple[int, Sequence[np.ndarray]]]:
        """Each call's rows of a batched call's `outputs`."""
        if outputs and all(args[0].shape[0] == 1 for _, args in calls):
            # One row a call (the usual case): numpy cuts every output's rows at once, a
            # third of the time of a slice per call and output.
            rows = zip(*[output[:, None] for output in outputs])
            return list(zip([index for index, _ in calls], rows))
        answers, start = [], 0
        for index, args in calls:  # slices, not np.split: a third of the scheduler's time went there
            stop = start + args[0].shape[0]
            answers.append((index, [output[start:stop] for output in outputs]))
            start = stop
        return answers

    def answer_alone(self, name: str, calls: list[tuple[int, tuple]], programs: list, failures: dict) -> list:
        """The calls one by one, after one of them failed: a request whose own call raises
        gets that error and its program is closed."""
        answers = []
        for index, args in calls:
            try:
                answers.append((index, self.calls[name](*args)))
            except Exception as error:
                failures[index] = error
                programs[index].close()
        return answers

    def record(self, name: str, requests: int, backend_calls: int) -> None:
        entry = self.stats.setdefault(name, {"requests": 0, "backend_calls": 0, "mean_batch": 0.0})
        entry["requests"] += requests
        entry["backend_calls"] += backend_calls
        entry["mean_batch"] = entry["requests"] / entry["backend_calls"]
