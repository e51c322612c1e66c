"""The interface every backend implements; `dycl.backends` registers them by name."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any, ClassVar, Self

if TYPE_CHECKING:
    from dycl.backends.compiled import CompiledSubDNN
    from dycl.backends.subdnn import SubDNN


class Backend(ABC):
    """A static deep-learning compiler for sub-DNNs, configured by its options.

    A subclass gives its registered `name`, its options as a frozen dataclass with
    defaults (`Options`) and the distributions whose versions decide what it compiles
    (`tool_packages`, part of the compile-cache key), and implements `compile`. One that
    compiles many sub-DNNs faster in one call than one by one overrides `compile_batch`
    and sets `batches`. What it compiles runs in the runner factory registered beside it
    (`dycl.backends.runner_factory(name)`).
    """

    name: ClassVar[str]
    Options: ClassVar[type]
    tool_packages: ClassVar[tuple[str, ...]]
    batches: ClassVar[bool] = False
    dynamic_batch: ClassVar[bool] = False
    """It compiles batchable sub-DNNs (`SubDNN.batch_rows`) with a dynamic dim 0, so that
    `run_many` can batch their calls (else dycl-mark-batchable does not run for it)."""
    """Whether `compile_batch` beats compiling in a pool of workers."""

    def __init__(self, options: Any = None):
        self.options = self.Options() if options is None else options

    @classmethod
    def option_names(cls) -> list[str]:
        return sorted(f.name for f in fields(cls.Options))

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Self:
        """The backend with these options over the defaults; an unknown name is a TypeError."""
        known = cls.option_names()
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise TypeError(f"unknown {cls.name} backend option(s) {unknown}; known: {', '.join(known) or 'none'}")
        return cls(cls.Options(**options))

    def option_values(self) -> dict[str, Any]:
        """The options as a name -> value dict (the manifest and the cache key record it)."""
        # Not dataclasses.asdict: it deep-copies values, and a TVM Target need not copy.
        return {f.name: getattr(self.options, f.name) for f in fields(self.options)}

    @abstractmethod
    def compile(self, subdnn: SubDNN, weights: Mapping[str, Any]) -> CompiledSubDNN:
        """Compile one sub-DNN; raise `BackendError` for what this backend cannot take."""

    def compile_batch(self, subdnns: Sequence[SubDNN], weights: Mapping[str, Any]) -> dict[str, CompiledSubDNN]:
        """Compile several sub-DNNs; returns name -> compiled, in order."""
        return {subdnn.name: self.compile(subdnn, weights) for subdnn in subdnns}
