"""A compiled artifact runs without the compiler stack: `import dycl.runtime` loads no
torch, xDSL or torch-mlir (the backend registry it reads is lazy)."""

import ast
import subprocess
import sys
from pathlib import Path


def test_importing_the_runtime_loads_no_compiler_stack():
    code = "import dycl.runtime, sys; assert not any(m in sys.modules for m in ('torch','xdsl','torch_mlir'))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


def test_runner_factories_come_from_the_backend_registry():
    code = (
        "import sys; from dycl.backends import BACKENDS, runner_factory; from dycl.runtime import runners; "
        "assert [runner_factory(n) for n in BACKENDS] == [runners.ort_runner, runners.tvm_runner]; "
        "assert not any(m in sys.modules for m in ('torch','xdsl','torch_mlir'))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


# ------------------------------------------------------------------ the import graph has no cycles

ROOT = Path(__file__).resolve().parents[2]
# Each package's directory in the repository (pyproject.toml's package-dir).
PACKAGE_DIRS = {"dycl": "dycl", "dycl.passes": "passes", "dycl.dialects": "dialects", "dycl.tools": "tools"}


def project_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project's packages."""
    modules = {}
    for package, directory in PACKAGE_DIRS.items():
        for path in sorted((ROOT / directory).rglob("*.py")):
            parts = list(path.relative_to(ROOT / directory).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `name` imports anywhere in its file: at the top, inside functions
    (a function-level import closes a cycle as surely as a top-level one, only later) and
    under `TYPE_CHECKING`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def known(dotted: str) -> str | None:  # the module itself, or the package that holds it
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {known(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:  # `from pkg import module` imports the module
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else known(base))
    return found - {None, name}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_the_project_has_no_import_cycles():
    modules = project_modules()
    graph = {name: imported_modules(name, path, modules) for name, path in modules.items()}
    assert len(modules) > 100 and graph["dycl.codegen.host_python"]  # the graph is really read
    cycles = import_cycles(graph)
    where = [" -> ".join(cycle) + ": " + "; ".join(f"{a} imports {sorted(graph[a] & set(cycle))}" for a in cycle)
             for cycle in cycles]
    assert not cycles, "import cycles (give the shared piece one home below both):\n" + "\n".join(where)


def test_the_cycle_check_sees_function_level_imports():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
    modules = project_modules()
    # host_python imports the emitter inside generate_host (it reads xDSL IR): still an edge
    assert "dycl.codegen.emit" in imported_modules("dycl.codegen.host_python", modules["dycl.codegen.host_python"], modules)
    # a module of passes/ is found under its package name
    assert "dycl.passes.pipeline" in modules and "dycl.dialects.torch_ops" in modules
