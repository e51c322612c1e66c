"""The nine dynamic networks of the DyCL evaluation, rebuilt with seeded weights (docs/zoo.md; each module names its paper).

``REGISTRY[name]`` is a :class:`ZooEntry`: ``build(seed=0)``, ``example_inputs()``,
``path_inputs()`` (inputs that together take every path) and ``paths(model, inputs)``.
This package imports torch only.
"""

from __future__ import annotations

from dycl.zoo import blockdrop, caption, sdn, skipnet
from dycl.zoo.calibration import CalibrationError
from dycl.zoo.entry import Inputs, ZooEntry, clear_caches

REGISTRY: dict[str, ZooEntry] = {
    entry.name: entry
    for entry in [*sdn.ENTRIES, *skipnet.ENTRIES, *caption.ENTRIES, *blockdrop.ENTRIES]
}

__all__ = ["REGISTRY", "ZooEntry", "Inputs", "CalibrationError", "clear_caches"]
