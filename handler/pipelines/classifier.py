"""Classifier pipeline: class scores → labelled predictions with top-k.

Request: the tensor pipeline's, ``{"inputs": [[...]]}`` or ``{"inputs": {"name": [[...]]}}``,
optional ``"parameters": {"top_k": 3}``. A text classifier (a sentiment or intent model: an
``input_ids`` input and a tokenizer shipped in the artifact, ``text_inputs``) also takes text,
``{"inputs": "what a great film"}`` or a list of sentences. Response, one prediction per batch
row (sentence)::

    {"predictions": [{"label": "3", "score": 0.97,
                      "top_k": [{"label": "3", "score": 0.97}, {"label": "8", "score": 0.02}]}]}

The math is in the graph: ``onnx-lambda build-model`` appends softmax (for logits) and TopK, and
names the outputs in the manifest's ``graph_outputs`` (``probabilities``, ``scores``,
``indices``); this module only maps indices to labels (no numpy: ``.tolist()`` and ``.shape``
of the outputs). A request for more than the graph's k reads the full ``probabilities``.
A model without them (a bare ``.onnx``, an artifact built before) gets the same math in Python.

Options (``pipeline_options``): ``output`` — the scores output (default: the first float output
of rank 1 or 2); ``probabilities`` — true when the scores already are probabilities, false to
always apply softmax (default: detected by the build; in Python, per batch: non-negative rows
summing to 1 are kept); ``top_k`` — the default k (5). Labels come from the manifest (default:
class indices).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence

from handler import json_codec
from handler.errors import InferenceError, InvalidInputError, ModelLoadError
from handler.manifest import tokenizer_file
from handler.model import Model
from handler.pipelines.tensor import TensorPipeline

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_TOP_K = 5
GRAPH_ROLES = ("probabilities", "scores", "indices")
PREDATES = ("the model has no classifier math in its graph (a bare model, or built before "
            "build-model appended it): softmax and top-k run in Python; rebuild it with "
            "onnx-lambda build-model")


class ClassifierPipeline(TensorPipeline):
    name = "classifier"

    def __init__(self, model: Model, options: Mapping[str, Any]) -> None:
        super().__init__(model, options)
        manifest = model.artifact.manifest
        self.labels = tuple(manifest.labels) if manifest and manifest.labels else None
        specs = {s.name: s for s in model.outputs}
        graph = manifest.graph_outputs if manifest else {}
        if all(graph.get(role) in specs for role in GRAPH_ROLES):
            self.graph: tuple[str, str, str] | None = (
                graph["probabilities"], graph["scores"], graph["indices"])
            self.output = self.graph[0]
            graph_k = specs[self.graph[1]].shape[-1]
            self.graph_k = graph_k if isinstance(graph_k, int) else 0
        else:
            self.graph = None
            self.warning = PREDATES
            self.output = self.options.get("output") or _scores_output(model)
        spec = specs.get(self.output)
        if spec is None or spec.dtype.kind != "f":
            raise ModelLoadError(f"classifier pipeline: {self.output!r} is not a float output of "
                                 f"this model ({', '.join(s.describe() for s in model.outputs)})")
        classes = spec.shape[-1] if spec.shape else None
        if self.labels and isinstance(classes, int) and classes != len(self.labels):
            raise ModelLoadError(f"classifier pipeline: {len(self.labels)} labels for "
                                 f"{classes} classes in {self.output!r}")
        self.probabilities: bool | None = self.options.get("probabilities")
        self.top_k = _positive_int(self.options.get("top_k", DEFAULT_TOP_K), "top_k option",
                                   ModelLoadError)
        self.text = _text_inputs(model, self.options)  # None: numbers only
        if self.text is not None:
            self.capabilities = frozenset({"predict", "tokenize"})

    def preprocess(self, inputs: Any, parameters: Mapping[str, Any]) -> dict[str, Any]:
        if self.text is not None and (inputs.__class__ is str or (
                inputs.__class__ is list and inputs and inputs[0].__class__ is str)):
            feeds: dict[str, Any] = self.text.feeds(inputs)
            return feeds
        return super().preprocess(inputs, parameters)

    def example(self) -> Any:
        return ["warm-up sentence"] if self.text is not None else super().example()

    def postprocess(self, outputs: dict[str, Any], parameters: Mapping[str, Any],
                    feeds: Mapping[str, Any]) -> Any:
        k = _positive_int(parameters.get("top_k", self.top_k), "parameters.top_k",
                          InvalidInputError)
        if self.graph is not None and k <= self.graph_k:
            # tolist() once per output: per-element access to a tensor is slow on the hot path;
            # the graph's float32 scores as their shortest decimals
            tops = [list(zip(i[:k], s[:k], strict=True)) for s, i in zip(
                json_codec.tensor_values(outputs[self.graph[1]]),
                outputs[self.graph[2]].tolist(), strict=True)]
        else:
            tops = [top_k(row, k) for row in self._probabilities(outputs[self.output])]
        predictions = []
        for top in tops:
            entries = [{"label": self._label(i), "score": score} for i, score in top]
            predictions.append({**entries[0], "top_k": entries})
        return {"predictions": predictions}

    def _probabilities(self, value: Any) -> list[list[float]]:
        """Rows of class probabilities: the graph's, or the scores with softmax where needed."""
        values: Any = (json_codec.tensor_values(value) if self.graph is not None
                       else value.tolist())
        rank = len(value.shape)
        rows: list[list[float]] = [values] if rank == 1 else values
        if rank not in (1, 2):
            raise InferenceError(f"classifier: output {self.output!r} has shape "
                                 f"{list(value.shape)}, expected [batch, classes]")
        if self.labels and rows and len(rows[0]) != len(self.labels):
            raise InferenceError(f"classifier: {len(rows[0])} scores but {len(self.labels)} "
                                 "labels")
        if self.graph is not None or (self.probabilities if self.probabilities is not None
                                      else are_probabilities(rows)):
            return rows
        return [softmax(row) for row in rows]

    def _label(self, index: int) -> str:
        return self.labels[index] if self.labels else str(index)


def are_probabilities(rows: Sequence[Sequence[float]]) -> bool:
    """Non-negative rows summing to 1 (within 1e-3)."""
    return all(min(row) >= 0 and abs(math.fsum(row) - 1.0) <= 1e-3 for row in rows)


def softmax(row: Sequence[float]) -> list[float]:
    top = max(row)
    exps = [math.exp(v - top) for v in row]
    total = math.fsum(exps)
    return [e / total for e in exps]


def top_k(row: Sequence[float], k: int) -> list[tuple[int, float]]:
    """The k largest (index, score), largest first; ties keep the lower index first, as the
    graph's TopK does (Python's sort is stable, reverse included)."""
    order = sorted(range(len(row)), key=row.__getitem__, reverse=True)[:k]
    return [(i, row[i]) for i in order]


def _text_inputs(model: Model, options: Mapping[str, Any]) -> Any:
    """The tokenizer's feeds when the model takes token ids and its tokenizer file is there."""
    if "input_ids" not in model.input_by_name or not os.path.isfile(
            model.artifact.file(tokenizer_file(options))):
        return None
    from handler.pipelines.text_inputs import TextInputs  # text classifiers only

    return TextInputs(model, options, ClassifierPipeline.name)


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
