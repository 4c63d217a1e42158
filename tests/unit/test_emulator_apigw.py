"""API Gateway event building, response mapping and route matching (pure functions)."""

from __future__ import annotations

import base64
import json

import pytest

from onnx_lambda.emulator import apigw
from onnx_lambda.emulator.http_front import compile_route, match
from onnx_lambda.emulator.template import RouteSpec


def request(**kw: object) -> apigw.HttpRequest:
    defaults: dict[str, object] = dict(method="POST", path="/p", raw_query="", headers=[],
                                       body=b"")
    return apigw.HttpRequest(**{**defaults, **kw})  # type: ignore[arg-type]


def v2(req: apigw.HttpRequest) -> dict[str, object]:
    return apigw.http_api_event(req, route_key="POST /p", stage="$default", api_id="a",
                                path_parameters=None, domain="localhost")


def test_v2_headers_are_lowercased_and_joined() -> None:
    event = v2(request(headers=[("X-A", "1"), ("x-a", "2"), ("Cookie", "a=1; b=2"),
                                ("Cookie", "c=3")]))
    assert event["headers"]["x-a"] == "1,2"  # type: ignore[index]
    assert event["cookies"] == ["a=1", "b=2", "c=3"]
    assert "body" not in event and event["isBase64Encoded"] is False


@pytest.mark.parametrize(("content_type", "encoded"), [
    ("application/json", False), ("text/plain; charset=utf-8", False),
    ("application/vnd.api+json", False), ("application/octet-stream", True),
    ("image/png", True), ("application/x-www-form-urlencoded", True)])
def test_v2_body_encoding(content_type: str, encoded: bool) -> None:
    event = v2(request(headers=[("Content-Type", content_type)], body=b"abc"))
    assert event["isBase64Encoded"] is encoded
    assert event["body"] == (base64.b64encode(b"abc").decode() if encoded else "abc")


def test_v1_last_value_and_multi_value() -> None:
    event = apigw.rest_api_event(
        request(raw_query="a=1&a=2", headers=[("X", "1"), ("X", "2")]), resource="/p",
        stage="Prod", api_id="a", path_parameters=None, binary_media_types=(),
        domain="localhost")
    assert event["queryStringParameters"] == {"a": "2"}
    assert event["multiValueQueryStringParameters"] == {"a": ["1", "2"]}
    assert event["headers"] == {"X": "2"} and event["multiValueHeaders"] == {"X": ["1", "2"]}
    assert event["pathParameters"] is None and event["body"] is None


def test_v2_mapping_rules() -> None:
    inferred = apigw.map_response("2.0", b'{"a": 1}')
    assert inferred.status == 200 and json.loads(inferred.body) == {"a": 1}
    assert ("Content-Type", "application/json") in inferred.headers
    assert apigw.map_response("2.0", b'"hi"').body == b"hi"
    assert apigw.map_response("2.0", b"[1, 2]").body == b"[1, 2]"
    full = apigw.map_response("2.0", json.dumps({
        "statusCode": 204, "cookies": ["a=1"], "headers": {"X": "y"}}).encode())
    assert full.status == 204 and full.body == b""
    assert ("Set-Cookie", "a=1") in full.headers and ("X", "y") in full.headers
    assert apigw.map_response("2.0", b'{"statusCode": 99}').status == 500
    assert apigw.map_response("2.0", b'{"statusCode": 200, "body": 5}').status == 500
    bad64 = b'{"statusCode": 200, "body": "***", "isBase64Encoded": true}'
    assert apigw.map_response("2.0", bad64).status == 500


def test_v1_mapping_rules() -> None:
    assert apigw.map_response("1.0", b'{"body": "x"}').status == 502
    assert json.loads(apigw.map_response("1.0", b"{}").body) == {
        "message": "Internal server error"}
    merged = apigw.map_response("1.0", json.dumps({
        "statusCode": 200, "headers": {"A": "1", "B": "1"},
        "multiValueHeaders": {"B": ["2", "3"]}, "body": "ok"}).encode())
    assert merged.headers[:3] == [("A", "1"), ("B", "2"), ("B", "3")]


def test_gateway_errors() -> None:
    assert json.loads(apigw.gateway_error("2.0").body) == {"message": "Internal Server Error"}
    assert apigw.gateway_error("1.0").status == 502
    assert apigw.gateway_error("2.0", 503).status == 503
    # the HTTP front's refusals say what the gateway's errors say (one table)
    for status in (413, 500, 503):
        assert apigw.gateway_refusal(status).body == apigw.gateway_error("2.0", status).body
    assert json.loads(apigw.gateway_error("1.0", 504).body) == {
        "message": "Endpoint request timed out"}


def routes(*specs: tuple[str, str]) -> list:  # type: ignore[type-arg]
    compiled = [compile_route(RouteSpec("F", m, p, "http-api")) for m, p in specs]
    return sorted(compiled, key=lambda r: r.rank)


def test_route_priority() -> None:
    table = routes(("ANY", "/{proxy+}"), ("GET", "/v2/models/{name}"),
                   ("GET", "/v2/models/special"), ("ANY", "/v2/models/{name}"),
                   ("ANY", "$default"))
    found = match(table, "GET", "/v2/models/special")
    assert found and found[0].spec.path == "/v2/models/special"
    found = match(table, "GET", "/v2/models/x")
    assert found and (found[0].spec.method, found[1]) == ("GET", {"name": "x"})
    found = match(table, "POST", "/v2/models/x")
    assert found and found[0].spec.method == "ANY" and found[0].spec.path.endswith("{name}")
    found = match(table, "GET", "/a/b")
    assert found and found[1] == {"proxy": "a/b"}
    assert match(routes(("GET", "/x")), "POST", "/x") is None
    assert match(routes(("ANY", "$default")), "PUT", "/any/thing") is not None


def test_routing_keeps_an_encoded_slash_in_its_segment() -> None:
    table = routes(("GET", "/v2/models/{name}"), ("GET", "/v2/models/{name}/ready"),
                   ("ANY", "/files/{proxy+}"))
    found = match(table, "GET", "/v2/models/a%2Fb")
    assert found and found[1] == {"name": "a/b"}  # not /v2/models/a/b (no such route)
    found = match(table, "GET", "/v2/models/a%2Fb/ready")
    assert found and found[0].spec.path.endswith("/ready") and found[1] == {"name": "a/b"}
    found = match(table, "GET", "/v2/mod%65ls/100%25")  # other escapes decode as usual
    assert found and found[1] == {"name": "100%"}
    found = match(table, "GET", "/files/a%2Fb/c")
    assert found and found[1] == {"proxy": "a/b/c"}


def test_response_headers_with_cr_lf_or_nul_are_malformed() -> None:
    for value in ("a\r\nInjected: yes", "a\nb", "a\0b"):
        output = json.dumps({"statusCode": 200, "headers": {"x-a": value}}).encode()
        assert apigw.map_response("2.0", output).status == 500
        assert apigw.map_response("1.0", output).status == 502
