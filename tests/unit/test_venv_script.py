"""``scripts/_venv.sh`` counts an installed extra that includes others (``test`` brings
``serve``, ``build``, …) as those too, so ``./scripts/run`` after ``./scripts/test`` installs
nothing: its table must say what ``pyproject.toml``'s ``onnx-lambda[...]`` entries say."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement

from onnx_lambda.source_tree import root


def _included(extra: str, extras: dict[str, list[str]]) -> set[str]:
    found: set[str] = set()
    for line in extras[extra]:
        requirement = Requirement(line)
        if requirement.name == "onnx-lambda":
            for inner in requirement.extras:
                found |= {inner} | _included(inner, extras)
    return found


def test_the_implied_extras_are_pyprojects() -> None:
    extras = tomllib.loads((root() / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    script = (root() / "scripts" / "_venv.sh").read_text()
    table = {match[0]: set(filter(None, match[1].split(",")))
             for match in re.findall(r'\*,([\w-]+),\*\) have="\$have,([\w,-]+)" ;;', script)}
    expected = {extra: _included(extra, extras) for extra in extras}
    assert table == {extra: found for extra, found in expected.items() if found}


def test_run_and_the_shim_install_the_client_extra() -> None:
    """The tutorial's client step and ``probe`` work in the venv ``./scripts/run`` makes."""
    script = (root() / "scripts" / "_venv.sh").read_text()
    assert re.search(r"EXTRAS_DEFAULT:-serve,build,client\}", script)
