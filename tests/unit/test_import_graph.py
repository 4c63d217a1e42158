"""The import graph of ``onnx_lambda``, ``handler`` and the lab (``benchmarks``), read statically
(ast): no cycles, no import of ``tests`` (not packaged), ``handler`` independent of
``onnx_lambda`` (the tooling is never deployed), the package independent of the lab (not
installed), and CLI wiring imported only by CLI wiring (a core module that needs a CLI
helper means the helper lives in the wrong place)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import benchmarks
import handler
import onnx_lambda

PACKAGES = {"handler": Path(handler.__file__).parent,
            "onnx_lambda": Path(onnx_lambda.__file__).parent,
            "benchmarks": Path(benchmarks.__file__).parent}


def _module_name(package: str, root: Path, path: Path) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(pkg, root, path): path for pkg, root in PACKAGES.items()
            for path in sorted(root.rglob("*.py"))}


MODULES = _modules()


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _known(name: str) -> str | None:
    """The longest module of the two packages that ``name`` names (itself or a parent)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _type_checking(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): imports for annotations only."""
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _import_nodes(node: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [node]
    children = ast.iter_child_nodes(node)
    if _type_checking(node):
        children = iter(node.orelse)  # type: ignore[attr-defined]
    return [found for child in children for found in _import_nodes(child)]


def imports(module: str) -> set[str]:
    """Every name ``module`` imports when it runs, anywhere in its body (deferred imports count
    too; imports under ``if TYPE_CHECKING:`` do not run, so they do not)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    names: set[str] = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        else:
            base = _resolve(module, path.name == "__init__.py", node)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (a submodule, not its parent package, when a
    name is one; a package's own ``__init__`` importing its submodules is not an edge back)."""
    edges: dict[str, set[str]] = {}
    for module in MODULES:
        targets = {_known(name) for name in imports(module)}
        edges[module] = {t for t in targets if t and t != module
                         and not module.startswith(t + ".")}
    return edges


def is_cli(module: str) -> bool:
    """Argparse wiring: ``cli``, ``*.commands`` and the modules of a ``commands`` package (and
    the older ``*_cli`` / ``*_commands`` names)."""
    parts = module.split(".")
    return (parts[-1] in ("cli", "commands", "__main__") or "commands" in parts[:-1]
            or parts[-1].endswith(("_cli", "_commands")))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


EDGES = graph()


def test_the_graph_is_read() -> None:
    assert "onnx_lambda.cli" in MODULES and "handler.app" in MODULES
    assert "handler.bootstrap" in EDGES["handler.app"]


def test_no_cycles() -> None:
    assert cycles(EDGES) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_package_module_imports_tests(module: str) -> None:
    assert not {n for n in imports(module) if n == "tests" or n.startswith("tests.")}


def test_handler_imports_nothing_from_onnx_lambda() -> None:
    wrong = {m: sorted(t for t in targets if t.startswith("onnx_lambda"))
             for m, targets in EDGES.items() if m.startswith("handler")}
    assert {m: t for m, t in wrong.items() if t} == {}


def test_the_package_imports_nothing_from_the_lab() -> None:
    # benchmarks/ is not installed: a package module that needs it breaks every installed copy
    wrong = {m: sorted(t for t in targets if t.startswith("benchmarks"))
             for m, targets in EDGES.items() if not m.startswith("benchmarks")}
    assert {m: t for m, t in wrong.items() if t} == {}


def test_only_cli_modules_import_cli_modules() -> None:
    wrong = {m: sorted(t for t in targets if is_cli(t))
             for m, targets in EDGES.items() if not is_cli(m)}
    assert {m: t for m, t in wrong.items() if t} == {}


def test_the_checks_can_fail() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert is_cli("onnx_lambda.plan.commands.tune") and not is_cli("onnx_lambda.plan.tune")
    code = ast.parse("import typing\nif typing.TYPE_CHECKING:\n    import a\n"
                     "else:\n    import b\ndef f():\n    import c\n")
    assert {n.names[0].name for n in _import_nodes(code)} == {"typing", "b", "c"}
