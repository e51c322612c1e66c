"""The nine dynamic networks of the DyCL evaluation, rebuilt with seeded weights (docs/zoo.md; each module names its paper),
and `gpt_decode`, a gpt-fast-style decoder with a KV cache (dycl-bench's decode table).

``REGISTRY[name]`` is a :class:`ZooEntry`: ``build(seed=0)``, ``example_inputs()``,
``path_inputs()`` (inputs that together take every path) and ``paths(model, inputs)``.
This package imports torch only.
"""

from __future__ import annotations

from dycl.zoo import blockdrop, caption, gpt_decode, sdn, skipnet
from dycl.zoo.calibration import CalibrationError
from dycl.zoo.entry import Inputs, ZooEntry, clear_caches

REGISTRY: dict[str, ZooEntry] = {
    entry.name: entry
    for entry in [*sdn.ENTRIES, *skipnet.ENTRIES, *caption.ENTRIES, *blockdrop.ENTRIES, *gpt_decode.ENTRIES]
}
EVALUATION = tuple(name for name, entry in REGISTRY.items() if entry.family != "decode")
"""The nine networks of the DyCL evaluation (dycl-bench's latency table; gpt_decode has its own)."""

__all__ = ["REGISTRY", "EVALUATION", "ZooEntry", "Inputs", "CalibrationError", "clear_caches"]
