"""Cross-encoder rerankers in build-model: recognising one (``recognise``), and what the accuracy
gate compares for it (``comparable``), which the ``rerank`` pipeline
(``handler.pipelines.reranker``) serves.

A cross-encoder is a sequence-pair classifier: ``input_ids``, ``attention_mask`` and maybe
``token_type_ids`` in, one float output of shape [batch, 1] (a relevance logit) or [batch, 2]
(irrelevant / relevant logits) out, shipped with its ``tokenizer.json``. A [batch, 2] model is
taken for a reranker only when it also takes segment ids (it was trained on pairs) and no class
labels are given: a two-class sentence classifier (sentiment) is built with
``--pipeline classifier``.

The gate sees, per sample batch (a query's passages), the scores the pipeline answers (the
sigmoid of the logit, or the relevant class's probability) as one row, and the indices of the
``TOP_K`` best as labels: exact agreement is rank agreement on the top ``TOP_K``, and the
score's max abs error is gated at ``MAX_ABS_ERROR`` unless the command line sets its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from onnx_lambda.build_model.gate import Comparable, Feeds, Rows

PIPELINE = "rerank"
TOKEN_INPUTS = frozenset({"input_ids", "attention_mask"})
SEGMENT_INPUT = "token_type_ids"
TOKENIZER = "tokenizer.json"
TOP_K = 3
# Scores are probabilities (0 to 1): an error of 0.02 moves none across a decision threshold by
# much, and the top-K agreement keeps the order. The fp32 export is checked far tighter (1e-3).
MAX_ABS_ERROR = 0.02
POSITIVE = 1  # a 2-logit head's relevant class (the pipeline's ``positive`` option default)


def _head(model: onnx.ModelProto) -> tuple[str, int] | None:
    """The first output's name and its class count, if it is a float [batch, 1 or 2]."""
    if not model.graph.output:
        return None
    output = model.graph.output[0]
    tensor = output.type.tensor_type
    dims = tensor.shape.dim
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE}
    if tensor.elem_type not in floats or len(dims) != 2 or dims[1].dim_value not in (1, 2):
        return None
    return output.name, dims[1].dim_value


def recognise(model: onnx.ModelProto, files: dict[str, Any], labelled: bool) -> str | None:
    """Why ``model`` is a cross-encoder reranker (None: it is not one)."""
    weights = {i.name for i in model.graph.initializer}
    inputs = {i.name for i in model.graph.input if i.name not in weights}
    head = _head(model)
    if (head is None or not TOKEN_INPUTS <= inputs <= TOKEN_INPUTS | {SEGMENT_INPUT}
            or TOKENIZER not in files):
        return None
    name, classes = head
    if classes == 2 and (SEGMENT_INPUT not in inputs or labelled):
        return None
    what = ("a relevance logit" if classes == 1
            else f"two logits, class {POSITIVE} taken as relevant")
    return (f"a cross-encoder: token inputs {', '.join(sorted(inputs))} and {name!r} "
            f"[batch, {classes}] ({what}), {TOKENIZER} beside it")


def output_of(model: onnx.ModelProto) -> tuple[str, int]:
    head = _head(model)
    if head is None:
        raise ValueError("the rerank pipeline needs a float [batch, 1] or [batch, 2] first output")
    return head


def scores(logits: np.ndarray, positive: int = POSITIVE) -> np.ndarray:
    """The pipeline's scores of a [batch, 1 or 2] logits array, in float64."""
    values = logits.astype(np.float64)
    logit = values[:, 0] if values.shape[1] == 1 else values[:, positive] - values[:, 1 - positive]
    return 1.0 / (1.0 + np.exp(-logit))


def comparable(output: str) -> Comparable:
    """The gate's rows of one sample batch: its scores (one row) and the ``TOP_K`` best."""

    def rows(outputs: dict[str, Any], feeds: Feeds) -> Rows:
        values = scores(np.asarray(outputs[output]))
        best = np.argsort(-values, kind="stable")[:TOP_K]
        return {"score": values[np.newaxis, :], f"top{TOP_K}": best[np.newaxis, :]}

    return rows
