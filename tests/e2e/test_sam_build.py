"""`sam build` through layers/Makefile (no Docker): the zip artifacts are what Lambda needs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cfn import ROOT

pytestmark = pytest.mark.e2e

SAM = Path(sys.executable).with_name("sam")


def sam_build(resource: str, tmp_path: Path) -> Path:
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0",
           "PATH": f"{SAM.parent}{os.pathsep}{os.environ['PATH']}"}
    build = tmp_path / "build"
    result = subprocess.run([str(SAM), "build", resource, "--build-dir", str(build),
                             "--cache-dir", str(tmp_path / "cache")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return build / resource


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_warmer_artifact_is_its_package_and_powertools(tmp_path: Path) -> None:
    root = sam_build("WarmerFunction", tmp_path)
    assert {p.name for p in root.iterdir() if not p.name.endswith(".dist-info")} == {
        "warmer", "aws_lambda_powertools", "typing_extensions.py"}
    assert files(root / "warmer") == {p.name for p in (ROOT / "warmer").glob("*.py")}
    assert not any(name.endswith(".pyc") for name in files(root))  # nothing of this machine's
    # what the managed runtime brings is not packaged again
    assert not {"boto3", "botocore", "jmespath"} & {p.name for p in root.iterdir()}
    # the artifact imports on its own (Powertools resolves from it, not from this venv) and
    # needs nothing of the inference handler or the tooling
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import warmer.app as w, "
             "aws_lambda_powertools as p; assert p.__file__.startswith(sys.argv[1]), p.__file__; "
             "assert w.__file__.startswith(sys.argv[1]), w.__file__; "
             "assert not [m for m in sys.modules if m.split('.')[0] in ('handler', 'onnx_lambda')]")
    subprocess.run([sys.executable, "-c", probe, str(root)], check=True, cwd=tmp_path)


@pytest.mark.slow
def test_layer_artifact_is_onnxruntimes_c_library_only(tmp_path: Path) -> None:
    site = sam_build("RuntimeLayer", tmp_path) / "python"
    assert {p.name for p in site.iterdir() if not p.name.endswith(".dist-info")} == {
        "onnxruntime", "cyyjson.abi3.so"}  # no numpy: only the binding needed it
    (library,) = [p.relative_to(site) for p in (site / "onnxruntime").rglob("*") if p.is_file()]
    assert library.parent == Path("onnxruntime/capi")
    assert library.name.startswith("libonnxruntime.so.")  # what handler/ort/capi.py loads
