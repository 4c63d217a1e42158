"""Hugging Face text-embeddings-inference (TEI) routes over the text pipelines: ``POST /embed``
(``text-embedding``), ``POST /rerank`` (``rerank``: ``handler.tei_rerank``), ``POST /tokenize``
and ``GET /info``, in TEI's request, answer and error shapes
(``{"error", "error_type"}``: 400 ``Empty``, 422 ``Validation`` / ``Tokenizer``), as TEI 1.9's
``router/src/http/types.rs`` and ``docs/openapi.json`` define them
(docs/reference/openai-and-tei.md). Imported on the first such request only.
"""

from __future__ import annotations

from handler.api import embedding as embedding_requests
from handler.api.tei.fields import MAX_CHAR_MULTIPLIER, TeiError, flag, truncation_direction
from handler.codecs import simple
from handler.errors import OnnxLambdaError
from handler.http import Request, Response
from handler.pipelines.text_embedding import l2_normalize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from handler.pipelines.text_inputs import TextInputs
    from handler.service import Service
    from handler.telemetry import StageTimer

EMBED_FIELDS = frozenset({"inputs", "truncate", "truncation_direction", "prompt_name",
                          "normalize", "dimensions"})
TOKENIZE_FIELDS = frozenset({"inputs", "add_special_tokens", "prompt_name"})


def handle(service: Service, operation: str, request: Request, timer: StageTimer) -> Response:
    if operation == "tei_info":
        return Response(200, payload=_info(service))
    if operation == "tei_rerank":
        from handler.api.tei import rerank as tei_rerank  # reranker models only

        return tei_rerank.rerank(service, request, timer)
    pipeline = service.pipeline
    text: TextInputs | None = getattr(pipeline, "text", None)
    if text is None:
        raise TeiError(f"{service.model.name!r} is a {pipeline.name} model without a tokenizer: "
                       f"{request.path} needs a text model", "Backend")
    body = simple.parse_json(request)
    if not isinstance(body, dict):
        raise TeiError("the body must be a JSON object with 'inputs'")
    fields = EMBED_FIELDS if operation == "tei_embed" else TOKENIZE_FIELDS
    unknown = sorted(set(body) - fields)
    if unknown:
        raise TeiError(f"unknown field `{unknown[0]}`, expected one of "
                       f"{', '.join(f'`{f}`' for f in sorted(fields))}")
    if body.get("prompt_name") is not None:
        raise TeiError("`prompt_name`: this model has no prompts")
    if operation == "tei_tokenize":
        return _tokenize(body, text)
    if pipeline.name != "text-embedding":
        raise TeiError(f"{service.model.name!r} is a {pipeline.name} model: /embed needs a "
                       "text-embedding model", "Backend")  # TEI: 424 for a model that is not one
    return _embed(service, body, text, timer)


def _info(service: Service) -> dict[str, Any]:
    pipeline = service.pipeline
    text: TextInputs | None = getattr(pipeline, "text", None)
    labels = service.model.artifact.manifest and service.model.artifact.manifest.labels
    if pipeline.name == "text-embedding":
        kind: dict[str, Any] = {"embedding": {"pooling": getattr(pipeline, "pooling", "mean")}}
    else:
        classes = getattr(pipeline, "classes", 0)  # a reranker's head: 1 or 2 logits
        labels = labels or tuple(f"LABEL_{i}" for i in range(classes))
        names = {str(i): str(label) for i, label in enumerate(labels)}
        kind = {"reranker" if classes else "classifier": {
            "id2label": names, "label2id": {v: int(k) for k, v in names.items()}}}
    batch = text.max_batch if text else 1
    requests = getattr(pipeline, "max_texts", batch)  # /rerank: its passages per request
    length = text.max_length if text else 0
    return {"model_id": service.model.name, "model_sha": None,
            "model_dtype": service.model.outputs[0].dtype.name, "model_type": kind,
            "served_model_name": service.model.name, "max_concurrent_requests": 1,
            "max_input_length": length, "max_batch_tokens": length * batch,
            "max_batch_requests": batch, "max_client_batch_size": requests,
            "auto_truncate": False, "tokenization_workers": 1, "version": service.model.version,
            "sha": None, "docker_label": None}


def _inputs(value: Any, text: TextInputs, *, ids: bool) -> list[Any]:
    """TEI's ``Input``: a string (or token ids, ``ids``) or a non-empty list of them."""
    if isinstance(value, str) or (ids and isinstance(value, list) and value
                                  and embedding_requests.is_id(value[0])):
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
        problem = embedding_requests.bad_ids(value, text.tokenizer.get_vocab_size())
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
    tokenizer = text.tokenizer
    if direction == "left":  # the one shared tokenizer: put back however this ends
        tokenizer.enable_truncation(text.max_length, direction="left")
    try:
        encodings: list[Any] = tokenizer.encode_batch(sentences, add_special_tokens=special)
    finally:
        if direction == "left":
            tokenizer.enable_truncation(text.max_length)
    if not truncate:
        for sentence, encoding in zip(sentences, encodings, strict=True):
            if encoding.overflowing:
                tokenizer.no_truncation()
                try:
                    given = len(tokenizer.encode(sentence, add_special_tokens=special).ids)
                finally:
                    tokenizer.enable_truncation(text.max_length)
                raise TeiError(f"Input validation error: `inputs` must have less than "
                               f"{text.max_length} tokens. Given: {given}")
    return encodings


def _embed(service: Service, body: dict[str, Any], text: TextInputs,
           timer: StageTimer) -> Response:
    pipeline: Any = service.pipeline
    truncate = flag(body, "truncate", False)
    normalize = flag(body, "normalize", True)
    direction = truncation_direction(body)
    dimensions = body.get("dimensions")
    if dimensions is not None and (dimensions.__class__ is not int or dimensions < 1):
        raise TeiError(f"`dimensions` must be a positive integer, got {dimensions!r}")
    if not normalize and pipeline.normalize:
        raise TeiError(f"`normalize: false`: {service.model.name!r} normalises in its graph "
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
        feeds = embedding_requests.id_feeds(pipeline, items)
    timer.mark("decode")
    answer = pipeline.postprocess(service.model.run(feeds), {}, feeds)
    timer.mark("inference")
    vectors = answer["embeddings"]
    if dimensions is not None:
        problem = embedding_requests.width_problem(dimensions, len(vectors[0]), pipeline)
        if problem:
            raise TeiError(problem)
        vectors = [embedding_requests.shorten(v, dimensions) for v in vectors]
    elif normalize and not pipeline.normalize:
        vectors = [l2_normalize(v) for v in vectors]
    return Response(200, payload=vectors,
                    headers={"x-compute-tokens": str(sum(answer["tokens"]))})


def _tokenize(body: dict[str, Any], text: TextInputs) -> Response:
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


def error(exc: OnnxLambdaError, headers: dict[str, str]) -> Response:
    """``exc`` in TEI's error shape; our own errors take the ``error_type`` of their kind."""
    error_type = getattr(exc, "error_type", None) or (
        "Backend" if exc.status >= 500 else "Validation")
    return Response(exc.status, headers=headers,
                    payload={"error": exc.message, "error_type": error_type})
