# lit configuration: `dycl-opt`, `dycl-run`, `filecheck` and `%python` for DyCL's IR tests.
import os
import shutil
import sys

import lit.formats

config.name = "DyCL"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "lit.local.cfg", "Inputs", "Output"]
config.test_source_root = os.path.dirname(__file__)

# Console scripts live beside the interpreter that runs lit.
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
for var in ("HOME", "TMPDIR", "PYTHONPATH", "OMP_NUM_THREADS", "DYCL_CACHE_DIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

for tool in ("dycl-opt", "filecheck"):
    if shutil.which(tool, path=config.environment["PATH"]) is None:
        lit_config.fatal(f"{tool} not found: run `pip install -e '.[dev]'` first")

config.substitutions.append(("%python", sys.executable))
if shutil.which("torch-mlir-opt", path=config.environment["PATH"]):
    config.available_features.add("torch-mlir-opt")
