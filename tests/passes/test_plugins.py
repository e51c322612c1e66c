"""Passes of other packages (entry point group `dycl.passes`): a real package, installed into
a temporary site directory (its code and a `.dist-info` with `entry_points.txt`) and put on
PYTHONPATH, is listed by `dycl-opt --help`, runs under `-p` and `dycl.compile(passes=...)`,
and its broken entries are reported by name without stopping dycl-opt."""

import os
import subprocess
import textwrap

import pytest

import dycl
from tests.api import models
from tests.foundation import samples

PACKAGE = '''
"""Toy DyCL passes, registered through entry points."""
from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, StringAttr
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter


@dataclass(frozen=True)
class TagHost(ModulePass):
    """Tags every host function with `toy.tag`."""

    name: ClassVar[str] = "toy-tag-host"
    tag: str = "seen"

    def apply(self, ctx, op):
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and "dycl.subdnn" not in fn.attributes:
                fn.attributes["toy.tag"] = StringAttr(self.tag)


@dataclass(frozen=True)
class LoopInSubDNN(ModulePass):
    """Leaves an scf.for in the first sub-DNN (breaks the HCFG contract)."""

    name: ClassVar[str] = "toy-loop-in-subdnn"

    def apply(self, ctx, op):
        fn = next(f for f in op.ops if "dycl.subdnn" in f.attributes)
        bounds = [arith.ConstantOp(IntegerAttr(v, IndexType())) for v in (0, 1, 1)]
        loop = scf.ForOp(*bounds, [], Region(Block([scf.YieldOp()], arg_types=[IndexType()])))
        Rewriter.insert_op([*bounds, loop], InsertPoint.at_start(fn.body.block))


NOT_A_PASS = 42
'''

ENTRY_POINTS = """
[dycl.passes]
toy-tag-host = dycl_toy_passes:TagHost
toy-loop-in-subdnn = dycl_toy_passes:LoopInSubDNN
toy-broken = dycl_toy_passes.missing:Nothing
toy-not-a-pass = dycl_toy_passes:NOT_A_PASS
dycl-outline = dycl_toy_passes:TagHost
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A site directory holding the installed package `dycl-toy-passes`."""
    root = tmp_path_factory.mktemp("site")
    (root / "dycl_toy_passes").mkdir()
    (root / "dycl_toy_passes" / "__init__.py").write_text(PACKAGE)
    info = root / "dycl_toy_passes-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dycl-toy-passes\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(ENTRY_POINTS).lstrip())
    (info / "RECORD").write_text("")
    return root


def dycl_opt(site, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.environ.get("PYTHONPATH", ""), str(site)]))
    return subprocess.run(["dycl-opt", *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture(scope="module")
def early_exit(tmp_path_factory):
    path = tmp_path_factory.mktemp("ir") / "early_exit.mlir"
    path.write_text(samples.EARLY_EXIT)
    return str(path)


def test_help_lists_the_plugins(site):
    result = dycl_opt(site, "--help")
    assert result.returncode == 0, result.stderr
    assert "toy-tag-host = dycl_toy_passes:TagHost  (dycl-toy-passes)" in result.stdout
    assert "toy-broken = dycl_toy_passes.missing:Nothing" in result.stdout
    assert "dycl-outline = dycl_toy_passes:TagHost  (dycl-toy-passes)  [ignored: DyCL has a pass of that name]" \
        in result.stdout
    assert "toy-tag-host" in "".join(result.stdout.split("passes from other packages")[0].split())  # in -p's list


def test_a_plugin_pass_runs_with_options(site, early_exit):
    result = dycl_opt(site, early_exit, "-p", "dycl-pipeline,toy-tag-host{tag=hello}", "--verify-hcfg")
    assert result.returncode == 0, result.stderr
    assert 'toy.tag = "hello"' in result.stdout


@pytest.mark.parametrize("name, says", [
    ("toy-broken", "pass plugin 'toy-broken' = 'dycl_toy_passes.missing:Nothing' (from dycl-toy-passes) cannot "
                   "be loaded: ModuleNotFoundError: No module named 'dycl_toy_passes.missing'"),
    ("toy-not-a-pass", "pass plugin 'toy-not-a-pass' = 'dycl_toy_passes:NOT_A_PASS' (from dycl-toy-passes) is "
                       "not an xdsl.passes.ModulePass subclass"),
])
def test_a_broken_plugin_is_named_and_stops_nothing_else(site, early_exit, name, says):
    result = dycl_opt(site, early_exit, "-p", f"dycl-const-prop,{name}")
    assert result.returncode == 1
    assert result.stderr == f"<pass pipeline>: error: {says}\n"
    # (the other tests run dycl-opt with these broken entries installed)


def test_a_plugin_that_breaks_the_contract_is_named(site, early_exit):
    result = dycl_opt(site, early_exit, "-p", "dycl-pipeline,toy-loop-in-subdnn", "--verify-hcfg")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "after pass toy-loop-in-subdnn: rule 'subdnn-straight-line'" in result.stderr
    assert "@subdnn_0" in result.stderr and "scf.for in a sub-DNN" in result.stderr


def test_dycl_compile_takes_plugin_passes(site, monkeypatch):
    monkeypatch.syspath_prepend(str(site))  # installs it for this process (caches invalidated)
    with pytest.raises(ValueError, match="toy-broken.*cannot be loaded"):
        dycl.compile(models.skip_gate(), models.skip_gate_inputs()[0], passes="dycl-pipeline,toy-broken")
    with pytest.raises(dycl.PipelineError, match="after pass toy-loop-in-subdnn"):
        dycl.compile(models.skip_gate(), models.skip_gate_inputs()[0], passes="dycl-pipeline,toy-loop-in-subdnn")
    compiled = dycl.compile(models.skip_gate(), models.skip_gate_inputs()[0],
                            passes="dycl-pipeline,toy-tag-host{tag=python}", progress=False)
    forward = next(op for op in compiled.hcfg_module.ops if getattr(op, "sym_name", None) and
                   op.sym_name.data == "forward")
    assert forward.attributes["toy.tag"].data == "python"
    assert compiled.compile_report["check"]["passed"]
