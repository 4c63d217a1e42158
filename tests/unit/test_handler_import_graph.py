"""The import graph of ``handler/`` has no cycle: every ``import`` statement counts, the lazy
ones inside functions and the ``TYPE_CHECKING`` ones included (read from the source with
``ast``, so that nothing needs importing)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "handler"


def modules() -> dict[str, Path]:
    """Dotted name → file, for every module of the package (a package as its ``__init__``)."""
    found = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``path`` (module ``name``) imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package up
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)  # submodules
    return {target for target in targets if target in known and target != name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, name, known) for name, path in known.items()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``edges`` as the path that closes it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_handlers_imports_form_no_cycle() -> None:
    edges = graph()
    assert len(edges) > 50 and "handler.api.predict" in edges["handler.service"]
    found = cycle(edges)
    assert found is None, "import cycle: " + " → ".join(found or [])


def test_the_cycle_finder_finds_one_through_a_type_checking_import(tmp_path: Path) -> None:
    """The check itself: a back edge behind ``TYPE_CHECKING`` or inside a function counts."""
    (tmp_path / "a.py").write_text("TYPE_CHECKING = False\nif TYPE_CHECKING:\n"
                                   "    from handler.b import B\n")
    (tmp_path / "b.py").write_text("def f():\n    from handler import a\n")
    known = {"handler.a": tmp_path / "a.py", "handler.b": tmp_path / "b.py"}
    edges = {name: imports(path, name, known) for name, path in known.items()}
    assert edges == {"handler.a": {"handler.b"}, "handler.b": {"handler.a"}}
    assert cycle(edges) == ["handler.a", "handler.b", "handler.a"]
    assert cycle({"handler.a": {"handler.b"}, "handler.b": set()}) is None
