"""Text-embedding pipeline: sentences → tokenizer → one ``session.run`` → pooled vectors.

Request ``{"inputs": ["first sentence", "second"]}`` (or a single string). Response::

    {"embeddings": [[0.01, ...], [...]], "dimensions": 384, "tokens": [5, 3]}

``tokens`` counts each sentence's tokens after truncation (special tokens included). The batch is
padded to its longest sentence (not to ``max_length``): short requests stay cheap.

Options (``pipeline_options``): ``tokenizer`` — file beside the model (``tokenizer.json``);
``max_length`` — truncation length in tokens (256); ``max_batch`` — sentences per request (64);
``output`` — the token-embeddings output (default: the first); ``pooling`` — ``mean`` (masked
mean over tokens) or ``cls`` (first token); ``normalize`` — L2-normalise (true).
A model whose output is already pooled (rank 2) is used as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from handler.errors import InvalidInputError, ModelLoadError
from handler.model import Model
from handler.ort.tensor import Tensor, from_values
from handler.pipelines.base import Pipeline

REQUIREMENTS_HINT = "pip install -r layers/requirements-text.txt (the tokenizers package)"


class TextEmbeddingPipeline(Pipeline):
    name = "text-embedding"

    def __init__(self, model: Model, options: Mapping[str, Any]) -> None:
        super().__init__(model, options)
        # tokenizers (a Rust extension, ~10 MB) is needed by text models only: importing it here
        # keeps it off the cold path, and out of the image, of every other model.
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise ModelLoadError(f"the text-embedding pipeline needs tokenizers: "
                                 f"{REQUIREMENTS_HINT}") from None
        path = model.artifact.path.parent / self.options.get("tokenizer", "tokenizer.json")
        try:
            self.tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception for missing/corrupt files
            raise ModelLoadError(f"text-embedding pipeline: cannot load {path}: {exc}") from exc
        self.max_length = int(self.options.get("max_length", 256))
        self.max_batch = int(self.options.get("max_batch", 64))
        self.normalize = bool(self.options.get("normalize", True))
        self.pooling = self.options.get("pooling", "mean")
        if self.pooling not in ("mean", "cls"):
            raise ModelLoadError(f"text-embedding pipeline: pooling {self.pooling!r} is not "
                                 "'mean' or 'cls'")
        self.tokenizer.enable_truncation(self.max_length)
        padding = self.tokenizer.padding or {}
        self.pad_id = padding.get("pad_id", 0)
        self.tokenizer.enable_padding(pad_id=self.pad_id,
                                      pad_token=padding.get("pad_token", "[PAD]"))
        if "input_ids" not in model.input_by_name:
            raise ModelLoadError("text-embedding pipeline: the model has no 'input_ids' input "
                                 f"({', '.join(s.describe() for s in model.inputs)})")
        self.output = self.options.get("output") or model.outputs[0].name
        if self.output not in {s.name for s in model.outputs}:
            raise ModelLoadError(f"text-embedding pipeline: no output {self.output!r}")

    def preprocess(self, inputs: Any, parameters: Mapping[str, Any]) -> dict[str, Tensor]:
        sentences = [inputs] if isinstance(inputs, str) else inputs
        if (not isinstance(sentences, list) or not sentences
                or not all(isinstance(s, str) for s in sentences)):
            raise InvalidInputError('"inputs" must be a string or a non-empty list of strings')
        if len(sentences) > self.max_batch:
            raise InvalidInputError(f"{len(sentences)} sentences: at most {self.max_batch} "
                                    "per request")
        return _feeds(self.tokenizer.encode_batch(sentences), self.model)

    def postprocess(self, outputs: dict[str, Any], parameters: Mapping[str, Any],
                    feeds: Mapping[str, Tensor]) -> Any:
        # The model's own mask input when it has one, else padding told apart by its id.
        mask = np.asarray(feeds["attention_mask"].numpy() if "attention_mask" in feeds
                          else feeds["input_ids"].numpy() != self.pad_id, dtype=np.float32)
        hidden = np.asarray(outputs[self.output].numpy(), dtype=np.float32)
        if hidden.ndim == 3:
            hidden = mean_pool(hidden, mask) if self.pooling == "mean" else hidden[:, 0]
        if self.normalize:
            hidden = l2_normalize(hidden)
        return {"embeddings": hidden.tolist(), "dimensions": int(hidden.shape[-1]),
                "tokens": mask.sum(axis=1).astype(int).tolist()}

    def example(self) -> Any:
        return ["warm-up sentence"]


def _feeds(encodings: list[Any], model: Model) -> dict[str, Tensor]:
    """The model's token inputs, batch-padded (every encoding has the batch's length)."""
    columns = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
    shape = (len(encodings), len(encodings[0].ids))
    return {name: from_values(spec.element, shape,
                              [v for e in encodings for v in getattr(e, attribute)])
            for name, attribute in columns.items()
            if (spec := model.input_by_name.get(name)) is not None}


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token vectors where ``mask`` is 1 (padding excluded)."""
    weights = mask[:, :, np.newaxis]
    return (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.clip(norms, 1e-12, None)


PIPELINE = TextEmbeddingPipeline
