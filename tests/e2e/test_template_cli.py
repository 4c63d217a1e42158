"""The template checks as a user runs them: `cfn-lint template.yaml`, `sam validate --lint`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from onnx_lambda.source_tree import root

ROOT = root()
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.e2e


def run(*command: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0",
           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=240)


def test_cfn_lint() -> None:
    result = run(str(BIN / "cfn-lint"), "template.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_sam_validate_lint() -> None:
    result = run(str(BIN / "sam"), "validate", "--lint", "--template", "template.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr


def test_deploy_config_then_sam_validate(tmp_path: Path) -> None:
    """The documented step on a copy of the project, then the user's own check of it."""
    for rel in ("template.yaml", "samconfig.toml", "handler/Dockerfile", "layers/Makefile"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    (tmp_path / "models" / "yolo").mkdir(parents=True)
    (tmp_path / "models" / "yolo" / "model.json").write_text("{}")
    step = run(str(BIN / "onnx-lambda"), "deploy-config", "models/yolo", cwd=tmp_path)
    assert step.returncode == 0, step.stderr
    assert "models/yolo is what `sam build && sam deploy` ships" in step.stdout
    result = run(str(BIN / "sam"), "validate", "--lint", "--template", "template.yaml",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "models/yolo" in (tmp_path / "template.yaml").read_text()


def test_sam_validate_with_the_streaming_url(tmp_path: Path) -> None:
    """Settings Streaming StreamingUrl enabled (StreamingFunction and its Function URL)."""
    from tests.support import cfn

    cfn.edited(tmp_path, {"StreamingUrl": "enabled"})
    result = run(str(BIN / "sam"), "validate", "--lint", "--template", "template.yaml",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr
