"""text-embeddings-inference's ``POST /rerank`` over the ``rerank`` pipeline
(``handler.pipelines.reranker``), as TEI 1.9's ``router/src/http/server.rs`` answers it.

Request ``{"query", "texts", "truncate", "truncation_direction", "raw_scores", "return_text"}``;
answer a list of ``{"index", "score"[, "text"]}``, best score first. A model that is not a
reranker → 424 ``Backend`` (the route table's refusal, ``handler.api.tei.errors``, before the
body is read); then TEI's checks, in its order: ``texts`` empty → 400 ``Empty``; more texts
than ``max_client_batch_size`` (the pipeline's ``max_texts``) → 422 ``Validation``; a pair
(query + text) over ``max_input_length`` × 250 characters, or over ``max_input_length`` tokens,
→ 422 unless ``truncate`` (then both sides are cut to half the characters, and the tokens
longest-first from ``truncation_direction``'s side). Imported on the first ``/rerank`` only.
"""

from __future__ import annotations

from handler.api.tei import fields
from handler.api.tei.errors import TeiError, body_of
from handler.errors import InferenceError
from handler.http import Request, Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from handler.api.served import Served
    from handler.pipelines.reranker import RerankPipeline
    from handler.telemetry import StageTimer

FIELDS = frozenset({"query", "texts", "truncate", "truncation_direction", "raw_scores",
                    "return_text"})


def rerank(served: Served, request: Request, params: dict[str, str], timer: StageTimer,
           context: Any) -> Response:
    body = body_of(request, FIELDS, "`query` and `texts`")
    query, texts = body.get("query"), body.get("texts")
    if not isinstance(query, str):
        raise TeiError("missing field `query`" if query is None
                       else f"`query` must be a string, got {type(query).__name__}")
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise TeiError("missing field `texts`" if texts is None
                       else "`texts` must be a list of strings")
    if not texts:
        raise TeiError("`texts` cannot be empty", "Empty")
    pipeline: Any = served.pipeline  # a RerankPipeline: the route needs "rerank"
    truncate = fields.flag(body, "truncate", False)
    raw = fields.flag(body, "raw_scores", False)
    return_text = fields.flag(body, "return_text", False)
    direction = fields.truncation_direction(body)
    if len(texts) > pipeline.max_texts:
        raise TeiError(f"batch size {len(texts)} > maximum allowed batch size "
                       f"{pipeline.max_texts}")
    pairs = _pairs(query, texts, pipeline.text.max_length * fields.MAX_CHAR_MULTIPLIER, truncate)
    timer.mark("decode")
    try:
        with fields.truncating_from(pipeline.text, direction):
            scores, tokens = pipeline.rank(pairs, raw, None if truncate else _refuse_long(
                pipeline, pairs))
    except InferenceError as exc:  # a NaN score: TEI's 424 ("score is NaN")
        raise TeiError(exc.message, "Backend") from exc
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
                raise fields.too_long(text, *pairs[i])

    return check
