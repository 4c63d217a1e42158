"""text-embeddings-inference's ``POST /embed`` (a model that declares ``embed``: the
``text-embedding`` pipeline) and ``POST /tokenize`` (any model with a tokenizer), in TEI's
request, answer and error shapes as TEI 1.9's ``router/src/http/types.rs`` and
``docs/openapi.json`` define them (docs/reference/openai-and-tei.md). Imported on the first
such request only.
"""

from __future__ import annotations

from handler.api import embedding
from handler.api.tei.errors import TeiError, body_of
from handler.api.tei.fields import (
    MAX_CHAR_MULTIPLIER,
    flag,
    too_long,
    truncating_from,
    truncation_direction,
)
from handler.http import Request, Response
from handler.pipelines.text_embedding import l2_normalize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.api.served import Served
    from handler.pipelines.text_inputs import TextInputs
    from handler.telemetry import StageTimer

EMBED_FIELDS = frozenset({"inputs", "truncate", "truncation_direction", "prompt_name",
                          "normalize", "dimensions"})
TOKENIZE_FIELDS = frozenset({"inputs", "add_special_tokens", "prompt_name"})


def _body(request: Request, known: frozenset[str]) -> dict[str, Any]:
    body = body_of(request, known, "'inputs'")
    if body.get("prompt_name") is not None:
        raise TeiError("`prompt_name`: this model has no prompts")
    return body


def _inputs(value: Any, text: TextInputs, *, ids: bool) -> list[Any]:
    """TEI's ``Input``: a string (or token ids, ``ids``) or a non-empty list of them."""
    if isinstance(value, str) or (ids and isinstance(value, list) and value
                                  and embedding.is_id(value[0])):
        value = [value]
    if not isinstance(value, list):
        raise TeiError("`inputs` must be a string or a list of strings"
                       f"{' or token ids' if ids else ''}")
    if not value:
        raise TeiError("`inputs` cannot be empty", "Empty")
    if len(value) > text.max_batch:
        raise TeiError(f"batch size {len(value)} > maximum allowed batch size {text.max_batch}")
    if all(isinstance(item, str) for item in value):
        return value
    if ids and not any(isinstance(item, str) for item in value):
        problem = embedding.bad_ids(value, text.tokenizer.get_vocab_size())
        if problem is None:
            return value
        raise TeiError(problem)
    raise TeiError("`inputs` must be a string or a list of strings"
                   f"{' or token ids' if ids else ''}, not a mix")


def _encode(text: TextInputs, sentences: list[str], truncate: bool, direction: str,
            special: bool = True) -> list[Any]:
    """TEI's checks around the pipeline's tokenizer: at most ``max_input_length`` tokens and
    that × ``MAX_CHAR_MULTIPLIER`` characters, cut from ``direction`` when ``truncate``, a 422
    otherwise."""
    chars = text.max_length * MAX_CHAR_MULTIPLIER
    for i, sentence in enumerate(sentences):
        if len(sentence) > chars:
            if not truncate:
                raise TeiError(f"Input validation error: `inputs` must have less than {chars} "
                               f"characters. Given: {len(sentence)}")
            sentences[i] = sentence[-chars:] if direction == "left" else sentence[:chars]
    with truncating_from(text, direction):
        encodings: list[Any] = text.tokenizer.encode_batch(sentences, add_special_tokens=special)
    if not truncate:
        for sentence, encoding in zip(sentences, encodings, strict=True):
            if encoding.overflowing:
                raise too_long(text, sentence, special=special)
    return encodings


def embed(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
          context: Any) -> Response:
    body = _body(request, EMBED_FIELDS)
    pipeline: Any = served.pipeline  # a TextEmbeddingPipeline: the route needs "embed"
    text: TextInputs = pipeline.text
    truncate = flag(body, "truncate", False)
    normalize = flag(body, "normalize", True)
    direction = truncation_direction(body)
    dimensions = body.get("dimensions")
    if dimensions is not None and (dimensions.__class__ is not int or dimensions < 1):
        raise TeiError(f"`dimensions` must be a positive integer, got {dimensions!r}")
    if not normalize and pipeline.normalize:
        raise TeiError(f"`normalize: false`: {served.name!r} normalises in its graph "
                       "(a model built with --pipeline-option normalize=false answers raw "
                       "vectors)")
    items = _inputs(body.get("inputs"), text, ids=True)
    if isinstance(items[0], str):
        encodings = _encode(text, items, truncate, direction)
        feeds = text.feeds_of(encodings)
    else:
        longest = max(map(len, items))
        if longest > text.max_length and not truncate:
            raise TeiError(f"Input validation error: `inputs` must have less than "
                           f"{text.max_length} tokens. Given: {longest}")
        if direction == "left":
            items = [row[-text.max_length:] for row in items]
        feeds = embedding.id_feeds(pipeline, items)
    timer.mark("decode")
    answer = pipeline.postprocess(pipeline.run(feeds), {}, feeds)
    timer.mark("inference")
    vectors = answer["embeddings"]
    if dimensions is not None:
        problem = embedding.width_problem(dimensions, len(vectors[0]), pipeline)
        if problem:
            raise TeiError(problem)
        vectors = [embedding.shorten(v, dimensions) for v in vectors]
    elif normalize and not pipeline.normalize:
        vectors = [l2_normalize(v) for v in vectors]
    return Response(200, payload=vectors,
                    headers={"x-compute-tokens": str(sum(answer["tokens"]))})


def tokenize(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
             context: Any) -> Response:
    body = _body(request, TOKENIZE_FIELDS)
    pipeline: Any = served.pipeline  # with a tokenizer: the route needs "tokenize"
    text: TextInputs = pipeline.text
    special = flag(body, "add_special_tokens", True)
    sentences = _inputs(body.get("inputs"), text, ids=False)
    answer = []
    for sentence, encoding in zip(sentences, _encode(text, sentences, False, "right", special),
                                  strict=True):
        tokens = []
        for token_id, token, (start, stop), is_special, real in zip(
                encoding.ids, encoding.tokens, encoding.offsets, encoding.special_tokens_mask,
                encoding.attention_mask, strict=True):
            if not real:  # the batch's padding
                continue
            if is_special:
                tokens.append({"id": token_id, "text": token, "special": True, "start": None,
                               "stop": None})
                continue
            # TEI counts UTF-8 bytes; the tokenizers package counts characters
            first = len(sentence[:start].encode())
            tokens.append({"id": token_id, "text": sentence[start:stop], "special": False,
                           "start": first, "stop": first + len(sentence[start:stop].encode())})
        answer.append(tokens)
    return Response(200, payload=answer)
