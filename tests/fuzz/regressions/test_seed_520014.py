"""Found by `python -m dycl.fuzz --count 24 --seed 520000`, seed 520014 (forms `dynamic_dim`
and `runtime_slice`), shrunk: "pipeline-error: torch.aten.slice_scatter: expected src to
have a size equal to the slice of self". `buf6[:k5] = torch.tanh(x)` with `x` of a size
known only at run time (it took rows of `ctx`, whose rows are dynamic) and `k5` a runtime
int: the store skipped its broadcast because both types read `[?, 4]`, though x has one
row and the slice k5. Broadcast as a run, the two runtime dims were captured as one size,
which failed wherever k5 was not 1. The host now broadcasts such a store to the view's
sizes at run time (`host_slices._broadcast_on_host`)."""

import pytest

from dycl.fuzz.oracle import check_program
from dycl.fuzz.program import Program, Research

PROGRAM = Program(seed=520014, input_shape=(1, 4), modules={'m11': 'nn.Linear(4, 4)'}, helpers={}, prologue=['x = x.clone()', 'acc = torch.zeros(1, 4)', 'count = 0'], body=[Research(text='for fz_t in range(ctx.size(0)):\n    x = x + 0.05 * torch.tanh(ctx[fz_t : fz_t + 1] + x)\nfz_arange = torch.arange(0, ctx.size(0))\nx = x + 0.05 * (ctx * fz_arange[:, None]).sum(0, keepdim=True) / ctx.size(0)', form='dynamic_dim'), Research(text='k5 = int(F.softmax(x, -1)[0, :4].argmax()) - 0\nbuf6 = torch.zeros(3, 4)\nbuf6[:k5] = torch.tanh(x)\nx = x + 0.1 * buf6.sum(0, keepdim=True)', form='runtime_slice')], epilogue=['x = x + acc', 'return self.m11(x), count'], thresholds=[], imports=['import random', 'import numpy as np', 'from torch.autograd import Variable', 'from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence'], lengths=4, lengths_type='tuple', classes=[], forward_decorators=[], arguments=[('ctx', 'dynamic_rows')], methods=[], init=[], buffers=[])


@pytest.mark.parametrize("backend", [None, "onnxruntime"])
def test_a_row_of_a_runtime_size_stored_over_a_runtime_count_of_rows(backend):
    outcome = check_program(PROGRAM, backend)
    assert outcome.status == "ok", outcome.detail
