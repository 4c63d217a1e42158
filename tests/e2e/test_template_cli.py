"""The template checks as a user runs them: `cfn-lint template.yaml`, `sam validate --lint`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.e2e


def run(*command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0",
           "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=240)


def test_cfn_lint() -> None:
    result = run(str(BIN / "cfn-lint"), "template.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_sam_validate_lint() -> None:
    result = run(str(BIN / "sam"), "validate", "--lint", "--template", "template.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout + result.stderr
