"""Rerank pipeline: a cross-encoder (a sequence-pair classifier) scores (query, passage) pairs.

Request ``{"inputs": {"query": "What is deep learning?", "texts": ["Deep learning is …", "…"]},
"parameters": {"raw_scores": false}}``. Response, best first::

    {"ranks": [{"index": 1, "score": 0.97}, {"index": 0, "score": 0.12}], "tokens": [14, 9]}

``tokens`` counts each pair's tokens, in input order. Each pair is tokenised as the model was
trained: the tokenizer's own pair encoding (for BERT, ``[CLS] query [SEP] passage [SEP]`` with
segment ids 0 then 1 in ``token_type_ids``), cut longest-first to ``max_length`` tokens
(``text_inputs``). ``/predict`` takes at most ``max_batch`` passages, one padded batch; TEI's
``/rerank`` (``handler.api.tei.rerank``) up to ``max_texts`` (256), run in padded batches of
``max_batch`` sorted by length when there is more than one, so that each pads little.

Scores: for a 1-logit head, the sigmoid of the logit; for a 2-logit head, the softmax
probability of class ``positive`` (option, default 1: "relevant"), which is the sigmoid of the
two logits' difference. ``raw_scores`` answers the logit itself (2 logits: that difference,
``logit[positive] - logit[other]``, the log-odds whose sigmoid the score is: both rank alike).
Scores are float32, as the model computes them (and TEI answers them).

Options (``pipeline_options``): the tokenizer's (``text_inputs``); ``output`` — the logits
output (default: the first); ``positive`` — a 2-logit head's relevant class (1);
``max_texts`` — passages per ``/rerank`` request (256); ``item_by_item`` — each pair of a batch
run alone (``text_inputs``: build-model sets it for dynamic INT8).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping

from handler.errors import InferenceError, InvalidInputError, ModelLoadError
from handler.json_codec import shortest
from handler.model import Model
from handler.ort.tensor import Tensor
from handler.pipelines.base import Pipeline
from handler.pipelines.text_inputs import TextInputs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAX_TEXTS = 256  # passages per /rerank request: ~4 batches of 64 pairs at 256 tokens
EXAMPLE = {"query": "warm-up query", "texts": ["a first passage", "a second passage"]}


class RerankPipeline(Pipeline):
    name = "rerank"
    capabilities = frozenset({"predict", "rerank", "tokenize"})

    def __init__(self, model: Model, options: Mapping[str, Any]) -> None:
        super().__init__(model, options)
        self.text = TextInputs(model, self.options, self.name)
        self.output = self.options.get("output") or model.outputs[0].name
        spec = {s.name: s for s in model.outputs}.get(self.output)
        self.classes = spec.shape[-1] if spec is not None and len(spec.shape) == 2 else None
        if spec is None or spec.dtype.kind != "f" or self.classes not in (1, 2):
            raise ModelLoadError(
                f"rerank pipeline: {self.output!r} is not a float [batch, 1] or [batch, 2] "
                f"output of this model ({', '.join(s.describe() for s in model.outputs)})")
        self.positive = self.options.get("positive", 1)
        if self.positive not in (0, 1) or self.positive.__class__ is not int:
            raise ModelLoadError(f"rerank pipeline: the positive option must be 0 or 1, got "
                                 f"{self.positive!r}")
        self.max_texts = self.options.get("max_texts", MAX_TEXTS)
        if self.max_texts.__class__ is not int or self.max_texts < 1:
            raise ModelLoadError(f"rerank pipeline: max_texts must be a positive integer, got "
                                 f"{self.max_texts!r}")

    # -- /predict: one padded batch ------------------------------------------------------

    def preprocess(self, inputs: Any, parameters: Mapping[str, Any]) -> dict[str, Tensor]:
        raw_scores(parameters)  # checked first: a bad request costs no tokenizing or run
        if not isinstance(inputs, dict) or set(inputs) != {"query", "texts"}:
            raise InvalidInputError('"inputs" must be {"query": "…", "texts": ["…", …]}')
        query, texts = check_pair(inputs["query"], inputs["texts"], self.text.max_batch)
        return self.text.feeds_of(self.encode([(query, text) for text in texts]))

    def run(self, feeds: dict[str, Any]) -> dict[str, Any]:
        return self.text.run(feeds)

    def postprocess(self, outputs: dict[str, Any], parameters: Mapping[str, Any],
                    feeds: Mapping[str, Any]) -> Any:
        scores = self.scores(outputs[self.output], raw_scores(parameters))
        return {"ranks": ranked(scores),
                "tokens": [int(sum(row)) for row in self.text.mask(feeds)]}

    def example(self) -> Any:
        return EXAMPLE

    # -- the shared core -----------------------------------------------------------------

    def encode(self, pairs: list[tuple[str, str]]) -> list[Any]:
        """The pairs' encodings, padded to the longest (the tokenizer's pair template)."""
        encodings: list[Any] = self.text.tokenizer.encode_batch(pairs)
        return encodings

    def rank(self, pairs: list[tuple[str, str]], raw: bool,
             check: Callable[[list[int], list[Any]], None] | None = None
             ) -> tuple[list[float], list[int]]:
        """Scores and token counts of the (query, passage) ``pairs``, in their order, run in
        padded batches of ``max_batch`` (sorted by length when there is more than one).
        ``check`` sees every batch's pair indices and encodings before anything runs."""
        step = self.text.max_batch
        order = (list(range(len(pairs))) if len(pairs) <= step
                 else sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1])))
        batches = [order[start:start + step] for start in range(0, len(order), step)]
        encoded = [self.encode([pairs[i] for i in chosen]) for chosen in batches]
        if check is not None:
            for chosen, encodings in zip(batches, encoded, strict=True):
                check(chosen, encodings)
        scores, tokens = [0.0] * len(pairs), [0] * len(pairs)
        for chosen, encodings in zip(batches, encoded, strict=True):
            outputs = self.run(self.text.feeds_of(encodings))
            for i, score, encoding in zip(chosen, self.scores(outputs[self.output], raw),
                                          encodings, strict=True):
                scores[i], tokens[i] = score, sum(encoding.attention_mask)
        return scores, tokens

    def scores(self, logits: Tensor, raw: bool) -> list[float]:
        """Each pair's score (or logit, ``raw``) as its float32 value's shortest decimal."""
        rows = logits.tolist()
        if self.classes == 2:
            values = [row[self.positive] - row[1 - self.positive] for row in rows]
        else:
            values = [row[0] for row in rows]
        if not raw:
            values = [sigmoid(v) for v in values]
        if any(math.isnan(v) for v in values):  # no order to answer (TEI refuses it too)
            raise InferenceError("the model scored a pair NaN")
        return shortest(list(struct.unpack(f"<{len(values)}f",
                                           struct.pack(f"<{len(values)}f", *values))),
                        "float32")


def raw_scores(parameters: Mapping[str, Any]) -> bool:
    value = parameters.get("raw_scores", False)
    if value.__class__ is not bool:
        raise InvalidInputError(f"parameters.raw_scores must be true or false, got {value!r}")
    return bool(value)


def check_pair(query: Any, texts: Any, limit: int) -> tuple[str, list[str]]:
    """``query`` a string, ``texts`` a non-empty list of at most ``limit`` strings."""
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise InvalidInputError("texts must be a non-empty list of strings")
    if len(texts) > limit:
        raise InvalidInputError(f"{len(texts)} texts: at most {limit} per request")
    return query, texts


def ranked(scores: list[float]) -> list[dict[str, Any]]:
    """``{index, score}`` best first; equal scores keep input order (a stable sort)."""
    order = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)
    return [{"index": i, "score": scores[i]} for i in order]


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)  # exp(-x) would overflow for very negative logits
    return e / (1.0 + e)


PIPELINE = RerankPipeline
