"""The zip + layer packaging, for real: the layer's manylinux wheels from the index, pruned,
and the zip function as `sam build` makes it (layers/Makefile), run together in an isolated
interpreter that sees nothing else: no site-packages, no repository.

The layer is onnxruntime's C library only (no binding, no numpy) and the zip function ships one
model file per artifact; the handler serves from them with neither numpy nor the binding loaded.
Built for this interpreter's Python version: the deployed layer targets 3.12, which cannot be
imported here; the pins, flags, pruning and packaging are the same."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy
import onnxruntime
import pytest

from onnx_lambda import lambda_context
from tests.support import models
from tests.support.cfn import ROOT
from tests.support.layer import build_layer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ISOLATED_HANDLER = """
import importlib.util, json, sys
sys.path[:0] = sys.argv[1].split(":")
from handler.app import handler

# the tooling's fake context, loaded from its file: the repository stays off sys.path
spec = importlib.util.spec_from_file_location("lambda_context", sys.argv[2])
lambda_context = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lambda_context)

for line in sys.stdin:
    answer = handler(json.loads(line), lambda_context.LambdaContext())
    print("RESULT", json.dumps(answer), flush=True)
maps = open("/proc/self/maps").read()
print("LOADED", json.dumps({"numpy": "numpy" in sys.modules or "numpy" in maps,
                            "binding": "onnxruntime_pybind11_state" in maps,
                            "library": "libonnxruntime.so" in maps}), flush=True)
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


def test_pruned_layer_is_the_c_library_only(layer: Path) -> None:
    # what handler/ort/capi.py loads, and nothing else of the wheel: no binding, no numpy;
    # and yyjson's C module (handler/json_codec.py), without its Python package
    files = [rel for rel in (p.relative_to(layer) for p in layer.rglob("*") if p.is_file())
             if not rel.parts[0].endswith(".dist-info")]
    (library,) = [f for f in files if f != Path("cyyjson.abi3.so")]
    assert Path("cyyjson.abi3.so") in files
    assert library.parent == Path("onnxruntime/capi")
    assert library.name.startswith("libonnxruntime.so.")
    assert build_layer.tree_size(layer.parent) < 45 * build_layer.MB


def serve_in_isolation(package: Path, layer: Path, model: Path,
                       events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict]:
    """Run the events through handler.app in ``python -I`` with only the zip function and the
    layer on sys.path; returns the answers and what the process had loaded."""
    env = {"PATH": os.environ["PATH"], "ONNX_LAMBDA_VERIFY": "always",
           "ONNX_LAMBDA_MODEL": str(model.relative_to(package))}
    result = subprocess.run(
        [sys.executable, "-I", "-c", ISOLATED_HANDLER, f"{package}:{layer}",
         lambda_context.__file__],
        input="".join(json.dumps(e) + "\n" for e in events), cwd=package, env=env,
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    tagged = [line.split(" ", 1) for line in result.stdout.splitlines()
              if line.startswith(("RESULT ", "LOADED "))]  # the handler's own logs share stdout
    answers = [json.loads(body) for tag, body in tagged if tag == "RESULT"]
    (loaded,) = [json.loads(body) for tag, body in tagged if tag == "LOADED"]
    return answers, loaded


def package_zip_function(models_dir: Path, name: str, package: Path) -> Path:
    """layers/Makefile's zip function, as `sam build` makes it; returns the packaged model.
    MODEL on the command line stands in for template.yaml's (the test's models live elsewhere)."""
    subprocess.run(["make", "-f", "layers/Makefile", "build-InferenceZipFunction",
                    f"ARTIFACTS_DIR={package}",
                    f"MODEL={os.path.relpath(models_dir / name, ROOT)}"],
                   cwd=ROOT, check=True, capture_output=True, timeout=120)
    assert not (package / "handler" / "Dockerfile").exists()
    (packaged_model,) = (package / "models").iterdir()
    return packaged_model


def build_model(source: str, out: Path) -> None:
    onnx_lambda = Path(sys.executable).with_name("onnx-lambda")
    subprocess.run([str(onnx_lambda), "build-model", source, "-o", str(out)], check=True,
                   capture_output=True, timeout=300)


def test_zip_function_with_the_layer_serves_digits_with_one_model_file(
        layer: Path, tmp_path: Path) -> None:
    models_dir = tmp_path / "repo-models"
    build_model("digits", models_dir / "digits")
    manifest = json.loads((models_dir / "digits" / "model.json").read_text())
    assert manifest["model"] != manifest["portable"]  # the source folder holds both
    packaged = package_zip_function(models_dir, "digits", tmp_path / "zip")
    assert sorted(p.name for p in packaged.iterdir()) == ["model.json", manifest["model"]]

    event = json.loads((ROOT / "events" / "http-api-predict.json").read_text())
    event |= {"body": json.dumps({"inputs": manifest["example"]}), "isBase64Encoded": False}
    answers, loaded = serve_in_isolation(tmp_path / "zip", layer, packaged, [event])
    (response,) = answers
    assert response["statusCode"] == 200, response
    assert loaded == {"numpy": False, "binding": False, "library": True}
    # the same answer onnxruntime's Python API gives on the full artifact
    session = onnxruntime.InferenceSession(str(models_dir / "digits" / manifest["model"]))
    probabilities = session.run(["probabilities"],
                                {"input": numpy.asarray(manifest["example"], numpy.float32)})[0]
    body = json.loads(response["body"])
    assert [p["label"] for p in body["predictions"]] == [
        str(i) for i in probabilities.argmax(axis=1)], body


def test_zip_function_with_the_layer_serves_pings_and_requests(
        layer: Path, tmp_path: Path) -> None:
    # The model folder the Makefile packages, built the way a user builds it.
    models_dir = tmp_path / "repo-models"
    build_model(str(models.linear(tmp_path / "l.onnx")), models_dir / "linear")
    packaged_model = package_zip_function(models_dir, "linear", tmp_path / "zip")

    event = json.loads((ROOT / "events" / "http-api-predict.json").read_text())
    event |= {"body": json.dumps({"inputs": [[1.0, 1.0, 1.0, 1.0]]}), "isBase64Encoded": False}
    answers, loaded = serve_in_isolation(tmp_path / "zip", layer, packaged_model, [
        {"warmer": True, "holdMs": 0}, event, {"warmer": True}])
    first_ping, response, second_ping = answers
    assert first_ping["warm"] is True and first_ping["coldStart"] is True
    assert response["statusCode"] == 200, response
    assert json.loads(response["body"]) == {"outputs": {"y": [models.WEIGHTS.sum(axis=0).tolist()]}}
    assert second_ping["coldStart"] is False
    assert second_ping["requestsServed"] == 1
    assert second_ping["environmentId"] == first_ping["environmentId"]
    assert not loaded["numpy"] and not loaded["binding"]
