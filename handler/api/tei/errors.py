"""text-embeddings-inference's error shape ``{"error", "error_type"}`` with TEI's statuses
(``router/src/http/server.rs``: 400 ``Empty``, 422 ``Validation`` / ``Tokenizer``, 424
``Backend``), and the body check every TEI route makes the same way."""

from __future__ import annotations

from handler.codecs import simple
from handler.errors import OnnxLambdaError
from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.api.served import Served
    from handler.routes import Route

# TEI's error types and their statuses (router/src/http/server.rs)
STATUS = {"Empty": 400, "Validation": 422, "Tokenizer": 422, "Backend": 424}


class TeiError(OnnxLambdaError):
    """An error with TEI's ``error_type``: ``Validation`` (422) unless told otherwise."""

    type = "InvalidInput"

    def __init__(self, message: str, error_type: str = "Validation") -> None:
        super().__init__(message)
        self.error_type, self.status = error_type, STATUS[error_type]


def error(exc: OnnxLambdaError, headers: dict[str, str], request_id: str = "") -> Response:
    """``exc`` in TEI's error shape; our own errors take the ``error_type`` of their kind."""
    error_type = getattr(exc, "error_type", None) or (
        "Backend" if exc.status >= 500 else "Validation")
    return Response(exc.status, headers=headers,
                    payload={"error": exc.message, "error_type": error_type})


def refusal(served: Served, route: Route) -> OnnxLambdaError:
    """A route this model cannot serve: TEI's 424 ``Backend``, as TEI answers a model of
    another kind."""
    kind = served.pipeline.name
    if route.needs == "rerank":
        return TeiError(f"model is not a re-ranker model: {served.name!r} is a {kind} model",
                        "Backend")
    if "tokenize" not in served.capabilities:
        return TeiError(f"{served.name!r} is a {kind} model without a tokenizer: {route.path} "
                        "needs a text model", "Backend")
    return TeiError(f"{served.name!r} is a {kind} model: {route.path} needs a text-embedding "
                    "model", "Backend")


def body_of(request: Request, known: frozenset[str], fields: str) -> dict[str, Any]:
    """The request's JSON object (``fields``: what it must hold, for the message), refusing
    a field TEI does not know as TEI (serde) does."""
    body = simple.parse_json(request)
    if not isinstance(body, dict):
        raise TeiError(f"the body must be a JSON object with {fields}")
    unknown = sorted(set(body) - known)
    if unknown:
        raise TeiError(f"unknown field `{unknown[0]}`, expected one of "
                       f"{', '.join(f'`{f}`' for f in sorted(known))}")
    return body
