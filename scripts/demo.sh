#!/usr/bin/env bash
# Install DyCL (pinned versions) and run the demo: optimise a bundled dynamic-network IR
# with dycl-opt and run it, before and after, through the reference interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet -e .
echo "== dycl-opt -p dycl-const-prop,dycl-unroll-loops examples/early_exit.mlir"
dycl-opt examples/early_exit.mlir -p 'dycl-const-prop,dycl-unroll-loops' -o /tmp/dycl_demo.mlir
cat /tmp/dycl_demo.mlir
for seed in 0 1 2; do
  echo "== dycl-run (seed $seed): original vs optimised"
  dycl-run examples/early_exit.mlir --random --seed "$seed" --weights examples/early_exit.weights.npz
  dycl-run /tmp/dycl_demo.mlir --random --seed "$seed" --weights examples/early_exit.weights.npz
done
