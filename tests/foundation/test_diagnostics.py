"""IR that parses but does not verify: `dycl.ir.verify_module` and dycl-opt report the op
that fails as `file:line:col: error: 'op' op ...`, never a Python message from a verifier
that assumed valid IR."""


import pytest

import dycl.tools.dycl_opt as dycl_opt
from dycl.dialects.dycl import ParamOp
from dycl.ir import IRVerifyError, parse_module, print_module, verify_module
from tests.foundation import samples
from tests.foundation.broken_pass import SwapFirstTwoOps

T2 = "!torch.vtensor<[2],f32>"


def func(body: str, name: str = "f", function_type: str = f"({T2}) -> {T2}") -> str:
    return (f'  "func.func"() <{{sym_name = "{name}", function_type = {function_type}}}> ({{\n{body}'
            "  }) : () -> ()\n")


def module(*funcs: str) -> str:
    return '"builtin.module"() ({\n' + "".join(funcs) + "}) : () -> ()\n"


def relu(result: str, operand: str) -> str:
    return f'    {result} = "torch.aten.relu"({operand}) : ({T2}) -> {T2}\n'


RETURN = f'    "func.return"(%z) : ({T2}) -> ()\n'
ENTRY = f"  ^bb0(%x: {T2}):\n"


@pytest.mark.parametrize("name", sorted(samples.SAMPLES))
def test_valid_ir_verifies(name):
    verify_module(parse_module(samples.SAMPLES[name], f"{name}.mlir"))


def test_verify_is_optional_when_parsing():
    text = module(func(ENTRY + relu("%z", "%y") + relu("%y", "%x") + RETURN))
    parse_module(text)  # parses: xDSL resolves forward references
    with pytest.raises(IRVerifyError):
        parse_module(text, verify=True)


def test_a_use_above_its_definition_is_located_at_the_use():
    text = module(func(ENTRY + relu("%z", "%y") + relu("%y", "%x") + RETURN))
    with pytest.raises(IRVerifyError) as info:
        parse_module(text, "swapped.mlir", verify=True)
    first, source, carets = str(info.value).splitlines()
    assert first == ("swapped.mlir:4:5: error: 'torch.aten.relu' op operand #0 (%y) does not dominate this use "
                     "(defined at line 5, column 5)")
    assert source == '    %z = "torch.aten.relu"(%y) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>'
    assert carets == "    ^^"


def test_a_result_used_inside_its_own_region_does_not_dominate():
    body = (f"  ^bb0(%x: {T2}, %c: i1):\n"
            '    %z = "scf.if"(%c) ({\n'
            f'      "scf.yield"(%z) : ({T2}) -> ()\n'
            "    }, {\n"
            f'      "scf.yield"(%x) : ({T2}) -> ()\n'
            f"    }}) : (i1) -> {T2}\n" + RETURN)
    with pytest.raises(IRVerifyError, match=r"^f\.mlir:5:7: error: 'scf\.yield' op operand #0 \(%z\) does not dominate"):
        parse_module(module(func(body, function_type=f"({T2}, i1) -> {T2}")), "f.mlir", verify=True)


def test_values_from_enclosing_blocks_and_dominating_blocks_verify():
    body = (f"  ^bb0(%x: {T2}, %c: i1):\n" + relu("%y", "%x") +
            '    %z = "scf.if"(%c) ({\n' + relu("  %in", "%y") +
            f'      "scf.yield"(%in) : ({T2}) -> ()\n'
            "    }, {\n"
            f'      "scf.yield"(%x) : ({T2}) -> ()\n'
            f"    }}) : (i1) -> {T2}\n" + RETURN)
    verify_module(parse_module(module(func(body, function_type=f"({T2}, i1) -> {T2}"))))


def test_the_op_is_verified_before_what_it_contains():
    """xDSL verifies the func.return first, which read the func's missing function_type
    (KeyError); and a func.call in a module of two blocks (ValueError)."""
    text = module(func(f"  ^bb0(%z: {T2}):\n" + RETURN).replace("function_type", "function_typ"))
    with pytest.raises(IRVerifyError, match=r"^m\.mlir:2:3: error: 'func\.func' op property 'function_type' expected"):
        parse_module(text, "m.mlir", verify=True)
    call = ('    "func.call"() <{callee = @g}> : () -> ()\n    "func.return"() : () -> ()\n')
    two_blocks = module(func(call, function_type="() -> ()"), "^bb1:\n",
                        func('    "func.return"() : () -> ()\n', "g", "() -> ()"))
    with pytest.raises(IRVerifyError, match=r"^m\.mlir:1:1: error: 'builtin\.module' op .* expected a single block"):
        parse_module(two_blocks, "m.mlir", verify=True)


def test_any_exception_from_an_op_verifier_is_that_op_s_diagnostic(monkeypatch):
    def crash(self):
        raise KeyError("name")

    monkeypatch.setattr(ParamOp, "verify_", crash)
    text = module('  %w = "dycl.param"() {name = "w"} : () -> !torch.vtensor<[2],f32>\n')
    with pytest.raises(IRVerifyError) as info:
        parse_module(text, "p.mlir", verify=True)
    assert str(info.value).splitlines()[0] == (
        "p.mlir:2:3: error: 'dycl.param' op does not verify: missing property or attribute 'name'")


def test_dycl_opt_locates_errors_in_later_chunks_of_a_split_file(tmp_path, capsys):
    good = module(func(ENTRY + relu("%z", "%x") + RETURN))
    bad = module(func(ENTRY + relu("%z", "%y") + relu("%y", "%x") + RETURN))
    source = tmp_path / "split.mlir"
    source.write_text(good + "// -----\n" + bad)
    assert dycl_opt.main([str(source), "--split-input-file"]) == 1
    err = capsys.readouterr().err
    line = good.count("\n") + 1 + 4  # the separator, then line 4 of the second module
    assert err.startswith(f"{source}:{line}:5: error: 'torch.aten.relu' op operand #0 (%y) does not dominate")


def test_ir_a_pass_breaks_is_an_internal_error_located_at_the_op(tmp_path, capsys, monkeypatch):
    passes = dycl_opt.available_passes()
    monkeypatch.setattr(dycl_opt, "available_passes", lambda: passes | {SwapFirstTwoOps.name: lambda: SwapFirstTwoOps})
    source = tmp_path / "ok.mlir"
    source.write_text(module(func(ENTRY + relu("%y", "%x") + relu("%z", "%y") + RETURN)))
    assert dycl_opt.main([str(source), "-p", SwapFirstTwoOps.name]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{source}:5:5: error: 'torch.aten.relu' op operand #0 (%y) does not dominate this use")
    assert err.splitlines()[0].endswith("(defined at line 4, column 5) [after pass test-swap-first-two-ops]")


def test_verify_diagnostics_prints_the_located_error_and_exits_0(tmp_path, capsys):
    source = tmp_path / "bad.mlir"
    source.write_text(module(func(ENTRY + relu("%z", "%y") + relu("%y", "%x") + RETURN)))
    assert dycl_opt.main([str(source), "--verify-diagnostics"]) == 0
    assert f"{source}:4:5: error: 'torch.aten.relu' op operand #0 (%y)" in capsys.readouterr().out


def test_printing_is_unchanged_by_the_recorded_locations():
    text = samples.EARLY_EXIT
    assert print_module(parse_module(text, verify=True)) == print_module(parse_module(text))
