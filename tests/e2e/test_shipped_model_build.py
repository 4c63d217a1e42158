"""The model's one home as `sam build`'s make step reads it: after `deploy-config` changes
template.yaml's Mappings Model, layers/Makefile packages that folder, with no other file edited."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from onnx_lambda.deploy.shipped_model import apply
from tests.support.cfn import ROOT

pytestmark = pytest.mark.e2e


def make_dry_run(project: Path) -> str:
    return subprocess.run(["make", "-n", "-f", "layers/Makefile", "build-InferenceZipFunction",
                           "ARTIFACTS_DIR=out"], cwd=project, check=True, capture_output=True,
                          text=True, timeout=60).stdout


def test_the_zip_build_packages_the_model_the_template_names(tmp_path: Path) -> None:
    shutil.copy(ROOT / "template.yaml", tmp_path / "template.yaml")
    shutil.copytree(ROOT / "layers", tmp_path / "layers")
    assert 'cp -R "models/digits" "out/models/"' in make_dry_run(tmp_path)

    apply(tmp_path, "detector-v2")
    commands = make_dry_run(tmp_path)
    assert 'test -f "models/detector-v2/model.json"' in commands
    assert 'cp -R "models/detector-v2" "out/models/"' in commands
    assert 'prune-model "out/models/detector-v2"' in commands
