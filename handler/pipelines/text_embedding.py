"""Text-embedding pipeline: sentences → tokenizer → one ``session.run`` → pooled vectors.

Request ``{"inputs": ["first sentence", "second"]}`` (or a single string). Response::

    {"embeddings": [[0.01, ...], [...]], "dimensions": 384, "tokens": [5, 3]}

``tokens`` counts each sentence's tokens after truncation (special tokens included). The batch is
padded to its longest sentence (not to ``max_length``): short requests stay cheap.

``"parameters": {"encoding_format": "base64"}`` (the name and value OpenAI's embeddings API
uses) answers each vector as the base64 text of its little-endian float32 bytes instead of
decimals: exact, and about a quarter of the bytes of float64 decimals (0.44x our shortest
float32 text: 4 bytes as 5.3 characters against ~12 for a decimal). ``"float"`` is the default.

Options (``pipeline_options``): the tokenizer's (``tokenizer``, ``vocabulary``, ``max_length``,
``max_batch``: ``text_inputs``); ``output`` — the token-embeddings output (default: the
first); ``pooling`` — ``mean`` (masked mean over tokens) or ``cls`` (first token);
``normalize`` — L2-normalise (true); ``item_by_item`` — each text of a batch run alone
(``text_inputs``: build-model sets it for dynamic INT8, whose activation scale spans the batch).
A model whose output is already pooled (rank 2) is used as is.

The math is in the graph: ``onnx-lambda build-model`` appends the pooling and the normalisation
(output ``sentence_embedding``, named in the manifest's ``graph_outputs``), so ``postprocess``
only reads the vectors (``json_codec.tensor_values``: their shortest float32 decimals) and
``.shape``. A model without it (a bare ``.onnx``, an artifact built before) gets the same math
in Python, over lists.
"""

from __future__ import annotations

import math
import struct
import sys
from collections.abc import Mapping, Sequence

from handler import json_codec
from handler.errors import InvalidInputError, ModelLoadError
from handler.model import Model
from handler.ort.tensor import Tensor
from handler.pipelines.base import Pipeline
from handler.pipelines.text_inputs import TextInputs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENCODINGS = ("float", "base64")  # parameters.encoding_format, as OpenAI's embeddings API names it
PREDATES = ("the model has no pooling in its graph (a bare model, or built before build-model "
            "appended it): pooling and normalisation run in Python; rebuild it with "
            "onnx-lambda build-model")


class TextEmbeddingPipeline(Pipeline):
    name = "text-embedding"
    capabilities = frozenset({"predict", "embed", "tokenize"})

    def __init__(self, model: Model, options: Mapping[str, Any]) -> None:
        super().__init__(model, options)
        self.text = TextInputs(model, self.options, self.name)
        self.normalize = bool(self.options.get("normalize", True))
        self.pooling = self.options.get("pooling", "mean")
        if self.pooling not in ("mean", "cls"):
            raise ModelLoadError(f"text-embedding pipeline: pooling {self.pooling!r} is not "
                                 "'mean' or 'cls'")
        names = {s.name for s in model.outputs}
        manifest = model.artifact.manifest
        self.embedding = manifest.graph_outputs.get("embedding") if manifest else None
        if self.embedding not in names:
            self.embedding, self.warning = None, PREDATES
        self.output = self.options.get("output") or model.outputs[0].name
        if self.output not in names:
            raise ModelLoadError(f"text-embedding pipeline: no output {self.output!r}")

    def preprocess(self, inputs: Any, parameters: Mapping[str, Any]) -> dict[str, Tensor]:
        encoding = parameters.get("encoding_format", "float")
        if encoding not in ENCODINGS:  # checked first: a bad request costs no tokenizing or run
            raise InvalidInputError(f"parameters.encoding_format must be 'float' or 'base64', "
                                    f"got {encoding!r}")
        return self.text.feeds(inputs)

    def run(self, feeds: dict[str, Any]) -> dict[str, Any]:
        return self.text.run(feeds)

    def postprocess(self, outputs: dict[str, Any], parameters: Mapping[str, Any],
                    feeds: Mapping[str, Any]) -> Any:
        mask = self.text.mask(feeds)
        value = outputs[self.embedding or self.output]
        dimensions = int(value.shape[-1])
        base64 = parameters.get("encoding_format") == "base64"
        if self.embedding:  # the graph's float32 vectors: their bytes, or shortest decimals
            vectors: Any = (_base64_rows(value, dimensions) if base64
                            else json_codec.tensor_values(value))
        else:  # Python's own math, as is
            vectors = value.tolist()
            if len(value.shape) == 3:
                vectors = ([mean_pool(h, m) for h, m in zip(vectors, mask, strict=True)]
                           if self.pooling == "mean" else [h[0] for h in vectors])
            if self.normalize:
                vectors = [l2_normalize(v) for v in vectors]
            if base64:
                vectors = [_float32_base64(v) for v in vectors]
        return {"embeddings": vectors, "dimensions": dimensions,
                "tokens": [int(sum(row)) for row in mask]}

    def example(self) -> Any:
        return ["warm-up sentence"]


def _base64(raw: Any) -> str:
    from binascii import b2a_base64  # base64 answers only: its extension stays off the cold path

    return b2a_base64(raw, newline=False).decode("ascii")


def _float32_base64(values: Sequence[float]) -> str:
    """Numbers as the base64 of their little-endian float32 bytes."""
    return _base64(struct.pack(f"<{len(values)}f", *values))


def _base64_rows(value: Tensor, dimensions: int) -> list[str]:
    """Each pooled vector's little-endian float32 bytes as base64 (a float16 graph's widened)."""
    if value.dtype == "float32" and sys.byteorder == "little":
        data, step = memoryview(value.data), 4 * dimensions
        return [_base64(data[start:start + step]) for start in range(0, len(data), step)]
    flat = value.flat()
    return [_float32_base64(flat[start:start + dimensions])
            for start in range(0, len(flat), dimensions)]


def mean_pool(tokens: Sequence[Sequence[float]], mask: Sequence[float]) -> list[float]:
    """Mean of the token vectors where ``mask`` is 1 (padding excluded)."""
    kept = [t for t, m in zip(tokens, mask, strict=True) if m]
    if not kept:
        return [0.0] * len(tokens[0])
    count = float(sum(mask))
    return [math.fsum(column) / count for column in zip(*kept, strict=True)]


def l2_normalize(vector: Sequence[float]) -> list[float]:
    norm = max(math.sqrt(math.fsum(v * v for v in vector)), 1e-12)
    return [v / norm for v in vector]


PIPELINE = TextEmbeddingPipeline
