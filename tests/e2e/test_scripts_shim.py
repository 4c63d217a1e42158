"""``./scripts/onnx-lambda``: the CLI without activating the venv, from any folder (paths are the
caller's), through scripts/_venv.sh (run here with ``ONNX_LAMBDA_NO_INSTALL=1``: the suite's
venv is never reinstalled by a test)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from onnx_lambda.source_tree import root
from tests.support import models


def test_the_shim_runs_the_venvs_cli_in_the_callers_folder(tmp_path: Path) -> None:
    models.linear(tmp_path / "linear.onnx")
    venv_bin = str((root() / ".venv").resolve() / "bin")
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if not p.startswith((venv_bin, str(root() / ".venv"))))
    env = {**os.environ, "PATH": path, "ONNX_LAMBDA_NO_INSTALL": "1"}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run([str(root() / "scripts" / "onnx-lambda"), "inspect", "linear.onnx"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "linear.onnx" in done.stdout + done.stderr
