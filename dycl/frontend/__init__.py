"""The DyCL frontend: a PyTorch module with data-dependent control flow -> host IR.

    program = import_module(model, (x,))   # ImportedProgram(module: xdsl ModuleOp, weights: WeightStore)
    dycl.interpreter.run_function(program.module, [x], program.weights)

See docs/architecture.md for how it works and docs/conventions.md for the IR it produces.
"""

from dycl.frontend.errors import FrontendError
from dycl.frontend.importer import ImportedProgram, import_module

__all__ = ["FrontendError", "ImportedProgram", "import_module"]
