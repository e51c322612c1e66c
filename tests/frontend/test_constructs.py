"""Issue 34's constructs (the registry tests/frontend/constructs.py), each compiled on ONNX
Runtime and TVM and compared with eager on every path input (slow tier: the existing tests
run the default-tier legs); a construct DyCL refuses by design is that refusal. The default
tier only checks that every row names a test that exists."""

from __future__ import annotations

import ast

import pytest

from tests.frontend.constructs import BACKENDS, CONSTRUCTS, measure


def test_every_construct_names_a_test_that_exists():
    for construct in CONSTRUCTS:
        tree = ast.parse(construct.test_path.read_text())
        names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert construct.test_function in names, construct.test


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("construct", CONSTRUCTS, ids=lambda construct: construct.name)
def test_construct_matches_eager(construct, backend):
    leg = measure(construct, backend, use_cache=True)
    print(f"{construct.name} on {backend}: {leg}")
    if construct.refused is not None:
        assert leg["status"] == "refused as expected", leg
    else:
        assert leg["status"] == "exact" and leg["error"] <= construct.tolerance, leg
