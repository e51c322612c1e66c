"""The zoo networks through dycl.compile, both backends, every path (slow: -m slow)."""

import pytest
import torch

import dycl
from tests.api.shared import BACKENDS, max_error


def zoo_names():
    from dycl.zoo import REGISTRY

    return sorted(REGISTRY)


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", zoo_names())
def test_zoo_network_matches_eager(name, backend):
    from dycl.zoo import REGISTRY

    entry = REGISTRY[name]
    model = entry.build(0)
    compiled = dycl.compile(model, entry.example_inputs(), backend=backend, progress=False)
    with torch.no_grad():
        for args in entry.path_inputs():
            assert max_error(model(*args), compiled(*args)) <= 1e-4
