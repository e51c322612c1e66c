"""Inference no-ops as research code writes them: `.data`, `.cuda()`, `.cpu()`, `.to(device)`,
`Variable(x)`, `with torch.no_grad():` (issue 13.1)."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

import dycl
from tests.frontend.helpers import max_abs_error
from tests.frontend.test_desugar_support import check_paths, marked_line, refused, scaled_inputs, seeded  # noqa: F401 (autouse fixture)


class DataExit(nn.Module):
    """`.data` on weights, inputs and 0-d scores (old SDN/BranchyNet code)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.exit = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(x.data @ self.fc.weight.data.t() + self.fc.bias.data)
        conf = torch.max(F.softmax(self.exit(h), 1)).data
        if conf > 0.6:
            return self.exit(h).data, 0
        return h.data.cpu() * 2, 1


class OnDevice(nn.Module):
    """GPU code: `.cuda()`, `.to(device)` in every spelling."""

    def __init__(self, device="cuda"):
        super().__init__()
        self.device = torch.device(device)
        self.thresholds = [0.5, 0.25]
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = x.to(self.device)
        t = torch.tensor(self.thresholds).to(x.device)
        h = self.fc(x.cuda()) if self.device.type == "cuda" else self.fc(x.cpu())
        h = h.to(self.device.type, non_blocking=True).to(device=x.device)
        if x[0, 0] > t[0]:
            return h.to(0 if self.device.type == "cuda" else "cpu"), t.to(self.device)
        return h.cpu().to(self.device) * 2, t


class DtypeConversions(nn.Module):
    def forward(self, x):
        return x.to("cuda", torch.float64), x.to(dtype=torch.float16), x.to(torch.device("cuda"), torch.int64)


class VariableInput(nn.Module):
    def forward(self, x):
        x = Variable(x)
        y = torch.autograd.Variable(x * 2, requires_grad=False)
        if y.sum() > 0:
            return x + y
        return x - y


class NoGradBlocks(nn.Module):
    """no_grad / inference_mode / set_grad_enabled(False) blocks with an early return inside."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        with torch.no_grad():
            x = torch.tanh(self.blocks[0](x))
            if x.sum() > 1.0:
                return x, 0
        with torch.inference_mode():
            x = torch.tanh(self.blocks[1](x))
        with torch.set_grad_enabled(False), torch.no_grad():
            x = self.blocks[2](x)
        return x, 1


class NoGradInLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        gates = x[0, :3].clone()
        for i, block in enumerate(self.blocks):
            with torch.no_grad():
                x = torch.tanh(block(x))
                if gates[i] > 0:
                    break
        return x, i


class DataAlias(nn.Module):
    """`.data` is the same memory: an in-place change through it changes the tensor."""

    def forward(self, x):
        z = x * 1
        y = z.data
        y.add_(1)
        return z * 2


def test_data_is_detach_and_keeps_values_on_every_path():
    check_paths(DataExit(), scaled_inputs(1, 8))


def test_cuda_cpu_and_to_device_are_the_tensor_itself():
    # eager `.cuda()` needs a GPU: the reference is the same model on the CPU device
    model = OnDevice("cuda")
    reference = OnDevice("cpu")
    reference.load_state_dict(model.state_dict())
    program = check_paths(model, scaled_inputs(1, 8), reference.eval())
    text = str(program.module)
    assert "_to_copy" not in text and "_assert_tensor_metadata" not in text


def test_to_keeps_dtype_conversions_and_drops_the_device():
    from dycl.frontend import import_module

    program = import_module(DtypeConversions(), (torch.randn(1, 8),))
    results = [str(t) for t in program.function.function_type.outputs.data]
    assert results == ["!torch.vtensor<[1,8],f64>", "!torch.vtensor<[1,8],f16>", "!torch.vtensor<[1,8],si64>"]


def test_to_helper_on_tensors_and_other_objects():
    from dycl.frontend.desugar import HELPERS

    to, cuda, data = HELPERS["__dycl_to"], HELPERS["__dycl_cuda"], HELPERS["__dycl_data"]
    t = torch.randn(2)
    assert to(t, "cuda") is t and to(t, torch.device("cuda:1"), non_blocking=True) is t and to(t, 0) is t
    assert to(t, "cuda", torch.float64).dtype == torch.float64
    assert to(t, device="cuda", dtype=torch.int64).dtype == torch.int64
    assert cuda(t) is t
    assert data(t).data_ptr() == t.data_ptr() and not data(t).requires_grad
    module = nn.Linear(2, 2)
    assert to(module, "cpu") is module  # a module's own .to (a no-op on the CPU)

    class Holder:
        data = [1, 2]

    assert data(Holder()) == [1, 2]


def test_variable_is_its_argument():
    check_paths(VariableInput(), scaled_inputs(1, 8))


def test_no_grad_blocks_are_their_body():
    check_paths(NoGradBlocks(), scaled_inputs(1, 8))


def gated(*gates):
    """Inputs whose first entries steer the branches (1 = taken, -1 = not taken)."""
    inputs = []
    for k, row in enumerate(gates):
        x = torch.randn(1, 8, generator=torch.Generator().manual_seed(k))
        x[0, : len(row)] = torch.tensor(row, dtype=torch.float32)
        inputs.append((x,))
    return inputs


def test_no_grad_block_with_break_in_an_unrolled_loop():
    check_paths(NoGradInLoop(), gated([1, 1, 1], [-1, 1, 1], [-1, -1, 1], [-1, -1, -1]))


def test_data_stays_an_alias_of_the_tensor():
    check_paths(DataAlias(), scaled_inputs(1, 8), all_branches=False)


class EnableGrad(nn.Module):
    def forward(self, x):
        with torch.enable_grad():  # REFUSED
            x = x * 2
        return x


class NoGradAs(nn.Module):
    def forward(self, x):
        with torch.no_grad() as guard:  # REFUSED
            x = x * 2
        return x, guard


class GradModeFromConfig(nn.Module):
    def __init__(self):
        super().__init__()
        self.train_grad = False

    def forward(self, x):
        with torch.set_grad_enabled(self.train_grad):  # REFUSED
            x = x * 2
        return x


class ShadowedNoGrad(nn.Module):
    """A local `torch` is not the torch module: the `with` keeps its meaning, refused."""

    def forward(self, x):
        torch = __import__("contextlib")
        with torch.nullcontext():  # REFUSED
            x = x * 2
        return x


@pytest.mark.parametrize("cls", [EnableGrad, NoGradAs, GradModeFromConfig, ShadowedNoGrad])
def test_other_with_statements_stay_refused_at_their_line(cls):
    error = refused(cls(), (torch.randn(1, 8),), "`with` statement", marked_line(cls))
    assert "no_grad" in error.construct


class SelfData(nn.Module):
    """A module attribute named `data` is not a tensor's `.data`: it keeps its meaning."""

    def __init__(self):
        super().__init__()
        self.data = [0.5, 2.0]
        self.register_buffer("scale", torch.tensor(3.0))

    def forward(self, x):
        if x.sum() > self.data[0]:
            return x * self.data[1] * self.scale.data
        return x


def test_data_of_a_non_tensor_keeps_its_meaning():
    check_paths(SelfData(), scaled_inputs(1, 8))


def test_end_to_end_on_onnxruntime():
    model = NoGradBlocks().eval()
    inputs = scaled_inputs(1, 8)
    compiled = dycl.compile(model, inputs[0], backend="onnxruntime", progress=False)
    for args in inputs:
        with torch.no_grad():
            assert max_abs_error(model(*args), compiled(*args)) <= 1e-4


class DataInPlaceChain(nn.Module):
    """`z.data.mul_(2)` / `z.data[0, 0] = 5` change z (old-style weight surgery on a local)."""

    def forward(self, x):
        z = x * 1
        z.data.mul_(2)
        z.data[0, 0] = 5.0
        if z.sum() > 0:
            return z
        return -z


def test_in_place_changes_through_data_reach_the_tensor():
    check_paths(DataInPlaceChain(), scaled_inputs(1, 8))
