"""Host codegen: readable Python that computes what the HCFG computes.

The generated host runs here with sub-DNN callables that evaluate the sub-DNN funcs in
the reference interpreter, so codegen is checked independently of any backend.
"""

import ast

import numpy as np
import pytest
import torch

from dycl.codegen import CodegenError, generate_host
from dycl.interpreter import run_function
from dycl.ir import make_context, parse_module
from dycl.passes.pipeline import PipelinePass
from tests.foundation.samples import SAMPLES, inputs, weights


def hcfg(text):
    module = parse_module(text)
    PipelinePass().apply(make_context(), module)
    return module


def bind(module, program, store):
    def interpreted(name):
        def call(*arrays):
            args = [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]
            return [r.numpy() for r in run_function(module, args, store, name=name)]

        return call

    namespace = {}
    exec(compile(program.source, "host.py", "exec"), namespace)
    subdnns = {name: interpreted(name) for name in program.subdnn_names}
    constants = {**program.constants, **{n: store[n].numpy() for n in program.weight_names}}
    return namespace["bind"](subdnns, constants)


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_generated_host_matches_interpreter(sample):
    module, store = hcfg(SAMPLES[sample]), weights()
    program = generate_host(module)
    forward = bind(module, program, store)
    reference = parse_module(SAMPLES[sample])
    for x in inputs(12):
        expected = run_function(reference, [x], store)
        actual = forward(x.numpy())
        assert len(expected) == len(actual)
        for e, a in zip(expected, actual):
            if isinstance(e, torch.Tensor):
                np.testing.assert_allclose(a, e.numpy(), atol=1e-6)
            else:
                assert e == a and type(e) is type(a)


def test_source_reads_like_the_program():
    early = generate_host(hcfg(SAMPLES["early_exit"])).source
    assert "if bb:" in early and "return (h, 0)" in early and "return (h2, 1)" in early  # early returns
    loop = generate_host(hcfg(SAMPLES["gated_loop"])).source
    assert "for _ in range(0, 4):" in loop
    bounded = generate_host(hcfg(SAMPLES["bounded_while"])).source
    assert "while True:" in bounded and "break" in bounded and ".item()" in bounded
    for source in (early, loop, bounded):
        imported = {
            alias.name
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names
        } | {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
        assert imported <= {"numpy", "dycl.runtime", "host_support"}, imported


V = "!torch.vtensor"
HOISTED = f'''
"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({V}<[2,6],f32>) -> (!torch.list<vtensor>, {V}<[3,2,2],f32>, {V}<[4,3],f32>, !torch.int)}}> ({{
  ^bb0(%x: {V}<[2,6],f32>):
    %c0 = "torch.constant.int"() <{{value = 0 : i64}}> : () -> !torch.int
    %c1 = "torch.constant.int"() <{{value = 1 : i64}}> : () -> !torch.int
    %c2 = "torch.constant.int"() <{{value = 2 : i64}}> : () -> !torch.int
    %c3 = "torch.constant.int"() <{{value = 3 : i64}}> : () -> !torch.int
    %cm1 = "torch.constant.int"() <{{value = -1 : i64}}> : () -> !torch.int
    %shape = "torch.prim.ListConstruct"(%c3, %c2, %cm1) : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %v = "torch.aten.view"(%x, %shape) : ({V}<[2,6],f32>, !torch.list<int>) -> {V}<[3,2,2],f32>
    %t = "torch.aten.transpose.int"(%x, %c0, %c1) : ({V}<[2,6],f32>, !torch.int, !torch.int) -> {V}<[6,2],f32>
    %s = "torch.aten.select.int"(%t, %c1, %c0) : ({V}<[6,2],f32>, !torch.int, !torch.int) -> {V}<[6],f32>
    %u = "torch.aten.unsqueeze"(%s, %c0) : ({V}<[6],f32>, !torch.int) -> {V}<[1,6],f32>
    %none = "torch.constant.none"() : () -> !torch.none
    %sl = "torch.aten.slice.Tensor"(%u, %c1, %c0, %c3, %c1) : ({V}<[1,6],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> {V}<[1,3],f32>
    %empty = "torch.prim.ListConstruct"() : () -> !torch.list<vtensor>
    %l1 = "torch.aten.append.t"(%empty, %sl) : (!torch.list<vtensor>, {V}<[1,3],f32>) -> !torch.list<vtensor>
    %l2 = "torch.aten.append.t"(%l1, %sl) : (!torch.list<vtensor>, {V}<[1,3],f32>) -> !torch.list<vtensor>
    %pair = "torch.prim.ListConstruct"(%sl, %sl, %sl, %sl) : ({V}<[1,3],f32>, {V}<[1,3],f32>, {V}<[1,3],f32>, {V}<[1,3],f32>) -> !torch.list<vtensor>
    %cat = "torch.aten.cat"(%pair, %c0) : (!torch.list<vtensor>, !torch.int) -> {V}<[4,3],f32>
    %n = "torch.aten.len.t"(%l2) : (!torch.list<vtensor>) -> !torch.int
    %k = "torch.aten.mul.int"(%n, %c3) : (!torch.int, !torch.int) -> !torch.int
    "func.return"(%l2, %v, %cat, %k) : (!torch.list<vtensor>, {V}<[3,2,2],f32>, {V}<[4,3],f32>, !torch.int) -> ()
  }}) : () -> ()
}}) : () -> ()
'''


def test_hoisted_views_and_lists_run_on_numpy():
    module = parse_module(HOISTED)
    program = generate_host(module)
    assert program.subdnn_names == []
    forward = bind(module, program, {})
    x = torch.randn(2, 6)
    expected = run_function(parse_module(HOISTED), [x])
    actual = forward(x.numpy())
    assert isinstance(actual[0], list) and len(actual[0]) == 2
    for e, a in zip(expected[0], actual[0]):
        np.testing.assert_array_equal(a, e.numpy())
    np.testing.assert_array_equal(actual[1], expected[1].numpy())
    np.testing.assert_array_equal(actual[2], expected[2].numpy())
    assert actual[3] == expected[3] == 6


def test_untranslatable_host_op_is_named():
    text = HOISTED.replace('"torch.aten.cat"(%pair, %c0)', '"torch.aten.weird_op"(%pair, %c0)')
    with pytest.raises(CodegenError, match="torch.aten.weird_op"):
        generate_host(parse_module(text))


def test_host_program_keeps_the_forward_variable_names():
    """From PyTorch to host.py: values keep the names of the forward's variables (a
    rebound variable numbered: h, h_1 ...), and the program stays exact."""
    import dycl
    import torch

    from tests.backends.boundary_models import PythonInt
    from tests.frontend.helpers import eager, max_abs_error

    torch.manual_seed(0)
    model = PythonInt().eval()
    compiled = dycl.compile(model, torch.randn(1, 4), backend="onnxruntime", progress=False)
    tree = ast.parse(compiled.source)
    assigned = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)}
    assert {"h", "k", "h_1"} <= assigned, assigned
    assert "k = int(" in compiled.source
    for scale in (0.1, 1.0, -4.0, 4.0):
        x = torch.randn(1, 4) * scale
        assert max_abs_error(eager(model, (x,)), compiled(x)) <= 1e-5


@pytest.mark.parametrize("name, example", [
    ("NestedForCarry", torch.randn(1, 4)),
    ("NestedWhileCarry", torch.full((1, 4), 30.0)),  # the example never enters the while
    ("UnderscoreVariable", torch.randn(1, 4)),
    ("UnicodeName", torch.randn(1, 4)),
])
def test_names_and_in_place_carries_keep_the_program_exact(name, example):
    import dycl

    from tests.codegen import naming_models
    from tests.frontend.helpers import eager, max_abs_error

    torch.manual_seed(0)
    model = getattr(naming_models, name)().eval()
    compiled = dycl.compile(model, example, backend="onnxruntime", progress=False, check=False)
    for scale in (30.0, 3.0, 1.0, 0.3, -3.0):
        x = torch.randn(1, 4, generator=torch.Generator().manual_seed(int(scale * 10))) * scale
        assert max_abs_error(eager(model, (x,)), compiled(x)) <= 1e-4


@pytest.mark.parametrize("pad", [(0, 2), (1, 0), (0, -1), (1, 2, 0, 1), (-1, 1, 1, -1)])
def test_host_pad_is_torchs(pad):
    """`F.pad` with a width a host int gives stays in the host (a beam's finished sequences
    padded to the step limit): numpy's pad, with torch's order of widths and cuts."""
    import torch.nn.functional as F

    from dycl.runtime import host_support

    x = torch.randn(3, 4)
    for value in (None, 1.5):
        expected = F.pad(x, pad, value=0.0 if value is None else value).numpy()
        assert np.array_equal(expected, host_support.pad(x.numpy(), list(pad), "constant", value))
    ints = torch.arange(6).reshape(2, 3)
    assert host_support.pad(ints.numpy(), [0, 2], "constant", None).dtype == np.int64


def stepwise(module, program, store):
    """The generated `bind_stepwise` form, driven call by call with interpreted sub-DNNs."""
    namespace = {}
    exec(compile(program.source, "host.py", "exec"), namespace)
    constants = {**program.constants, **{n: store[n].numpy() for n in program.weight_names}}
    generator_forward = namespace["bind_stepwise"](constants)

    def forward(*args):
        steps, calls = generator_forward(*args), []
        try:
            request = next(steps)
            while True:
                name, arrays = request
                calls.append(name)
                tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in arrays]
                request = steps.send([r.numpy() for r in run_function(module, tensors, store, name=name)])
        except StopIteration as stop:
            return stop.value, calls

    return forward


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_stepwise_host_yields_each_sub_dnn_call_and_returns_what_the_host_returns(sample):
    module, store = hcfg(SAMPLES[sample]), weights()
    program = generate_host(module)
    plain, steps = bind(module, program, store), stepwise(module, program, store)
    for x in inputs(6):
        expected = plain(x.numpy())
        actual, calls = steps(x.numpy())
        assert set(calls) <= set(program.subdnn_names) and (calls or not program.subdnn_names)
        assert len(expected) == len(actual)
        for e, a in zip(expected, actual):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(e))


HELPER = f'''
"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({V}<[1,4],f32>) -> {V}<[1,4],f32>}}> ({{
  ^bb0(%x: {V}<[1,4],f32>):
    %y = "func.call"(%x) <{{callee = @twice}}> : ({V}<[1,4],f32>) -> {V}<[1,4],f32>
    "func.return"(%y) : ({V}<[1,4],f32>) -> ()
  }}) : () -> ()
  "func.func"() <{{sym_name = "twice", function_type = ({V}<[1,4],f32>) -> {V}<[1,4],f32>, sym_visibility = "private"}}> ({{
  ^bb0(%x: {V}<[1,4],f32>):
    %a = "func.call"(%x) <{{callee = @subdnn_0}}> : ({V}<[1,4],f32>) -> {V}<[1,4],f32>
    %b = "func.call"(%a) <{{callee = @subdnn_0}}> : ({V}<[1,4],f32>) -> {V}<[1,4],f32>
    "func.return"(%b) : ({V}<[1,4],f32>) -> ()
  }}) : () -> ()
  "func.func"() <{{sym_name = "subdnn_0", function_type = ({V}<[1,4],f32>) -> {V}<[1,4],f32>, sym_visibility = "private"}}> ({{
  ^bb0(%x: {V}<[1,4],f32>):
    %r = "torch.aten.tanh"(%x) : ({V}<[1,4],f32>) -> {V}<[1,4],f32>
    "func.return"(%r) : ({V}<[1,4],f32>) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()
'''


def test_stepwise_host_enters_a_helper_that_calls_sub_dnns_with_yield_from():
    module = parse_module(HELPER)
    program = generate_host(module)
    assert "yield from twice(" in program.source
    x = torch.randn(1, 4)
    result, calls = stepwise(module, program, {})(x.numpy())
    assert calls == ["subdnn_0", "subdnn_0"]
    np.testing.assert_allclose(result[0], torch.tanh(torch.tanh(x)).numpy(), atol=1e-6)


def _state_program(second_reader: bool) -> str:
    """forward(x, cache): cache is a tensor state slot (argument 1); subdnn_0 writes it; with
    `second_reader`, a second call reads the old cache after the first."""
    slots = '[{\\"path\\": \\"cache\\", \\"kind\\": \\"tensor\\", \\"args\\": [1], \\"tree\\": 1}]'
    again = (f'%z = "func.call"(%c, %y) <{{callee = @subdnn_1}}> : ({V}<[2,3],f32>, {V}<[2,3],f32>) -> {V}<[2,3],f32>'
             if second_reader else f'%z = "func.call"(%y, %y) <{{callee = @subdnn_1}}> : ({V}<[2,3],f32>, {V}<[2,3],f32>) -> {V}<[2,3],f32>')
    return f'''
"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({V}<[2,3],f32>, {V}<[2,3],f32>) -> ({V}<[2,3],f32>, {V}<[2,3],f32>)}}> ({{
  ^bb0(%x: {V}<[2,3],f32>, %c: {V}<[2,3],f32>):
    %y = "func.call"(%x, %c) <{{callee = @subdnn_0}}> : ({V}<[2,3],f32>, {V}<[2,3],f32>) -> {V}<[2,3],f32>
    {again}
    "func.return"(%z, %y) : ({V}<[2,3],f32>, {V}<[2,3],f32>) -> ()
  }}) {{dycl.state = "{slots}"}} : () -> ()
  "func.func"() <{{sym_name = "subdnn_0", function_type = ({V}<[2,3],f32>, {V}<[2,3],f32>) -> {V}<[2,3],f32>, sym_visibility = "private"}}> ({{
  ^bb0(%a: {V}<[2,3],f32>, %b: {V}<[2,3],f32>):
    %r = "torch.aten.mul.Tensor"(%a, %b) : ({V}<[2,3],f32>, {V}<[2,3],f32>) -> {V}<[2,3],f32>
    "func.return"(%r) : ({V}<[2,3],f32>) -> ()
  }}) {{dycl.subdnn}} : () -> ()
  "func.func"() <{{sym_name = "subdnn_1", function_type = ({V}<[2,3],f32>, {V}<[2,3],f32>) -> {V}<[2,3],f32>, sym_visibility = "private"}}> ({{
  ^bb0(%a: {V}<[2,3],f32>, %b: {V}<[2,3],f32>):
    %r = "torch.aten.sub.Tensor"(%a, %b) : ({V}<[2,3],f32>, {V}<[2,3],f32>) -> {V}<[2,3],f32>
    "func.return"(%r) : ({V}<[2,3],f32>) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()
'''


@pytest.mark.parametrize("second_reader", [False, True])
def test_a_state_buffer_is_given_only_to_its_last_reader(second_reader):
    """A tensor state slot's value (the runtime owns it) is given to the sub-DNN call that
    reads it last (`rt.in_place`), never to one another call reads it after, and a model
    input (the caller's array) is never given. The stepwise form calls the sub-DNN itself."""
    module = parse_module(_state_program(second_reader))
    assert "rt.in_place(" not in generate_host(module).source  # (no sub-DNN may write in place)
    program = generate_host(module, writable={"subdnn_0": {1}, "subdnn_1": {0, 1}})
    if second_reader:
        assert "rt.in_place(" not in program.source and program.given_arguments == []
    else:
        assert "subdnn_0_in_place = rt.in_place(subdnn_0, (1,))" in program.source
        assert program.given_arguments == [1]
    assert "yield ('subdnn_0'," in program.source
    x, c = np.random.rand(2, 3).astype(np.float32), np.random.rand(2, 3).astype(np.float32)
    forward = bind(module, program, {})
    z, y = forward(x, c)
    np.testing.assert_allclose(y, x * c, rtol=1e-6)
    np.testing.assert_allclose(z, (c - y) if second_reader else y * 0, rtol=1e-6)


def _loop_program(body: str) -> str:
    """forward(x, cache) with `cache` (a tensor state slot) carried through 3 iterations of
    `body`, which reads %x, the carry %k and the entry's %c, and yields %n."""
    slots = '[{\\"path\\": \\"cache\\", \\"kind\\": \\"tensor\\", \\"args\\": [1], \\"tree\\": 1}]'
    T = f"{V}<[2,3],f32>"
    return f'''
"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({T}, {T}) -> ({T}, {T})}}> ({{
  ^bb0(%x: {T}, %c: {T}):
    %lb = "arith.constant"() <{{value = 0 : index}}> : () -> index
    %ub = "arith.constant"() <{{value = 3 : index}}> : () -> index
    %st = "arith.constant"() <{{value = 1 : index}}> : () -> index
    %r = "scf.for"(%lb, %ub, %st, %c) ({{
    ^bb1(%i: index, %k: {T}):
      {body}
      "scf.yield"(%n) : ({T}) -> ()
    }}) : (index, index, index, {T}) -> {T}
    "func.return"(%x, %r) : ({T}, {T}) -> ()
  }}) {{dycl.state = "{slots}"}} : () -> ()
  "func.func"() <{{sym_name = "subdnn_0", function_type = ({T}, {T}) -> {T}, sym_visibility = "private"}}> ({{
  ^bb0(%a: {T}, %b: {T}):
    %s = "torch.aten.mul.Tensor"(%a, %b) : ({T}, {T}) -> {T}
    "func.return"(%s) : ({T}) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()
'''


CALL = '"func.call"({a}, {b}) <{{callee = @subdnn_0}}> : ({T}, {T}) -> {T}'.replace("{T}", "!torch.vtensor<[2,3],f32>")
LOOPS = {
    # the carry: the state's array first, then each call's own result, read by the yield alone
    "carry": (f"%n = {CALL.format(a='%x', b='%k')}", ["[r] = subdnn_0_in_place(x, r)"], [1],
              lambda x, c: x * x * x * c),
    # the entry's cache read in the loop (every iteration reads it again): only the fresh
    # result of the first call is given to the second
    "read_in_loop": (f"%m = {CALL.format(a='%k', b='%c')}\n      %n = {CALL.format(a='%x', b='%m')}",
                     ["[m] = subdnn_0(r, c)", "[r] = subdnn_0_in_place(x, m)"], [], lambda x, c: (x * c) ** 3 * c),
    # the yielded result is also read by another op (something else may hold it): the carry
    # is not given, nor is the result to that op
    "yield_read_twice": (f"%n = {CALL.format(a='%x', b='%k')}\n      %m = {CALL.format(a='%n', b='%x')}",
                         ["[r] = subdnn_0(x, r)", "[m] = subdnn_0(r, x)"], [], lambda x, c: x ** 3 * c),
}


@pytest.mark.parametrize("case", sorted(LOOPS))
def test_a_loop_carry_is_given_only_when_nothing_else_holds_it(case):
    body, calls, given, expected = LOOPS[case]
    module = parse_module(_loop_program(body))
    program = generate_host(module, writable={"subdnn_0": {1}})
    forward = program.source.split("def forward")[1].split("def bind_stepwise")[0]
    assert [line.strip() for line in forward.splitlines() if "subdnn_0" in line] == calls
    assert program.given_arguments == given
    x, c = np.random.rand(2, 3).astype(np.float32) + 0.5, np.random.rand(2, 3).astype(np.float32) + 0.5
    out, cache = bind(module, program, {})(x, c)
    np.testing.assert_allclose(cache, expected(x, c), rtol=1e-5)
