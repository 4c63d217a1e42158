"""The simple JSON form: ``{"inputs": ..., "parameters": {...}}``, or a bare list as ``inputs``."""

from __future__ import annotations

from collections.abc import Mapping

from handler import json_codec
from handler.errors import BadRequestError
from handler.http import NO_BODY, Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def parse_json(request: Request) -> Any:
    """The request body as JSON (or the already-parsed body of a direct invocation)."""
    if request.parsed is not NO_BODY:
        try:
            json_codec.check_parsed(request.parsed)
        except ValueError as exc:
            raise BadRequestError(str(exc)) from None
        return request.parsed
    if not request.body:
        raise BadRequestError("empty request body: send JSON")
    return loads(request.body)


def loads(data: bytes, what: str = "JSON") -> Any:
    """Strict JSON (no NaN, no Infinity, no overflow to infinity) or a 400."""
    try:
        return json_codec.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise BadRequestError(f"malformed {what}: {exc}") from None


def decode(request: Request) -> tuple[Any, Mapping[str, Any]]:
    """→ (inputs, parameters)."""
    # an HTTP body goes to ``loads`` at once (``parse_json``'s branch for it, one call fewer)
    body = (loads(request.body) if request.parsed is NO_BODY and request.body
            else parse_json(request))
    if isinstance(body, list):
        return body, {}
    if not isinstance(body, dict) or "inputs" not in body:
        raise BadRequestError('expected {"inputs": ...} (or a bare list for a single-input model)')
    parameters = body.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise BadRequestError('"parameters" must be an object')
    return body["inputs"], parameters
