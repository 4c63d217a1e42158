"""Application Load Balancer target. ALB passes query strings still URL-encoded, and wants
multi-value headers back when the target group enabled them."""

from __future__ import annotations

from handler.http import Request, Response
from handler.sources.base import (
    body_of,
    context_of,
    encoded_body,
    last_values,
    lower_headers,
    mapping,
    path_of,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class AlbSource:
    name = "alb"

    def matches(self, event: Any) -> bool:
        return isinstance(event, dict) and "elb" in context_of(event)

    def to_request(self, event: dict[str, Any]) -> Request:
        # Imported here: only ALB targets need URL decoding, the other sources pay nothing.
        from urllib.parse import unquote_plus

        multi = event.get("multiValueHeaders")
        headers = lower_headers(last_values(multi, "multiValueHeaders") if multi
                                else event.get("headers"))
        multi_query = event.get("multiValueQueryStringParameters")
        raw_query = (last_values(multi_query, "multiValueQueryStringParameters") if multi_query
                     else mapping(event.get("queryStringParameters"), "queryStringParameters"))
        return Request(
            method=str(event.get("httpMethod", "GET")).upper(),
            path=path_of(event.get("path")),
            headers=headers,
            query={unquote_plus(k): unquote_plus(str(v)) for k, v in raw_query.items()},
            body=body_of(event),
        )

    def to_response(self, response: Response, event: dict[str, Any]) -> dict[str, Any]:
        from http import HTTPStatus  # ALB only (see to_request)

        body, is_base64 = encoded_body(response)
        try:
            phrase = HTTPStatus(response.status).phrase
        except ValueError:
            phrase = ""
        result: dict[str, Any] = {"statusCode": response.status,
                                  "statusDescription": f"{response.status} {phrase}".strip(),
                                  "body": body, "isBase64Encoded": is_base64}
        if "multiValueHeaders" in event:
            result["multiValueHeaders"] = {k: [v] for k, v in response.headers.items()}
        else:
            result["headers"] = response.headers
        return result


ALB = AlbSource()
