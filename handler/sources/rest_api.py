"""API Gateway REST API, Lambda proxy integration (payload format 1.0)."""

from __future__ import annotations

from typing import Any

from handler.http import Request, Response
from handler.sources.base import body_of, encoded_body, lower_headers


class RestApiSource:
    name = "rest-api"

    def matches(self, event: Any) -> bool:
        return (isinstance(event, dict) and "httpMethod" in event
                and "elb" not in (event.get("requestContext") or {}))

    def to_request(self, event: dict[str, Any]) -> Request:
        context = event.get("requestContext") or {}
        return Request(
            method=str(event["httpMethod"]).upper(),
            path=event.get("path") or "/",  # the resource path, without the stage
            headers=lower_headers(event.get("headers")),
            query=dict(event.get("queryStringParameters") or {}),
            body=body_of(event),
            received_epoch_ms=context.get("requestTimeEpoch"),
        )

    def to_response(self, response: Response, event: dict[str, Any]) -> dict[str, Any]:
        body, is_base64 = encoded_body(response)
        return {"statusCode": response.status, "headers": response.headers,
                "multiValueHeaders": {}, "body": body, "isBase64Encoded": is_base64}


REST_API = RestApiSource()
