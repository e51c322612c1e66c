"""A loaded artifact as a callable with the model's input and output conventions.

`CompiledModel(*inputs)` checks the inputs against the signature in the manifest (count,
shape, dtype), runs the generated host program, and rebuilds the model's output
structure. torch tensors in -> torch tensors out, numpy in -> numpy out; torch is used
only when the caller already imported it (it is never imported here).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import types
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dycl.backends import runner_factory
from dycl.runtime.artifact import MANIFEST, ArtifactError, read_manifest, replace_file
from dycl.runtime.options import RuntimeOptions, default_threads
from dycl.runtime.signing import SIGNATURE, sign_artifact, verify_artifact
from dycl.runtime.outputs import unflatten
from dycl.runtime import state as state_io


class InputError(TypeError):
    """Inputs that do not match the compiled signature."""


class _InputSpec:
    __slots__ = ("name", "kind", "dtype", "shape", "exact")

    def __init__(self, record: Mapping[str, Any]):
        self.name = record["name"]
        self.kind = record["kind"]  # "tensor" | "int" | "float" | "bool"
        self.dtype = np.dtype(record["dtype"]) if self.kind == "tensor" else None
        shape = record.get("shape")
        self.shape = None if shape is None else tuple(shape)
        self.exact = self.shape is not None and None not in self.shape

    def describe(self) -> str:
        if self.kind != "tensor":
            return f"a Python {self.kind}"
        dims = "?" if self.shape is None else "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"
        return f"a {self.dtype} tensor of shape {dims}"

    def shape_matches(self, shape: tuple[int, ...]) -> bool:
        if self.exact:
            return shape == self.shape
        if self.shape is None:
            return True
        return len(shape) == len(self.shape) and all(e is None or e == d for e, d in zip(self.shape, shape))


_SCALAR_TYPES = {"int": (int, np.integer), "float": (float, int, np.floating, np.integer), "bool": (bool, np.bool_)}


class CompiledModel:
    """Load with `dycl.load(dir)`; `dycl.compile` returns one too.

    `threads` (a shorthand for `runtime.threads`) wins over `runtime`, which wins over
    the manifest's threads; the default is every core. With `verify_key` (a public key
    PEM), the directory's signature is checked before anything else is read.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        threads: int | None = None,
        runtime: RuntimeOptions | None = None,
        verify_key: str | os.PathLike | None = None,
    ):
        self.directory = Path(directory)
        if verify_key is not None:
            verify_artifact(self.directory, verify_key)
        self.manifest = read_manifest(self.directory)
        self.backend = self.manifest["backend"]
        self.entry = self.manifest["entry"]
        runtime = runtime or RuntimeOptions()
        self.threads = (
            threads or runtime.threads or self.manifest.get("runtime", {}).get("threads") or default_threads()
        )
        self.runtime = replace(runtime, threads=self.threads)
        self.hcfg = None  # set by dycl.compile (the xDSL module); a loaded artifact has none
        self.compile_report: dict[str, Any] = {}
        self._inputs = [_InputSpec(r) for r in self.manifest["inputs"]]
        self._output_tree = self.manifest["outputs"]["tree"]
        self.subdnn_calls = {}
        self.batch_stats: dict[str, dict[str, float]] = {}
        """Per sub-DNN, what `run_many` made of its calls: requests served, backend calls,
        and their ratio `mean_batch`."""
        self._forward = self._bind_host()
        self._load_state()

    def _load_state(self) -> None:
        """A stateful model's slots and values (the state it was saved with)."""
        record = self.manifest.get("state")
        self._slots = state_io.StateSlots(record["slots"]) if record else None
        self._state: dict[str, Any] = {}
        self._initial_state: dict[str, Any] = {}
        self._busy = threading.Lock()  # (a stateful model is not re-entrant)
        if record:
            try:
                self._initial_state = state_io.from_file(self.directory / record["initial"])
                self._state = state_io.from_file(self.directory / record["current"])
            except Exception as err:
                raise ArtifactError(f"{self.directory}: unreadable state file ({err})") from err
            missing = set(self._slots.paths) - set(self._state) | set(self._slots.paths) - set(self._initial_state)
            if missing:
                raise ArtifactError(f"{self.directory}: the state files have no value for {sorted(missing)}")

    # ------------------------------------------------------------- state

    @property
    def stateful(self) -> bool:
        """Whether the model keeps module attributes from one call to the next."""
        return self._slots is not None

    @property
    def state(self) -> dict[str, Any]:
        """attribute path -> the value forward left there (a copy; tensors as numpy arrays,
        lists of what forward appended): `{"hidden": array(...), "calls": 3}`. Empty for a
        model that keeps no state."""
        return state_io.copy_state(self._state)

    def reset_state(self) -> None:
        """Back to the state the model was compiled with (its module's attributes then)."""
        with self._exclusive():
            self._state = state_io.copy_state(self._initial_state)

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        if not self._busy.acquire(blocking=False):
            raise RuntimeError(
                f"{self.entry}() of a stateful model is already running: a model that keeps state "
                f"across calls ({', '.join(self._slots.paths)}) is not re-entrant; call it from one "
                "thread at a time (or load one copy per thread with dycl.load)"
            )
        try:
            yield
        finally:
            self._busy.release()

    # ------------------------------------------------------------- loading

    def _bind_host(self):
        module, subdnns, constants = self._load_form(self.manifest)
        self.subdnn_calls = subdnns
        self.source = (self.directory / self.manifest["host"]).read_text()
        self._host_module, self._constants = module, constants
        self._run_many = None
        return module.bind(subdnns, constants)

    def _load_form(self, form: Mapping[str, Any]) -> tuple[types.ModuleType, dict[str, Any], dict[str, Any]]:
        """A host program (`form["host"]`), its constants and its sub-DNNs' runners."""
        try:
            make_runner = runner_factory(self.backend)
        except ValueError:
            raise ArtifactError(f"{self.directory}: unknown backend '{self.backend}' in the manifest") from None
        subdnns = {}
        for record in form["subdnns"]:
            path = self.directory / record["file"]
            try:
                subdnns[record["name"]] = make_runner(path, record, self.runtime)
            except Exception as err:
                raise ArtifactError(f"{path}: the {self.backend} runtime cannot load it: {err}") from err
        constants = {}
        constants_file = form.get("constants")
        if constants_file:
            with np.load(self.directory / constants_file, allow_pickle=False) as stored:
                constants = {key: stored[key] for key in stored.files}
        source = (self.directory / form["host"]).read_text()
        module = types.ModuleType(f"dycl_host_{self.entry}")
        module.__file__ = str(self.directory / form["host"])
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        return module, subdnns, constants

    def _run_many_form(self) -> tuple[Any, dict[str, Any], list[Mapping[str, Any]]]:
        """(the stepwise entry, sub-DNN runners, their records) that `run_many` runs: the
        artifact's own run_many form if it has one (gates in the host, exit tests split
        out: docs/architecture.md), loaded on first use, else the one-request form's."""
        if self._run_many is None:
            form = self.manifest.get("run_many")
            if form is None:
                self._run_many = (self._host_module.bind_stepwise(self._constants), self.subdnn_calls,
                                  self.manifest["subdnns"])
            else:
                module, subdnns, constants = self._load_form(form)
                self._run_many = (module.bind_stepwise(constants), subdnns, form["subdnns"])
        return self._run_many

    def rebind(self, subdnns: Mapping[str, Any]) -> "CompiledModel":
        """A copy whose host calls these sub-DNN callables instead (profiling, tests)."""
        clone = object.__new__(CompiledModel)
        clone.__dict__.update(self.__dict__)
        clone.subdnn_calls = dict(subdnns)
        clone._busy, clone._state = threading.Lock(), state_io.copy_state(self._state)
        clone.batch_stats = {}
        clone._forward = self._host_module.bind(clone.subdnn_calls, self._constants)
        return clone

    # ------------------------------------------------------------- calling

    def __call__(self, *inputs: Any) -> Any:
        args, torch_in = self._checked_inputs(inputs)
        return self._outputs(self._run(args), torch_in)

    def _run(self, args: Sequence[Any]) -> Sequence[Any]:
        """The host program's results for checked arguments; a stateful model passes its
        state in after them, takes the new state from the results, one call at a time."""
        if self._slots is None:
            return self._forward(*args)
        with self._exclusive():
            results = self._forward(*args, *self._slots.arguments(self._state))
            state = dict(self._state)
            self._slots.update(state, results)
            self._slots.keep_own(state, args, results)
            self._state = state
        return results

    def run_many(self, requests: Sequence[Sequence[Any]], return_exceptions: bool = False) -> list[Any]:
        """`[self(*args) for args in requests]`, with the sub-DNN calls that several requests
        wait on at once batched along dim 0 where the compiler proved it sound
        (`dycl.runtime.batching`); `batch_stats` then says how well each sub-DNN batched.
        A stateful model runs the requests one after another, in order: each call sees the
        state the one before it left.

        By default the first failing request raises (an `InputError` names its index). With
        `return_exceptions=True` (as in `asyncio.gather`), each request gets its own outcome:
        one whose inputs are wrong gets the `InputError` that `self(*args)` raises, one whose
        host program raises gets that exception, in its slot, and the others still run."""
        outcomes: list[Any] = [None] * len(requests)
        prepared: dict[int, tuple[list[Any], bool]] = {}
        for index, args in enumerate(requests):
            try:
                if not isinstance(args, (tuple, list)):
                    raise InputError(f"expected a tuple of inputs, got {type(args).__name__}")
                prepared[index] = self._checked_inputs(tuple(args))
            except InputError as error:
                if not return_exceptions:
                    raise InputError(f"run_many: request {index}: {error}") from None
                outcomes[index] = error
        # An artifact written before host.py had a stepwise form runs request by request, and
        # so does a stateful model: each call must see the state the one before it left.
        if not hasattr(self._host_module, "bind_stepwise") or self.stateful:
            results, failures = {}, {}
            for index, (args, _) in prepared.items():
                try:
                    results[index] = self._run(args)
                except Exception as error:
                    if not return_exceptions:
                        raise
                    failures[index] = error
        else:
            from dycl.runtime.batching import Scheduler

            stepwise, calls, records = self._run_many_form()
            scheduler = Scheduler(calls, records, self.batch_stats)
            failures = {} if return_exceptions else None
            ran = scheduler.run([stepwise(*args) for args, _ in prepared.values()], failures)
            order = list(prepared)
            results = dict(zip(order, ran))
            failures = {order[k]: error for k, error in (failures or {}).items()}
        for index, (_, torch_in) in prepared.items():
            if index in failures:
                outcomes[index] = failures[index]
                continue
            try:
                outcomes[index] = self._outputs(results[index], torch_in)
            except ArtifactError as error:
                if not return_exceptions:
                    raise
                outcomes[index] = error
        return outcomes

    def _with_defaults(self, inputs: Sequence[Any], count: int) -> Sequence[Any]:
        """`inputs` and the defaults of the last parameters a call leaves out (`model(x)` for
        `forward(self, x, hx=None)`), which the method's signature gives."""
        defaults = self.manifest.get("input_defaults") or []
        missing = count - len(inputs)
        if 0 < missing <= len(defaults):
            return (*inputs, *defaults[len(defaults) - missing :])
        return inputs

    def _checked_inputs(self, inputs: Sequence[Any]) -> tuple[list[Any], bool]:
        """The flat host arguments, checked against the signature, and whether torch came in."""
        specs = self._inputs
        tree = self.manifest.get("input_tree")
        inputs = self._with_defaults(inputs, len(tree) if tree is not None else len(specs))
        if tree is not None:  # list/tuple arguments are passed item by item
            if len(inputs) != len(tree):
                raise InputError(f"{self.entry}() takes {len(tree)} input(s), got {len(inputs)}")
            inputs = tuple(
                leaf for k, (node, value) in enumerate(zip(tree, inputs))
                for leaf in _flatten_input(self.entry, node, value, f"input {k}", specs)
            )
        if len(inputs) != len(specs):
            names = ", ".join(s.name for s in specs)
            raise InputError(f"{self.entry}() takes {len(specs)} input(s) ({names}), got {len(inputs)}")
        torch_in = False
        args = []
        for spec, value in zip(specs, inputs):
            if spec.kind == "tensor":
                if type(value) is not np.ndarray:
                    value, torch_in = _tensor_input(spec, value, self.entry), True
                if value.dtype != spec.dtype or not spec.shape_matches(value.shape):
                    raise InputError(
                        f"{self.entry}() input '{spec.name}': expected {spec.describe()}, "
                        f"got a {value.dtype} tensor of shape {list(value.shape)}"
                    )
            elif not isinstance(value, _SCALAR_TYPES[spec.kind]) or (spec.kind == "int" and isinstance(value, bool)):
                raise InputError(f"{self.entry}() input '{spec.name}': expected {spec.describe()}, got {type(value).__name__}")
            args.append(value)
        return args, torch_in

    def _outputs(self, results: Sequence[Any], torch_in: bool) -> Any:
        try:
            outputs = unflatten(self._output_tree, results)
        except ValueError as error:
            raise ArtifactError(str(error)) from None
        return _to_torch(outputs) if torch_in else outputs

    # -------------------------------------------------------------- saving

    def save(self, directory: str | os.PathLike, sign_key: str | os.PathLike | None = None) -> Path:
        """Copy the artifact (all files the manifest lists, the manifest, and its signature
        if it has one); with `sign_key` (a private key PEM), sign the copy."""
        target = Path(directory)
        if target.resolve() != self.directory.resolve():
            target.mkdir(parents=True, exist_ok=True)
            for name in [*self.manifest["files"], MANIFEST]:
                _replace_with_copy(self.directory / name, target / name)
            if (self.directory / SIGNATURE).is_file():  # the same bytes: it still holds
                _replace_with_copy(self.directory / SIGNATURE, target / SIGNATURE)
            else:  # never leave a signature of files that were overwritten
                (target / SIGNATURE).unlink(missing_ok=True)
            read_manifest(target)  # what was written verifies
        if self._slots is not None:  # the state as it is now (reset_state goes back to state_initial.npz)
            current, data = self.manifest["state"]["current"], state_io.to_bytes(self._state)
            if (target / current).read_bytes() != data:
                manifest = replace_file(target, current, data)
                if target.resolve() == self.directory.resolve():
                    self.manifest = manifest
                # The signature covered the state the artifact had; sign_key signs the new one.
                (target / SIGNATURE).unlink(missing_ok=True)
        if sign_key is not None:
            sign_artifact(target, sign_key)
        return target

    @property
    def subdnn_names(self) -> list[str]:
        return [r["name"] for r in self.manifest["subdnns"]]

    def __repr__(self) -> str:
        return (
            f"<dycl.CompiledModel {self.entry}: {len(self.subdnn_names)} sub-DNNs, "
            f"backend={self.backend}, from {self.directory}>"
        )


def _replace_with_copy(source: Path, target: Path) -> None:
    """Copy into a new file, then rename it over `target`. A library a process loaded from
    the old file (a TVM sub-DNN) stays mapped intact: writing into it in place crashed the
    process that had loaded it."""
    staging = target.with_name(f".{target.name}.partial")
    shutil.copyfile(source, staging)
    os.replace(staging, target)


def _tensor_input(spec: _InputSpec, value: Any, entry: str) -> np.ndarray:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise InputError(f"{entry}() input '{spec.name}': DyCL runs on CPU, got a tensor on {value.device}")
        return value.detach().numpy()
    raise InputError(f"{entry}() input '{spec.name}': expected {spec.describe()}, got {type(value).__name__}")


def _flatten_input(entry: str, tree: Any, value: Any, where: str, specs: Sequence[_InputSpec]) -> list:
    """The leaves of one argument, checked against the structure it was compiled for."""
    if tree is None:
        if value is not None:
            raise InputError(f"{entry}() {where}: expected None, got {type(value).__name__}")
        return []
    if isinstance(tree, int):
        return [value]
    (kind, items), = tree.items()
    if kind == "none":  # (an input compiled for None only: its example was None)
        if value is not None:
            name, annotated = items
            wanted = {"int": "an int", "": "a value"}.get(annotated, f"a {annotated}")
            raise InputError(
                f"{entry}() {where} (`{name}`): compiled for None only, got {type(value).__name__}; "
                f"to call it with {wanted}, compile with {wanted} for `{name}` in the example inputs "
                "(the compiled model then takes None there too)"
            )
        return []
    if kind == "optional":  # None, or a value of the compiled structure after a present flag
        present, inner = items
        if value is None:
            return [False, *_placeholder(inner, specs)]
        return [True, *_flatten_input(entry, inner, value, where, specs)]
    expected = list if kind == "list" else tuple
    if not isinstance(value, expected) or len(value) != len(items):
        got = f"a {type(value).__name__} of {len(value)}" if isinstance(value, (list, tuple)) else type(value).__name__
        raise InputError(f"{entry}() {where}: expected a {kind} of {len(items)} items (the structure it was compiled for), got {got}")
    return [leaf for k, (sub, item) in enumerate(zip(items, value)) for leaf in _flatten_input(entry, sub, item, f"{where}[{k}]", specs)]


def _placeholder(tree: Any, specs: Sequence[_InputSpec]) -> list:
    """The arguments of an optional input given None: zeros of their specs (no statement
    reads them: every use of the value is under a test that it is present)."""
    if isinstance(tree, int):
        spec = specs[tree]
        if spec.kind == "tensor":
            return [np.zeros([1 if d is None else d for d in spec.shape or ()], dtype=spec.dtype)]
        return [{"int": 0, "float": 0.0}.get(spec.kind, False)]
    (_, items), = tree.items()
    return [leaf for sub in items for leaf in _placeholder(sub, specs)]


def _to_torch(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        torch = sys.modules["torch"]
        if not value.flags.writeable:  # torch.from_numpy warns on read-only views
            value = value.copy()
        return torch.from_numpy(value)
    if isinstance(value, tuple):
        return tuple(_to_torch(v) for v in value)
    if isinstance(value, list):
        return [_to_torch(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_torch(v) for k, v in value.items()}
    return value
