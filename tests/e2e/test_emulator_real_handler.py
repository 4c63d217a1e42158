"""The real handler (``handler.app.handler``) behind the project's own ``template.yaml``,
served by the emulator with a tiny generated model (``ONNX_LAMBDA_MODEL`` through ``env_vars``,
as ``sam local --env-vars`` sets it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from onnx_lambda.emulator import Emulator
from onnx_lambda.source_tree import root
from tests.conftest import EVENTS
from tests.e2e.emulator_support import call, lambda_client
from tests.support import models

pytestmark = pytest.mark.e2e
ROOT = root()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    model = models.linear(tmp_path_factory.mktemp("model") / "linear.onnx")
    emulator = Emulator(ROOT / "template.yaml", port=0, log=None,
                        env_vars={"Parameters": {"ONNX_LAMBDA_MODEL": str(model)}})
    with emulator.running():
        yield emulator


def test_template_functions_and_routes(served: Emulator) -> None:
    assert "InferenceFunction" in served.pools
    spec = served.pools["InferenceFunction"].spec
    assert spec.handler == "handler.app.handler" and spec.alias == "live"
    routes = {(r.method, r.path) for r in served.routes}
    from tests.unit.test_template import ROUTES

    assert routes >= ROUTES


def test_predict_through_the_http_api(served: Emulator) -> None:
    status, headers, body = call(served.url + "/predict", "POST",
                                 json.dumps({"inputs": [[1.0, 2.0, 3.0, 4.0]]}).encode(),
                                 {"Content-Type": "application/json"})
    assert status == 200, body
    outputs = json.loads(body)
    assert outputs  # the handler's simple JSON response
    assert "Server-Timing" in headers or "server-timing" in headers
    provisioned = served.pools["InferenceFunction"].records[0]
    assert provisioned.cold is False  # served by the provisioned environment
    assert provisioned.initialization_type == "provisioned-concurrency"
    assert provisioned.version == "1"  # the API integration calls the alias


def test_health_and_metadata_routes(served: Emulator) -> None:
    assert call(served.url + "/health")[0] == 200
    assert call(served.url + "/v2/health/ready")[0] == 200
    status, _, body = call(served.url + "/v2/models/linear")
    assert status in (200, 404), body


def test_bad_request_keeps_the_environment(served: Emulator) -> None:
    status, _, body = call(served.url + "/predict", "POST", b'{"inputs": "nope"}',
                           {"Content-Type": "application/json"})
    assert 400 <= status < 500 and "error" in json.loads(body)
    ok = call(served.url + "/predict", "POST", json.dumps({"inputs": [[0, 0, 0, 1]]}).encode(),
              {"Content-Type": "application/json"})
    assert ok[0] == 200
    assert len(served.pools["InferenceFunction"].environments) == 1


def test_warmer_ping_through_boto3(served: Emulator) -> None:
    client: Any = lambda_client(served.url)
    response = client.invoke(FunctionName="InferenceFunction", Qualifier="live",
                             Payload=json.dumps({"warmer": True}))
    body = json.loads(response["Payload"].read())
    assert response["ExecutedVersion"] == "1" and "FunctionError" not in response
    assert body["warm"] is True
    assert body["initializationType"] == "provisioned-concurrency"


def test_handled_error_through_boto3(served: Emulator) -> None:
    """A bad request is a handled error: an HTTP 4xx response document, no FunctionError."""
    event = json.loads((EVENTS / "linear-http-api-predict.json").read_text())
    event.update(body='{"inputs": "not a tensor"}', isBase64Encoded=False)
    client: Any = lambda_client(served.url)
    response = client.invoke(FunctionName="InferenceFunction", Payload=json.dumps(event))
    assert "FunctionError" not in response
    document = json.loads(response["Payload"].read())
    assert 400 <= document["statusCode"] < 500
    assert json.loads(document["body"])["error"]["type"]


def test_hostile_event_is_answered_not_raised(served: Emulator) -> None:
    """Through the real runtime client: an HTTP-API-shaped event with a non-numeric timestamp
    and a header that is no object. A raised exception would come back as a FunctionError
    whose stackTrace lists the handler's file paths."""
    client: Any = lambda_client(served.url)
    event = json.loads((EVENTS / "linear-http-api-predict.json").read_text())
    event["requestContext"]["timeEpoch"] = "not a number"
    for headers in (event["headers"], ["content-type"]):
        response = client.invoke(FunctionName="InferenceFunction", Qualifier="live",
                                 Payload=json.dumps({**event, "headers": headers}))
        raw = response["Payload"].read().decode()
        assert "FunctionError" not in response and "stackTrace" not in raw, raw
        assert json.loads(raw)["statusCode"] in (200, 400)


def test_non_finite_output_is_strict_json_over_http(served: Emulator) -> None:
    status, _, body = call(served.url + "/predict", "POST",
                           json.dumps({"inputs": [[3e38, 3e38, 3e38, 3e38]]}).encode(),
                           {"Content-Type": "application/json"})

    def refuse(literal: str) -> Any:
        raise AssertionError(f"{literal} in the response")

    assert status == 200
    assert json.loads(body, parse_constant=refuse)["outputs"]["y"] == [[None, None]]
