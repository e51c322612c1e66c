"""Saving a shrunk failing program as a pytest regression test under tests/fuzz/regressions/."""

from __future__ import annotations

import re
from pathlib import Path

from dycl.fuzz.program import Program, render

TEMPLATE = '''"""Found by `python -m dycl.fuzz` (seed {seed}), shrunk: {status}.

{detail}

Source of the shrunk program:

{source}"""

import pytest

from dycl.fuzz.program import (  # noqa: F401
    BoolOp, Break, Cond, CondLine, For, If, Line, Mutation, Program, Research, While, With,
)

PROGRAM = {program!r}


@pytest.mark.xfail(strict=True, reason={reason!r})
def test_seed_{seed}_matches_eager():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, {backend!r})
    assert outcome.status == "ok", outcome.detail
'''


def write_regression(program: Program, status: str, detail: str, backend: str | None, directory: Path) -> Path:
    """The test is written xfail(strict): mark it fixed by deleting the marker with the fix."""
    directory.mkdir(parents=True, exist_ok=True)
    detail = re.sub(r"/\S+?\.py", "<program>.py", detail)  # temp file names change every run
    source = render(program).source
    text = TEMPLATE.format(
        seed=program.seed,
        status=status,
        detail=detail,
        source="\n".join("    " + line if line else "" for line in source.splitlines()),
        program=program,
        reason=f"{status}: {detail}"[:200],
        backend=backend,
    )
    path = directory / f"test_seed_{program.seed}.py"
    path.write_text(text)
    return path
