"""``onnx-lambda serve`` with a model whose init fails: the failure is reported on stderr (even
with ``--quiet``) before ``READY``, and requests get Lambda's own answers for an init failure."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from onnx_lambda.source_tree import root
from tests.e2e.emulator_support import call, lambda_client

pytestmark = pytest.mark.e2e
ROOT = root()
STARTUP_S = 60


@pytest.fixture(scope="module")
def broken_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    model = tmp_path_factory.mktemp("broken") / "broken.onnx"
    model.write_bytes(b"not an onnx model")
    process = subprocess.Popen(
        [sys.executable, "-m", "onnx_lambda.cli", "serve", "--template",
         str(ROOT / "template.yaml"), "--port", "0", "--quiet",
         "--parameter-overrides", f"ModelPath={model}"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    try:
        url = _read_ready(process)
        yield url, _available(process.stderr)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _read_ready(process: subprocess.Popen[bytes]) -> str:
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if selector.select(timeout=1.0):
            line = process.stdout.readline().decode()
            if line.startswith("READY "):
                return line.split()[1]
            assert line, f"serve exited: {process.wait()}"
    raise AssertionError("serve never printed READY")


def _available(stream: Any) -> str:
    """What the process wrote to stderr so far (it flushes before READY)."""
    os.set_blocking(stream.fileno(), False)
    chunks = []
    while chunk := stream.read():
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


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
