"""API Gateway HTTP API, payload format 2.0."""

from __future__ import annotations

from handler.http import NO_BODY, Request, Response
from handler.sources.base import (
    body_of,
    encoded_body,
    epoch_ms,
    lower_headers,
    mapping,
    path_of,
    query_of,
    strip_stage,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class HttpApiSource:
    name = "http-api"
    function_url = False  # whose events: an API's, or (FunctionUrlSource) a Function URL's

    def matches(self, event: Any) -> bool:
        """A payload 2.0 event, told from a Function URL's by the ``lambda-url`` domain (one
        look at it here, where a Function URL source tried first looked at every event)."""
        if not (isinstance(event, dict) and event.get("version") == "2.0"
                and isinstance(context := event.get("requestContext"), dict)
                and "http" in context):
            return False
        domain = context.get("domainName")
        return (isinstance(domain, str) and ".lambda-url." in domain) is self.function_url

    def to_request(self, event: dict[str, Any]) -> Request:
        context = event["requestContext"]  # matches() checked it is an object with "http"
        http = mapping(context["http"], "requestContext.http")
        headers = lower_headers(event.get("headers"))
        cookies = event.get("cookies")
        if cookies and isinstance(cookies, list) and "cookie" not in headers:
            headers["cookie"] = "; ".join(map(str, cookies))
        path = strip_stage(path_of(event.get("rawPath") or http.get("path")),
                           context.get("stage"))
        query = event.get("queryStringParameters")
        received = context.get("timeEpoch")
        # positional: a class called with keywords binds them through a dict (+2.7 K
        # instructions, 2 % of the tiny model's warm overhead; callgrind, Python 3.11)
        return Request(str(http.get("method", "GET")).upper(), path, headers,
                       query_of(query) if query else {}, body_of(event), NO_BODY,
                       None if received is None else epoch_ms(received))

    def to_response(self, response: Response, event: dict[str, Any]) -> dict[str, Any]:
        body, is_base64 = encoded_body(response)
        return {"statusCode": response.status, "headers": response.headers, "body": body,
                "isBase64Encoded": is_base64}


HTTP_API = HttpApiSource()
