"""`import dycl.codegen` loads no torch, xDSL or torch-mlir: the IR brings xDSL when code
is generated, and a deployed host program needs numpy and dycl.runtime only."""

import subprocess
import sys


def test_import_dycl_codegen_loads_no_torch_xdsl_or_torch_mlir():
    check = (
        "import dycl.codegen, sys; "
        "loaded = [m for m in ('torch', 'xdsl', 'torch_mlir') if m in sys.modules]; "
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", check], check=True)
