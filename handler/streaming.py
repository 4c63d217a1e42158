"""A handler answer sent as a response stream: status and headers first, then the body chunk by
chunk as it is produced (``python -m handler.stream_runtime`` writes it to the Runtime API).

``Service.stream`` returns a :class:`StreamedResponse`; a buffered answer (the API Gateway v2 /
Function URL dict every route returns) becomes a one-chunk stream through :func:`from_result`,
so a streaming deployment serves every route, and only an answer that is a stream (a
``handler.http.Response`` with ``chunks``: chat completions with ``"stream": true``) passes
its chunks on as they are produced.

The wire form is Lambda's HTTP integration response (content type
``application/vnd.awslambda.http-integration-response``): a JSON prelude with ``statusCode``,
``headers`` and ``cookies``, eight NUL bytes, then the body, as Node's
``awslambda.HttpResponseStream.from`` writes it and Function URLs and API Gateway's streaming
integration read it (https://docs.aws.amazon.com/lambda/latest/dg/config-rs-write-functions.html,
https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode-lambda.html).
"""

from __future__ import annotations

import base64
import json

from handler.records import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

CONTENT_TYPE = "application/vnd.awslambda.http-integration-response"
DELIMITER = b"\0" * 8


class StreamedResponse(NamedTuple):
    status: int
    headers: dict[str, str]
    # may be a generator: the runtime closes it when done or when the caller goes away
    chunks: Iterable[bytes]


def from_result(result: Any) -> StreamedResponse:
    """A buffered handler answer as a one-chunk stream. A dict with ``statusCode`` is an HTTP
    answer (``body``, ``isBase64Encoded``, ``headers``, ``cookies`` as a Function URL reads
    them); anything else is JSON with status 200, as a Function URL answers such a result."""
    if not isinstance(result, dict) or "statusCode" not in result:
        return StreamedResponse(200, {"content-type": "application/json"},
                                (json.dumps(result).encode(),))
    headers = {str(k): str(v) for k, v in (result.get("headers") or {}).items()}
    cookies = result.get("cookies")
    if cookies:  # kept for the prelude's "cookies" (set-cookie cannot be one joined header)
        headers["set-cookie"] = "\n".join(str(c) for c in cookies)
    body = result.get("body") or ""
    if isinstance(body, str):
        data = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode()
    else:
        data = bytes(body)
    return StreamedResponse(int(result["statusCode"]), headers, (data,) if data else ())


def prelude(response: StreamedResponse) -> bytes:
    """The HTTP integration prelude of ``response``, delimiter included."""
    headers = dict(response.headers)
    cookies = headers.pop("set-cookie", "")
    document = {"statusCode": response.status, "headers": headers,
                "cookies": cookies.split("\n") if cookies else []}
    return json.dumps(document, separators=(",", ":")).encode() + DELIMITER
