"""What every event source implements, and the helpers HTTP-shaped sources share."""

from __future__ import annotations

import math

from handler.errors import BadRequestError
from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol
else:  # a structural type for checkers only; at run time nothing derives from it
    Protocol = object


class EventSource(Protocol):
    name: str

    def matches(self, event: Any) -> bool: ...

    def to_request(self, event: dict[str, Any]) -> Request: ...

    def to_response(self, response: Response, event: dict[str, Any]) -> Any: ...


# Events are JSON from API Gateway, ALB or a caller: every field is checked for its type
# before use, so a hand-made event with odd values is a 400, never a 500.


def context_of(event: dict[str, Any]) -> dict[str, Any]:
    """``requestContext`` when it is an object, else empty."""
    context = event.get("requestContext")
    return context if isinstance(context, dict) else {}


def lower_headers(headers: Any) -> dict[str, str]:
    """Header names lower-cased (HTTP's are case-insensitive); null values dropped."""
    return {str(key).lower(): str(value) for key, value in mapping(headers, "headers").items()
            if value is not None}


def query_of(query: Any) -> dict[str, str]:
    if not query:
        return {}
    return {str(k): str(v) for k, v in mapping(query, "queryStringParameters").items()
            if v is not None}


def mapping(value: Any, what: str) -> dict[str, Any]:
    """An object-valued field (absent, null or empty: {}), or a 400."""
    if not value:
        return {}
    if not isinstance(value, dict):
        raise BadRequestError(f"{what} must be an object, got {type(value).__name__}")
    return value


def last_values(multi: Any, what: str) -> dict[str, Any]:
    """A multi-value object (``{"name": [values]}``) → the last value of each name."""
    if not isinstance(multi, dict) or not all(isinstance(v, list) for v in multi.values()):
        raise BadRequestError(f"{what} must be an object of lists")
    return {k: v[-1] for k, v in multi.items() if v}


def path_of(value: Any) -> str:
    if not value:
        return "/"
    if not isinstance(value, str):
        raise BadRequestError(f"the request path must be a string, got {type(value).__name__}")
    return value


def epoch_ms(value: Any) -> float | None:
    """API Gateway's receive timestamp, when it is a finite number (telemetry only: any other
    value means no queue figure, never a failed request)."""
    if type(value) not in (int, float):  # a bool is no timestamp either
        return None
    try:
        value = float(value)
    except OverflowError:  # an integer beyond a double
        return None
    return value if math.isfinite(value) else None


def body_of(event: dict[str, Any]) -> bytes:
    body, encoded = event.get("body"), event.get("isBase64Encoded")
    if encoded is not None and encoded is not True and encoded is not False:
        raise BadRequestError(f"isBase64Encoded must be true or false, got {encoded!r:.40}")
    if isinstance(body, str):
        if not encoded:
            try:
                return body.encode()
            except UnicodeEncodeError:  # a lone surrogate ("\ud800" in the event's JSON)
                return body.encode("utf-8", "surrogatepass")
        import base64  # base64 bodies only

        try:  # (a non-ASCII string is a ValueError too)
            return base64.b64decode(body, validate=True)
        except ValueError:
            raise BadRequestError("isBase64Encoded is set but the body is not base64") from None
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray)):  # an in-process caller's raw body
        return bytes(body)
    raise BadRequestError(f"the event's body must be a string, got {type(body).__name__}")


def encoded_body(response: Response) -> tuple[str, bool]:
    """(body, isBase64Encoded) as API Gateway, Function URLs and ALB expect them."""
    text = response.text  # the JSON text Service encoded the body from: no decode back, no look
    if text is not None:  # at its type (text the gateway passes on as the same bytes)
        return text, False
    body = response.body_bytes()  # (a response nobody encoded yet, e.g. a custom source's)
    if response.text is not None:
        return response.text, False
    if response.sent_in_base64:
        import base64  # binary answers only (.npy, V2 binary tensors, gzip)

        return base64.b64encode(body).decode("ascii"), True
    return body.decode("utf-8"), False


def strip_stage(path: str, stage: str | None) -> str:
    """API Gateway puts a named stage in front of the route (``/prod/predict``)."""
    if isinstance(stage, str) and stage and stage != "$default" and path.startswith(f"/{stage}/"):
        return path[len(stage) + 1:]
    return path or "/"
