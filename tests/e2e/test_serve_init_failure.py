"""``onnx-lambda serve`` with a model whose init fails: the failure is reported on stderr (even
with ``--quiet``) before ``READY``, and requests get Lambda's own answers for an init failure."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from onnx_lambda.server_process import start_server_process
from onnx_lambda.source_tree import root
from tests.e2e.emulator_support import call, lambda_client

pytestmark = pytest.mark.e2e
ROOT = root()


@pytest.fixture(scope="module")
def broken_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    model = tmp_path_factory.mktemp("broken") / "broken.onnx"
    model.write_bytes(b"not an onnx model")
    with start_server_process(["--template", str(ROOT / "template.yaml"), "--quiet",
                               "--model", str(model)], cwd=ROOT) as server:
        yield server.url, server.errors()  # what it wrote to stderr before READY


def test_init_failure_is_reported_on_stderr_before_ready(broken_serve: tuple[str, str]) -> None:
    _, stderr = broken_serve
    (line,) = [line for line in stderr.splitlines() if "provisioned concurrency FAILED" in line]
    assert "InferenceFunction" in line
    assert "Runtime.InitError: ModelLoadError:" in line
    assert "onnxruntime cannot load it" in line
    assert "Traceback" not in stderr and "stackTrace" not in stderr


def test_http_api_answers_as_for_a_function_error(broken_serve: tuple[str, str]) -> None:
    url, _ = broken_serve
    status, _, body = call(url + "/predict", "POST", b'{"inputs": [[1, 2, 3, 4]]}',
                           {"Content-Type": "application/json"})
    assert (status, json.loads(body)) == (500, {"message": "Internal Server Error"})


def test_invoke_returns_the_init_error(broken_serve: tuple[str, str]) -> None:
    url, _ = broken_serve
    response = lambda_client(url).invoke(FunctionName="InferenceFunction",
                                         Payload=json.dumps({"warmer": True}))
    assert response["FunctionError"] == "Unhandled"
    document = json.loads(response["Payload"].read())
    assert document["errorType"] == "ModelLoadError"
    assert "onnxruntime cannot load it" in document["errorMessage"]
