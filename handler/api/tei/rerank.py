"""text-embeddings-inference's ``POST /rerank`` over the ``rerank`` pipeline
(``handler.pipelines.reranker``), as TEI 1.9's ``router/src/http/server.rs`` answers it.

Request ``{"query", "texts", "truncate", "truncation_direction", "raw_scores", "return_text"}``;
answer a list of ``{"index", "score"[, "text"]}``, best score first. TEI's checks, in its
order: ``texts`` empty → 400 ``Empty``; a model that is not a reranker → 424 ``Backend``; more
texts than ``max_client_batch_size`` (the pipeline's ``max_texts``) → 422 ``Validation``; a pair
(query + text) over ``max_input_length`` × 250 characters, or over ``max_input_length`` tokens,
→ 422 unless ``truncate`` (then both sides are cut to half the characters, and the tokens
longest-first from ``truncation_direction``'s side). Imported on the first ``/rerank`` only.
"""

from __future__ import annotations

from handler.api.tei.fields import MAX_CHAR_MULTIPLIER, TeiError, flag, truncation_direction
from handler.codecs import simple
from handler.errors import InferenceError
from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from handler.pipelines.reranker import RerankPipeline
    from handler.service import Service
    from handler.telemetry import StageTimer

FIELDS = frozenset({"query", "texts", "truncate", "truncation_direction", "raw_scores",
                    "return_text"})


def rerank(service: Service, request: Request, timer: StageTimer) -> Response:
    body = simple.parse_json(request)
    if not isinstance(body, dict):
        raise TeiError("the body must be a JSON object with `query` and `texts`")
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise TeiError(f"unknown field `{unknown[0]}`, expected one of "
                       f"{', '.join(f'`{f}`' for f in sorted(FIELDS))}")
    query, texts = body.get("query"), body.get("texts")
    if not isinstance(query, str):
        raise TeiError("missing field `query`" if query is None
                       else f"`query` must be a string, got {type(query).__name__}")
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise TeiError("missing field `texts`" if texts is None
                       else "`texts` must be a list of strings")
    if not texts:
        raise TeiError("`texts` cannot be empty", "Empty")
    pipeline: Any = service.pipeline
    if pipeline.name != "rerank":
        raise TeiError(f"model is not a re-ranker model: {service.model.name!r} is a "
                       f"{pipeline.name} model", "Backend")  # TEI: 424
    truncate = flag(body, "truncate", False)
    raw = flag(body, "raw_scores", False)
    return_text = flag(body, "return_text", False)
    direction = truncation_direction(body)
    if len(texts) > pipeline.max_texts:
        raise TeiError(f"batch size {len(texts)} > maximum allowed batch size "
                       f"{pipeline.max_texts}")
    pairs = _pairs(query, texts, pipeline.text.max_length * MAX_CHAR_MULTIPLIER, truncate)
    timer.mark("decode")
    tokenizer = pipeline.text.tokenizer
    if direction == "left":  # the one shared tokenizer: put back however this ends
        tokenizer.enable_truncation(pipeline.text.max_length, direction="left")
    try:
        scores, tokens = pipeline.rank(pairs, raw, None if truncate else _refuse_long(
            pipeline, pairs))
    except InferenceError as exc:  # a NaN score: TEI's 424 ("score is NaN")
        raise TeiError(exc.message, "Backend") from exc
    finally:
        if direction == "left":
            tokenizer.enable_truncation(pipeline.text.max_length)
    timer.mark("inference")
    ranks = sorted(range(len(texts)), key=scores.__getitem__, reverse=True)
    answer = [{"index": i, "text": texts[i], "score": scores[i]} if return_text
              else {"index": i, "score": scores[i]} for i in ranks]
    return Response(200, payload=answer, headers={"x-compute-tokens": str(sum(tokens))})


def _pairs(query: str, texts: list[str], chars: int, truncate: bool) -> list[tuple[str, str]]:
    """(query, text) pairs within TEI's character limit: a longer pair is refused, or with
    ``truncate`` both its sides are cut to half the limit (as TEI's ``apply_limit``)."""
    pairs = []
    for text in texts:
        given = len(query) + len(text)
        if given > chars:
            if not truncate:
                raise TeiError(f"Input validation error: `inputs` must have less than {chars} "
                               f"characters. Given: {given}")
            pairs.append((query[:chars // 2], text[:chars // 2]))
        else:
            pairs.append((query, text))
    return pairs


def _refuse_long(pipeline: RerankPipeline, pairs: list[tuple[str, str]]
                 ) -> Callable[[list[int], list[Any]], None]:
    """A ``rank`` check: a pair the tokenizer had to cut is a 422 naming its full length."""
    text = pipeline.text

    def check(chosen: list[int], encodings: list[Any]) -> None:
        for i, encoding in zip(chosen, encodings, strict=True):
            if encoding.overflowing:
                text.tokenizer.no_truncation()
                try:
                    given = len(text.tokenizer.encode(*pairs[i]).ids)
                finally:
                    text.tokenizer.enable_truncation(text.max_length)
                raise TeiError(f"Input validation error: `inputs` must have less than "
                               f"{text.max_length} tokens. Given: {given}")

    return check
