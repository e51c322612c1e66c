"""The weight store: parameters and buffers by `state_dict` name, outside the IR.

The host IR refers to weights with `dycl.param {name = "<state_dict key>"}`; backends, the
reference interpreter and the runtime read the values from a `WeightStore`, saved as one
`.npz` file (numpy only, so deployment needs no torch).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np


class WeightStore(Mapping[str, np.ndarray]):
    def __init__(self, arrays: Mapping[str, np.ndarray] | None = None):
        self._arrays: dict[str, np.ndarray] = dict(arrays or {})

    @classmethod
    def from_module(cls, module) -> "WeightStore":
        """Every parameter and buffer (persistent or not) of a torch module, by its dotted name;
        a complex one as its real view (`torch.view_as_real`: a trailing dim of 2, real and
        imaginary parts), as the IR types it (docs/conventions.md, "Complex values")."""
        arrays = {}
        for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
            array = tensor.detach().cpu().resolve_conj().numpy()
            if np.iscomplexobj(array):
                array = np.stack([array.real, array.imag], axis=-1)
            arrays[name] = array.copy()
        return cls(arrays)

    def subset(self, names) -> "WeightStore":
        return WeightStore({name: self._arrays[name] for name in names})

    def save(self, path: str | Path) -> None:
        # np.savez would mangle nothing in dotted names, but "/" is kept out of keys by torch.
        np.savez(path, **self._arrays)

    @classmethod
    def load(cls, path: str | Path) -> "WeightStore":
        with np.load(path, allow_pickle=False) as data:
            return cls({name: data[name] for name in data.files})

    def __getitem__(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def __repr__(self) -> str:
        return f"WeightStore({len(self)} arrays)"
