"""The simple JSON form: ``{"inputs": ..., "parameters": {...}}``, or a bare list as ``inputs``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from handler.errors import BadRequestError
from handler.http import Request


def parse_json(request: Request) -> Any:
    """The request body as JSON (or the already-parsed body of a direct invocation)."""
    if request.has_parsed():
        return request.parsed
    if not request.body:
        raise BadRequestError("empty request body: send JSON")
    try:
        return json.loads(request.body)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise BadRequestError(f"malformed JSON: {exc}") from None


def decode(request: Request) -> tuple[Any, Mapping[str, Any]]:
    """→ (inputs, parameters)."""
    body = parse_json(request)
    if isinstance(body, list):
        return body, {}
    if not isinstance(body, dict) or "inputs" not in body:
        raise BadRequestError('expected {"inputs": ...} (or a bare list for a single-input model)')
    parameters = body.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise BadRequestError('"parameters" must be an object')
    return body["inputs"], parameters
