"""Settings of the whole test session.

scripts/test.sh runs the suite on pytest-xdist workers, one per core. Each worker runs
torch on one intra-op thread: two workers with two spinning OpenMP threads each on two
cores slowed everything they ran (tests/zoo/conftest.py saw 5x on the zoo alone). No
test depends on torch's thread count (the ones that need one thread set it themselves);
the compiled models' ONNX Runtime and TVM threads are their own (RuntimeOptions).

One compile cache for the session, shared by the workers: the controller makes it
before the workers start, and they inherit the variable. A worker that compiles a
sub-DNN the other already compiled gets a cache hit; two that compile it at once race
to write the entry, which the cache tolerates (tests/backends/test_cache_races.py).
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

if os.environ.get("PYTEST_XDIST_WORKER"):
    import torch

    torch.set_num_threads(1)
