"""A command whose optional dependencies are missing stops with the one ``pip install`` line
that fixes it (exit 2), and every extra a command names exists in ``pyproject.toml``."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from onnx_lambda import cli, extras
from onnx_lambda.source_tree import root


def test_a_missing_module_names_the_extra_and_the_pip_line() -> None:
    with pytest.raises(extras.MissingExtraError) as error:
        extras.require("serve", "serve", ("json", "no_such_module_for_onnx_lambda"))
    assert str(error.value) == (
        "onnx-lambda serve needs the 'serve' extra (no module named "
        "'no_such_module_for_onnx_lambda'): " + extras.install_line("serve"))
    assert error.value.name == "no_such_module_for_onnx_lambda"


def test_present_modules_pass() -> None:
    extras.require("price", "plan", ("json", "onnx_lambda"))
    extras.check("deploy-config")  # a command without optional dependencies


def test_the_cli_prints_the_line_and_exits_2(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(extras.NEEDS, "simulate", ("plan", ("no_such_module_for_onnx_lambda",)))
    assert cli.main(["simulate"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "onnx-lambda simulate needs the 'plan' extra (no module named "
        "'no_such_module_for_onnx_lambda'): " + extras.install_line("plan")]


def test_bench_in_a_checkout_names_the_lab_extra(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(extras.NEEDS, "bench", ("bench", ("no_such_module_for_onnx_lambda",)))
    assert cli.main(["bench", "--quick"]) == 2
    assert capsys.readouterr().err.strip().endswith(extras.install_line("bench"))


def test_the_install_line_installs_the_checkout_not_the_registry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert extras.install_line("client", tmp_path) == "pip install -e '.[client]'"
    monkeypatch.setattr(sys, "prefix", str(tmp_path / ".venv"))
    assert extras.install_line("client", tmp_path) == ".venv/bin/pip install -e '.[client]'"
    monkeypatch.chdir(tmp_path.parent)
    assert extras.install_line("client", tmp_path) == (
        f".venv/bin/pip install -e '.[client]' (in {tmp_path})")


def test_the_python_client_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """``from onnx_lambda.client import Client`` without httpx: the extra, not a bare
    ModuleNotFoundError."""
    monkeypatch.setitem(sys.modules, "httpx", None)  # (None: "not importable" to find_spec)
    monkeypatch.delitem(sys.modules, "onnx_lambda.client.client", raising=False)
    with pytest.raises(extras.MissingExtraError) as error:
        from onnx_lambda.client import Client  # noqa: F401
    assert str(error.value).startswith(
        "onnx_lambda.client.Client needs the 'client' extra (no module named 'httpx'): ")
    assert str(error.value).endswith(extras.install_line("client"))


def test_every_extra_named_exists_and_every_command_is_known() -> None:
    project = tomllib.loads((root() / "pyproject.toml").read_text())["project"]
    declared = set(project["optional-dependencies"])
    assert {extra for extra, _ in extras.NEEDS.values()} <= declared
    commands = set(cli.build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert set(extras.NEEDS) <= commands


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _distributions(extra: str, extras: dict[str, list[str]]) -> set[str]:
    """The distributions ``pip install 'onnx-lambda[extra]'`` asks for by name (``onnx-lambda[x]``
    entries expanded)."""
    names: set[str] = set()
    for line in extras[extra]:
        requirement = Requirement(line)
        if _normal(requirement.name) == "onnx-lambda":
            names |= {n for e in requirement.extras for n in _distributions(e, extras)}
        else:
            names.add(_normal(requirement.name))
    return names


def test_each_module_a_command_checks_comes_with_its_extra() -> None:
    extras_ = tomllib.loads((root() / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    homes = importlib.metadata.packages_distributions()  # module -> distributions (installed)
    for command, (extra, modules) in extras.NEEDS.items():
        wanted = _distributions(extra, extras_)
        for module in modules:
            assert {_normal(d) for d in homes[module]} & wanted, (command, extra, module)

