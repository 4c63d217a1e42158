"""The tooling's single homes: the source checkout, the fake Lambda context, byte sizes, the
percentile definition every report states."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from onnx_lambda import source_tree, stats
from onnx_lambda.lambda_context import LambdaContext
from onnx_lambda.sizes import human_size


def test_root_is_this_checkout() -> None:
    root = source_tree.root()
    assert (root / "template.yaml").is_file() and (root / "handler" / "app.py").is_file()


def test_outside_a_checkout_root_says_so(tmp_path: Path) -> None:
    # the module as an installed wheel holds it: site-packages/onnx_lambda/source_tree.py
    installed = tmp_path / "site-packages" / "onnx_lambda" / "source_tree.py"
    installed.parent.mkdir(parents=True)
    shutil.copy(source_tree.__file__, installed)
    spec = importlib.util.spec_from_file_location("installed_source_tree", installed)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(module.SourceTreeError, match="not an onnx-lambda source checkout"):
        module.root()


def test_lambda_context_has_what_handlers_and_powertools_read() -> None:
    context = LambdaContext("r-1", 1234, function_name="Bench", memory_mb=512)
    assert (context.aws_request_id, context.get_remaining_time_in_millis()) == ("r-1", 1234)
    assert context.invoked_function_arn.endswith(":function:Bench")
    assert (context.memory_limit_in_mb, context.function_version) == (512, "$LATEST")
    assert context.log_group_name == "/aws/lambda/Bench"


@pytest.mark.parametrize(("size", "text"), [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (5 * 1024 ** 2, "5.0 MiB"), (3 * 1024 ** 3, "3.0 GiB"), (4096 * 1024 ** 3, "4096.0 GiB")])
def test_human_size(size: int, text: str) -> None:
    assert human_size(size) == text


def test_percentile_is_the_stated_linear_interpolation() -> None:
    samples = [1.0, 2.0, 3.0, 4.0]
    assert stats.percentile(samples, 50) == 2.5  # between the ranks, not a nearest rank
    assert stats.percentile(samples, 99) == pytest.approx(3.97)
    assert "linearly" in stats.DEFINITION


def test_a_benchmark_outside_a_checkout_is_a_clear_error(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from onnx_lambda import bench_commands, cli, extras

    def outside() -> Path:
        raise source_tree.SourceTreeError("not a checkout")

    monkeypatch.setattr(bench_commands, "root", outside)
    # said before any missing extra: no extra makes the lab run from an installed package
    monkeypatch.setitem(extras.NEEDS, "bench", ("bench", ("no_such_module_for_onnx_lambda",)))
    assert cli.main(["bench", "--quick"]) == 2
    assert capsys.readouterr().err.strip() == "onnx-lambda bench: not a checkout"


def test_bench_runs_the_lab_of_the_checkout_with_its_arguments(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from onnx_lambda import bench_commands, cli

    calls: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(bench_commands.subprocess, "call",
                        lambda argv, env: calls.append((argv, env)) or 7)
    assert cli.main(["bench", "--quick", "--model", "m", "--help"]) == 7
    [(argv, env)] = calls
    assert argv[1:] == ["-m", "benchmarks", "--quick", "--model", "m", "--help"]
    assert env["PYTHONPATH"].split(":")[0] == str(source_tree.root())


def test_other_commands_still_refuse_unknown_arguments(
        capsys: pytest.CaptureFixture[str]) -> None:
    from onnx_lambda import cli

    with pytest.raises(SystemExit) as exit_:
        cli.main(["simulate", "--no-such-flag"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err
