"""dycl-opt runs dycl-pipeline as its steps, through xDSL's PassPipeline: verification after
each pass, --time-passes and --print-between-passes see every step, not one pass."""

import re

import pytest
from xdsl.ir import Attribute

import dycl.tools.dycl_opt as dycl_opt
from dycl.passes.const_prop import ConstPropPass
from dycl.passes.pipeline import PipelinePass, expand_pipelines
from tests.foundation import samples
from tests.foundation.broken_pass import SwapFirstTwoOps

T2 = "!torch.vtensor<[2],f32>"
TWO_RELUS = (
    '"builtin.module"() ({\n'
    f'  "func.func"() <{{sym_name = "f", function_type = ({T2}) -> {T2}}}> ({{\n'
    f"  ^bb0(%x: {T2}):\n"
    f'    %y = "torch.aten.relu"(%x) : ({T2}) -> {T2}\n'
    f'    %z = "torch.aten.relu"(%y) : ({T2}) -> {T2}\n'
    f'    "func.return"(%z) : ({T2}) -> ()\n'
    "  }) : () -> ()\n"
    "}) : () -> ()\n"
)


def step_names(pipeline: PipelinePass) -> list[str]:
    return [p.name for p in pipeline.passes()]


def test_expand_pipelines_replaces_each_pipeline_by_its_steps():
    pipeline = PipelinePass(merge_calls=True)
    expanded = expand_pipelines([ConstPropPass(), pipeline])
    assert expanded == (ConstPropPass(), *pipeline.passes())
    assert "dycl-merge-calls" in step_names(pipeline)


@pytest.mark.parametrize("verify", [True, False])
@pytest.mark.parametrize("spec, pipeline", [("dycl-pipeline", PipelinePass()),
                                            ("dycl-pipeline{merge-calls=true}", PipelinePass(merge_calls=True))])
def test_time_passes_times_each_step(tmp_path, capsys, monkeypatch, spec, pipeline, verify):
    # xDSL's --disable-verify turns attribute verification off for the whole process: undo it.
    monkeypatch.setattr(Attribute, "__post_init__", Attribute.__post_init__)
    source = tmp_path / "early_exit.mlir"
    source.write_text(samples.EARLY_EXIT)
    flags = [] if verify else ["--disable-verify"]
    assert dycl_opt.main([str(source), "-p", spec, "--time-passes", *flags]) == 0
    timed = re.findall(r"^Pass (\S+) took \S+ seconds$", capsys.readouterr().out, re.MULTILINE)
    assert timed == step_names(pipeline)


def test_print_between_passes_shows_the_ir_between_steps(tmp_path, capsys):
    source = tmp_path / "early_exit.mlir"
    source.write_text(samples.EARLY_EXIT)
    assert dycl_opt.main([str(source), "-p", "dycl-pipeline", "--print-between-passes"]) == 0
    shown = re.findall(r"^IR after (\S+):$", capsys.readouterr().out, re.MULTILINE)
    assert shown == step_names(PipelinePass())[:-1]  # xDSL prints none after the last pass


def test_a_step_that_breaks_the_ir_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(PipelinePass, "passes", lambda self: (ConstPropPass(), SwapFirstTwoOps(), ConstPropPass()))
    source = tmp_path / "ok.mlir"
    source.write_text(TWO_RELUS)
    assert dycl_opt.main([str(source), "-p", "dycl-pipeline"]) == 1
    first_line = capsys.readouterr().err.splitlines()[0]
    assert first_line.startswith(f"{source}:5:5: error: 'torch.aten.relu' op operand #0 (%y) does not dominate")
    assert first_line.endswith("[after pass test-swap-first-two-ops]")
