"""OpenAI's embeddings API over the ``text-embedding`` pipeline: ``POST /v1/embeddings``,
``GET /v1/models`` and ``GET /v1/models/{model}``, so that the ``openai`` SDK, LangChain's
``OpenAIEmbeddings`` and the like work against the function unmodified
(docs/reference/openai-and-tei.md).

Imported by ``handler.service`` on the first ``/v1/`` request only: nothing here is on the
cold path of a model that is never asked for it. Its error shape serves
``handler.openai_chat`` (``/v1/chat/completions``, ``/v1/completions``) too.

Request: ``input`` (a string, a list of strings, one list of token ids or a list of them),
``model`` (this function's model name), ``encoding_format`` (``float`` | ``base64``; the SDK
sends ``base64`` unless told otherwise), ``dimensions`` (shortened vectors: the first N values,
renormalised; only for a model built with the pipeline option ``matryoshka=true``), ``user``
(accepted, unused). Errors take OpenAI's shape ``{"error": {"message", "type", "param",
"code"}}`` with the statuses the SDK maps to its exceptions.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from handler.api import embedding as embedding_requests
from handler.codecs import simple
from handler.errors import (
    FieldError,
    NotFoundError,
    OnnxLambdaError,
)
from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.service import Service
    from handler.telemetry import StageTimer

MAX_INPUTS = 2048  # OpenAI's own limit on inputs per request
MAX_INPUT_CHARS = 65_536  # one input; the model reads its first max_length tokens anyway
OWNER = "onnx-lambda"
ENCODINGS = ("float", "base64")
FIELDS = frozenset({"input", "model", "encoding_format", "dimensions", "user"})
# Our status → OpenAI's error ``type`` (the SDK picks its exception by status alone)
_TYPES = {401: "invalid_request_error", 403: "invalid_request_error", 429: "rate_limit_error"}


class ModelNotFoundError(NotFoundError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.param, self.code = "model", "model_not_found"


def handle(service: Service, operation: str, params: dict[str, str], request: Request,
           timer: StageTimer) -> Response:
    name = service.model.name
    if operation == "openai_models":
        return Response(200, payload={"object": "list", "data": [_card(service)]})
    if operation == "openai_model":
        if params.get("model") != name:
            raise ModelNotFoundError(f"the model {params.get('model')!r} does not exist; this "
                                     f"function serves {name!r}")
        return Response(200, payload=_card(service))
    return embeddings(service, request, timer)


def _card(service: Service) -> dict[str, Any]:
    manifest = service.model.artifact.manifest
    created = manifest.metadata.get("created") if manifest is not None else None
    return {"id": service.model.name, "object": "model",
            "created": created if isinstance(created, int) else 0, "owned_by": OWNER}


def embeddings(service: Service, request: Request, timer: StageTimer) -> Response:
    body = simple.parse_json(request)
    if not isinstance(body, dict):
        raise FieldError("the body must be a JSON object with 'input' and 'model'")
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise FieldError(f"unrecognized request argument supplied: {', '.join(unknown)}",
                           unknown[0])
    model = body.get("model")
    if not isinstance(model, str):
        raise FieldError("'model' must be a string: this function serves "
                           f"{service.model.name!r}", "model")
    if model != service.model.name:
        raise ModelNotFoundError(f"the model {model!r} does not exist; this function serves "
                                 f"{service.model.name!r}")
    pipeline: Any = service.pipeline  # a TextEmbeddingPipeline, checked below
    if pipeline.name != "text-embedding":
        raise FieldError(f"{model!r} is a {pipeline.name} model: /v1/embeddings needs a "
                           "text-embedding model", "model")
    encoding = body.get("encoding_format", "float")
    if encoding is None:
        encoding = "float"
    if encoding not in ENCODINGS:
        raise FieldError(f"'encoding_format' must be 'float' or 'base64', got {encoding!r}",
                           "encoding_format")
    if "user" in body and not isinstance(body["user"], str | None):
        raise FieldError("'user' must be a string", "user")
    dimensions = _dimensions(body.get("dimensions"))
    items, feeds_of = _inputs(body.get("input"), pipeline)
    timer.mark("decode")
    vectors, tokens = embedding_requests.embed(pipeline, items, feeds_of,
                                               "float" if dimensions else encoding)
    timer.mark("inference")
    if dimensions:
        problem = embedding_requests.width_problem(dimensions, len(vectors[0]), pipeline)
        if problem:
            raise FieldError(problem, "dimensions")
        vectors = [embedding_requests.shorten(v, dimensions, encoding) for v in vectors]
    used = sum(tokens)
    return Response(200, payload={
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": v}
                 for i, v in enumerate(vectors)],
        "model": model, "usage": {"prompt_tokens": used, "total_tokens": used}})


def _dimensions(value: Any) -> int | None:
    if value is None:
        return None
    if value.__class__ is not int or value < 1:
        raise FieldError(f"'dimensions' must be a positive integer, got {value!r}",
                           "dimensions")
    return value


def _inputs(value: Any, pipeline: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """``input`` → (strings or token-id lists, checked; what makes a batch of them feeds)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise FieldError("'input' must be a non-empty string, a non-empty list of strings, "
                           "a list of token ids or a list of such lists", "input")
    if len(value) > MAX_INPUTS:
        raise FieldError(f"'input' has {len(value)} items; at most {MAX_INPUTS} per request",
                           "input")
    first = value[0]
    if isinstance(first, str):
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise FieldError(f"input[{i}] is not a string (mix no types)", "input")
            if not item:
                raise FieldError(f"input[{i}] is empty", "input")
            if len(item) > MAX_INPUT_CHARS:
                raise FieldError(f"input[{i}] is {len(item)} characters; at most "
                                   f"{MAX_INPUT_CHARS}", "input")
        return value, pipeline.text.feeds
    rows = [value] if embedding_requests.is_id(first) else value
    problem = embedding_requests.bad_ids(rows, pipeline.text.tokenizer.get_vocab_size())
    if problem:
        raise FieldError(problem, "input")
    return rows, partial(embedding_requests.id_feeds, pipeline)


def error(exc: OnnxLambdaError, headers: dict[str, str]) -> Response:
    """``exc`` in OpenAI's error shape (its SDK raises BadRequestError for 400,
    AuthenticationError for 401, NotFoundError for 404, and so on, with this message)."""
    # an answer over Lambda's limit: 413, which the SDK does not retry (it retries any 5xx)
    status = 413 if exc.type == "ResponseTooLarge" else exc.status
    kind = _TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
    return Response(status, headers=headers, payload={"error": {
        "message": exc.message, "type": kind, "param": getattr(exc, "param", None),
        "code": getattr(exc, "code", None)}})
