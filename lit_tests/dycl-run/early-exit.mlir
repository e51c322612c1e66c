// The interpreter takes the branch the data asks for (seed 2 exits early, seed 0 does not).
// RUN: dycl-run %S/../../examples/early_exit.mlir --random --seed 2 --weights %S/../../examples/early_exit.weights.npz | filecheck %s --check-prefix=EXIT
// RUN: dycl-run %S/../../examples/early_exit.mlir --random --seed 0 --weights %S/../../examples/early_exit.weights.npz | filecheck %s --check-prefix=FULL
// RUN: dycl-opt %S/../../examples/early_exit.mlir -p dycl-const-prop -o %t.mlir
// RUN: dycl-run %t.mlir --random --seed 2 --weights %S/../../examples/early_exit.weights.npz | filecheck %s --check-prefix=EXIT

// EXIT: result 0: tensor[1, 4] float32
// EXIT: result 1: 0
// FULL: result 1: 1
