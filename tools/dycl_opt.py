"""dycl-opt: xdsl-opt with DyCL's dialects and passes.

All of xDSL's own passes stay available. Output is MLIR's generic form unless `--pretty`
is given, so that torch-mlir-opt parses what dycl-opt writes. Errors are printed as
located diagnostics (`file:line:col: error: ...`) with exit code 1, never a traceback.
The input, and the IR after each pass, is verified by `dycl.ir.verify_module`, which
points at the op that fails (the parser records where each op starts); IR a pass broke
is reported as `InvalidPassOutput`, a DyCL bug rather than bad input.

`dycl-pipeline` runs as its steps, so that this verification and xDSL's `--time-passes`
and `--print-between-passes` act after each of them. `--verify-hcfg` checks the result
against the HCFG contract as `dycl.compile` does (`dycl.passes.pipeline.check_hcfg`).

Passes that other packages register (entry point group `dycl.passes`) are available too and
listed by `--help`; one that cannot be loaded is reported by name when a pipeline names it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from dycl.dialects.dycl import Dycl
from dycl.dialects.torch import Torch, TorchC
from dycl.ir import IRVerifyError, LocatingParser, SourceMap, verify_module
from dycl.passes import available_passes, get_all_passes, pass_plugins
from dycl.passes.compose import PipelineError, check_hcfg
from dycl.passes.pipeline import expand_pipelines
from dycl.tools.diagnostics import BrokenContract, InvalidPassOutput, format_error


class DyclOptMain(xDSLOptMain):
    version_format = "dycl-opt (xdsl {xdsl_version})"

    def register_all_dialects(self):
        super().register_all_dialects()
        for dialect in (Torch, TorchC, Dycl):
            self.ctx.register_dialect(dialect.name, lambda d=dialect: d)

    def register_all_frontends(self):
        super().register_all_frontends()
        self.sources = SourceMap()
        self.line_offset = 0

        def parse_mlir(io: IO[bytes]):
            parser = LocatingParser(self.ctx, io.read(), self.get_input_name(), sources=self.sources,
                                    line_offset=self.line_offset)
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def parse_chunk(self, chunk, file_extension, start_offset=0):
        self.line_offset = start_offset  # --split-input-file: lines of the earlier chunks
        return super().parse_chunk(chunk, file_extension, start_offset)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in available_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser):
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--pretty",
            action="store_true",
            help="print registered ops in their custom form (default: generic form)",
        )
        arg_parser.add_argument(
            "--emit-hcfg",
            choices=("dot", "summary"),
            default=None,
            help="after the passes, print the HCFG of the host function (Graphviz or a "
            "summary) instead of the IR",
        )
        arg_parser.add_argument(
            "--verify-hcfg",
            action="store_true",
            help="after the passes, check the module against the HCFG contract "
            "(docs/conventions.md), as dycl.compile does",
        )
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.epilog = _plugins_epilog()

    def setup_pipeline(self):
        # torch-mlir IR is mostly ops that DyCL does not register.
        self.ctx.allow_unregistered = True
        self.args.print_op_generic = not self.args.pretty
        super().setup_pipeline()
        # xDSL's callback (its verifier, --time-passes, --print-between-passes) runs between
        # passes: it should see each step of a dycl-pipeline, not the pipeline as one pass.
        callback = self.pipeline.callback
        if not self.args.disable_verify:
            callback = _verifying_first(callback, self.sources, self.get_input_name())
        self.pipeline = PassPipeline(expand_pipelines(self.pipeline.passes), callback)

    def apply_passes(self, prog: ModuleOp):
        super().apply_passes(prog)
        if not self.args.verify_hcfg:
            return
        passes = self.pipeline.passes
        try:
            check_hcfg(prog, passes[-1].name if passes else None)
        except PipelineError as err:
            raise BrokenContract(f"{self._where(prog, err.op)}: error: {err}") from None

    def _where(self, module: ModuleOp, op) -> str:
        """`file:line:col` of `op` when the input has it (not an op a pass created inside a
        function it created), else the input's name."""
        span = self.sources.span(op) if op is not None else None
        if span is None or span is self.sources.span(module):
            return self.get_input_name()
        return str(span.get_location())

    def output_resulting_program(self, prog) -> str:
        if self.args.emit_hcfg is None:
            return super().output_resulting_program(prog)
        from dycl.hcfg import HCFG

        hcfg = HCFG.from_module(prog)
        if self.args.emit_hcfg == "dot":
            return hcfg.to_dot()
        return str(hcfg.summary()) + "\n"


def _plugins_epilog() -> str:
    plugins = pass_plugins()
    if not plugins:
        return "No other package registers passes (entry point group dycl.passes)."
    own = get_all_passes()
    lines = ["passes from other packages (entry point group dycl.passes):"]
    for plugin in plugins:
        shadowed = "  [ignored: DyCL has a pass of that name]" if plugin.name in own else ""
        lines.append(f"  {plugin.name} = {plugin.target}" + (f"  ({plugin.distribution})" if plugin.distribution else "")
                     + shadowed)
    return "\n".join(lines)


def _verifying_first(
    xdsl_callback: PassPipelineCallbackType | None, sources: SourceMap, input_name: str
) -> PassPipelineCallbackType:
    """`xdsl_callback`, preceded by `verify_module` on the input and after each pass.

    xDSL's own check names no op and crashes on some bad IR; ours reports the op that
    fails, as a located diagnostic. With --time-passes a pass's time includes this check,
    as xDSL times from one callback to the next."""

    def verify_then(previous_pass: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None) -> None:
        try:
            verify_module(module, sources, input_name)
        except IRVerifyError as err:
            if previous_pass is None:
                raise
            first, _, context = str(err).partition("\n")
            raise InvalidPassOutput(f"{first} [after pass {previous_pass.name}]\n{context}".rstrip()) from err
        if xdsl_callback is not None:
            xdsl_callback(previous_pass, module, next_pass)

    return verify_then


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    input_name = next((a for a in args if not a.startswith("-")), "<stdin>")
    try:
        tool = DyclOptMain(description="DyCL modular optimizer driver", args=args)
    except SystemExit as exit_:  # argparse: --help, or a bad flag (already reported)
        return 0 if exit_.code in (0, None) else 1
    except (Exception, ArgSpecParseError) as err:  # a bad pass pipeline or pass option
        # (xDSL's ArgSpecParseError derives from BaseException, not Exception)
        print(format_error(err, "<pass pipeline>"), file=sys.stderr)
        return 1
    try:
        tool.run()
    except (Exception, ArgSpecParseError) as err:  # every failure becomes a located diagnostic
        print(format_error(err, input_name), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
