"""The code map is current: docs/explanation/architecture.md names every module and subpackage
of ``handler/``, ``onnx_lambda/`` and ``warmer/`` (in that package's "modules" section, by its
path in the package, one row each), and every package's docstring names its own modules and
subpackages. Adding a module without a line on the map fails here, as a setting missing from
docs/reference/configuration.md fails tests/unit/test_settings.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "explanation" / "architecture.md"
PACKAGES = ("handler", "onnx_lambda", "warmer")


def parts(package: str) -> list[str]:
    """Every module (``a/b.py``) and subpackage (``a/``) of ``package``, as the map names them."""
    root = ROOT / package
    found = []
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        relative = path.relative_to(root).as_posix()
        if path.name == "__init__.py":
            if path.parent != root:
                found.append(relative[:-len("__init__.py")])
        else:
            found.append(relative)
    return found


def section(text: str, package: str) -> str:
    """The map's ``## `package/` modules`` section."""
    heading = f"## `{package}/` modules"
    assert heading in text, f"the map has no {heading!r} section"
    rest = text.split(heading, 1)[1]
    return rest.split("\n## ", 1)[0]


def rows(text: str) -> dict[str, str]:
    """First cell (one backticked path) → the row's description, for the section's table."""
    named = {}
    for line in text.splitlines():
        cells = line.split(" | ")
        found = re.fullmatch(r"\| `([^`]+)`", cells[0])
        if found and len(cells) >= 2 and cells[1].strip(" |"):
            named[found.group(1)] = cells[1].strip(" |")
    return named


@pytest.mark.parametrize("package", PACKAGES)
def test_the_map_names_every_module_with_its_job(package: str) -> None:
    named = rows(section(MAP.read_text(), package))
    missing = [part for part in parts(package) if part not in named]
    assert not missing, f"docs/explanation/architecture.md lacks a row for: {missing}"
    stale = sorted(set(named) - set(parts(package)) - {"Dockerfile"})
    assert not stale, f"the map names what {package}/ no longer has: {stale}"


def children(package: Path) -> list[str]:
    """The names of a package's own modules and subpackages."""
    return sorted(path.stem if path.is_file() else path.name
                  for path in package.iterdir()
                  if (path.suffix == ".py" and path.name != "__init__.py")
                  or (path / "__init__.py").is_file())


PACKAGE_FILES = sorted(init for package in PACKAGES
                       for init in (ROOT / package).rglob("__init__.py"))


@pytest.mark.parametrize("init", PACKAGE_FILES, ids=lambda p: str(p.parent.relative_to(ROOT)))
def test_every_package_docstring_lists_its_modules(init: Path) -> None:
    docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
    missing = [name for name in children(init.parent)
               if not re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", docstring)]
    assert not missing, f"{init.relative_to(ROOT)}'s docstring does not name: {missing}"


def test_the_checks_see_a_missing_row_and_a_missing_name(tmp_path: Path) -> None:
    table = "## `x/` modules\n\n| module | job |\n|---|---|\n| `a.py` | does a |\n| `b/` |  |\n"
    assert rows(section(table, "x")) == {"a.py": "does a"}  # an empty job is no row
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text('"""Has ``alpha``."""\n')
    (tmp_path / "pkg" / "alpha.py").write_text("")
    (tmp_path / "pkg" / "beta.py").write_text("")
    assert children(tmp_path / "pkg") == ["alpha", "beta"]
