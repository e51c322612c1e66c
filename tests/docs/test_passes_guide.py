"""docs/passes.md cannot rot: its Python blocks run in order in one namespace, from the
repository's root; its shell blocks run line by line; its MLIR blocks are verbatim parts of
the lit test it describes; the pass it shows is the shipped pass's code."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "passes.md"


def blocks(language: str) -> list[str]:
    return [code for lang, code in re.findall(r"^```(\w+)\n(.*?)^```$", GUIDE.read_text(), re.MULTILINE | re.DOTALL)
            if lang == language]


def test_every_block_is_checked():
    found = set(re.findall(r"^```(\w+)$", GUIDE.read_text(), re.MULTILINE))
    assert found == {"python", "mlir", "toml", "bash"}


def python_script() -> str:
    """The guide's Python blocks as one script, each block on its own lines of the guide
    (the rest blank), so that a traceback's line numbers are the guide's."""
    lines = GUIDE.read_text().splitlines()
    script = [""] * len(lines)
    inside = False
    for number, line in enumerate(lines):
        if line.startswith("```"):
            inside = line == "```python"
        elif inside:
            script[number] = line
    return "\n".join(script) + "\n"


def test_python_blocks_run(tmp_path):
    # Run as a script of its own, as a reader would: the frontend reads the model's source file.
    script = tmp_path / "passes_guide.py"
    script.write_text(python_script())
    result = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "HCFG of @forward" in result.stdout and "rule 'host-translatable'" in result.stdout
    assert "at most 1 thread(s)" in result.stdout


def test_the_pass_shown_is_the_shipped_pass():
    (shown,) = [code for code in blocks("python") if "class SingleThreadPass" in code]
    assert shown.strip() in (ROOT / "passes" / "single_thread.py").read_text()


def test_mlir_blocks_are_the_lit_test():
    lit = (ROOT / "lit_tests" / "dycl-single-thread.mlir").read_text()
    for code in blocks("mlir"):
        assert code in lit


def test_toml_block_declares_the_entry_point_group():
    (code,) = blocks("toml")
    entry_points = tomllib.loads(code)["project"]["entry-points"]
    assert list(entry_points) == ["dycl.passes"]


@pytest.mark.parametrize("line", [line for code in blocks("bash") for line in code.splitlines() if line.strip()])
def test_shell_lines_run(line):
    result = subprocess.run(line, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout
