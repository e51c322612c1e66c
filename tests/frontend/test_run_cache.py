"""The cache of exported runs never serves one module's weights for another's call."""

import torch
import torch.nn as nn

from tests.frontend.helpers import assert_compiled_exactly, assert_imported_exactly


class PlainListBlocks(nn.Module):
    """Blocks in a plain Python list (not registered submodules): the same statement calls
    two modules whose weights export bakes in as constants."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.plain = [nn.Linear(4, 4), nn.Linear(4, 4)]

    def forward(self, x):
        h = self.fc(x)
        for block in self.plain:
            h = block(h)
            if h.sum() > 0:
                h = h * 2
        return h


INPUTS = [(torch.randn(1, 4, generator=torch.Generator().manual_seed(s)) * scale,) for s in range(4) for scale in (0.1, 1.0, -3.0, 3.0)]


def test_a_statement_calling_modules_outside_the_model_is_exported_for_each():
    assert_imported_exactly(PlainListBlocks, INPUTS)
    assert_compiled_exactly(PlainListBlocks, INPUTS, "onnxruntime")
