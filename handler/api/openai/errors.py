"""OpenAI's error shape ``{"error": {"message", "type", "param", "code"}}`` with the statuses
its SDK maps to its exceptions, and the checks every OpenAI route makes the same way: the body
an object without fields OpenAI does not know, the ``model`` this function's."""

from __future__ import annotations

from handler.codecs import simple
from handler.errors import FieldError, NotFoundError, OnnxLambdaError
from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.api.served import Served
    from handler.routes import Route

# Our status → OpenAI's error ``type`` (the SDK picks its exception by status alone)
_TYPES = {401: "invalid_request_error", 403: "invalid_request_error", 429: "rate_limit_error"}
NO_TEMPLATE = ("this model has no chat template (tokenizer_config.json's chat_template): send "
               "a plain prompt")


class ModelNotFoundError(NotFoundError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.param, self.code = "model", "model_not_found"


class NotGenerativeError(NotFoundError):
    """What OpenAI answers for a model the endpoint does not serve: 404, ``param`` model."""

    param, code = "model", None


def error(exc: OnnxLambdaError, headers: dict[str, str], request_id: str = "") -> Response:
    """``exc`` in OpenAI's error shape (its SDK raises BadRequestError for 400,
    AuthenticationError for 401, NotFoundError for 404, and so on, with this message)."""
    # an answer over Lambda's limit: 413, which the SDK does not retry (it retries any 5xx)
    status = 413 if exc.type == "ResponseTooLarge" else exc.status
    kind = _TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
    return Response(status, headers=headers, payload={"error": {
        "message": exc.message, "type": kind, "param": getattr(exc, "param", None),
        "code": getattr(exc, "code", None)}})


def refusal(served: Served, route: Route) -> OnnxLambdaError:
    """A route this model cannot serve, as OpenAI answers it."""
    kind = served.pipeline.name
    if route.needs == "embed":
        return FieldError(f"{served.name!r} is a {kind} model: {route.path} needs a "
                          "text-embedding model", "model")
    if route.needs == "chat" and "generate" in served.capabilities:
        return FieldError(NO_TEMPLATE, "messages")
    return NotGenerativeError(f"{served.name!r} is a {kind} model, not a generative one: "
                              f"{route.path} needs a model built with the pipeline 'generate'")


def body_of(request: Request, known: frozenset[str], fields: str) -> dict[str, Any]:
    """The request's JSON object (``fields``: what it must hold, for the message), refusing
    the fields OpenAI does not know as OpenAI's API does."""
    body = simple.parse_json(request)
    if not isinstance(body, dict):
        raise FieldError(f"the body must be a JSON object with {fields}")
    unknown = sorted(set(body) - known)
    if unknown:
        raise FieldError(f"Unrecognized request argument supplied: {', '.join(unknown)}",
                         unknown[0], "unknown_parameter")
    return body


def model_named(served: Served, model: Any) -> str:
    """The request's ``model``, which must be this function's."""
    if not isinstance(model, str):
        raise FieldError(f"'model' must be a string: this function serves {served.name!r}",
                         "model")
    if model != served.name:
        raise ModelNotFoundError(f"the model {model!r} does not exist; this function serves "
                                 f"{served.name!r}")
    return model
