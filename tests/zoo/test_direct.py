"""The direct-compilation baseline: compiling a dynamic network without DyCL goes wrong."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dycl.zoo import EVALUATION, REGISTRY
from dycl.zoo.direct import ROUTES, RouteResult, markdown_table, measure


def _assert_every_route_fails(name: str) -> list[RouteResult]:
    results = measure(name)
    assert [r.route for r in results] == ROUTES
    for result in results:
        assert not result.correct, f"{name}: {result.route} reproduced eager on every path"
        assert result.compiled or result.error
    # Tracing compiles, but only the example's path: most path inputs come out wrong.
    traced = results[0]
    assert traced.compiled and traced.wrong >= traced.total - 1
    return results


@pytest.mark.parametrize("name", ["sdn_mobilenet", "blockdrop"])
def test_direct_compilation_is_wrong_or_fails(name):
    _assert_every_route_fails(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in EVALUATION if n not in ("sdn_mobilenet", "blockdrop")])
def test_direct_compilation_is_wrong_or_fails_everywhere(name):
    _assert_every_route_fails(name)


class _Static(nn.Module):
    """No control flow: every route must reproduce eager (the harness itself is sound)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.linear(x)), 3


def test_a_static_network_compiles_correctly_on_every_route(monkeypatch):
    from dycl.zoo import entry as entry_module

    torch.manual_seed(0)
    model = _Static().eval()
    inputs = [(torch.randn(1, 4),) for _ in range(3)]
    fake = entry_module.ZooEntry(
        name="static", family="test", summary="", build=lambda seed=0: model,
        example_inputs=lambda: inputs[0], path_inputs=lambda: inputs,
        path_of=lambda m, a: 0, branches_of=lambda p: frozenset(),
        all_branches=lambda m: frozenset())
    monkeypatch.setitem(REGISTRY, "static", fake)
    results = measure("static")
    assert all(r.correct for r in results), [r.cell() for r in results]
    table = markdown_table({"static": results})
    assert table.count("\n") == 2 and "wrong on 0/3" in table
