"""API Gateway's side of a Lambda proxy integration, as pure functions.

Events: HTTP API payload 2.0 (also used by Function URLs) and REST API / payload 1.0, with
the shapes ``sam local generate-event apigateway http-api-proxy`` / ``aws-proxy`` show.
Responses: the function's output mapped back to HTTP with API Gateway's rules:

- payload 2.0: a JSON object with ``statusCode`` is taken as a response (``headers``,
  ``cookies`` -> one ``set-cookie`` each, ``body``, ``isBase64Encoded``); any other valid JSON
  is the body of a 200 ``application/json`` response (a JSON string: its text);
- payload 1.0: ``statusCode`` is required (else 502); ``headers`` and ``multiValueHeaders``
  are merged;
- a function error or a malformed response is 500 ``Internal Server Error`` (2.0) or 502
  ``Internal server error`` (1.0); a throttled invocation is 500 with either (API Gateway's
  own answer), and a Function URL's throttle is Lambda's: 429 ``ThrottlingException``
  (``url_throttle``; the evidence for each: docs/explanation/emulator.md, "Throttles").
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import functools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from onnx_lambda.emulator import ids
from onnx_lambda.emulator.http_types import Response, json_response
from onnx_lambda.emulator.limits import HTTP_API_HEAD_BYTES
from onnx_lambda.emulator.runtime_launch import ACCOUNT_ID, REGION

TEXT_TYPES = ("text/*", "application/json", "application/*+json", "application/xml",
              "application/*+xml", "application/javascript", "application/x-javascript")


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    raw_query: str
    headers: list[tuple[str, str]]
    body: bytes
    source_ip: str = "127.0.0.1"
    protocol: str = "HTTP/1.1"
    request_id: str = field(default_factory=ids.request_id)
    epoch_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k.lower() == name.lower()]
        return ",".join(values) if values else None


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def _clf_time(epoch_ms: int) -> str:
    return time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(epoch_ms / 1000))


@functools.lru_cache(maxsize=256)  # a handful of distinct content types; once per request
def _matches(content_type: str | None, patterns: tuple[str, ...]) -> bool:
    media = (content_type or "").split(";")[0].strip().lower()
    return bool(media) and any(fnmatch.fnmatchcase(media, p.lower()) for p in patterns)


def _body(request: HttpRequest, as_binary: bool) -> tuple[str | None, bool]:
    if not request.body:
        return None, False
    if not as_binary:
        try:
            return request.body.decode(), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(request.body).decode(), True


def _query(raw: str) -> list[tuple[str, str]]:
    return parse_qsl(raw, keep_blank_values=True)


def http_api_event(request: HttpRequest, *, route_key: str, stage: str, api_id: str,
                   path_parameters: Mapping[str, str] | None, domain: str,
                   account_id: str = ACCOUNT_ID) -> dict[str, Any]:
    """A payload 2.0 event (HTTP API route, or Function URL: ``route_key='$default'``,
    ``account_id='anonymous'`` for ``AuthType: NONE``)."""
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in request.headers:
        key = name.lower()
        if key == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        headers[key] = f"{headers[key]},{value}" if key in headers else value
    headers.setdefault("x-forwarded-for", request.source_ip)
    headers.setdefault("x-forwarded-proto", "http")
    query: dict[str, str] = {}
    for key, value in _query(request.raw_query) if request.raw_query else ():
        query[key] = f"{query[key]},{value}" if key in query else value
    # HTTP APIs pass text bodies as text and base64-encode everything else
    content_type = headers.get("content-type")
    body, encoded = _body(request, content_type is not None
                          and not _matches(content_type, TEXT_TYPES))
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": request.path,
        "rawQueryString": request.raw_query,
    }
    if cookies:
        event["cookies"] = cookies
    event["headers"] = headers
    if query:
        event["queryStringParameters"] = query
    event["requestContext"] = {
        "accountId": account_id,
        "apiId": api_id,
        "domainName": domain,
        "domainPrefix": domain.split(".")[0],
        "http": {
            "method": request.method,
            "path": request.path,
            "protocol": request.protocol,
            "sourceIp": request.source_ip,
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": request.request_id,
        "routeKey": route_key,
        "stage": stage,
        "time": _clf_time(request.epoch_ms),
        "timeEpoch": request.epoch_ms,
    }
    if body is not None:
        event["body"] = body
    if path_parameters:
        event["pathParameters"] = dict(path_parameters)
    event["isBase64Encoded"] = encoded
    return event


def rest_api_event(request: HttpRequest, *, resource: str, stage: str, api_id: str,
                   path_parameters: Mapping[str, str] | None,
                   binary_media_types: tuple[str, ...], domain: str) -> dict[str, Any]:
    """A REST API (payload 1.0) proxy event."""
    multi_headers: dict[str, list[str]] = {}
    for name, value in request.headers:
        multi_headers.setdefault(name, []).append(value)
    multi_query: dict[str, list[str]] = {}
    for key, value in _query(request.raw_query):
        multi_query.setdefault(key, []).append(value)
    body, encoded = _body(request, _matches(request.header("content-type"),
                                            binary_media_types))
    return {
        "resource": resource,
        "path": request.path,
        "httpMethod": request.method,
        "headers": {k: v[-1] for k, v in multi_headers.items()} or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": dict(path_parameters) if path_parameters else None,
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": api_id,
            "domainName": domain,
            "domainPrefix": domain.split(".")[0],
            "extendedRequestId": request.request_id,
            "httpMethod": request.method,
            "identity": {
                "accountId": None, "apiKey": None, "caller": None, "cognitoIdentityId": None,
                "cognitoIdentityPoolId": None, "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None, "user": None, "userArn": None,
                "accessKey": None, "sourceIp": request.source_ip,
                "userAgent": request.header("user-agent"),
            },
            "path": f"/{stage}{request.path}",
            "protocol": request.protocol,
            "requestId": request.request_id,
            "requestTime": _clf_time(request.epoch_ms),
            "requestTimeEpoch": request.epoch_ms,
            "resourceId": "local",
            "resourcePath": resource,
            "stage": stage,
        },
        "body": body,
        "isBase64Encoded": encoded,
    }


# API Gateway's own error messages by payload version (HTTP API 2.0, REST API 1.0); any other
# status says its phrase.
_MESSAGES = {
    "2.0": {500: "Internal Server Error", 413: "Request Entity Too Large", 404: "Not Found",
            503: "Service Unavailable",
            431: f"HTTP header is larger than {HTTP_API_HEAD_BYTES} bytes."},
    "1.0": {502: "Internal server error", 500: "Internal server error",
            413: "Request Entity Too Large", 504: "Endpoint request timed out"},
}


def gateway_message(version: str, status: int) -> str:
    return _MESSAGES[version].get(status) or HTTPStatus(status).phrase


def gateway_error(version: str, status: int | None = None) -> HttpResponse:
    """API Gateway's own error responses (function error, throttle, bad response)."""
    status = status or (500 if version == "2.0" else 502)
    return HttpResponse(status, [("Content-Type", "application/json")],
                        json.dumps({"message": gateway_message(version, status)}).encode())


def url_throttle() -> HttpResponse:
    """A Function URL's answer when its function is at its concurrency limit: Lambda answers
    it itself, with the Invoke API's status and its own error type header and message."""
    return HttpResponse(429, [("Content-Type", "application/json"),
                              ("x-amzn-ErrorType", "ThrottlingException")],
                        b'{"message":"Rate Exceeded."}')


def gateway_refusal(status: int) -> Response:
    """The HTTP front's refusals (head too large, timeouts, too busy) in the HTTP API's shape."""
    return json_response({"message": gateway_message("2.0", status)}, status)


class MalformedResponse(ValueError):
    """The function's output is not a valid proxy response."""


def _response_body(body: Any, encoded: Any) -> bytes:
    if body is None:
        return b""
    if not isinstance(body, str):
        raise MalformedResponse("body must be a string")
    if encoded is True:
        try:
            return base64.b64decode(body, validate=True)
        except binascii.Error as exc:
            raise MalformedResponse("isBase64Encoded body is not base64") from exc
    return body.encode()


def _status(value: Any) -> int:
    try:
        status = int(value)
    except (TypeError, ValueError) as exc:
        raise MalformedResponse("statusCode must be an integer") from exc
    if not 100 <= status <= 599:
        raise MalformedResponse("statusCode out of range")
    return status


def _with_content_type(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    for name, value in headers:
        if any(c in name or c in value for c in "\r\n\0"):
            raise MalformedResponse(f"header {name!r}: CR, LF or NUL cannot be sent")
    if not any(k.lower() == "content-type" for k, _ in headers):
        headers.append(("Content-Type", "application/json"))
    return headers


def map_response(version: str, payload: bytes) -> HttpResponse:
    """Map a successful function output to HTTP (payload format ``version``)."""
    try:
        output = json.loads(payload)
    except ValueError:
        return gateway_error(version)
    try:
        if version == "2.0":
            return _map_v2(output, payload)
        return _map_v1(output)
    except MalformedResponse:
        return gateway_error(version)


def _map_v2(output: Any, payload: bytes) -> HttpResponse:
    if not isinstance(output, dict) or "statusCode" not in output:
        body = output.encode() if isinstance(output, str) else payload
        return HttpResponse(200, [("Content-Type", "application/json")], body)
    headers = [(str(k), str(v)) for k, v in (output.get("headers") or {}).items()]
    cookies = output.get("cookies") or []
    if not isinstance(cookies, list):
        raise MalformedResponse("cookies must be a list")
    headers.extend(("Set-Cookie", str(cookie)) for cookie in cookies)
    return HttpResponse(_status(output["statusCode"]), _with_content_type(headers),
                        _response_body(output.get("body"), output.get("isBase64Encoded")))


def _map_v1(output: Any) -> HttpResponse:
    if not isinstance(output, dict) or "statusCode" not in output:
        raise MalformedResponse("statusCode is required")
    headers = [(str(k), str(v)) for k, v in (output.get("headers") or {}).items()]
    for name, values in (output.get("multiValueHeaders") or {}).items():
        if not isinstance(values, list):
            raise MalformedResponse("multiValueHeaders values must be lists")
        headers = [(k, v) for k, v in headers if k.lower() != str(name).lower()]
        headers.extend((str(name), str(v)) for v in values)
    return HttpResponse(_status(output["statusCode"]), _with_content_type(headers),
                        _response_body(output.get("body"), output.get("isBase64Encoded")))


def function_url_domain(function: str) -> str:
    return f"{function.lower()}.lambda-url.{REGION}.on.aws"
