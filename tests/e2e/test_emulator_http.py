"""The HTTP front: HTTP API (payload 2.0), REST API (1.0) and Function URL routes of the test
template, through real HTTP, real awslambdaric and tiny handlers."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from onnx_lambda.emulator import Emulator
from tests.conftest import EVENTS
from tests.e2e import emulator_support
from tests.e2e.emulator_support import call

pytestmark = pytest.mark.e2e
emu = emulator_support.emu


def shape(emu: Emulator, value: Any, path: str = "/shape") -> tuple[int, Any, bytes]:
    """POST ``{"value": value}`` to the Value function, which returns ``value`` as is."""
    return call(emu.url + path, "POST", json.dumps({"value": value}).encode(),
                {"Content-Type": "application/json"})


def event_of(body: bytes) -> dict[str, Any]:
    return json.loads(body)


def test_http_api_event(emu: Emulator) -> None:
    status, headers, body = call(
        emu.url + "/predict?a=1&a=2&b=x%20y", "POST", b'{"inputs": [[1, 2]]}',
        {"Content-Type": "application/json", "Cookie": "c1=v1; c2=v2", "X-Multi": "one"})
    assert status == 200 and headers["apigw-requestid"]
    event = event_of(body)
    assert event["version"] == "2.0"
    assert event["routeKey"] == "POST /predict"
    assert event["rawPath"] == "/predict"
    assert event["rawQueryString"] == "a=1&a=2&b=x%20y"
    assert event["queryStringParameters"] == {"a": "1,2", "b": "x y"}
    assert event["cookies"] == ["c1=v1", "c2=v2"]
    assert event["headers"]["x-multi"] == "one" and "cookie" not in event["headers"]
    assert event["body"] == '{"inputs": [[1, 2]]}' and event["isBase64Encoded"] is False
    context = event["requestContext"]
    assert context["http"]["method"] == "POST" and context["http"]["path"] == "/predict"
    assert context["routeKey"] == "POST /predict" and context["stage"] == "$default"
    assert context["requestId"] == headers["apigw-requestid"]
    assert "pathParameters" not in event


def test_http_api_path_parameters_and_greedy_routes(emu: Emulator) -> None:
    event = event_of(call(emu.url + "/v2/models/digits")[2])
    assert event["routeKey"] == "GET /v2/models/{name}"
    assert event["pathParameters"] == {"name": "digits"}
    event = event_of(call(emu.url + "/files/a/b/c.txt", "DELETE")[2])
    assert event["routeKey"] == "ANY /files/{proxy+}"
    assert event["pathParameters"] == {"proxy": "a/b/c.txt"}


def test_binary_body_is_base64(emu: Emulator) -> None:
    raw = bytes(range(256))
    event = event_of(call(emu.url + "/predict", "POST", raw,
                          {"Content-Type": "application/octet-stream"})[2])
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == raw


def test_unknown_route_and_wrong_method(emu: Emulator) -> None:
    status, _, body = call(emu.url + "/nowhere")
    assert status == 404 and json.loads(body) == {"message": "Not Found"}
    assert call(emu.url + "/predict")[0] == 404  # GET on a POST-only route


def test_rest_api_event(emu: Emulator) -> None:
    status, headers, body = call(emu.url + "/rest/42?x=1&x=2", "PUT", b"hello",
                                 {"Content-Type": "text/plain", "X-Multi": "a"})
    assert status == 200 and headers["x-amzn-RequestId"]
    event = event_of(body)
    assert event["resource"] == "/rest/{item}" and event["path"] == "/rest/42"
    assert event["httpMethod"] == "PUT"
    assert event["pathParameters"] == {"item": "42"}
    assert event["queryStringParameters"] == {"x": "2"}
    assert event["multiValueQueryStringParameters"] == {"x": ["1", "2"]}
    assert event["multiValueHeaders"]["X-Multi"] == ["a"]
    assert event["body"] == "hello" and event["isBase64Encoded"] is False
    assert event["requestContext"]["stage"] == "Prod"
    assert event["requestContext"]["path"] == "/Prod/rest/42"


def test_rest_api_binary_media_types(emu: Emulator) -> None:
    event = event_of(call(emu.url + "/rest/1", "POST", b"\x89PNG",
                          {"Content-Type": "image/png"})[2])
    assert event["isBase64Encoded"] is True and base64.b64decode(event["body"]) == b"\x89PNG"


def test_v2_response_without_status_code_is_json_200(emu: Emulator) -> None:
    status, headers, body = shape(emu, {"label": 3})
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"label": 3}
    status, _, body = shape(emu, "plain text")
    assert status == 200 and body == b"plain text"


def test_v2_response_mapping(emu: Emulator) -> None:
    status, headers, body = shape(emu, {
        "statusCode": 201, "headers": {"content-type": "text/csv", "x-a": "1"},
        "cookies": ["s=1; HttpOnly", "t=2"], "body": "a,b"})
    assert status == 201 and body == b"a,b"
    assert headers["Content-Type"] == "text/csv" and headers["x-a"] == "1"
    assert headers.get_all("Set-Cookie") == ["s=1; HttpOnly", "t=2"]
    status, _, body = shape(emu, {"statusCode": 200, "isBase64Encoded": True,
                                  "body": base64.b64encode(b"\x00\x01").decode()})
    assert status == 200 and body == b"\x00\x01"


def test_v2_malformed_response_and_function_error(emu: Emulator) -> None:
    status, _, body = shape(emu, {"statusCode": "abc"})
    assert status == 500 and json.loads(body) == {"message": "Internal Server Error"}
    status, _, body = call(emu.url + "/fail")
    assert status == 500 and json.loads(body) == {"message": "Internal Server Error"}


def test_v1_response_mapping(emu: Emulator) -> None:
    status, headers, body = shape(emu, {
        "statusCode": 202, "headers": {"X-One": "1"},
        "multiValueHeaders": {"X-Many": ["a", "b"]}, "body": "ok"}, "/rest-shape")
    assert status == 202 and body == b"ok"
    assert headers["X-One"] == "1" and headers.get_all("X-Many") == ["a", "b"]
    status, _, body = shape(emu, {"no": "statusCode"}, "/rest-shape")
    assert status == 502 and json.loads(body) == {"message": "Internal server error"}


def test_function_url(emu: Emulator) -> None:
    url = emu.function_urls["Echo"]
    status, _, body = call(url + "/any/path?q=1", "POST", b"{}",
                           {"Content-Type": "application/json"})
    assert status == 200
    event = json.loads(body)["event"]
    assert event["routeKey"] == "$default" and event["rawPath"] == "/any/path"
    assert event["queryStringParameters"] == {"q": "1"}
    assert event["requestContext"]["domainName"].endswith(".lambda-url.us-east-1.on.aws")
    assert event["requestContext"]["accountId"] == "anonymous"


def test_event_keys_match_sam_generated_events(emu: Emulator) -> None:
    """Our events carry the keys of the events ``sam local generate-event`` produces."""
    http_api = json.loads((EVENTS / "linear-http-api-predict.json").read_text())
    rest = json.loads((EVENTS / "linear-rest-api-predict.json").read_text())
    ours_v2 = event_of(call(emu.url + "/predict?a=1", "POST", b"{}",
                            {"Content-Type": "application/json", "Cookie": "a=b"})[2])
    ours_v1 = event_of(call(emu.url + "/rest/1?a=1", "POST", b"{}",
                            {"Content-Type": "application/json"})[2])
    optional_v2 = {"stageVariables", "pathParameters"}
    assert set(http_api) - optional_v2 <= set(ours_v2)
    assert set(http_api["requestContext"]) - {"authorizer", "authentication"} <= set(
        ours_v2["requestContext"])
    assert set(http_api["requestContext"]["http"]) == set(ours_v2["requestContext"]["http"])
    assert set(rest) <= set(ours_v1)
    assert set(rest["requestContext"]) - {"authorizer"} <= set(ours_v1["requestContext"])


def test_gateway_timeout_answers_while_the_invocation_runs_on(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """At the API's timeout the client gets 503; the invocation is not cut short (it ends at
    the function's own timeout) and the connection serves the next request."""
    import http.client
    import time

    from onnx_lambda.emulator import http_front

    monkeypatch.setattr(http_front, "HTTP_API_TIMEOUT_S", 0.5)
    template = tmp_path / "template.yaml"
    template.write_text(json.dumps({"Resources": {"Slow": {
        "Type": "AWS::Serverless::Function", "Properties": {
            "CodeUri": str(emulator_support.HANDLERS), "Handler": "fns.sleep", "Timeout": 2,
            "Events": {"Get": {"Type": "HttpApi",
                               "Properties": {"Path": "/slow", "Method": "GET"}}}}}}}))
    emulator = Emulator(template, port=0, log=None, provisioned=1)
    with emulator.running():
        connection = http.client.HTTPConnection("127.0.0.1", emulator.port, timeout=10)
        for _ in range(2):  # one keep-alive connection: the second request is served too
            start = time.monotonic()
            connection.request("GET", "/slow")
            response = connection.getresponse()
            assert response.status == 503 and json.loads(response.read()) == {
                "message": "Service Unavailable"}
            assert time.monotonic() - start < 1.5
        connection.close()
        for _ in range(100):  # the first invocation ends at the function's timeout
            if emulator.records():
                break
            time.sleep(0.05)
        assert emulator.records()[0].error_type == "Sandbox.Timedout"
