"""The zip + layer packaging, for real: the layer's manylinux wheels from the index, pruned,
and the zip function as `sam build` makes it (layers/Makefile), run together in an isolated
interpreter that sees nothing else: no site-packages, no repository.

Built for this interpreter's Python version: the deployed layer targets 3.12, which cannot be
imported here; the pins, flags, pruning and packaging are the same."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import models
from tests.support.cfn import ROOT
from tests.support.layer import build_layer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ISOLATED_RUN = """
import sys
sys.path[:0] = sys.argv[1].split(":")
import numpy, onnxruntime
assert numpy.__file__.startswith(sys.argv[1].split(":")[-1]), numpy.__file__
session = onnxruntime.InferenceSession(sys.argv[2], providers=["CPUExecutionProvider"])
(y,) = session.run(None, {"x": numpy.ones((1, 4), numpy.float32)})
print(y.tolist())
"""

ISOLATED_HANDLER = """
import json, sys
sys.path[:0] = sys.argv[1].split(":")
from handler.app import handler

class Context:
    aws_request_id = "req-1"
    def get_remaining_time_in_millis(self):
        return 10_000

for line in sys.stdin:
    print("RESULT", json.dumps(handler(json.loads(line), Context())), flush=True)
"""


@pytest.fixture(scope="module")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("layer") / "python"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    arch = "arm64" if platform.machine() == "aarch64" else "x86_64"
    subprocess.run(build_layer.pip_command(site, arch, version), check=True, timeout=600)
    assert build_layer.prune(site) > 0
    build_layer.check_layer_size(build_layer.tree_size(site.parent))
    return site


def test_pruned_layer_imports_and_runs_in_isolation(layer: Path, tmp_path: Path) -> None:
    assert not (layer / "onnxruntime" / "tools").exists()
    model = models.linear(tmp_path / "linear.onnx")
    result = subprocess.run([sys.executable, "-I", "-c", ISOLATED_RUN, str(layer), str(model)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str([models.WEIGHTS.sum(axis=0).tolist()])


def test_zip_function_with_the_layer_serves_pings_and_requests(
        layer: Path, tmp_path: Path) -> None:
    # The model folder the Makefile packages, built the way a user builds it.
    models_dir = tmp_path / "repo-models"
    onnx_lambda = Path(sys.executable).with_name("onnx-lambda")
    subprocess.run([str(onnx_lambda), "build-model", str(models.linear(tmp_path / "l.onnx")),
                    "-o", str(models_dir / "linear")], check=True, capture_output=True,
                   timeout=300)
    package = tmp_path / "zip"
    subprocess.run(["make", "-f", "layers/Makefile", "build-InferenceZipFunction",
                    f"ARTIFACTS_DIR={package}",
                    f"MODEL={os.path.relpath(models_dir / 'linear', ROOT / 'models')}"],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    (packaged_model,) = (package / "models").iterdir()
    assert not (package / "handler" / "Dockerfile").exists()

    event = json.loads((ROOT / "events" / "http-api-predict.json").read_text())
    event |= {"body": json.dumps({"inputs": [[1.0, 1.0, 1.0, 1.0]]}), "isBase64Encoded": False}
    requests = "\n".join(json.dumps(e) for e in (
        {"warmer": True, "holdMs": 0}, event, {"warmer": True})) + "\n"
    env = {"PATH": os.environ["PATH"],
           "ONNX_LAMBDA_MODEL": str(packaged_model.relative_to(package))}
    result = subprocess.run(
        [sys.executable, "-I", "-c", ISOLATED_HANDLER, f"{package}:{layer}"],
        input=requests, cwd=package, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    answers = [json.loads(line.removeprefix("RESULT ")) for line in result.stdout.splitlines()
               if line.startswith("RESULT ")]  # the handler's own logs share stdout
    first_ping, response, second_ping = answers
    assert first_ping["warm"] is True and first_ping["coldStart"] is True
    assert response["statusCode"] == 200, response
    assert json.loads(response["body"]) == {"outputs": {"y": [models.WEIGHTS.sum(axis=0).tolist()]}}
    assert second_ping["coldStart"] is False
    assert second_ping["requestsServed"] == 1
    assert second_ping["environmentId"] == first_ping["environmentId"]
