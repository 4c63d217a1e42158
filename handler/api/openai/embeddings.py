"""OpenAI's embeddings API over a model that declares ``embed`` (the ``text-embedding``
pipeline): ``POST /v1/embeddings``, so that the ``openai`` SDK, LangChain's ``OpenAIEmbeddings``
and the like work against the function unmodified (docs/reference/openai-and-tei.md). Imported
on the first such request only: nothing here is on the cold path of a model never asked for it.

Request: ``input`` (a string, a list of strings, one list of token ids or a list of them),
``model`` (this function's model name), ``encoding_format`` (``float`` | ``base64``; the SDK
sends ``base64`` unless told otherwise), ``dimensions`` (shortened vectors: the first N values,
renormalised; only for a model built with the pipeline option ``matryoshka=true``), ``user``
(accepted, unused). Errors take OpenAI's shape (``handler.api.openai.errors``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from handler.api import embedding
from handler.api.openai.errors import body_of, model_named
from handler.errors import FieldError
from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.api.served import Served
    from handler.telemetry import StageTimer

MAX_INPUTS = 2048  # OpenAI's own limit on inputs per request
MAX_INPUT_CHARS = 65_536  # one input; the model reads its first max_length tokens anyway
ENCODINGS = ("float", "base64")
FIELDS = frozenset({"input", "model", "encoding_format", "dimensions", "user"})


def embeddings(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
               context: Any) -> Response:
    body = body_of(request, FIELDS, "'input' and 'model'")
    model = model_named(served, body.get("model"))
    pipeline: Any = served.pipeline  # a TextEmbeddingPipeline: the route needs "embed"
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
    vectors, tokens = embedding.embed(pipeline, items, feeds_of,
                                               "float" if dimensions else encoding)
    timer.mark("inference")
    if dimensions:
        problem = embedding.width_problem(dimensions, len(vectors[0]), pipeline)
        if problem:
            raise FieldError(problem, "dimensions")
        vectors = [embedding.shorten(v, dimensions, encoding) for v in vectors]
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
    rows = [value] if embedding.is_id(first) else value
    problem = embedding.bad_ids(rows, pipeline.text.tokenizer.get_vocab_size())
    if problem:
        raise FieldError(problem, "input")
    return rows, partial(embedding.id_feeds, pipeline)
