#!/usr/bin/env bash
# Install DyCL (pinned versions) and run the demo: compile a bundled zoo network (a greedy
# caption decoder that stops at its end token) with ONNX Runtime, check it against eager
# PyTorch on inputs that take every path, and run the artifact without torch.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet -e .
out="${DYCL_DEMO_DIR:-/tmp/dycl-demo}"
echo "== dycl-compile zoo:caption_googlenet --check   (error vs eager, speed-up, sub-DNN count)"
dycl-compile zoo:caption_googlenet -o "$out" --check
echo "== dycl-run $out --random --repeat 100   (the deployed artifact: numpy + ONNX Runtime, no torch)"
dycl-run "$out" --random --repeat 100
echo "== the IR level: dycl-opt on a small early-exit program, then the interpreter"
dycl-opt examples/early_exit.mlir -p dycl-pipeline --emit-hcfg=summary
