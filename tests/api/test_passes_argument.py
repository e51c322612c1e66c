"""`dycl.compile(passes=...)`: a bad spec or argument is a clear error before the frontend
runs (the model here raises if anything runs it); a good one replaces dycl-pipeline."""

import pytest
import torch
from torch import nn

import dycl
from dycl.passes.compose import parse_passes
from dycl.passes.pipeline import PipelinePass
from dycl.passes.single_thread import SingleThreadPass


class NeverRun(nn.Module):
    def forward(self, x):
        raise AssertionError("the frontend ran")


@pytest.mark.parametrize("passes, error, says", [
    ("dycl-const-prop,dycl-nope", ValueError, r"passes='dycl-const-prop,dycl-nope': Unrecognized passes: \['dycl-nope'\]"),
    ("dycl-outline{min-opz=2}", ValueError, r"not found in expected arguments \[\"min_ops\", \"prefix\"\]"),
    ("dycl-outline{min-ops=", ValueError, "Error parsing pass pipeline specification"),
    ([PipelinePass(), "dycl-outline"], TypeError, "a sequence of xdsl.passes.ModulePass instances"),
])
def test_a_bad_passes_argument_fails_before_the_frontend(passes, error, says):
    with pytest.raises(error, match=says):
        dycl.compile(NeverRun(), torch.zeros(1), passes=passes)


def test_pipeline_options_go_in_the_spec_with_passes():
    with pytest.raises(ValueError, match=r"write them in the spec \(`dycl-pipeline\{merge-calls=true\}`\)"):
        dycl.compile(NeverRun(), torch.zeros(1), passes="dycl-pipeline", pipeline={"merge_calls": True})


def test_specs_and_instances_name_the_same_passes():
    assert parse_passes("dycl-pipeline{merge-calls=true},dycl-single-thread{max-macs=5}") == (
        PipelinePass(merge_calls=True), SingleThreadPass(max_macs=5))
    assert parse_passes(SingleThreadPass()) == (SingleThreadPass(),)
