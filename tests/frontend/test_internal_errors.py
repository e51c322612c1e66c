"""No internal exception escapes the frontend: a DyCL bug is a FrontendError at the user's
statement, naming the internal error, never a raw traceback."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dycl.frontend import FrontendError, import_module
from dycl.frontend.compiler import FunctionCompiler


class TwoStatements(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            h = h * 2  # the statement being compiled when the bug strikes
        return h


def test_an_internal_error_is_a_located_frontend_error(monkeypatch):
    def broken(self, *args, **kwargs):
        raise KeyError("some internal table")

    monkeypatch.setattr(FunctionCompiler, "compile_run", broken)
    with pytest.raises(FrontendError) as info:
        import_module(TwoStatements().eval(), (torch.ones(1, 3),))
    error = info.value
    assert error.file == __file__
    assert error.line == TwoStatements.forward.__code__.co_firstlineno + 1
    assert "internal KeyError" in str(error) and "h = self.fc(x)" in str(error)
    assert isinstance(error.__cause__, KeyError)


def test_the_same_model_compiles_without_the_bug():
    model = TwoStatements().eval()
    program = import_module(model, (torch.ones(1, 3),))
    assert program.function is not None


def test_a_model_without_source_is_refused_where_its_forward_begins():
    """A class made by `exec` has no source file: the error names the code object's own file
    and first line (never line 0)."""
    namespace: dict = {}
    exec(compile("import torch.nn as nn\n\nclass Exec(nn.Module):\n    def forward(self, x):\n        return x * 2\n", "<generated>", "exec"), namespace)
    with pytest.raises(FrontendError) as caught:
        import_module(namespace["Exec"](), (torch.randn(2),))
    assert (caught.value.file, caught.value.line) == ("<generated>", 4)
    assert "cannot read the source of Exec.forward" in str(caught.value)


def test_an_internal_error_at_a_statement_the_frontend_wrote_is_a_frontend_error(monkeypatch):
    """A bug striking at a statement with no source text (a per-length `FixLength`, a
    `Label`) is still a FrontendError (fuzz seed 102437: an IndexError escaped)."""
    from dycl.frontend import compiler, nodes

    def broken(self, stmt, block):
        self.current = (self.scope.source, nodes.Label(1, lineno=stmt.lineno))
        raise KeyError("some internal table")

    monkeypatch.setattr(compiler.FunctionCompiler, "visit_If", broken)
    with pytest.raises(FrontendError) as info:
        import_module(TwoStatements().eval(), (torch.ones(1, 3),))
    assert "internal KeyError" in str(info.value) and "Label" in str(info.value)
    assert info.value.file == __file__ and info.value.line > 0
