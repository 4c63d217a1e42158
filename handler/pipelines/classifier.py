"""Classifier pipeline: class scores → labelled predictions with top-k.

Request: the tensor pipeline's, ``{"inputs": [[...]]}`` or ``{"inputs": {"name": [[...]]}}``,
optional ``"parameters": {"top_k": 3}``. Response, one prediction per batch row::

    {"predictions": [{"label": "3", "score": 0.97,
                      "top_k": [{"label": "3", "score": 0.97}, {"label": "8", "score": 0.02}]}]}

Options (``pipeline_options``): ``output`` — the scores output (default: the first float output
of rank 1 or 2); ``probabilities`` — true when the scores already are probabilities, false to
always apply softmax (default: detected per batch: non-negative rows summing to 1 are kept);
``top_k`` — the default k (5). Labels come from the manifest (default: class indices).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from handler.errors import InferenceError, InvalidInputError, ModelLoadError
from handler.model import Model
from handler.pipelines.tensor import TensorPipeline

DEFAULT_TOP_K = 5


class ClassifierPipeline(TensorPipeline):
    name = "classifier"

    def __init__(self, model: Model, options: Mapping[str, Any]) -> None:
        super().__init__(model, options)
        self.output = self.options.get("output") or _scores_output(model)
        spec = next((s for s in model.outputs if s.name == self.output), None)
        if spec is None or spec.dtype.kind != "f":
            raise ModelLoadError(f"classifier pipeline: {self.output!r} is not a float output of "
                                 f"this model ({', '.join(s.describe() for s in model.outputs)})")
        manifest = model.artifact.manifest
        self.labels = tuple(manifest.labels) if manifest and manifest.labels else None
        classes = spec.shape[-1] if spec.shape else None
        if self.labels and isinstance(classes, int) and classes != len(self.labels):
            raise ModelLoadError(f"classifier pipeline: {len(self.labels)} labels for "
                                 f"{classes} classes in {self.output!r}")
        self.probabilities: bool | None = self.options.get("probabilities")
        self.top_k = _positive_int(self.options.get("top_k", DEFAULT_TOP_K), "top_k option",
                                   ModelLoadError)

    def postprocess(self, outputs: dict[str, Any], parameters: Mapping[str, Any],
                    feeds: Mapping[str, np.ndarray]) -> Any:
        scores = np.asarray(outputs[self.output].tolist(), dtype=np.float64)
        if scores.ndim == 1:
            scores = scores[np.newaxis, :]
        if scores.ndim != 2:
            raise InferenceError(f"classifier: output {self.output!r} has shape "
                                 f"{list(scores.shape)}, expected [batch, classes]")
        classes = scores.shape[1]
        if self.labels and classes != len(self.labels):
            raise InferenceError(f"classifier: {classes} scores but {len(self.labels)} labels")
        k = min(classes, _positive_int(parameters.get("top_k", self.top_k), "parameters.top_k",
                                       InvalidInputError))
        probs = scores if self._are_probabilities(scores) else softmax(scores)
        order = np.argsort(-probs, axis=1, kind="stable")[:, :k]
        predictions = []
        # tolist() once per batch: per-element numpy scalars are slow on the hot path.
        for row, indices in zip(probs.tolist(), order.tolist(), strict=True):
            top = [{"label": self._label(i), "score": row[i]} for i in indices]
            predictions.append({**top[0], "top_k": top})
        return {"predictions": predictions}

    def _are_probabilities(self, scores: np.ndarray) -> bool:
        if self.probabilities is not None:
            return bool(self.probabilities)
        return bool(np.all(scores >= 0) and np.allclose(scores.sum(axis=1), 1.0, atol=1e-3))

    def _label(self, index: int) -> str:
        return self.labels[index] if self.labels else str(index)


def softmax(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _scores_output(model: Model) -> str:
    for spec in model.outputs:
        if spec.dtype.kind == "f" and len(spec.shape) in (1, 2):
            return spec.name
    raise ModelLoadError("classifier pipeline: the model has no float output of rank 1 or 2 "
                         "(set pipeline_options.output; a ZipMap output needs zipmap disabled)")


def _positive_int(value: Any, what: str, error: type[Exception]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise error(f"{what} must be a positive integer, got {value!r}")
    return value


PIPELINE = ClassifierPipeline
