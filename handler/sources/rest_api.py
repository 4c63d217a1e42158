"""API Gateway REST API, Lambda proxy integration (payload format 1.0)."""

from __future__ import annotations

from handler.http import Request, Response
from handler.sources.base import (
    body_of,
    context_of,
    encoded_body,
    epoch_ms,
    lower_headers,
    path_of,
    query_of,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class RestApiSource:
    name = "rest-api"

    def matches(self, event: Any) -> bool:
        return (isinstance(event, dict) and "httpMethod" in event
                and "elb" not in context_of(event))

    def to_request(self, event: dict[str, Any]) -> Request:
        return Request(
            method=str(event["httpMethod"]).upper(),
            path=path_of(event.get("path")),  # the resource path, without the stage
            headers=lower_headers(event.get("headers")),
            query=query_of(event.get("queryStringParameters")),
            body=body_of(event),
            received_epoch_ms=epoch_ms(context_of(event).get("requestTimeEpoch")),
        )

    def to_response(self, response: Response, event: dict[str, Any]) -> dict[str, Any]:
        body, is_base64 = encoded_body(response)
        return {"statusCode": response.status, "headers": response.headers,
                "multiValueHeaders": {}, "body": body, "isBase64Encoded": is_base64}


REST_API = RestApiSource()
