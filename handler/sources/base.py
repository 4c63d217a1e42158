"""What every event source implements, and the helpers HTTP-shaped sources share."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Protocol

from handler.errors import BadRequestError
from handler.http import Request, Response


class EventSource(Protocol):
    name: str

    def matches(self, event: Any) -> bool: ...

    def to_request(self, event: dict[str, Any]) -> Request: ...

    def to_response(self, response: Response, event: dict[str, Any]) -> Any: ...


def lower_headers(headers: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in (headers or {}).items() if v is not None}


def body_of(event: Mapping[str, Any]) -> bytes:
    body = event.get("body")
    if body is None:
        return b""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=True)
        except (ValueError, TypeError):
            raise BadRequestError("isBase64Encoded is set but the body is not base64") from None
    return body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)


def encoded_body(response: Response) -> tuple[str, bool]:
    """(body, isBase64Encoded) as API Gateway, Function URLs and ALB expect them."""
    body = response.body_bytes()
    if response.is_binary:
        return base64.b64encode(body).decode("ascii"), True
    return body.decode("utf-8"), False


def strip_stage(path: str, stage: str | None) -> str:
    """API Gateway puts a named stage in front of the route (``/prod/predict``)."""
    if stage and stage != "$default" and path.startswith(f"/{stage}/"):
        return path[len(stage) + 1:]
    return path or "/"
