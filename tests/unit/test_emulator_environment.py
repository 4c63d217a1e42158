"""The environment variables an execution environment starts with."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from onnx_lambda.emulator.runtime_launch import (
    lambda_environment,
    runtime_command,
    site_packages,
)
from onnx_lambda.emulator.template import FunctionSpec


def test_lambda_variables_then_function_then_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", "http://127.0.0.1:3000")
    monkeypatch.setenv("SOME_HOST_SETTING", "not passed")
    spec = FunctionSpec(name="F", handler="app.handler", task_root=Path("/code"),
                        memory_mb=512, environment={"A": "template", "B": "template"},
                        extra_paths=(Path("/"),))
    env = lambda_environment(spec, init_type="provisioned-concurrency",
                             runtime_api="127.0.0.1:9001", env_id="abc",
                             overrides={"B": "override"})
    assert env["AWS_LAMBDA_FUNCTION_NAME"] == "F"
    assert env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] == "512"
    assert env["AWS_LAMBDA_INITIALIZATION_TYPE"] == "provisioned-concurrency"
    assert env["AWS_LAMBDA_RUNTIME_API"] == "127.0.0.1:9001"
    assert env["AWS_LAMBDA_LOG_STREAM_NAME"].endswith("[$LATEST]abc")
    assert env["_HANDLER"] == "app.handler" and env["LAMBDA_TASK_ROOT"] == "/code"
    assert env["PYTHONPATH"] == "/code:/"
    assert (env["A"], env["B"]) == ("template", "override")
    assert env["AWS_ENDPOINT_URL_LAMBDA"] == "http://127.0.0.1:3000"
    assert "SOME_HOST_SETTING" not in env


def test_a_managed_instances_runtime_forks_its_processes() -> None:
    plain = FunctionSpec(name="F", handler="app.handler", task_root=Path("/code"))
    managed = FunctionSpec(name="F", handler="app.handler", task_root=Path("/code"),
                           processes_per_environment=3, vcpus_per_environment=1.0)
    plain_env, managed_env = (
        lambda_environment(spec, init_type="on-demand", runtime_api="h:1", env_id="e",
                           overrides={}) for spec in (plain, managed))
    assert "AWS_LAMBDA_MAX_CONCURRENCY" not in plain_env
    assert managed_env["AWS_LAMBDA_MAX_CONCURRENCY"] == "3"
    plain_command, managed_command = runtime_command(plain), runtime_command(managed)
    assert plain_command[1:3] == ["-S", "-c"] and plain_command[-1] == "app.handler"
    assert "run_module('awslambdaric', run_name='__main__'" in plain_command[3]
    assert "register_at_fork" not in plain_command[3]
    assert managed_command[:3] == plain_command[:3] and managed_command[-1] == "app.handler"
    assert "register_at_fork" in managed_command[3]  # its workers die with it


def test_execution_env_names_the_declared_runtime_not_the_host() -> None:
    """awslambdaric switches to thread polling (and non-ASCII JSON) for python3.12+ by this
    variable: it must name the function's runtime, whatever interpreter runs the emulator."""
    declared = FunctionSpec(name="F", handler="app.handler", task_root=Path("/code"),
                            runtime="python3.13")
    undeclared = FunctionSpec(name="F", handler="app.handler", task_root=Path("/code"))
    env, host = (lambda_environment(spec, init_type="on-demand", runtime_api="h:1", env_id="e",
                                    overrides={}) for spec in (declared, undeclared))
    assert env["AWS_EXECUTION_ENV"] == "AWS_Lambda_python3.13"
    assert host["AWS_EXECUTION_ENV"] == (
        f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}")


def test_site_folders_keep_the_pth_files_folders_but_not_their_hooks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``site`` would add, in its order, without running a ``.pth`` file's code."""
    import site

    main, user, src = tmp_path / "site-packages", tmp_path / "user-site", tmp_path / "src"
    for folder in (main, user, src, main / "lib"):
        folder.mkdir()
    (main / "b.pth").write_text(f"# a comment\n\nimport os; os.environ['HOOK'] = '1'\n{src}\n"
                                "lib\nmissing\n")
    (main / "a.pth").write_text("import\tsys\n")
    (main / "broken.pth").write_bytes(b"\xff\xfe")
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(main), str(tmp_path / "absent")])
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(user))
    assert site_packages() == [str(main), str(src), str(main / "lib"), str(user)]
    monkeypatch.setattr(site, "ENABLE_USER_SITE", False)
    assert str(user) not in site_packages()
