"""The warmer against the local emulator (`onnx-lambda serve` on template.yaml, real execution
environments running the real handler), through a real boto3 Lambda client (`endpoint_url`):
after warming N, N concurrent requests meet no cold start, and the report says N environments.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from onnx_lambda import server_process
from onnx_lambda.ports import free_port
from onnx_lambda.warm.commands import client_for
from tests.support import models
from tests.support.cfn import ROOT
from warmer.fanout import warm
from warmer.settings import WarmConfig

pytestmark = pytest.mark.e2e

N = 3


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    model = models.linear(tmp_path_factory.mktemp("model") / "linear.onnx")
    port = free_port()
    # the model, and the warmer's settings as the template's Warmer mapping would set them
    env_vars = model.with_name("env.json")
    env_vars.write_text(json.dumps({
        "Parameters": {"ONNX_LAMBDA_MODEL": str(model)},
        "WarmerFunction": {"ONNX_LAMBDA_WARM_CONCURRENCY": str(N),
                           "ONNX_LAMBDA_WARM_HOLD_MS": "300"}}))
    # The WarmerFunction running inside the emulator calls back into it, as boto3 would call
    # Lambda: the emulator passes these through to its environments.
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
           "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
    command = [str(Path(sys.executable).with_name("onnx-lambda")), "serve",
               "--template", "template.yaml", "--port", str(port),
               "--parameter-overrides", "ColdStartStrategy=warmer", "--env-vars", str(env_vars),
               "--concurrency", str(N + 1), "--quiet"]
    with server_process.start(command, cwd=ROOT, env=env) as server:
        yield server.url


def predict(endpoint: str) -> tuple[int, str]:
    request = urllib.request.Request(f"{endpoint}/predict", method="POST",
                                     data=json.dumps({"inputs": [[1, 2, 3, 4]]}).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, response.headers.get("server-timing", "")


def test_after_warming_n_environments_n_concurrent_requests_meet_no_cold_start(
        endpoint: str) -> None:
    config = WarmConfig(target="InferenceFunction", qualifier="live", concurrency=N,
                        hold_ms=500)
    client = client_for(endpoint, None, N)

    first = warm(config, client)
    assert first["failed"] == 0, first["errors"]
    assert first["environments"] == N
    assert first["cold"] == N  # nothing was running: each ping started its environment

    with ThreadPoolExecutor(max_workers=N) as pool:
        answers = list(pool.map(lambda _: predict(endpoint), range(N)))
    assert [status for status, _ in answers] == [200] * N
    timings = [timing for _, timing in answers]
    assert all(timings) and not any("cold-start" in timing for timing in timings), timings

    again = warm(config, client)
    assert (again["environments"], again["cold"], again["failed"]) == (N, 0, 0)
    assert again["environmentIds"] == first["environmentIds"]


def test_the_scheduled_warmer_function_warms_the_alias(endpoint: str) -> None:
    """The deployed path: WarmerFunction (template environment, warmer.app.handler) on
    its scheduled event, fanning out through the Invoke API to InferenceFunction:live."""
    scheduled = (ROOT / "events" / "scheduled.json").read_bytes()
    response = client_for(endpoint, None, 1).invoke(FunctionName="WarmerFunction",
                                                     Payload=scheduled)
    assert "FunctionError" not in response
    report = json.loads(response["Payload"].read())
    assert (report["target"], report["qualifier"]) == ("InferenceFunction", "live")
    assert (report["asked"], report["environments"], report["failed"]) == (N, N, 0)
