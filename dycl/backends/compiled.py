"""What compiling one sub-DNN produces: artifact files plus the facts the runtime needs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CompiledSubDNN:
    name: str
    backend: str
    files: dict[str, bytes]  # file name inside the artifact -> content
    meta: dict = field(default_factory=dict)  # JSON-able facts for the runtime loader
    cached: bool = False  # served from the compile cache
    seconds: float = 0.0  # wall time of the compile (0 when cached)


def blame_op(op_names: list[str], error_text: str) -> str | None:
    """The sub-DNN op an exporter's error message talks about, if any.

    Exporters name ops as `aten.conv2d.default`, `aten::conv2d` or `conv2d.default`;
    the IR names them `torch.aten.conv2d`."""
    for name in op_names:
        ns, opname, *overload = name.removeprefix("torch.").split(".", 2)
        spellings = (
            f"{ns}.{opname}.{overload[0] if overload else 'default'}",
            f"{ns}::{opname}",
            f"{opname}.{overload[0] if overload else 'default'}",
        )
        if any(s in error_text for s in spellings):
            return name
    return None


def op_names_of(ir_text: str) -> list[str]:
    """The torch op names a sub-DNN uses, in first-use order."""
    import re

    return list(dict.fromkeys(re.findall(r'"(torch\.(?:aten|prims)\.[\w.]+)"\(', ir_text)))
