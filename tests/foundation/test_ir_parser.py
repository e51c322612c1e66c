"""dycl.ir parses with its own lexer subclass: importing DyCL patches nothing in xDSL, and
DyCL's parser reads what xDSL's does, without xDSL's exponential backtracking on an
unterminated string literal."""

import subprocess
import sys
import textwrap

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from dycl.ir import IRParseError, LinearTimeMLIRLexer, make_context, parse_module, print_module
from tests.foundation import samples


def test_importing_dycl_leaves_xdsls_lexer_and_parser_unchanged():
    # A fresh interpreter: in this one dycl.ir is imported already.
    script = textwrap.dedent("""
        import sys
        from xdsl.parser import Parser
        from xdsl.utils.mlir_lexer import MLIRLexer

        assert "dycl" not in sys.modules
        before = {cls: dict(vars(cls)) for cls in (MLIRLexer, Parser)}
        import dycl.ir, dycl.tools.dycl_opt
        missing = object()
        for cls, attributes in before.items():
            for name in attributes.keys() | vars(cls).keys():
                if vars(cls).get(name, missing) is not attributes.get(name, missing):
                    print(f"{cls.__name__}.{name}")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


STRING_LITERALS = [
    '""',
    '"plain text"',
    r'"escapes \" \\ \n \t"',
    r'"hex \41\ff\0A"',
    '"first" "second"',
    '"ünïcödé"',
    '"tab\there"',
]


def tokens(lexer_type: type[MLIRLexer], text: str) -> list[tuple[MLIRTokenKind, str]]:
    lexer = lexer_type(Input(text, "<test>"))
    result = []
    while (token := lexer.lex()).kind is not MLIRTokenKind.EOF:
        result.append((token.kind, token.text))
    return result


@pytest.mark.parametrize("text", STRING_LITERALS)
def test_string_literals_lex_as_in_xdsl(text):
    assert tokens(LinearTimeMLIRLexer, text) == tokens(MLIRLexer, text)


@pytest.mark.parametrize("text", [r'"bad \q escape"', '"unterminated\n"', '"form\ffeed"'])
def test_malformed_string_literals_are_rejected_as_in_xdsl(text):
    # Short inputs only: on an unterminated string xDSL's lexer takes time exponential in
    # the length of the rest of the line.
    with pytest.raises(ParseError) as ours:
        tokens(LinearTimeMLIRLexer, text)
    with pytest.raises(ParseError) as xdsls:
        tokens(MLIRLexer, text)
    assert ours.value.msg == xdsls.value.msg


@pytest.mark.parametrize("name", sorted(samples.SAMPLES))
@pytest.mark.parametrize("verify", [False, True])
def test_dycl_ir_parses_what_xdsl_parses(name, verify):
    text = samples.SAMPLES[name]
    expected = print_module(Parser(make_context(), text, name).parse_module())
    assert print_module(parse_module(text, name, verify=verify)) == expected


@pytest.mark.timeout(60)  # a hang guard, not a timing: xDSL's lexer needs minutes here
def test_an_unterminated_string_before_a_long_line_is_reported_at_once():
    # (and doubles with each further character)
    text = '"builtin.module"() ({\n  %0 = "unterminated' + " (!torch.vtensor<[2],f32>)" * 20 + "\n}) : () -> ()\n"
    with pytest.raises(IRParseError, match="string literal"):
        parse_module(text, "hang.mlir")
