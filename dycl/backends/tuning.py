"""MetaSchedule tuning for the TVM backend: one database shared by every sub-DNN of every
network, a time budget split across tasks by their cost, and measurements that can fan
out over TVM's RPC tracker.

    compiled = dycl.compile(model, inputs, backend="tvm", tune=TuneOptions(minutes=10))

How it goes: every sub-DNN is lowered to fused TIR functions (`fuse_for_schedules`, the
same lowering the build uses, so database keys match); their functions become tasks,
de-duplicated by structural hash, so a conv shape repeated across blocks, sub-DNNs or
networks is tuned once. Tasks the database already covers are skipped; the others share
the budget: one search round each for as many as a part of it allows, most costly first,
and the rest in proportion to FLOPs x occurrences. Records go to one `JSONDatabase` per
target under the compile cache (`<cache>/tvm-metaschedule/<target>`, kept between runs);
the build applies every matching record and leaves the rest to the default schedules.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dycl.backends.tvm_schedules import fuse_for_schedules, open_database

if TYPE_CHECKING:
    import tvm

    from dycl.backends.subdnn import SubDNN

DATABASE_DIRECTORY = "tvm-metaschedule"
"""The shared database's directory, under the compile cache root."""


@dataclass(frozen=True)
class TuneOptions:
    """How `dycl.compile(..., backend="tvm", tune=...)` tunes.

    `minutes=0` tunes nothing and builds with the records the database already has."""

    minutes: float = 5.0
    """Wall-clock budget of this compile's tuning, split across tasks by cost."""
    trials_per_task: int = 64
    """A task with this many measured records is done; later compiles reuse them."""
    trials_per_round: int = 16
    """Candidates measured per search round; the budget is checked between rounds."""
    population: int = 256
    """Evolutionary search population (MetaSchedule's 512 costs seconds per round on 2 cores)."""
    rpc_tracker: str | None = None
    """"host:port" of a TVM RPC tracker: candidates run on its devices, builds stay local."""
    rpc_key: str | None = None
    """The key the tracker's devices registered under."""
    database: str | None = None
    """The database directory, for records of one target; default: the target's own,
    `<compile cache>/tvm-metaschedule/<target>`."""

    def __post_init__(self) -> None:
        if self.minutes < 0:
            raise ValueError(f"TuneOptions.minutes must be >= 0, got {self.minutes}")
        if self.trials_per_task < 1 or self.trials_per_round < 1 or self.population < 2:
            raise ValueError("TuneOptions: trials_per_task and trials_per_round must be >= 1, population >= 2")
        if (self.rpc_tracker is None) != (self.rpc_key is None):
            raise ValueError("TuneOptions: rpc_tracker and rpc_key go together")
        if self.rpc_tracker is not None:
            tracker_address(self.rpc_tracker)


def tracker_address(text: str) -> tuple[str, int]:
    """"host:port" -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"an RPC tracker is host:port, got '{text}'")
    return host, int(port)


def database_directory(options: TuneOptions, target: tvm.target.Target, cache_dir: str | os.PathLike | None = None) -> Path:
    """`options.database`, or the shared one of `target` under the compile cache. One per
    target: a task's records are found by its workload (`measured_trials` counts them as
    done), and a schedule searched for one CPU's vector width is slow on another."""
    from dycl.backends.cache import cache_root

    if options.database:
        return Path(options.database)
    return cache_root(cache_dir) / DATABASE_DIRECTORY / re.sub(r"[^A-Za-z0-9.]+", "_", str(target)).strip("_")


def tune_subdnns(
    subdnns: Sequence[SubDNN],
    weights: Mapping[str, Any],
    options: Mapping[str, Any],
    tune: TuneOptions,
    *,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> tuple[dict[str, Any], TuningReport]:
    """Tune these sub-DNNs' tasks into the shared database; returns the TVM backend
    options that build with its records (`database` set) and what tuning did."""
    from dycl.backends.tvm import target_of, to_relax

    target = target_of(options.get("target", "llvm"), tuned=True)
    directory = database_directory(tune, target, cache_dir)
    # A sub-DNN with a dim known only at run time is built untuned: MetaSchedule searches
    # and measures static shapes only (its search fails on a symbolic one). A tuned build
    # compiles a batchable sub-DNN for one request's rows (TvmBackend.compile): tune that.
    static = [s.static() for s in subdnns]
    static = [s for s in static if all(None not in spec.shape for spec in (*s.inputs, *s.outputs))]
    fused = [fuse_for_schedules(to_relax(s, {n: weights[n] for n in s.weight_names}), target) for s in static]
    report = tune_modules(fused, target, tune, directory, progress)
    return {**options, "database": str(directory)}, report


# ------------------------------------------------------------------------------ tasks


@dataclass
class Task:
    """One TIR workload to tune, wherever it occurs."""

    name: str
    key: str
    """Structural hash of the workload: the same in every process and network."""
    workload: Any  # tvm.IRModule holding the function as "main"
    target: Any
    flops: float
    occurrences: int

    @property
    def cost(self) -> float:
        return self.flops * self.occurrences


def extract_tasks(modules: Iterable[tvm.IRModule], target: tvm.target.Target) -> list[Task]:
    """The tasks of these fused modules, one per distinct workload (structural hash),
    most costly first."""
    import tvm_ffi
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.analysis import estimate_tir_flops

    tasks: dict[str, Task] = {}
    for mod in modules:
        for extracted in ms.relax_integration.extract_tasks(mod, target):
            workload = extracted.dispatched[0]
            key = f"{tvm_ffi.structural_hash(workload) & (2**64 - 1):016x}"
            if key in tasks:
                tasks[key].occurrences += int(extracted.weight)
                continue
            try:
                flops = float(estimate_tir_flops(workload))
            except Exception:  # a function the estimator cannot read: cost unknown, searched last
                flops = 1.0
            tasks[key] = Task(extracted.task_name, key, workload, extracted.target, max(flops, 1.0), int(extracted.weight))
    return sorted(tasks.values(), key=lambda task: -task.cost)


def measured_trials(database, task: Task, cap: int) -> int:
    """Records the database holds for this task's workload (up to `cap`)."""
    if not database.has_workload(task.workload):
        return 0
    return len(database.get_top_k(database.commit_workload(task.workload), cap))


# The first search round of a task costs 10-40 s here (design space, initial population,
# builds, measurements); a task given less would overrun its share anyway.
MIN_TASK_SECONDS = 20.0
FLOOR_PART = 0.5
"""The part of a budget that buys every task one round before the rest follows cost."""


def split_budget(costs: Sequence[float], seconds: float, min_share: float, floors: float = FLOOR_PART,
                 started: Sequence[bool] | None = None) -> list[float]:
    """Seconds per task. Up to `floors` of the budget first gives `min_share` (one search
    round) to each task, those with no record yet (`started` False) first, most costly first
    among them: an unscheduled conv or matmul runs 10-100x slower than one after a single
    round, which its FLOPs alone do not say. The rest goes in proportion to cost to the
    tasks that got a round. With no round to give, a task gets nothing."""
    shares = [0.0] * len(costs)
    started = started or [False] * len(costs)
    order = sorted((i for i, cost in enumerate(costs) if cost > 0), key=lambda i: (started[i], -costs[i]))
    rounds = max(int(seconds * floors // min_share), 1) if min_share > 0 else len(order)
    funded = order[:rounds]
    while funded and min_share * len(funded) > seconds:
        funded.pop()
    if not funded:
        return shares
    rest = seconds - min_share * len(funded)
    total = sum(costs[i] for i in funded)
    for i in funded:
        shares[i] = min_share + rest * costs[i] / total
    return shares


# ------------------------------------------------------------------------------ tuning


@dataclass
class TuningReport:
    """What one tuning run did (`compile_report["tuning"]`)."""

    database: str
    tasks: int = 0
    """Distinct workloads of the sub-DNNs."""
    tuned: int = 0
    """Tasks searched in this run."""
    reused: int = 0
    """Tasks the database already covered (`trials_per_task` records)."""
    trials: int = 0
    """Candidates measured in this run."""
    seconds: float = 0.0
    """This run's tuning wall time."""
    invested_seconds: float = 0.0
    """Search time the database holds for these tasks, over every run that tuned them."""

    def to_json(self) -> dict[str, Any]:
        return {
            "database": self.database, "tasks": self.tasks, "tuned": self.tuned, "reused": self.reused,
            "trials": self.trials, "seconds": self.seconds, "invested_minutes": self.invested_seconds / 60,
        }


TUNING_LOG = "dycl_tuning_log.jsonl"
"""Beside the database: one line per task search (task key, seconds, trials), so that what a
network's records cost to find can be reported by any later run."""


def tune_modules(
    modules: Sequence[tvm.IRModule],
    target: tvm.target.Target,
    options: TuneOptions,
    directory: Path,
    progress: bool = True,
) -> TuningReport:
    """Tune the tasks of these fused modules into the database in `directory`."""
    start = time.monotonic()
    # MetaSchedule logs every round at INFO/DEBUG; its statistics are not this report.
    logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
    database = open_database(directory)
    tasks = extract_tasks(modules, target)
    done = [measured_trials(database, task, options.trials_per_task) for task in tasks]
    open_tasks = [(task, n) for task, n in zip(tasks, done) if n < options.trials_per_task]
    budget = options.minutes * 60
    shares = split_budget([task.cost for task, _ in open_tasks], budget, MIN_TASK_SECONDS, started=[n > 0 for _, n in open_tasks])
    # Tasks without a share come last: they get a round each from what the others leave
    # (a task whose design space is exhausted after a few candidates ends early).
    plan = sorted(((task, n, share) for (task, n), share in zip(open_tasks, shares) if share > 0), key=lambda p: (p[1] > 0, -p[0].cost))
    plan += [(task, n, 0.0) for (task, n), share in zip(open_tasks, shares) if share == 0]
    report = TuningReport(str(directory), tasks=len(tasks), reused=len(tasks) - len(open_tasks))
    if plan:
        _search(plan, options, target, database, directory, start + budget, report, progress)
    report.seconds = time.monotonic() - start
    report.invested_seconds = invested_seconds(directory, {task.key for task in tasks})
    return report


def _search(plan, options, target, database, directory, deadline, report, progress) -> None:
    """Search each planned (task, records it has, share) in turn until `deadline`."""
    builder, runner = _builder_and_runner(options, target)
    cost_model = _cost_model()
    start = time.monotonic()
    bar = _Bar(deadline - start, len(plan), progress)
    remaining_share = sum(share for _, _, share in plan)
    try:
        for task, records, share in plan:
            now = time.monotonic()
            if now >= deadline or (not share and deadline - now < MIN_TASK_SECONDS):
                break
            # Time a task left unspent (it reached its trial cap) goes to the ones after it.
            seconds = (deadline - now) * share / remaining_share if share else MIN_TASK_SECONDS
            remaining_share -= share
            bar.set_postfix_str(task.name[:40])
            measured = _tune_one(
                task, options, options.trials_per_task - records, now + seconds,
                builder, runner, cost_model, database, directory, lambda: bar.update_to(time.monotonic() - start),
            )
            spent = time.monotonic() - now
            _log_search(directory, task, spent, measured)
            report.tuned += 1
            report.trials += measured
    finally:
        bar.close()
        _shutdown(builder, runner)


def _log_search(directory: Path, task: Task, seconds: float, trials: int) -> None:
    line = {"task": task.key, "name": task.name, "seconds": round(seconds, 2), "trials": trials}
    with open(directory / TUNING_LOG, "a") as stream:  # one short append: safe beside other writers
        stream.write(json.dumps(line) + "\n")


def invested_seconds(directory: str | os.PathLike, keys: set[str]) -> float:
    """Search seconds the tuning log records for these task keys."""
    path = Path(directory) / TUNING_LOG
    if not path.is_file():
        return 0.0
    total = 0.0
    for text in path.read_text().splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue  # a line cut short by a crash
        if line.get("task") in keys:
            total += float(line.get("seconds", 0.0))
    return total


def _tune_one(task, options, trials, deadline, builder, runner, cost_model, database, directory, tick) -> int:
    """Evolutionary search on one task until `trials` are measured or `deadline` passes;
    returns the number of candidates measured."""
    from tvm.s_tir import meta_schedule as ms

    context = ms.TuneContext(
        mod=task.workload,
        target=task.target,
        space_generator="post-order-apply",
        search_strategy=ms.search_strategy.EvolutionarySearch(population_size=options.population),
        task_name=task.name,
        num_threads=_cores(),
    ).clone()
    stop = _stop_at_deadline(deadline, tick)
    try:
        _run_search(context, trials, options, builder, runner, cost_model, database, directory, stop)
    except Exception:
        if not stop.passed:  # it arrives wrapped by TVM's FFI: recognise it by the flag
            raise
    return stop.measured


def _run_search(context, trials, options, builder, runner, cost_model, database, directory, stop) -> None:
    from tvm.s_tir import meta_schedule as ms

    ms.tune.tune_tasks(
        tasks=[context],
        task_weights=[1.0],
        work_dir=str(directory),
        max_trials_global=trials,
        max_trials_per_task=trials,
        num_trials_per_iter=min(options.trials_per_round, trials),
        builder=builder,
        runner=runner,
        database=database,
        cost_model=cost_model,
        measure_callbacks=[*ms.MeasureCallback.create("default"), stop],
        task_scheduler="round-robin",
    )


class _DeadlinePassed(Exception):
    """Raised by the measure callback to end a task's search at its deadline."""


def _stop_at_deadline(deadline: float, tick: Callable[[], None]):
    """A measure callback that ends a task's search after the round that crosses
    `deadline` (MetaSchedule stops only on trial counts); `.measured` counts candidates.

    It raises rather than calling `terminate_task`: the schedulers join a task's round
    (running the callbacks) after picking it, and then insist it is still alive. It runs
    after the database callback, so the round's records are already committed."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms

    @derived_object
    class StopAtDeadline(ms.measure_callback.PyMeasureCallback):
        def __init__(self) -> None:
            self.measured = 0
            self.passed = False

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results) -> None:
            self.measured += sum(1 for result in runner_results if result.run_secs is not None)
            tick()
            if time.monotonic() >= deadline:
                self.passed = True
                raise _DeadlinePassed()

    return StopAtDeadline()


def _builder_and_runner(options: TuneOptions, target):
    """Local builds; measurements on this machine or, given a tracker, on its devices."""
    from tvm.s_tir import meta_schedule as ms

    builder = _pooled_builder(_cores())
    # Short measurements: most sub-DNN kernels run in microseconds to a few ms.
    evaluator = ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=40, enable_cpu_cache_flush=False)
    if options.rpc_tracker is None:
        return builder, ms.runner.LocalRunner(evaluator_config=evaluator)
    host, port = tracker_address(options.rpc_tracker)
    config = ms.runner.RPCConfig(tracker_host=host, tracker_port=port, tracker_key=options.rpc_key, session_timeout_sec=60)
    # One measuring session per device, so a round's candidates spread over all of them.
    workers = _rpc_devices(host, port, options.rpc_key)
    return builder, ms.runner.RPCRunner(rpc_config=config, evaluator_config=evaluator, max_workers=workers)


def _rpc_devices(host: str, port: int, key: str) -> int:
    """How many devices under `key` are free now (at least 1: others may free up)."""
    from tvm import rpc

    try:
        summary = rpc.connect_tracker(host, port).summary()
    except Exception as err:
        raise ValueError(f"cannot reach the TVM RPC tracker at {host}:{port}: {err}") from err
    queue = summary.get("queue_info", {}).get(key, {})
    return max(1, int(queue.get("free", 0)))


def _pooled_builder(workers: int, timeout_seconds: float = 60.0):
    """MetaSchedule's local builder, but its worker processes live for the whole tuning
    run (the stock one starts new ones every round: seconds of `import tvm` each here)."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.builder.local_builder import _worker_func
    from tvm.support.popen_pool import PopenPoolExecutor, StatusKind

    @derived_object
    class PooledBuilder(ms.builder.PyBuilder):
        def __init__(self) -> None:
            self.pool = PopenPoolExecutor(max_workers=workers, timeout=timeout_seconds)

        def build(self, build_inputs):
            jobs = [(build_candidate, None, job.mod, job.target, None) for job in build_inputs]
            results = []
            for outcome in self.pool.map_with_error_catching(lambda job: _worker_func(*job), jobs):
                if outcome.status == StatusKind.COMPLETE:
                    results.append(ms.builder.BuilderResult(outcome.value, None))
                else:
                    results.append(ms.builder.BuilderResult(None, f"build failed: {outcome.status}: {outcome.value}"))
            return results

    return PooledBuilder()


def build_candidate(mod, target, _params):
    """MetaSchedule's default candidate build without its first step, importing
    `tvm.s_tir.tensor_intrin`: 15 s here, paid by every fresh builder process (the local
    builder starts new ones for every round) and needless for CPU schedules."""
    from tvm.driver import build
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return build(RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod), target=target)


def _cost_model():
    """XGBoost's cost model (MetaSchedule's default); a random one where xgboost is missing."""
    from tvm.s_tir import meta_schedule as ms

    try:
        import xgboost  # noqa: F401
    except ImportError:
        print("dycl: xgboost is not installed: MetaSchedule searches without a cost model", file=sys.stderr)
        return ms.cost_model.RandomModel()
    return ms.cost_model.XGBModel(num_tuning_cores=_cores())


def _shutdown(*owners) -> None:
    """End the worker processes of MetaSchedule's builder and runner pools."""
    for owner in owners:
        pool = getattr(owner, "pool", None)
        if pool is not None and hasattr(pool, "shutdown"):
            pool.shutdown()


def _cores() -> int:
    return os.cpu_count() or 1


class _Bar:
    """A tqdm bar over the budget's seconds (the repo's compile bar, on stderr)."""

    def __init__(self, seconds: float, tasks: int, enabled: bool):
        from tqdm import tqdm

        self.total = max(int(round(seconds)), 1)
        self.bar = tqdm(
            total=self.total, desc=f"dycl: tuning {tasks} tasks (tvm)", unit="s",
            disable=not enabled, file=sys.stderr, leave=False,
        )

    def update_to(self, elapsed: float) -> None:
        self.bar.update(max(min(int(elapsed), self.total) - self.bar.n, 0))

    def set_postfix_str(self, text: str) -> None:
        self.bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        self.bar.close()
