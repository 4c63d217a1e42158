"""OpenAI's embeddings API over the ``text-embedding`` pipeline: ``POST /v1/embeddings``,
``GET /v1/models`` and ``GET /v1/models/{model}``, so that the ``openai`` SDK, LangChain's
``OpenAIEmbeddings`` and the like work against the function unmodified
(docs/reference/openai-and-tei.md).

Imported by ``handler.service`` on the first ``/v1/`` request only: nothing here is on the
cold path of a model that is never asked for it.

Request: ``input`` (a string, a list of strings, one list of token ids or a list of them),
``model`` (this function's model name), ``encoding_format`` (``float`` | ``base64``; the SDK
sends ``base64`` unless told otherwise), ``dimensions`` (shortened vectors: the first N values,
renormalised; only for a model built with the pipeline option ``matryoshka=true``), ``user``
(accepted, unused). Errors take OpenAI's shape ``{"error": {"message", "type", "param",
"code"}}`` with the statuses the SDK maps to its exceptions.
"""

from __future__ import annotations

import math
import struct

from handler.codecs import simple
from handler.errors import (
    InvalidInputError,
    NotFoundError,
    OnnxLambdaError,
    PayloadTooLargeError,
)
from handler.http import Request, Response
from handler.ort.tensor import Tensor, from_values
from handler.telemetry import now

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.service import Service

MAX_INPUTS = 2048  # OpenAI's own limit on inputs per request
MAX_INPUT_CHARS = 65_536  # one input; the model reads its first max_length tokens anyway
OWNER = "onnx-lambda"
ENCODINGS = ("float", "base64")
FIELDS = frozenset({"input", "model", "encoding_format", "dimensions", "user"})
# Our status → OpenAI's error ``type`` (the SDK picks its exception by status alone)
_TYPES = {401: "invalid_request_error", 403: "invalid_request_error", 429: "rate_limit_error"}


class RequestError(InvalidInputError):
    """A 400 naming the request field at fault, as OpenAI's ``param``."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.param, self.code = param, code


class ModelNotFoundError(NotFoundError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.param, self.code = "model", "model_not_found"


def handle(service: Service, operation: str, params: dict[str, str], request: Request,
           marks: list[Any]) -> Response:
    name = service.model.name
    if operation == "openai_models":
        return Response(200, payload={"object": "list", "data": [_card(service)]})
    if operation == "openai_model":
        if params.get("model") != name:
            raise ModelNotFoundError(f"the model {params.get('model')!r} does not exist; this "
                                     f"function serves {name!r}")
        return Response(200, payload=_card(service))
    return embeddings(service, request, marks)


def _card(service: Service) -> dict[str, Any]:
    manifest = service.model.artifact.manifest
    created = manifest.metadata.get("created") if manifest is not None else None
    return {"id": service.model.name, "object": "model",
            "created": created if isinstance(created, int) else 0, "owned_by": OWNER}


def embeddings(service: Service, request: Request, marks: list[Any]) -> Response:
    limit = service.settings.max_payload_bytes
    if len(request.body) > limit:
        raise PayloadTooLargeError(f"request body is {len(request.body)} bytes; the limit is "
                                   f"{limit}")
    body = simple.parse_json(request)
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object with 'input' and 'model'")
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise RequestError(f"unrecognized request argument supplied: {', '.join(unknown)}",
                           unknown[0])
    model = body.get("model")
    if not isinstance(model, str):
        raise RequestError("'model' must be a string: this function serves "
                           f"{service.model.name!r}", "model")
    if model != service.model.name:
        raise ModelNotFoundError(f"the model {model!r} does not exist; this function serves "
                                 f"{service.model.name!r}")
    pipeline = service.pipeline
    if pipeline.name != "text-embedding":
        raise RequestError(f"{model!r} is a {pipeline.name} model: /v1/embeddings needs a "
                           "text-embedding model", "model")
    encoding = body.get("encoding_format", "float")
    if encoding is None:
        encoding = "float"
    if encoding not in ENCODINGS:
        raise RequestError(f"'encoding_format' must be 'float' or 'base64', got {encoding!r}",
                           "encoding_format")
    if "user" in body and not isinstance(body["user"], str | None):
        raise RequestError("'user' must be a string", "user")
    dimensions = _dimensions(body.get("dimensions"))
    texts, ids = _inputs(body.get("input"), pipeline.text)
    marks.append(("decode", now()))
    vectors, tokens = _embed(service, texts, ids, "float" if dimensions else encoding)
    marks.append(("inference", now()))
    if dimensions:
        _check_width(dimensions, len(vectors[0]), pipeline)
        vectors = [_shorten(v, dimensions, encoding) for v in vectors]
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
        raise RequestError(f"'dimensions' must be a positive integer, got {value!r}",
                           "dimensions")
    return value


def _check_width(dimensions: int, width: int, pipeline: Any) -> None:
    """``dimensions`` against the model's own ``width`` (known once it has run)."""
    name = pipeline.model.name
    if dimensions > width:
        raise RequestError(f"'dimensions' is {dimensions}; {name!r} embeds in {width}",
                           "dimensions")
    if dimensions < width and not pipeline.options.get("matryoshka"):
        raise RequestError(f"{name!r} was not trained for shortened embeddings (Matryoshka): "
                           f"it embeds in {width} dimensions only (a model that was is built "
                           "with --pipeline-option matryoshka=true)", "dimensions")


def _inputs(value: Any, text: Any) -> tuple[list[str] | None, list[list[int]] | None]:
    """``input`` → (strings, None) or (None, token-id lists), checked."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise RequestError("'input' must be a non-empty string, a non-empty list of strings, "
                           "a list of token ids or a list of such lists", "input")
    if len(value) > MAX_INPUTS:
        raise RequestError(f"'input' has {len(value)} items; at most {MAX_INPUTS} per request",
                           "input")
    first = value[0]
    if isinstance(first, str):
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise RequestError(f"input[{i}] is not a string (mix no types)", "input")
            if not item:
                raise RequestError(f"input[{i}] is empty", "input")
            if len(item) > MAX_INPUT_CHARS:
                raise RequestError(f"input[{i}] is {len(item)} characters; at most "
                                   f"{MAX_INPUT_CHARS}", "input")
        return value, None
    rows = [value] if _is_id(first) else value
    vocabulary = text.tokenizer.get_vocab_size()
    for i, row in enumerate(rows):
        if not isinstance(row, list) or not row or not all(_is_id(t) for t in row):
            raise RequestError(f"input[{i}] is not a non-empty list of token ids", "input")
        if not all(0 <= t < vocabulary for t in row):
            raise RequestError(f"input[{i}] has a token id outside the model's vocabulary "
                               f"(0 to {vocabulary - 1})", "input")
    return None, rows


def _is_id(value: Any) -> bool:
    return value.__class__ is int  # not bool, not float


def _embed(service: Service, texts: list[str] | None, ids: list[list[int]] | None,
           encoding: str) -> tuple[list[Any], list[int]]:
    """Vectors and token counts in input order, run in batches of the pipeline's
    ``max_batch``; inputs sorted by length when there is more than one batch, so that each
    batch pads little."""
    pipeline = service.pipeline
    items: list[Any] = texts if texts is not None else ids  # type: ignore[assignment]
    step = pipeline.text.max_batch
    order = (list(range(len(items))) if len(items) <= step
             else sorted(range(len(items)), key=lambda i: len(items[i])))
    vectors: list[Any] = [None] * len(items)
    tokens = [0] * len(items)
    for start in range(0, len(order), step):
        chosen = order[start:start + step]
        batch = [items[i] for i in chosen]
        feeds = (pipeline.text.feeds(batch) if texts is not None
                 else _id_feeds(pipeline, batch))
        answer = pipeline.postprocess(service.model.run(feeds), {"encoding_format": encoding},
                                      feeds)
        for i, vector, count in zip(chosen, answer["embeddings"], answer["tokens"],
                                    strict=True):
            vectors[i], tokens[i] = vector, count
    return vectors, tokens


def _id_feeds(pipeline: Any, rows: list[list[int]]) -> dict[str, Tensor]:
    """Token ids as given (the caller adds the model's special tokens), cut to ``max_length``
    and padded to the batch's longest row."""
    text = pipeline.text
    rows = [row[:text.max_length] for row in rows]
    width = max(map(len, rows))
    columns = {
        "input_ids": [t for row in rows for t in (*row, *[text.pad_id] * (width - len(row)))],
        "attention_mask": [m for row in rows for m in [1] * len(row) + [0] * (width - len(row))],
        "token_type_ids": [0] * (len(rows) * width)}
    by_name = pipeline.model.input_by_name
    return {name: from_values(by_name[name].element, (len(rows), width), values)
            for name, values in columns.items() if name in by_name}


def _shorten(vector: list[float], dimensions: int, encoding: str) -> Any:
    """The first ``dimensions`` values, renormalised to unit length (as OpenAI does)."""
    kept = vector[:dimensions]
    norm = max(math.sqrt(math.fsum(v * v for v in kept)), 1e-12)
    packed = struct.pack(f"<{dimensions}f", *(v / norm for v in kept))
    if encoding == "base64":
        from binascii import b2a_base64  # base64 answers only

        return b2a_base64(packed, newline=False).decode("ascii")
    return list(struct.unpack(f"<{dimensions}f", packed))


def error(exc: OnnxLambdaError, headers: dict[str, str]) -> Response:
    """``exc`` in OpenAI's error shape (its SDK raises BadRequestError for 400,
    AuthenticationError for 401, NotFoundError for 404, and so on, with this message)."""
    status = exc.status
    kind = _TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
    return Response(status, headers=headers, payload={"error": {
        "message": exc.message, "type": kind, "param": getattr(exc, "param", None),
        "code": getattr(exc, "code", None)}})
