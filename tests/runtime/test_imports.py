"""A compiled artifact runs without the compiler stack: `import dycl.runtime` loads no
torch, xDSL or torch-mlir (the backend registry it reads is lazy)."""

import subprocess
import sys


def test_importing_the_runtime_loads_no_compiler_stack():
    code = "import dycl.runtime, sys; assert not any(m in sys.modules for m in ('torch','xdsl','torch_mlir'))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


def test_runner_factories_come_from_the_backend_registry():
    code = (
        "import sys; from dycl.backends import BACKENDS, runner_factory; from dycl.runtime import runners; "
        "assert [runner_factory(n) for n in BACKENDS] == [runners.ort_runner, runners.tvm_runner]; "
        "assert not any(m in sys.modules for m in ('torch','xdsl','torch_mlir'))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
